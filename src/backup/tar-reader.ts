// A small streaming tar reader for restore: regular files and directories of ustar/pax archives, nothing else.
// Our own archives hold only those (archiver's tar writer); anything else is refused rather than guessed at.

export interface TarEntry {
  name: string
  type: 'file' | 'directory'
  size: number
}

/** What to do with one entry's bytes; `end` is called once all of them were written. */
export interface TarEntrySink {
  write(chunk: Uint8Array): void | Promise<void>
  end(): void | Promise<void>
}

/** The archive is not a tar we can read; the message names what is wrong. */
export class TarFormatError extends Error {}

const blockSize = 512

/** Buffers incoming chunks so that headers (fixed 512-byte blocks) can be read whole. */
class ByteQueue {
  private chunks: Uint8Array[] = []
  length = 0

  push(chunk: Uint8Array): void {
    if (chunk.byteLength === 0) return
    this.chunks.push(chunk)
    this.length += chunk.byteLength
  }

  /** Removes and returns up to `max` bytes as they are stored (no copy when one chunk suffices). */
  takeUpTo(max: number): Uint8Array {
    const first = this.chunks[0]!
    if (first.byteLength <= max) {
      this.chunks.shift()
      this.length -= first.byteLength
      return first
    }
    this.chunks[0] = first.subarray(max)
    this.length -= max
    return first.subarray(0, max)
  }

  take(count: number): Uint8Array {
    const out = new Uint8Array(count)
    let filled = 0
    while (filled < count) {
      const part = this.takeUpTo(count - filled)
      out.set(part, filled)
      filled += part.byteLength
    }
    return out
  }
}

function text(block: Uint8Array, offset: number, length: number): string {
  const field = block.subarray(offset, offset + length)
  const end = field.indexOf(0)
  return new TextDecoder().decode(end === -1 ? field : field.subarray(0, end))
}

function octal(block: Uint8Array, offset: number, length: number, what: string): number {
  // GNU base-256 for values too large for octal digits: high bit of the first byte set.
  if (block[offset]! & 0x80) {
    let value = block[offset]! & 0x7f
    for (let index = offset + 1; index < offset + length; index++) value = value * 256 + block[index]!
    return value
  }
  const digits = text(block, offset, length).trim()
  if (digits === '') return 0
  if (!/^[0-7]+$/.test(digits)) throw new TarFormatError(`damaged tar header: ${what} is not a number`)
  return parseInt(digits, 8)
}

function checksumMatches(block: Uint8Array): boolean {
  const recorded = octal(block, 148, 8, 'checksum')
  let sum = 0
  for (let index = 0; index < blockSize; index++) sum += index >= 148 && index < 156 ? 32 : block[index]!
  return sum === recorded
}

/** `path` and `size` from a pax extended header (records of the form "<length> key=value\n"). */
function paxRecords(bytes: Uint8Array): Map<string, string> {
  const records = new Map<string, string>()
  const content = new TextDecoder().decode(bytes)
  let position = 0
  while (position < content.length) {
    const space = content.indexOf(' ', position)
    if (space === -1) break
    const length = Number(content.slice(position, space))
    if (!Number.isInteger(length) || length <= 0) throw new TarFormatError('damaged pax header in the archive')
    const record = content.slice(space + 1, position + length - 1)
    const equals = record.indexOf('=')
    if (equals > 0) records.set(record.slice(0, equals), record.slice(equals + 1))
    position += length
  }
  return records
}

/**
 * Reads a tar stream, handing each regular file's bytes to the sink `onEntry` returns (in order,
 * with backpressure: the next chunk waits for `write`). Directory entries are reported with a size
 * of 0 and get no sink calls. Throws TarFormatError for a damaged or truncated archive.
 */
export async function readTar(
  source: AsyncIterable<Uint8Array>,
  onEntry: (entry: TarEntry) => TarEntrySink | Promise<TarEntrySink>,
): Promise<void> {
  const queue = new ByteQueue()
  const iterator = source[Symbol.asyncIterator]()
  let sourceDone = false
  // Fills the queue to at least `count` bytes; false when the stream ended first.
  const fill = async (count: number): Promise<boolean> => {
    while (queue.length < count && !sourceDone) {
      const next = await iterator.next()
      if (next.done) sourceDone = true
      else queue.push(next.value instanceof Uint8Array ? next.value : new Uint8Array(next.value as ArrayBuffer))
    }
    return queue.length >= count
  }

  let pax: Map<string, string> | null = null
  for (;;) {
    if (!(await fill(blockSize))) {
      if (queue.length === 0) return // no end-of-archive blocks, but nothing cut short either
      throw new TarFormatError('the archive ends in the middle of a tar header (truncated)')
    }
    const header = queue.take(blockSize)
    if (header.every((byte) => byte === 0)) {
      // End-of-archive marker. Read the rest anyway, so that the decompressor below still gets
      // to report a truncated or damaged stream (its checksum is at the very end).
      while (!sourceDone) {
        const next = await iterator.next()
        if (next.done) sourceDone = true
      }
      return
    }
    if (!checksumMatches(header)) throw new TarFormatError('damaged tar header (checksum mismatch)')

    const typeFlag = String.fromCharCode(header[156]!)
    const prefix = text(header, 345, 155)
    let name = prefix ? `${prefix}/${text(header, 0, 100)}` : text(header, 0, 100)
    let size = octal(header, 124, 12, 'size')
    if (pax) {
      name = pax.get('path') ?? name
      if (pax.has('size')) size = Number(pax.get('size'))
      pax = null
    }
    const padding = (blockSize - (size % blockSize)) % blockSize

    if (typeFlag === 'x' || typeFlag === 'g') {
      if (size > 1024 * 1024) throw new TarFormatError('pax header too large')
      if (!(await fill(size + padding))) throw new TarFormatError('the archive ends in the middle of a pax header (truncated)')
      const records = paxRecords(queue.take(size))
      queue.take(padding)
      if (typeFlag === 'x') pax = records
      continue
    }
    if (typeFlag === '5') {
      await onEntry({ name, type: 'directory', size: 0 })
      if (size + padding > 0) {
        if (!(await fill(size + padding))) throw new TarFormatError(`the archive ends in the middle of ${name} (truncated)`)
        queue.take(size + padding)
      }
      continue
    }
    if (typeFlag !== '0' && typeFlag !== '\0') {
      throw new TarFormatError(`the archive holds ${name}, which is not a regular file or directory (tar type "${typeFlag}")`)
    }

    const sink = await onEntry({ name, type: 'file', size })
    let remaining = size
    while (remaining > 0) {
      if (queue.length === 0 && !(await fill(1))) throw new TarFormatError(`the archive ends in the middle of ${name} (truncated)`)
      const chunk = queue.takeUpTo(remaining)
      remaining -= chunk.byteLength
      await sink.write(chunk)
    }
    if (!(await fill(padding))) throw new TarFormatError(`the archive ends in the middle of ${name} (truncated)`)
    queue.take(padding)
    await sink.end()
  }
}
