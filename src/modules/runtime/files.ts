// Answering a stored file (decisions §6): headers, HEAD, If-None-Match, single ranges; bodies stream from disk.
import { statSync } from 'node:fs'
import { AppError } from '../../http/errors'
import { parseRange } from '../../http/range'
import { runningRequestId, toldLength } from '../../http/request-log'
import { idleTimeoutStream, readWithin, type ReadResult } from '../../storage/idle'
import type { CountSubject } from '../insights/counters'
import { fileKinds, type FileKind } from '../versions/file-kinds'

export interface StoredFile {
  kind: FileKind
  /** the blob's path in the data directory ('' when the blob is in a bucket) */
  path: string
  sha256: string
  size: number
  /** published versions never change, so they may be cached anywhere for a year */
  published: boolean
  /** the version it belongs to (what insights count a download under) */
  version: CountSubject
  /** overrides the policy `published` implies (release-stable URLs answer whatever is live: a short max-age) */
  cacheControl?: string
}

/** The parts of a request a file answer depends on. */
export interface FileRequest {
  method: string
  range: string | null
  ifNoneMatch: string | null
}

export const publishedCacheControl = 'public, max-age=31536000, immutable'
export const unpublishedCacheControl = 'private, no-cache'
/** release-stable URLs (decisions §9): caches revalidate within a minute, cheaply by the sha256 ETag */
export const releaseCacheControl = 'public, max-age=60'

/** `If-None-Match` matches when it is `*` or lists our tag (weak comparison, RFC 9110 §13.1.2). */
export function etagMatches(ifNoneMatch: string, etag: string): boolean {
  const trimmed = ifNoneMatch.trim()
  if (trimmed === '*') return true
  return trimmed.split(',').some((candidate) => candidate.trim().replace(/^W\//, '') === etag)
}

/**
 * Throws 500 STORED_FILE_MISSING when the blob is not on disk (deleted by hand, a bad restore).
 * Without this check the response wraps a `Bun.file` that fails only once Bun starts sending it:
 * a plain-text 500 from Bun, logged as a 200. One stat per download; downloads are throughput-bound.
 * The path goes to the log only: messages never carry file paths (decisions §1).
 */
function assertStored(file: StoredFile, log: (line: string) => void): void {
  if (statSync(file.path, { throwIfNoEntry: false })?.isFile()) return
  log(JSON.stringify({ level: 'error', msg: 'stored file missing', kind: file.kind, sha256: file.sha256, path: file.path }))
  throw new AppError(500, 'STORED_FILE_MISSING', `The stored file ${fileKinds[file.kind].fileName} of this version is missing from the data directory; an operator should run \`miniship doctor\``)
}

/**
 * The response for one stored file. The body is a `Bun.file` (or a slice of one), which Bun sends
 * with sendfile: nothing is read into memory here, whatever the size. Bun ignores `If-Range`, which
 * is fine because a blob's path is its content hash: the bytes at a path never change.
 */
export function fileResponse(file: StoredFile, request: FileRequest, log: (line: string) => void = console.error): Response {
  assertStored(file, log)
  const etag = `"${file.sha256}"`
  const headers: Record<string, string> = {
    etag,
    'cache-control': file.cacheControl ?? (file.published ? publishedCacheControl : unpublishedCacheControl),
    'accept-ranges': 'bytes',
  }
  if (request.ifNoneMatch !== null && etagMatches(request.ifNoneMatch, etag)) {
    return new Response(null, { status: 304, headers })
  }
  const { contentType, fileName } = fileKinds[file.kind]
  headers['content-type'] = contentType
  headers['content-disposition'] = `attachment; filename="${fileName}"`
  headers['x-content-type-options'] = 'nosniff'
  const head = request.method === 'HEAD'
  const range = parseRange(request.range, file.size)
  if (range === 'unsatisfiable') {
    throw new AppError(
      416,
      'RANGE_NOT_SATISFIABLE',
      `The requested range "${(request.range ?? '').slice(0, 100)}" is not within the ${file.size} bytes of ${fileName}; ask for one range such as bytes=0-`,
      undefined,
      { 'content-range': `bytes */${file.size}` },
    )
  }
  if (range === 'ignore') {
    headers['content-length'] = String(file.size)
    return new Response(head ? null : Bun.file(file.path), { status: 200, headers })
  }
  headers['content-length'] = String(range.end - range.start + 1)
  headers['content-range'] = `bytes ${range.start}-${range.end}/${file.size}`
  return new Response(head ? null : Bun.file(file.path).slice(range.start, range.end + 1), { status: 206, headers })
}

// ---- stored files in an S3 bucket (issue 14) ---------------------------------------------------

/** Presigned download URLs live this long: enough to start a download, too short to share widely. */
export const presignedSeconds = 300
/** What a stored file in a bucket is answered with: a redirect to it, or its bytes streamed through. */
export interface S3Source {
  mode: 'redirect' | 'proxy'
  /** proxy: waiting longer than this for the first bytes is a 503; for the next ones, the end of the body with an error */
  timeoutMs: number
  presign(sha256: string, expiresIn: number): string
  read(sha256: string): Blob
}

/**
 * The answer for a file in a bucket, after every token and status check (the caller did them).
 * 304 and HEAD are answered from the database's facts without asking the bucket, as are bad
 * ranges (416). `redirect`: a 302 to a presigned GET the client follows (Range and all), never
 * cached by anyone since the URL expires. `proxy`: the bytes streamed through with the same
 * headers as a local file; the first chunk is awaited before answering, so a bucket that is down
 * or slow turns into a JSON 503 STORAGE_UNAVAILABLE (500 STORED_FILE_MISSING for a missing
 * object) instead of a hung or truncated 200.
 */
export function s3FileResponse(file: StoredFile, request: FileRequest, source: S3Source, log: (line: string) => void = console.error): Response | Promise<Response> {
  // The common case first, with nothing built that it does not send: every device's download.
  if (source.mode === 'redirect' && request.method === 'GET' && request.ifNoneMatch === null && request.range === null) {
    const location = source.presign(file.sha256, presignedSeconds)
    // the request log's id goes in as the answer is made, into headers kept for that (see runningRequestId)
    const id = runningRequestId()
    if (id === null) return new Response(null, { status: 302, headers: redirectHeaders(redirects, location) })
    const headers = redirectHeaders(idRedirects, location)
    headers.set('x-request-id', id)
    return toldLength(new Response(null, { status: 302, headers }), null, true)
  }
  const etag = `"${file.sha256}"`
  const headers: Record<string, string> = {
    etag,
    'cache-control': file.cacheControl ?? (file.published ? publishedCacheControl : unpublishedCacheControl),
    'accept-ranges': 'bytes',
  }
  if (request.ifNoneMatch !== null && etagMatches(request.ifNoneMatch, etag)) return new Response(null, { status: 304, headers })
  const { contentType, fileName } = fileKinds[file.kind]
  headers['content-type'] = contentType
  headers['content-disposition'] = `attachment; filename="${fileName}"`
  headers['x-content-type-options'] = 'nosniff'
  const range = parseRange(request.range, file.size)
  if (range === 'unsatisfiable') {
    throw new AppError(416, 'RANGE_NOT_SATISFIABLE', `The requested range "${(request.range ?? '').slice(0, 100)}" is not within the ${file.size} bytes of ${fileName}; ask for one range such as bytes=0-`, undefined, { 'content-range': `bytes */${file.size}` })
  }
  const head = request.method === 'HEAD'
  if (head || range === 'ignore') headers['content-length'] = String(file.size)
  else {
    headers['content-length'] = String(range.end - range.start + 1)
    headers['content-range'] = `bytes ${range.start}-${range.end}/${file.size}`
  }
  if (head) return new Response(null, { status: range === 'ignore' ? 200 : 206, headers })
  if (source.mode === 'redirect') return new Response(null, { status: 302, headers: redirectHeaders(redirects, source.presign(file.sha256, presignedSeconds)) })
  const blob = source.read(file.sha256)
  const body = range === 'ignore' ? blob : blob.slice(range.start, range.end + 1)
  return firstChunk(body.stream(), file, source.timeoutMs, log).then((stream) => new Response(stream, { status: range === 'ignore' ? 200 : 206, headers }))
}

/**
 * The headers of a redirect, built once per presigned URL (reused for a minute): Bun copies a
 * Headers object into a Response for a third of the cost of building one from a literal.
 */
const redirects = new Map<string, Headers>()
/** the same, for redirects made while the request log knows the request's id: these get it set */
const idRedirects = new Map<string, Headers>()
function redirectHeaders(cache: Map<string, Headers>, location: string): Headers {
  let headers = cache.get(location)
  if (!headers) {
    if (cache.size >= 10_000) cache.clear()
    headers = new Headers({ location, 'cache-control': 'no-store' })
    cache.set(location, headers)
  }
  return headers
}

/**
 * Reads the first chunk (bounded in time), then hands back a stream that yields it and the rest.
 * The headers are sent by then, so a bucket that stalls later can only end the body with an error
 * (the connection is closed short of Content-Length, which every HTTP client reports as a failed
 * download), after `timeoutMs` without bytes, rather than hold the phone's download open for ever.
 */
async function firstChunk(stream: ReadableStream<Uint8Array>, file: StoredFile, timeoutMs: number, log: (line: string) => void): Promise<ReadableStream<Uint8Array>> {
  const reader = stream.getReader()
  let first: ReadResult<Uint8Array>
  try {
    first = await readWithin(reader, timeoutMs)
  } catch (error) {
    void reader.cancel().catch(() => {})
    const code = String((error as { code?: unknown }).code ?? (error as Error).name)
    log(JSON.stringify({ level: 'error', msg: 'object storage: reading a stored file failed', code, kind: file.kind, sha256: file.sha256 }))
    if (code === 'NoSuchKey') {
      throw new AppError(500, 'STORED_FILE_MISSING', `The stored file ${fileKinds[file.kind].fileName} of this version is missing from the bucket; an operator should run \`miniship doctor\``)
    }
    throw new AppError(503, 'STORAGE_UNAVAILABLE', 'The object storage holding the stored files is not answering; try again shortly')
  }
  const stalled = (error: Error) =>
    log(JSON.stringify({ level: 'error', msg: 'object storage: a stored file stopped arriving mid-body; the download was ended', code: String((error as { code?: unknown }).code ?? error.name), kind: file.kind, sha256: file.sha256 }))
  return idleTimeoutStream(reader, timeoutMs, first.done ? null : first.value, stalled)
}
