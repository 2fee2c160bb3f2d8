// What counting a device costs: the keyed hash of its id (issue 30's "counting on vs off" row).
//
//   node_modules/.bin/bun scripts/bench/device-hash.ts [--rounds 7]
//
// Insights and the release guard count distinct devices by HMAC-SHA256 of the device id with the
// data directory's insights.key (decisions §13/§16); stored sketches hold those hashes, so the
// function is fixed. This times, in this process (ns per device id, median of alternating rounds):
//   deviceHasher       what the update check runs (src/modules/insights/sketch.ts): the two
//                      SHA-256 passes of RFC 2104 over buffers made once, two Bun.SHA256.hash calls;
//   createHmac         node:crypto's HMAC object per device;
//   hasher.copy()      a keyed Bun.CryptoHasher made once, copied per device (what it did before);
//   one SHA-256 call   a single Bun.SHA256.hash of one 64-byte block: most of it is the call, so
//                      two of them are the floor of this hash on Bun's API (no way to keep the
//                      keyed midstate of HMAC between calls: a keyed CryptoHasher is spent by its
//                      first digest).
// Every variant's digest is checked against createHmac's first.
import { createHmac } from 'node:crypto'
import { parseArgs } from 'node:util'
import { deviceHasher } from '../../src/modules/insights/sketch'
import { median } from './support'

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '7' } } })
const rounds = Number(values.rounds)
const key = new Uint8Array(32).map((_, index) => (index * 37 + 11) & 0xff)
// ids shaped as the SDK makes them (a UUID) and as bench-device-N
const ids = Array.from({ length: 10_000 }, (_, index) => (index % 2 === 0 ? crypto.randomUUID() : `bench-device-${index}`))

const hash = deviceHasher(key)
const keyed = new Bun.CryptoHasher('sha256', key)
const block = new Uint8Array(64)
const out = new Uint8Array(32)
const variants: Record<string, (id: string) => unknown> = {
  deviceHasher: (id) => hash(id),
  createHmac: (id) => createHmac('sha256', key).update(id).digest(),
  'hasher.copy()': (id) => keyed.copy().update(id).digest(),
  'one SHA-256 call': () => Bun.SHA256.hash(block, out),
}

for (const id of ids.slice(0, 200)) {
  const expected = createHmac('sha256', key).update(id).digest('hex')
  if (hash(id).subarray(0, 32).toString('hex') !== expected) throw new Error(`deviceHasher differs from HMAC-SHA256 for ${id}`)
  if ((keyed.copy().update(id).digest('hex') as string) !== expected) throw new Error(`hasher.copy() differs for ${id}`)
}

const samples: Record<string, number[]> = Object.fromEntries(Object.keys(variants).map((name) => [name, []]))
const names = Object.keys(variants)
for (let round = 0; round < rounds; round++) {
  // alternate the order each round
  for (const name of round % 2 === 0 ? names : [...names].reverse()) {
    const run = variants[name]!
    const started = Bun.nanoseconds()
    for (let pass = 0; pass < 10; pass++) for (const id of ids) run(id)
    samples[name]!.push((Bun.nanoseconds() - started) / (10 * ids.length))
  }
}

const baseline = median(samples.deviceHasher!)
console.log(`device id hashing: ${rounds} alternating rounds of ${10 * ids.length} ids, ns per id (median, min)`)
for (const name of names) {
  const values = samples[name]!
  console.log(`  ${name.padEnd(18)} ${median(values).toFixed(0).padStart(6)} ns (${Math.min(...values).toFixed(0)})   ratio to deviceHasher ${(median(values) / baseline).toFixed(2)}`)
}
