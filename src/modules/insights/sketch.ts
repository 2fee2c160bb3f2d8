// The distinct devices of one version and day: exact up to `exactLimit` devices, a HyperLogLog past it.
//
// A row per device (insight_devices until schema 7) made every new device an insert at a random
// place of one B-tree: 4 to 6 µs of SQLite work each, growing with the day's devices, on the thread
// that answers update checks. A sketch per (version, day) is one row of at most 45 KB (16 KB as
// registers) rewritten per flush.
// Below the limit the sketch is the devices' hashes themselves, so small fleets (and tests) count
// exactly; past it, 16,384 one-byte registers estimate the count with a standard error of 0.81 %,
// and sketches of several days or versions still merge into the distinct devices of all of them.

/** Devices counted exactly, as their hashes, before a sketch turns into registers (2,048 × 22 characters ≈ 45 KB). */
export const exactLimit = 2048
/** Length of a device hash: 22 base64url characters (the first 128 bits of an HMAC-SHA256). */
export const deviceHashLength = 22

const precision = 14
const registerCount = 1 << precision
/** bits of the 64-bit hash left after the register index */
const rankBits = 64 - precision

export interface DeviceSketch {
  /** the exact set of device hashes, or null once the sketch is registers */
  hashes: Set<string> | null
  /** HyperLogLog registers (rank 0–51 each), or null while exact */
  registers: Uint8Array | null
}

export function emptySketch(): DeviceSketch {
  return { hashes: new Set(), registers: null }
}

const hashPattern = /^[A-Za-z0-9_-]{22}$/

/**
 * A sketch from its stored row: `hashes` concatenated 22-character hashes, or `registers`. What
 * is not a hash or a register array (a damaged row) is skipped rather than thrown on: one bad row
 * must not stop every later flush.
 */
export function sketchFromRow(hashes: string | null, registers: Uint8Array | null): DeviceSketch {
  if (registers !== null && registers.length === registerCount) return { hashes: null, registers: new Uint8Array(registers) }
  const sketch = emptySketch()
  const text = hashes ?? ''
  for (let at = 0; at + deviceHashLength <= text.length; at += deviceHashLength) {
    const hash = text.slice(at, at + deviceHashLength)
    if (hashPattern.test(hash)) sketch.hashes!.add(hash)
  }
  // a row migrated from schema 6 may hold more than the limit
  if (sketch.hashes!.size > exactLimit) toRegisters(sketch)
  return sketch
}

/** Whether a stored row holds more hashes than a sketch keeps exactly (a row migrated from schema 6): it is worth writing back as registers. */
export function isOversized(hashes: string | null): boolean {
  return hashes !== null && hashes.length > exactLimit * deviceHashLength
}

/** The row to store: exactly one of the two is set. */
export function sketchRow(sketch: DeviceSketch): { hashes: string | null; registers: Uint8Array | null } {
  return sketch.hashes !== null ? { hashes: [...sketch.hashes].join(''), registers: null } : { hashes: null, registers: sketch.registers }
}

/** Adds a device hash (22 characters); answers whether the sketch changed. */
export function addHash(sketch: DeviceSketch, hash: string): boolean {
  if (sketch.hashes !== null) return addExact(sketch, hash)
  return setRegister(sketch.registers!, Buffer.from(hash.slice(0, 11), 'base64url'))
}

/**
 * The keyed hash of device ids that insights and the release guard share: HMAC-SHA256 with the
 * data directory's insights.key (RFC 2104), computed as its two SHA-256 passes over buffers made
 * once. `CryptoHasher.copy()` per device made a native hash context per update check, and freeing
 * those kept the allocator's purge thread busy: several µs of CPU per request under load. Every
 * digest is written into the same 64-byte buffer (the digest is its first 32 bytes), so counting a
 * device allocates nothing: use each one before asking for the next.
 */
export function deviceHasher(key: Uint8Array): (deviceId: string) => Buffer {
  const blockSize = 64
  // a key longer than a block is hashed first (RFC 2104); insights.key is 32 bytes
  const blockKey = new Uint8Array(blockSize)
  blockKey.set(key.length > blockSize ? new Uint8Array(Bun.SHA256.hash(key) as Uint8Array) : key)
  // inner: (key ^ ipad) ‖ deviceId as UTF-8; outer: (key ^ opad) ‖ the inner digest
  const longestId = 4 * 256
  const inner = Buffer.alloc(blockSize + longestId)
  const outer = Buffer.alloc(blockSize + 32)
  for (let index = 0; index < blockSize; index++) {
    inner[index] = blockKey[index]! ^ 0x36
    outer[index] = blockKey[index]! ^ 0x5c
  }
  const innerDigest = outer.subarray(blockSize)
  // one view of `inner` per message length, made once: no object per device
  const innerViews: Uint8Array[] = []
  const innerView = (bytes: number) => (innerViews[bytes] ??= inner.subarray(0, blockSize + bytes))
  const digest = Buffer.alloc(64)
  const digestView = digest.subarray(0, 32)
  const keyed = new Bun.CryptoHasher('sha256', key)
  return (deviceId) => {
    // UTF-8 takes at most 3 bytes per UTF-16 unit; longer ids (none the runtime accepts) take the hasher
    if (deviceId.length * 3 > longestId) {
      keyed.copy().update(deviceId).digest(digest)
      return digest
    }
    const bytes = inner.write(deviceId, blockSize, 'utf8')
    Bun.SHA256.hash(innerView(bytes), innerDigest)
    Bun.SHA256.hash(outer, digestView)
    return digest
  }
}

/** The 17 digest bytes whose base64url holds a device hash's 22 characters. */
const hashBytes = Math.ceil((deviceHashLength * 6) / 8)

/**
 * Adds a device by its HMAC digest, as counting does: while exact the sketch keeps the digest's
 * 22-character hash, once registers it reads the digest's bytes and makes no string.
 */
export function addDigest(sketch: DeviceSketch, digest: Buffer): boolean {
  if (sketch.hashes !== null) return addExact(sketch, digest.toString('base64url', 0, hashBytes).slice(0, deviceHashLength))
  return setRegister(sketch.registers!, digest)
}

function addExact(sketch: DeviceSketch, hash: string): boolean {
  const hashes = sketch.hashes!
  const before = hashes.size
  hashes.add(hash)
  if (hashes.size === before) return false
  if (hashes.size > exactLimit) toRegisters(sketch)
  return true
}

/** Adds every device of `source` to `target` (the union of the two); answers whether `target` changed. */
export function mergeInto(target: DeviceSketch, source: DeviceSketch): boolean {
  let changed = false
  if (source.hashes !== null) {
    for (const hash of source.hashes) if (addHash(target, hash)) changed = true
    return changed
  }
  if (target.hashes !== null) {
    toRegisters(target)
    changed = true
  }
  const registers = target.registers!
  const other = source.registers!
  for (let index = 0; index < registerCount; index++) {
    if (other[index]! > registers[index]!) {
      registers[index] = other[index]!
      changed = true
    }
  }
  return changed
}

/**
 * The distinct devices of several sketches (days, versions): their union's count, and never fewer
 * than the largest of them (an estimate past the exact limit could come out a little under one of
 * its exact members).
 */
export function distinctDevices(sketches: Iterable<DeviceSketch>): number {
  const union = emptySketch()
  let largest = 0
  for (const sketch of sketches) {
    mergeInto(union, sketch)
    largest = Math.max(largest, countOf(sketch))
  }
  return Math.max(countOf(union), largest)
}

/** Whether any device was added (registers are made only past the exact limit). */
export function hasDevices(sketch: DeviceSketch): boolean {
  return sketch.hashes === null || sketch.hashes.size > 0
}

/** The distinct devices: exact while the sketch holds hashes, else the HyperLogLog estimate, rounded. */
export function countOf(sketch: DeviceSketch): number {
  return sketch.hashes !== null ? sketch.hashes.size : Math.round(estimate(sketch.registers!))
}

function toRegisters(sketch: DeviceSketch): void {
  const registers = new Uint8Array(registerCount)
  for (const hash of sketch.hashes!) setRegister(registers, Buffer.from(hash.slice(0, 11), 'base64url'))
  sketch.hashes = null
  sketch.registers = registers
}

/** The register of a hash's first 64 bits: the top 14 bits pick it, the rank is 1 + the leading zeros of the other 50. */
function setRegister(registers: Uint8Array, bytes: Buffer): boolean {
  const high = bytes.readUInt32BE(0)
  const low = bytes.readUInt32BE(4)
  const index = high >>> (32 - precision)
  const rest = high & ((1 << (32 - precision)) - 1)
  const rank = rest !== 0 ? Math.clz32(rest) - precision + 1 : low !== 0 ? 32 - precision + Math.clz32(low) + 1 : rankBits + 1
  if (rank <= registers[index]!) return false
  registers[index] = rank
  return true
}

/**
 * Ertl's improved raw estimator ("New cardinality estimation algorithms for HyperLogLog
 * sketches", 2017): unbiased from a handful of devices to billions, without the bias tables of
 * HyperLogLog++ or a switch to linear counting.
 */
function estimate(registers: Uint8Array): number {
  const histogram = new Array<number>(rankBits + 2).fill(0)
  for (let index = 0; index < registerCount; index++) histogram[registers[index]!]!++
  let z = registerCount * tau(1 - histogram[rankBits + 1]! / registerCount)
  for (let rank = rankBits; rank >= 1; rank--) z = 0.5 * (z + histogram[rank]!)
  z += registerCount * sigma(histogram[0]! / registerCount)
  return (registerCount * registerCount) / (2 * Math.LN2 * z)
}

function sigma(x: number): number {
  if (x === 1) return Infinity
  let y = 1
  let z = x
  let previous: number
  do {
    x *= x
    previous = z
    z += x * y
    y += y
  } while (z !== previous)
  return z
}

function tau(x: number): number {
  if (x === 0 || x === 1) return 0
  let y = 1
  let z = 1 - x
  let previous: number
  do {
    x = Math.sqrt(x)
    previous = z
    y *= 0.5
    z -= (1 - x) ** 2 * y
  } while (z !== previous)
  return z / 3
}
