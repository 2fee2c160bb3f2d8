// Parsing a `Range` request header against a file size (RFC 9110 §14), for resumable downloads.

/** Inclusive byte positions, as in `Content-Range: bytes start-end/size`. */
export interface ByteRange {
  start: number
  end: number
}

/**
 * What to answer for a `Range` header on a file of `size` bytes:
 * - `{ start, end }`: 206 with that part;
 * - `'unsatisfiable'`: 416 with `Content-Range: bytes *\/size` — a single `bytes=` range that starts
 *   at or past the end, is reversed (`5-2`), is a zero-length suffix (`-0`), or is not made of
 *   digits. decisions §6 says "bad range → 416", so a malformed `bytes=` range is refused rather
 *   than silently ignored;
 * - `'ignore'`: 200 with the whole file — no header, a unit other than `bytes` (RFC 9110 lets a
 *   server ignore those), or several ranges (`bytes=0-1,5-9`). Runtimes resume with one range;
 *   answering multipart/byteranges would be code no client here uses, and the whole file is a
 *   correct answer to any Range request.
 */
export function parseRange(header: string | null | undefined, size: number): ByteRange | 'unsatisfiable' | 'ignore' {
  if (header === null || header === undefined) return 'ignore'
  const match = /^\s*bytes\s*=\s*(.*)$/i.exec(header)
  if (!match) return 'ignore'
  const spec = match[1]!.trim()
  if (spec.includes(',')) return 'ignore'
  const parts = /^(\d*)\s*-\s*(\d*)$/.exec(spec)
  if (!parts) return 'unsatisfiable'
  const [, first, last] = parts as unknown as [string, string, string]
  if (first === '' && last === '') return 'unsatisfiable'
  if (first === '') {
    // suffix range: the last N bytes (all of them when N ≥ size)
    const length = Number(last)
    if (length === 0 || size === 0) return 'unsatisfiable'
    return { start: Math.max(0, size - length), end: size - 1 }
  }
  const start = Number(first)
  if (start >= size) return 'unsatisfiable'
  if (last === '') return { start, end: size - 1 }
  const end = Number(last)
  if (end < start) return 'unsatisfiable'
  return { start, end: Math.min(end, size - 1) }
}
