import { expect, test } from 'bun:test'
import { createHmac } from 'node:crypto'
import { addDigest, addHash, countOf, deviceHasher, emptySketch, exactLimit, mergeInto, sketchFromRow, sketchRow, type DeviceSketch } from './sketch'

// device hashes as the insights service makes them: HMAC-SHA256 with a fixed key, 22 base64url characters
const hasher = new Bun.CryptoHasher('sha256', 'sketch-test-key')
const hashOf = (deviceId: string) => hasher.copy().update(deviceId).digest('base64url').slice(0, 22)
function sketchOf(from: number, to: number): DeviceSketch {
  const sketch = emptySketch()
  for (let index = from; index < to; index++) addHash(sketch, hashOf(`device-${index}`))
  return sketch
}

test('up to the exact limit the count is exact and the row holds the hashes themselves', () => {
  const sketch = sketchOf(0, exactLimit)
  expect(addHash(sketch, hashOf('device-0'))).toBe(false)
  expect(countOf(sketch)).toBe(exactLimit)
  const row = sketchRow(sketch)
  expect(row.registers).toBeNull()
  expect(row.hashes).toHaveLength(exactLimit * 22)
  expect(row.hashes!.startsWith(hashOf('device-0'))).toBe(true)
  expect(countOf(sketchFromRow(row.hashes, null))).toBe(exactLimit)
  expect(countOf(sketchFromRow(null, null))).toBe(0)
})

test('past the limit the sketch becomes 16,384 registers, stored as such, and estimates within the error', () => {
  const sketch = sketchOf(0, exactLimit + 1)
  const row = sketchRow(sketch)
  expect(row.hashes).toBeNull()
  expect(row.registers).toHaveLength(16384)
  expect(Math.abs(countOf(sketch) - (exactLimit + 1))).toBeLessThan(exactLimit * 0.03)
  // a registers row reads back the same, and adding a device already counted changes nothing
  const again = sketchFromRow(null, row.registers)
  expect(countOf(again)).toBe(countOf(sketch))
  expect(addHash(again, hashOf('device-7'))).toBe(false)
})

test('estimates stay within 2.5 % (about three standard errors) from ten thousand to a million devices', () => {
  for (const devices of [10_000, 100_000, 1_000_000]) {
    const estimate = countOf(sketchOf(0, devices))
    expect(Math.abs(estimate - devices) / devices).toBeLessThan(0.025)
  }
})

test('merging gives the union: exact while small, estimated once large, and merging twice adds nothing', () => {
  const small = sketchOf(0, 600)
  mergeInto(small, sketchOf(300, 900))
  expect(countOf(small)).toBe(900)

  const union = sketchOf(0, 50_000)
  mergeInto(union, sketchOf(25_000, 75_000))
  const once = countOf(union)
  expect(Math.abs(once - 75_000) / 75_000).toBeLessThan(0.025)
  mergeInto(union, sketchOf(25_000, 75_000))
  expect(countOf(union)).toBe(once)

  // exact into registers and registers into exact
  const exactFirst = sketchOf(0, 1000)
  mergeInto(exactFirst, sketchOf(1000, 20_000))
  const registersFirst = sketchOf(1000, 20_000)
  mergeInto(registersFirst, sketchOf(0, 1000))
  expect(countOf(exactFirst)).toBe(countOf(registersFirst))
  expect(Math.abs(countOf(exactFirst) - 20_000) / 20_000).toBeLessThan(0.025)
})

test('a row migrated with more hashes than the limit reads as registers', () => {
  const hashes = Array.from({ length: 5000 }, (_, index) => hashOf(`device-${index}`)).join('')
  const sketch = sketchFromRow(hashes, null)
  expect(sketch.hashes).toBeNull()
  expect(Math.abs(countOf(sketch) - 5000) / 5000).toBeLessThan(0.025)
})

test('a device added by its digest (counting) lands where its stored hash does (a migrated or merged row)', () => {
  const byDigest = emptySketch()
  const byHash = emptySketch()
  for (let index = 0; index < 5000; index++) {
    const digest = hasher.copy().update(`device-${index}`).digest()
    addDigest(byDigest, digest)
    addHash(byHash, digest.toString('base64url').slice(0, 22))
    // while exact, both hold the same strings
    if (index === 100) expect([...byDigest.hashes!]).toEqual([...byHash.hashes!])
  }
  expect(byDigest.registers).toEqual(byHash.registers!)
  expect(addDigest(byDigest, hasher.copy().update('device-42').digest())).toBe(false)
})

test('a damaged row reads as what is sound in it: hashes that are not base64url are skipped, a short register blob is no registers', () => {
  const sound = hashOf('device-1')
  const sketch = sketchFromRow(`${sound}${'!'.repeat(22)}${hashOf('device-2')}`, null)
  expect(countOf(sketch)).toBe(2)
  expect(sketch.hashes!.has(sound)).toBe(true)
  expect(countOf(sketchFromRow(null, new Uint8Array(100)))).toBe(0)
  // and a sketch of many damaged hashes still turns into registers without throwing
  expect(() => sketchFromRow('?'.repeat(22 * 3000), null)).not.toThrow()
})

test('deviceHasher is HMAC-SHA256 with the key, and a sketch keeps the first 22 base64url characters of it', () => {
  const key = new Uint8Array(32).fill(7)
  const hash = deviceHasher(key)
  const sketch = emptySketch()
  for (const id of ['device-1', 'device-2', 'a:b.c_d-e', 'x'.repeat(200), 'ü→😀', 'y'.repeat(400), '']) {
    const expected = createHmac('sha256', key).update(id).digest()
    expect(Buffer.from(hash(id).subarray(0, 32))).toEqual(expected)
    addDigest(sketch, hash(id))
    expect(sketch.hashes!.has(expected.toString('base64url').slice(0, 22))).toBe(true)
  }
  expect(sketch.hashes!.size).toBe(7)
  // a key longer than a block is hashed first, as HMAC does
  const long = new Uint8Array(100).fill(3)
  expect(Buffer.from(deviceHasher(long)('device-1').subarray(0, 32))).toEqual(createHmac('sha256', long).update('device-1').digest())
})
