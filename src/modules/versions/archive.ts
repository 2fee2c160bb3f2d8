// Checks an uploaded assets archive (decisions §5): a real zip whose entries stay in the platform's folders, within limits.
import { open, type FileHandle } from 'node:fs/promises'
import zlib from 'node:zlib'
// How much an archive may hold: the server takes the limits from its configuration, the developer CLI uses the defaults.
import { defaultArchiveLimits, type ArchiveLimits } from '../../config'

export { defaultArchiveLimits, type ArchiveLimits }

export type Platform = 'ios' | 'android'

/**
 * Entries smaller than this are not held to the compression ratio: a few KB of blank JSON deflate
 * past 200:1 honestly, and what a bomb costs is size, which the total limit bounds anyway.
 */
export const ratioFloorBytes = 1024 * 1024

/** Where each platform's runtime expects the archive's entries when it unpacks next to the bundle. */
const allowedTop: Record<Platform, { test: (first: string) => boolean; describe: string }> = {
  ios: { test: (first) => first === 'assets', describe: 'under assets/' },
  android: { test: (first) => first === 'raw' || /^drawable-[A-Za-z0-9_]+(?:-[A-Za-z0-9_]+)*$/.test(first), describe: 'under drawable-*/ or raw/' },
}

/** Why the name is unacceptable, or null. */
export function entryNameProblem(name: string, platform: Platform): string | null {
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(name)) return `has a name with control characters (${JSON.stringify(name)})`
  if (name.startsWith('/') || /^[A-Za-z]:/.test(name) || name.startsWith('\\')) return `has an absolute path (${name})`
  const segments = name.replace(/\\/g, '/').split('/')
  if (segments.includes('..')) return `has a path that leaves its folder (${name})`
  if (segments.includes('.') || segments.slice(0, -1).includes('')) return `has an unusual path (${name})`
  const first = segments[0]!
  if (!allowedTop[platform].test(first)) return `has an entry outside the allowed folders, which must be ${allowedTop[platform].describe} (${name})`
  return null
}

/** An archive the checks refuse; the message follows the field name ("assetsIos has …"). */
class Refusal extends Error {}
const invalid = (why?: string) => new Refusal(why ? `is not a valid zip archive (${why})` : 'is not a valid zip archive')

const SIG_LOCAL = 0x04034b50
const SIG_CENTRAL = 0x02014b50
const SIG_END = 0x06054b50
const SIG_ZIP64_END = 0x06064b50
const SIG_ZIP64_LOCATOR = 0x07064b50
const SIG_DESCRIPTOR = 0x08074b50
const FLAG_ENCRYPTED = 0x1
const FLAG_DESCRIPTOR = 0x8
const FLAG_UTF8 = 0x800
const EXTRA_ZIP64 = 0x0001
const EXTRA_UNICODE_PATH = 0x7075
const TYPE_MASK = 0o170000
const TYPE_FILE = 0o100000
const TYPE_DIRECTORY = 0o040000
const TYPE_LINK = 0o120000
/** a central directory larger than this is not one of assets (20,000 names of 3 KB) */
const centralDirectoryLimit = 64 * 1024 * 1024

interface CentralEntry {
  name: string
  rawName: Uint8Array
  flags: number
  method: number
  crc: number
  packedSize: number
  size: number
  localOffset: number
}

/**
 * Positional reads through a 1 MiB window: the local records are walked in file order, and one
 * read per header of a 20,000-entry archive would cost more than the checks themselves.
 */
class ArchiveFile {
  // windows are never reused, so a slice handed out stays valid after the window moves on
  private window = Buffer.alloc(0)
  private windowStart = 0
  private readonly handle: FileHandle
  readonly size: number

  constructor(handle: FileHandle, size: number) {
    this.handle = handle
    this.size = size
  }

  async read(position: number, length: number): Promise<Buffer> {
    if (position < 0 || position + length > this.size) throw invalid('it ends early')
    if (position >= this.windowStart && position + length <= this.windowStart + this.window.length) {
      return this.window.subarray(position - this.windowStart, position - this.windowStart + length)
    }
    const windowLength = Math.min(Math.max(length, 1024 * 1024), this.size - position)
    const buffer = Buffer.alloc(windowLength)
    let done = 0
    while (done < windowLength) {
      const { bytesRead } = await this.handle.read(buffer, done, windowLength - done, position + done)
      if (bytesRead === 0) throw invalid('it ends early')
      done += bytesRead
    }
    this.window = buffer
    this.windowStart = position
    return buffer.subarray(0, length)
  }
}

/** Names are UTF-8 when flag 11 says so, else CP437, whose bytes below 0x80 are ASCII: the characters the checks look at. */
function decodeName(bytes: Uint8Array, flags: number): string {
  return flags & FLAG_UTF8 ? new TextDecoder('utf-8').decode(bytes) : Buffer.from(bytes).toString('latin1')
}

/** Each extra field of a record, by header id. */
function extraFields(extra: Buffer): Map<number, Buffer> {
  const fields = new Map<number, Buffer>()
  let at = 0
  while (at + 4 <= extra.length) {
    const id = extra.readUInt16LE(at)
    const length = extra.readUInt16LE(at + 2)
    if (at + 4 + length > extra.length) throw invalid('an extra field overruns its record')
    fields.set(id, extra.subarray(at + 4, at + 4 + length))
    at += 4 + length
  }
  return fields
}

/**
 * The Info-ZIP Unicode Path (0x7075): some unpackers use this name instead of the raw one, so it
 * must pass the same checks. Layout: version (1), CRC-32 of the raw name (4), UTF-8 name.
 */
function unicodePathProblem(fields: Map<number, Buffer>, platform: Platform): string | null {
  const field = fields.get(EXTRA_UNICODE_PATH)
  if (!field) return null
  if (field.length < 5) return 'has a damaged Unicode path field'
  return entryNameProblem(new TextDecoder('utf-8').decode(field.subarray(5)), platform)
}

/** Sizes and offset marked 0xFFFFFFFF are in the ZIP64 extra field, in this order. */
function applyZip64(fields: Map<number, Buffer>, values: { size: number; packedSize: number; localOffset?: number }) {
  const field = fields.get(EXTRA_ZIP64)
  let at = 0
  const next = () => {
    if (!field || at + 8 > field.length) throw invalid('a ZIP64 size is missing')
    const value = Number(field.readBigUInt64LE(at))
    at += 8
    return value
  }
  if (values.size === 0xffffffff) values.size = next()
  if (values.packedSize === 0xffffffff) values.packedSize = next()
  if (values.localOffset === 0xffffffff) values.localOffset = next()
}

function typeProblem(externalAttributes: number, name: string): string | null {
  // Decided by the unix type bits whatever "made by" says: zip4j (and others) honour them
  // regardless, so a link from a "DOS" archive is still a link on the phone.
  const type = (externalAttributes >>> 16) & TYPE_MASK
  if (type === 0 || type === TYPE_FILE || type === TYPE_DIRECTORY) return null
  if (type === TYPE_LINK) return `contains a symbolic link (${name}); archives must hold plain files`
  return `contains a special file (${name}); archives must hold plain files and folders`
}

interface EndRecord {
  entryCount: number
  centralOffset: number
  centralSize: number
  /** where the central directory must end: the ZIP64 end record, or the end record */
  centralEnd: number
}

async function readEndRecord(file: ArchiveFile): Promise<EndRecord> {
  const fileSize = file.size
  if (fileSize < 22) throw invalid()
  const tailLength = Math.min(fileSize, 22 + 0xffff)
  const tail = await file.read(fileSize - tailLength, tailLength)
  let at = -1
  for (let i = tail.length - 22; i >= 0; i--) {
    if (tail.readUInt32LE(i) === SIG_END && i + 22 + tail.readUInt16LE(i + 20) === tail.length) {
      at = i
      break
    }
  }
  if (at < 0) throw invalid()
  const endOffset = fileSize - tailLength + at
  if (tail.readUInt16LE(at + 4) !== 0 || tail.readUInt16LE(at + 6) !== 0) throw invalid('it spans several disks')
  const record: EndRecord = {
    entryCount: tail.readUInt16LE(at + 10),
    centralSize: tail.readUInt32LE(at + 12),
    centralOffset: tail.readUInt32LE(at + 16),
    centralEnd: endOffset,
  }
  if (endOffset >= 20) {
    const locator = await file.read(endOffset - 20, 20)
    if (locator.readUInt32LE(0) === SIG_ZIP64_LOCATOR) {
      const zip64Offset = Number(locator.readBigUInt64LE(8))
      if (zip64Offset + 56 > endOffset - 20) throw invalid('its ZIP64 end record is misplaced')
      const zip64 = await file.read(zip64Offset, 56)
      if (zip64.readUInt32LE(0) !== SIG_ZIP64_END) throw invalid('its ZIP64 end record is missing')
      record.entryCount = Number(zip64.readBigUInt64LE(32))
      record.centralSize = Number(zip64.readBigUInt64LE(40))
      record.centralOffset = Number(zip64.readBigUInt64LE(48))
      record.centralEnd = zip64Offset
    }
  }
  return record
}

/** Where an entry lands when unpacked, `\\` read as `/` (as iOS unpackers do); folders end in `/`. */
function diskPath(name: string, externalAttributes: number): string {
  const path = name.replace(/\\/g, '/')
  const isFolder = path.endsWith('/') || ((externalAttributes >>> 16) & TYPE_MASK) === TYPE_DIRECTORY || (externalAttributes & 0x10) !== 0
  return isFolder && !path.endsWith('/') ? `${path}/` : path
}

/**
 * Entries that cannot be unpacked side by side: a file where another entry needs a folder
 * (`assets/x` and `assets/x/y.png`: every unpacker fails on the second), or one file twice once `\\`
 * is read as `/`. Sorted, so a file's folder twin is found by binary search: no per-prefix sets,
 * whose cost grows with the square of a name's depth.
 */
function clashingPath(paths: string[]): string | null {
  const sorted = [...paths].sort()
  for (let index = 0; index < sorted.length; index++) {
    const path = sorted[index]!
    if (path.endsWith('/')) continue
    if (sorted[index + 1] === path) return `has two entries named ${path}`
    const folder = `${path}/`
    let low = index + 1
    let high = sorted.length
    while (low < high) {
      const middle = (low + high) >>> 1
      if (sorted[middle]! < folder) low = middle + 1
      else high = middle
    }
    if (low < sorted.length && sorted[low]!.startsWith(folder)) return `has both a file and a folder named ${path}; such an archive cannot be unpacked`
  }
  return null
}

/** Reads every central directory record, refusing at the first bad name, type or limit. */
function readCentralDirectory(directory: Buffer, count: number, platform: Platform, limits: ArchiveLimits): CentralEntry[] {
  const entries: CentralEntry[] = []
  const names = new Set<string>()
  const paths: string[] = []
  let unpacked = 0
  let at = 0
  for (let index = 0; index < count; index++) {
    if (at + 46 > directory.length || directory.readUInt32LE(at) !== SIG_CENTRAL) throw invalid('its central directory is damaged')
    const flags = directory.readUInt16LE(at + 8)
    const method = directory.readUInt16LE(at + 10)
    const nameLength = directory.readUInt16LE(at + 28)
    const extraLength = directory.readUInt16LE(at + 30)
    const commentLength = directory.readUInt16LE(at + 32)
    const end = at + 46 + nameLength + extraLength + commentLength
    if (end > directory.length) throw invalid('its central directory is damaged')
    const rawName = directory.subarray(at + 46, at + 46 + nameLength)
    const name = decodeName(rawName, flags)
    const fields = extraFields(directory.subarray(at + 46 + nameLength, at + 46 + nameLength + extraLength))
    const values = { size: directory.readUInt32LE(at + 24), packedSize: directory.readUInt32LE(at + 20), localOffset: directory.readUInt32LE(at + 42) }
    applyZip64(fields, values)

    const problem = entryNameProblem(name, platform) ?? unicodePathProblem(fields, platform) ?? typeProblem(directory.readUInt32LE(at + 38), name)
    if (problem) throw new Refusal(problem)
    if (flags & FLAG_ENCRYPTED) throw new Refusal(`has an encrypted entry (${name})`)
    if (method !== 0 && method !== 8) throw new Refusal(`has an entry (${name}) compressed with method ${method}; only stored and deflated entries are accepted`)
    if (method === 0 && values.size !== values.packedSize) throw invalid(`the sizes of ${name} disagree`)
    if (names.has(name)) throw new Refusal(`has two entries named ${name}`)
    names.add(name)
    paths.push(diskPath(name, directory.readUInt32LE(at + 38)))
    if (values.size >= ratioFloorBytes && values.size > values.packedSize * limits.maxCompressionRatio) {
      throw new Refusal(`has an entry (${name}) that unpacks to more than ${limits.maxCompressionRatio} times its packed size`)
    }
    unpacked += values.size
    if (unpacked > limits.maxUnpackedBytes) throw new Refusal(`unpacks to more than ${formatBytes(limits.maxUnpackedBytes)}, the limit`)
    entries.push({ name, rawName, flags, method, crc: directory.readUInt32LE(at + 16), ...values })
    at = end
  }
  if (at !== directory.length) throw invalid('its central directory holds more records than it counts')
  const clash = clashingPath(paths)
  if (clash) throw new Refusal(clash)
  return entries
}

function formatBytes(bytes: number): string {
  if (bytes >= 1024 ** 3 && bytes % 1024 ** 3 === 0) return `${bytes / 1024 ** 3} GiB`
  if (bytes >= 1024 ** 2) return `${Math.floor(bytes / 1024 ** 2)} MiB`
  return `${bytes} bytes`
}

/**
 * Inflates (or reads, when stored) one entry's data and answers whether it is exactly what the
 * headers say: the unpacked size and CRC, and for deflate that the stream ends exactly at the
 * packed size. A streaming unpacker (Java's ZipInputStream) reads the next local header where the
 * deflate stream ends, so data past its end could hide an entry; and it unpacks until the stream
 * ends, whatever the size said, so a size that lies would void the limits.
 */
async function dataMatches(file: ArchiveFile, start: number, entry: CentralEntry): Promise<boolean> {
  const chunkSize = 1024 * 1024
  if (entry.method === 0) {
    let crc = 0
    for (let done = 0; done < entry.packedSize; ) {
      const chunk = await file.read(start + done, Math.min(chunkSize, entry.packedSize - done))
      crc = zlib.crc32(chunk, crc)
      done += chunk.length
    }
    return crc === entry.crc
  }
  if (entry.packedSize <= chunkSize && entry.size <= 8 * chunkSize) {
    // small entries in one call: a zlib stream per entry costs more than the inflating
    try {
      const data = await file.read(start, entry.packedSize)
      const result = zlib.inflateRawSync(data, { info: true, maxOutputLength: Math.max(entry.size, 1) } as zlib.ZlibOptions) as unknown as { buffer: Buffer; engine: { bytesWritten: number } }
      return result.buffer.length === entry.size && zlib.crc32(result.buffer) === entry.crc && result.engine.bytesWritten === entry.packedSize
    } catch (error) {
      if (error instanceof Refusal) throw error
      return false
    }
  }
  const inflate = zlib.createInflateRaw()
  let produced = 0
  let crc = 0
  let tooLong = false
  const finished = new Promise<boolean>((resolve) => {
    inflate.on('data', (chunk: Buffer) => {
      produced += chunk.length
      if (produced > entry.size) {
        tooLong = true
        inflate.destroy()
        resolve(false)
        return
      }
      crc = zlib.crc32(chunk, crc)
    })
    inflate.on('error', () => resolve(false))
    inflate.on('close', () => resolve(false))
    inflate.on('end', () => resolve(produced === entry.size && crc === entry.crc && inflate.bytesWritten === entry.packedSize))
  })
  for (let done = 0; done < entry.packedSize && !tooLong && !inflate.destroyed; ) {
    const chunk = await file.read(start + done, Math.min(chunkSize, entry.packedSize - done))
    done += chunk.length
    if (!inflate.write(chunk) && !inflate.destroyed) {
      await new Promise<void>((resolve) => {
        const done = () => {
          inflate.off('drain', done).off('close', done)
          resolve()
        }
        inflate.on('drain', done).on('close', done)
      })
    }
  }
  if (!inflate.destroyed) inflate.end()
  return finished
}

/**
 * Walks the local headers in file order, as a streaming unpacker does: each must start where the
 * previous entry ended, carry the central directory's name, method and sizes, and the last must end
 * where the central directory starts, so there is nowhere to hide an entry the directory does not list.
 */
async function checkLocalRecords(file: ArchiveFile, entries: CentralEntry[], centralOffset: number, platform: Platform): Promise<void> {
  const ordered = [...entries].sort((a, b) => a.localOffset - b.localOffset)
  let expected = 0
  for (const entry of ordered) {
    if (entry.localOffset !== expected) throw invalid(`the local record of ${entry.name} is not where the previous one ends`)
    const header = await file.read(entry.localOffset, 30)
    if (header.readUInt32LE(0) !== SIG_LOCAL) throw invalid(`the local record of ${entry.name} is missing`)
    const flags = header.readUInt16LE(6)
    const nameLength = header.readUInt16LE(26)
    const extraLength = header.readUInt16LE(28)
    const rest = await file.read(entry.localOffset + 30, nameLength + extraLength)
    const localName = rest.subarray(0, nameLength)
    if (!localName.equals(entry.rawName)) {
      const shown = decodeName(localName, flags)
      throw new Refusal(entryNameProblem(shown, platform) ?? `has an entry whose local name (${shown}) differs from its directory name (${entry.name})`)
    }
    const fields = extraFields(rest.subarray(nameLength))
    const problem = unicodePathProblem(fields, platform)
    if (problem) throw new Refusal(problem)
    if (flags & FLAG_ENCRYPTED) throw new Refusal(`has an encrypted entry (${entry.name})`)
    if (header.readUInt16LE(8) !== entry.method) throw invalid(`the local record of ${entry.name} names another compression method`)
    const usesDescriptor = (flags & FLAG_DESCRIPTOR) !== 0
    if (!usesDescriptor) {
      const local = { size: header.readUInt32LE(22), packedSize: header.readUInt32LE(18) }
      applyZip64(fields, local)
      if (header.readUInt32LE(14) !== entry.crc || local.size !== entry.size || local.packedSize !== entry.packedSize) {
        throw invalid(`the local record of ${entry.name} disagrees with the central directory`)
      }
    }
    const dataStart = entry.localOffset + 30 + nameLength + extraLength
    if (dataStart + entry.packedSize > centralOffset) throw invalid(`the data of ${entry.name} overruns the central directory`)
    if (!(await dataMatches(file, dataStart, entry))) throw invalid(`the data of ${entry.name} does not match its sizes and checksum`)
    expected = dataStart + entry.packedSize
    if (usesDescriptor) expected += await descriptorLength(file, expected, entry, centralOffset)
  }
  if (expected !== centralOffset) throw invalid('there are bytes between the last entry and the central directory')
}

/** The data descriptor after an entry: optional signature, CRC, then 4- or 8-byte sizes; it must repeat the directory's values. */
async function descriptorLength(file: ArchiveFile, at: number, entry: CentralEntry, limit: number): Promise<number> {
  const available = Math.min(24, limit - at)
  if (available < 12) throw invalid(`the data descriptor of ${entry.name} is missing`)
  const bytes = await file.read(at, available)
  const start = bytes.readUInt32LE(0) === SIG_DESCRIPTOR && available >= 16 ? 4 : 0
  const candidates: [number, () => [number, number]][] = [
    [start + 12, () => [bytes.readUInt32LE(start + 4), bytes.readUInt32LE(start + 8)]],
    [start + 20, () => [Number(bytes.readBigUInt64LE(start + 4)), Number(bytes.readBigUInt64LE(start + 12))]],
  ]
  for (const [length, sizes] of candidates) {
    if (length > available) continue
    const [packedSize, size] = sizes()
    if (bytes.readUInt32LE(start) === entry.crc && packedSize === entry.packedSize && size === entry.size) return length
  }
  throw invalid(`the data descriptor of ${entry.name} disagrees with the central directory`)
}

/**
 * Checks the zip at `path` and returns the first problem as a phrase to follow the field name
 * ("assetsIos is not a valid zip archive"), or null when it is fine. The entry count is checked
 * from the end record before any entry is read, so a million-entry archive costs nothing.
 */
export async function checkAssetsArchive(path: string, platform: Platform, limits: ArchiveLimits = defaultArchiveLimits): Promise<string | null> {
  const handle = await open(path, 'r')
  try {
    const file = new ArchiveFile(handle, (await handle.stat()).size)
    const end = await readEndRecord(file)
    if (end.entryCount > limits.maxEntries) return `has ${end.entryCount} entries; at most ${limits.maxEntries} are accepted`
    if (end.centralOffset + end.centralSize !== end.centralEnd) throw invalid('its central directory is not where the end record says')
    if (end.centralSize > centralDirectoryLimit) throw new Refusal('has a central directory larger than 64 MiB')
    const directory = await file.read(end.centralOffset, end.centralSize)
    const entries = readCentralDirectory(directory, end.entryCount, platform, limits)
    await checkLocalRecords(file, entries, end.centralOffset, platform)
    return null
  } catch (error) {
    if (error instanceof Refusal) return error.message
    // a Buffer read past its end: offsets in the records that point nowhere
    if (error instanceof RangeError) return 'is not a valid zip archive'
    throw error
  } finally {
    await handle.close()
  }
}
