// One JSON line per request on stdout (decisions §8), with the query redacted and an X-Request-Id on every response: formatted straight into one buffer, written in large chunks.
import { writeSync } from 'node:fs'
import type { Clock } from '../ids'
import type { AccessLogMode } from '../config'

/** A fetch handler; `url` is `request.url` when the caller read it already (Bun builds the string anew on every read). */
export type FetchHandler<S, R extends Request = Request> = (request: R, server: S, url?: string) => Response | Promise<Response>
/** A handler under the request log: it also gets the request's URL the log read (Bun builds the string anew on every read of `request.url`). */
export type LoggedHandler<S, R extends Request = Request> = (request: R, server: S, url: string) => Response | Promise<Response>


const deviceSessionPath = '/api/auth/cli/sessions/'

/** Where a request URL's path starts (-1: it has none). Bun's URL of a request whose Host is no host name is the path alone. */
export function pathStartOf(url: string): number {
  return url.startsWith('/') ? 0 : url.indexOf('/', url.indexOf('//') + 2)
}

/**
 * The path of a request URL with every query value (and a device-flow code) redacted: "/a?token=abc&x=1" →
 * "/a?token=[redacted]&x=[redacted]" (tokens travel in query strings). The log writes the same
 * thing byte by byte (`writeRedactedPath`); this string form serves the lines that need escaping.
 */
export function redactedPath(url: string): string {
  const pathStart = pathStartOf(url)
  if (pathStart === -1) return '/'
  let queryStart = url.indexOf('?', pathStart)
  let end = url.indexOf('#', pathStart)
  if (end === -1) end = url.length
  if (queryStart > end) queryStart = -1
  let path = url.slice(pathStart, queryStart === -1 ? end : queryStart)
  // A device-flow code in a path is as good as the token it will fetch: keep it out of logs too.
  if (path.startsWith(deviceSessionPath)) path = deviceSessionPath + path.slice(deviceSessionPath.length).replace(/^[^/]+/, '[redacted]')
  if (queryStart === -1 || queryStart + 1 >= end) return path
  let redacted = path + '?'
  for (let at = queryStart + 1; at < end; ) {
    let pairEnd = url.indexOf('&', at)
    if (pairEnd === -1 || pairEnd > end) pairEnd = end
    const equals = url.indexOf('=', at)
    redacted += (at === queryStart + 1 ? '' : '&') + url.slice(at, equals === -1 || equals > pairEnd ? pairEnd : equals) + '=[redacted]'
    at = pairEnd + 1
  }
  return redacted
}

export interface LogSink {
  /** a line of its own (an error report, say), kept in order with the request lines */
  log(line: string): void
  /** a request's line, formatted at once into the buffer: the same line `requestLine` makes */
  request(at: number, method: string, url: string, status: number, bytes: number | null, durationMs: number, requestId: string): void
  /** writes what is buffered; call before exiting */
  flush(): void
}

/** A batch is written once this much gathers (nginx's `access_log … buffer=64k`). */
const flushBytes = 64 * 1024
/** URLs up to this long are formatted in place; a longer one (rare: a hand-made request) as a string. */
const inPlaceUrlLength = 1024
/** Room behind `flushBytes` for the longest line formatted in place: the URL with every pair redacted and the other fields. */
const lineRoom = 12 * inPlaceUrlLength + 512

/**
 * Gathers log lines in one buffer and hands it to `write` when 64 KiB gather, `flushMs` after the
 * first line of a batch, and on `flush()` (shutdown). Request lines are formatted straight into the
 * buffer: the parts a line shares with lines before (the time to its second, the method, the
 * status and length, the path) copied in whole, the rest byte by byte; no string or object per field
 * or per line. `write` must be done with the bytes when it returns (the buffer is reused). A crash
 * loses at most the last `flushMs` of lines, never a line's middle.
 */
function createFormattingSink(write: (chunk: Uint8Array) => void, flushMs: number): LogSink {
  const buffer = Buffer.allocUnsafe(flushBytes + lineRoom)
  let used = 0
  let timer: ReturnType<typeof setTimeout> | null = null
  const isoOf = isoTimeOf()
  // A line is mostly bytes the line before had too: they are kept as byte strings and copied in
  // with one native call each (a byte at a time costs about as much per byte as that call does
  // per string). Only the milliseconds, the duration, the id and a new path are written by byte.
  /** `{"time":"` and the ISO time up to its second ("2026-11-25T18:38:04."), made once per second */
  let secondStart = -1
  let head = Buffer.alloc(0)
  /** per method: `Z","method":"GET","path":` */
  const middles = new Map([...methodJson].map(([method, json]) => [method, Buffer.from(`Z","method":${json},"path":`, 'latin1')]))
  const getMiddle = middles.get('GET')!
  /** per (status, bytes): `,"status":200,"bytes":1234,"durationMs":` (few pairs recur: answers of a kind have a few lengths) */
  const tails = new Map<number, Buffer>()
  const tailOf = (status: number, bytes: number | null): Buffer => {
    // status < 1000 and bytes < 2^53 / 1000 (a file of 9 PB): the key is exact
    const key = bytes === null ? -1 - status : bytes * 1000 + status
    let tail = tails.get(key)
    if (tail === undefined) {
      if (tails.size >= 4096) tails.clear()
      tails.set(key, (tail = Buffer.from(`,"status":${status},"bytes":${bytes},"durationMs":`, 'latin1')))
    }
    return tail
  }
  const idHead = Buffer.from(',"requestId":"', 'latin1')
  /** the URL of the last line formatted in place, and its redacted path's bytes */
  let lastUrl: string | null = null
  const lastPath = Buffer.allocUnsafe(2048)
  let lastPathLength = 0
  /**
   * The last URL with a query, up to its `?` (scheme, host and path), and the bytes its path took
   * (`"` and the path): a device polling with another deviceId each time has the same path, and
   * only its query's keys are written again.
   */
  let lastPrefix: string | null = null
  const prefixBytes = Buffer.allocUnsafe(inPlaceUrlLength + 1)
  let prefixLength = 0
  const flush = () => {
    if (timer !== null) {
      clearTimeout(timer)
      timer = null
    }
    if (used === 0) return
    const length = used
    used = 0
    write(buffer.subarray(0, length))
  }
  const added = () => {
    if (used >= flushBytes) flush()
    else if (timer === null) {
      timer = setTimeout(flush, flushMs)
      // the log never keeps a process alive: serve flushes on its way out
      timer.unref?.()
    }
  }
  /** A line as text (the rare ones): after what is buffered, so the order holds. */
  const text = (line: string) => {
    // UTF-8 takes at most 3 bytes per UTF-16 unit
    if (used + line.length * 3 + 1 > buffer.length) flush()
    if (line.length * 3 + 1 > buffer.length) write(Buffer.from(line + '\n'))
    else {
      used += buffer.write(line, used)
      buffer[used++] = 0x0a
    }
    added()
  }
  /** The path's JSON string at `position` (see writeRedactedPath); -1 when the string form must do it. */
  const writePath = (position: number, url: string): number => {
    if (url === lastUrl) {
      // the same URL as the line before (a device polling, a CDN revalidating): the same bytes
      lastPath.copy(buffer, position, 0, lastPathLength)
      return position + lastPathLength
    }
    const pathAt = position
    if (lastPrefix !== null && url.charCodeAt(lastPrefix.length) === 0x3f && url.startsWith(lastPrefix)) {
      // the same scheme, host and path as the last URL with a query: its path's bytes, then this query
      prefixBytes.copy(buffer, position, 0, prefixLength)
      let end = url.indexOf('#', lastPrefix.length)
      if (end === -1) end = url.length
      position = writeRedactedQuery(buffer, position + prefixLength, url, lastPrefix.length, end)
    } else {
      position = writeRedactedPath(buffer, position, url)
      if (position === -1) return -1
      if (pathQueryAt !== -1) {
        lastPrefix = url.slice(0, pathQueryAt)
        prefixLength = pathQueryAt - pathStartOf(url) + 1
        buffer.copy(prefixBytes, 0, pathAt, pathAt + prefixLength)
      }
    }
    if (position === -1) return -1
    lastPathLength = position - pathAt
    if (lastPathLength <= lastPath.length) {
      buffer.copy(lastPath, 0, pathAt, position)
      lastUrl = url
    } else lastUrl = null
    return position
  }
  return {
    log: text,
    request(at, method, url, status, bytes, durationMs, requestId) {
      const middle = method === 'GET' ? getMiddle : middles.get(method)
      // before 1970 or after 9999 the ISO string has another shape: the string form
      if (middle === undefined || url.length > inPlaceUrlLength || at < 0 || at >= 253402300800000) return text(requestLine(isoOf(at), method, url, status, bytes, durationMs, requestId))
      if (used + lineRoom > buffer.length) flush()
      const ms = at % 1000
      if (at - ms !== secondStart) {
        secondStart = at - ms
        head = Buffer.from(`{"time":"${new Date(secondStart).toISOString().slice(0, 20)}`, 'latin1')
      }
      buffer.set(head, used)
      let position = used + head.length
      buffer[position++] = 0x30 + Math.floor(ms / 100)
      buffer[position++] = 0x30 + (Math.floor(ms / 10) % 10)
      buffer[position++] = 0x30 + (ms % 10)
      buffer.set(middle, position)
      position = writePath(position + middle.length, url)
      // something in the path needs escaping (or is a device code): the string form, as a whole line
      if (position === -1) return text(requestLine(isoOf(at), method, url, status, bytes, durationMs, requestId))
      const tail = tailOf(status, bytes)
      buffer.set(tail, position)
      position = hundredths(buffer, position + tail.length, durationMs)
      buffer.set(idHead, position)
      position += idHead.length
      // the id matched requestIdPattern (or is ours): ASCII that needs no escaping
      for (let index = 0; index < requestId.length; index++) buffer[position++] = requestId.charCodeAt(index)
      buffer[position++] = 0x22
      buffer[position++] = 0x7d
      buffer[position++] = 0x0a
      used = position
      added()
    },
    flush,
  }
}

/**
 * Writes every byte of a chunk to a file descriptor (stdout) before returning: a line handed over
 * is a line written, so an exit right after `flush()` (SIGTERM) loses none. A descriptor that
 * would block (a non-blocking pipe whose reader lags) gets the rest through the stream instead.
 */
export function fdWriter(fd: number, stream: { write(chunk: Uint8Array): unknown }): (chunk: Uint8Array) => void {
  return (chunk) => {
    let written = 0
    try {
      while (written < chunk.length) written += writeSync(fd, chunk, written, chunk.length - written)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EAGAIN') throw error
      stream.write(Buffer.from(chunk.subarray(written)))
    }
  }
}

/** The JSON line of a request as a string: what the sink writes in place, for the rare lines it cannot. */
function requestLine(iso: string, method: string, url: string, status: number, bytes: number | null, durationMs: number, requestId: string): string {
  // Only the path (and an unusual method) can hold characters JSON must escape; the id matched requestIdPattern.
  return `{"time":"${iso}","method":${methodJson.get(method) ?? jsonString(method)},"path":${jsonString(redactedPath(url))},"status":${status},"bytes":${bytes},"durationMs":${Math.round(durationMs * 100) / 100},"requestId":"${requestId}"}`
}

/** A non-negative integer in decimal, as String() writes it. */
function integer(buffer: Buffer, position: number, value: number): number {
  if (value < 10) {
    buffer[position] = 0x30 + value
    return position + 1
  }
  let digits = 1
  for (let rest = value; rest >= 10; rest = Math.floor(rest / 10)) digits++
  for (let index = position + digits - 1, rest = value; index >= position; index--, rest = Math.floor(rest / 10)) buffer[index] = 0x30 + (rest % 10)
  return position + digits
}

/** Milliseconds rounded to hundredths, as String(Math.round(x * 100) / 100) writes them ("0.5", "12.34", "3"). */
function hundredths(buffer: Buffer, position: number, value: number): number {
  const total = Math.round(value * 100)
  position = integer(buffer, position, Math.floor(total / 100))
  const fraction = total % 100
  if (fraction === 0) return position
  buffer[position++] = 0x2e
  buffer[position++] = 0x30 + Math.floor(fraction / 10)
  if (fraction % 10 !== 0) buffer[position++] = 0x30 + (fraction % 10)
  return position
}

const redactedValue = Buffer.from('=[redacted]', 'latin1')

/** Where writeRedactedPath's last path ended at a `?` (the index of it in the URL), else -1. */
let pathQueryAt = -1

/**
 * `redactedPath(url)` as a JSON string literal, written byte by byte at `position`; -1 when the
 * path or a query key holds anything but printable ASCII other than `"` and `\\` (the caller then
 * escapes the string form), or is a device-flow path. Values are skipped unread. Sets
 * `pathQueryAt`.
 */
function writeRedactedPath(buffer: Buffer, position: number, url: string): number {
  let index = pathStartOf(url)
  pathQueryAt = -1
  buffer[position++] = 0x22
  if (index === -1) {
    buffer[position++] = 0x2f
    buffer[position++] = 0x22
    return position
  }
  if (url.startsWith(deviceSessionPath, index)) return -1
  let end = url.indexOf('#', index)
  if (end === -1) end = url.length
  for (; index < end; index++) {
    const code = url.charCodeAt(index)
    if (code === 0x3f) break
    if (code < 0x20 || code > 0x7e || code === 0x22 || code === 0x5c) return -1
    buffer[position++] = code
  }
  if (index < end) pathQueryAt = index
  return writeRedactedQuery(buffer, position, url, index, end)
}

/** The query at `index` (its `?`, or `end` for none) up to `end`, each value redacted, and the closing quote; -1 as writeRedactedPath. */
function writeRedactedQuery(buffer: Buffer, position: number, url: string, index: number, end: number): number {
  // a query: each pair's key, every value redacted
  if (index + 1 < end) {
    buffer[position++] = 0x3f
    const queryStart = index + 1
    // each turn starts at a pair and ends on the '&' after it (or at the end)
    for (index++; index < end; index++) {
      if (index !== queryStart) buffer[position++] = 0x26
      for (; index < end; index++) {
        const code = url.charCodeAt(index)
        if (code === 0x3d || code === 0x26) break
        if (code < 0x20 || code > 0x7e || code === 0x22 || code === 0x5c) return -1
        buffer[position++] = code
      }
      buffer.set(redactedValue, position)
      position += redactedValue.length
      if (index < end && url.charCodeAt(index) === 0x3d) {
        const pairEnd = url.indexOf('&', index)
        index = pairEnd === -1 || pairEnd > end ? end : pairEnd
      }
    }
  }
  buffer[position++] = 0x22
  return position
}

const requestIdPattern = /^[A-Za-z0-9._:-]{1,64}$/

// Lone surrogates are left to the UTF-8 writer (a replacement character, still valid JSON): with a
// surrogate range in the class the test costs several times as much on every request.
const needsEscape = /["\\\u0000-\u001f\u007f-\u009f\u2028\u2029]/

/** A JSON string literal; JSON.stringify only when something needs escaping. */
function jsonString(text: string): string {
  return needsEscape.test(text) ? JSON.stringify(text) : `"${text}"`
}

/** The log's JSON of the usual methods, written without a test per request. */
const methodJson = new Map(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'].map((method) => [method, `"${method}"`]))

/** Request ids: a random prefix per process and a counter; unique, cheap, not secret. */
const requestIdPrefix = Bun.randomUUIDv7().slice(-12)
let requestCounter = 0
export const nextRequestId = () => `${requestIdPrefix}-${(++requestCounter).toString(36)}`

/** The ISO time of a millisecond, reused while lines of the same one follow each other. */
export function isoTimeOf(): (ms: number) => string {
  let lastMs = -1
  let lastIso = ''
  return (ms) => {
    if (ms !== lastMs) {
      lastMs = ms
      lastIso = new Date(ms).toISOString()
    }
    return lastIso
  }
}

/**
 * The wall-clock time (ms since the epoch, as Date.now) of a `performance.now()` reading: the log
 * line's time without another clock read per request. The two clocks' offset is taken again once
 * the monotonic one moved a second, so a wall-clock step shows within a second.
 */
export function wallClockOf(): (monotonicMs: number) => number {
  let offset = Date.now() - performance.now()
  let takenAt = performance.now()
  return (monotonicMs) => {
    if (monotonicMs - takenAt >= 1000 || monotonicMs < takenAt) {
      takenAt = monotonicMs
      offset = Date.now() - monotonicMs
    }
    return Math.floor(offset + monotonicMs)
  }
}

/**
 * The body length of the answer a handler just built, told beside it: reading it back from the
 * answer's headers makes Bun build a Headers object for the response, a cost on every install-info
 * answer and update check. Whoever builds an answer whose length it knows sets both fields; the
 * request log believes it only for that very response, returned synchronously.
 */
export const answerLength: { response: Response | null; bytes: number | null; hasId: boolean } = { response: null, bytes: 0, hasId: false }

/**
 * A Response with its body length told to the request log (`answerLength`; null: none to tell); `hasId`: it already
 * carries the request's `X-Request-Id` (its headers were made with `runningRequestId()`).
 */
export function toldLength(response: Response, bytes: number | null, hasId = false): Response {
  answerLength.response = response
  answerLength.bytes = bytes
  answerLength.hasId = hasId
  return response
}

let runningId: string | null = null

/**
 * The id of the request whose handler is running synchronously right now, else null (between
 * requests, and in a handler's later continuations, where another request's may be current).
 * A handler that puts it in the headers it builds spares the log setting it on the response
 * afterwards, which makes Bun build the response's Headers object.
 */
export function runningRequestId(): string | null {
  return runningId
}

export interface RequestLogOptions {
  /** the lines' time (tests fix it) */
  clock?: Clock
  /** told of every answered request, logged or not (the metrics' counts and latencies); must be cheap */
  observe?: (request: Request, url: string, status: number, seconds: number) => void
  /**
   * Keep a sane `X-Request-Id` the caller sent. serve's native runtime routes keep it only behind a
   * trusted proxy: reading one header makes Bun build all of them, a cost on every install-info
   * answer and update check (their answers still carry an id, the one logged).
   */
  keepIncomingId?: boolean
  /** which requests get a line (default all); every request still gets an id and is observed */
  lines?: AccessLogMode
}

/**
 * Wraps a fetch handler: the response gets `X-Request-Id` (the caller's own when it is sane and
 * kept) and one JSON line is logged. This runs on every request, so it avoids what costs: URL
 * parsing, random ids, a date per request, a closure per request.
 */
export function withRequestLog<S, R extends Request = Request>(
  handler: LoggedHandler<S, R>,
  /** a line at a time, or the sink that formats request lines into its buffer (serve) */
  log: ((line: string) => void) | LogSink,
  options: RequestLogOptions = {},
): FetchHandler<S, R> {
  const { clock, observe, keepIncomingId = true, lines = 'all' } = options
  const wallAt = clock === undefined ? wallClockOf() : null
  const isoOf = isoTimeOf()
  const emit =
    typeof log === 'function'
      ? (at: number, method: string, url: string, status: number, bytes: number | null, durationMs: number, requestId: string) => log(requestLine(isoOf(at), method, url, status, bytes, durationMs, requestId))
      : log.request
  const logs = lines === 'all' ? () => true : lines === 'off' ? () => false : (method: string) => method !== 'GET' && method !== 'HEAD'

  function finish(request: Request, url: string, response: Response, length: string | number | null, requestId: string, started: number, hasId = false): Response {
    if (!hasId) {
      try {
        response.headers.set('x-request-id', requestId)
      } catch {
        response = new Response(response.body, response)
        response.headers.set('x-request-id', requestId)
      }
    }
    const ended = performance.now()
    const elapsed = ended - started
    const status = response.status
    observe?.(request, url, status, elapsed / 1000)
    const method = request.method
    if (logs(method)) {
      const bytes = length === null ? null : Number(length)
      emit(wallAt !== null ? wallAt(ended) : clock!(), method, url, status, bytes !== null && Number.isSafeInteger(bytes) && bytes >= 0 ? bytes : null, elapsed, requestId)
    }
    return response
  }

  function measure(request: Request, url: string, response: Response, requestId: string, started: number): Response | Promise<Response> {
    // an answer built after an await (a cache filled first) may have told its length too: the
    // identity check makes another request's told length count for nothing here
    if (answerLength.response === response) {
      answerLength.response = null
      return finish(request, url, response, answerLength.bytes, requestId, started, answerLength.hasId)
    }
    const length = response.headers.get('content-length')
    if (length !== null || !(response.headers.get('content-type') ?? '').startsWith('application/json') || response.body === null) {
      return finish(request, url, response, length, requestId, started)
    }
    // JSON answers are small: measure them so the log line has bytes (Bun would add the header anyway)
    return response.arrayBuffer().then((body) => {
      const measured = new Response(body, response)
      measured.headers.set('content-length', String(body.byteLength))
      return finish(request, url, measured, String(body.byteLength), requestId, started)
    })
  }

  return (request, server, knownUrl) => {
    const started = performance.now()
    // read once: Bun builds the URL string anew on every access, and that costs more than the log line
    // (serve's fetch handler read it already to pick the runtime's routes: it hands it over)
    const url = knownUrl ?? request.url
    const incoming = keepIncomingId ? request.headers.get('x-request-id') : null
    const requestId = incoming !== null && requestIdPattern.test(incoming) ? incoming : nextRequestId()
    runningId = requestId
    let result: Response | Promise<Response>
    try {
      result = handler(request, server, url)
    } finally {
      runningId = null
    }
    if (result instanceof Promise) return result.then((response) => measure(request, url, response, requestId, started))
    return measure(request, url, result, requestId, started)
  }
}

/**
 * The request log's sink (serve's): a request's line is kept as its fields, and lines are
 * formatted `batch` at a time into the buffer of `createFormattingSink`, which is written when
 * 64 KiB gather, `flushMs` after the first line of a batch, and on `flush()` (shutdown). Formatting
 * a few hundred lines in one go costs the server less than a line in the middle of each request
 * (measured with `scripts/bench/log-floor.ts`). A crash loses at most the last `flushMs` of lines,
 * never a line's middle; `log` lines keep their place among request lines.
 */
export function createLogSink(write: (chunk: Uint8Array) => void, flushMs = 100, batch = 256): LogSink {
  const inner = createFormattingSink(write, flushMs)
  const ats = new Float64Array(batch)
  const statuses = new Float64Array(batch)
  const sizes = new Float64Array(batch)
  const durations = new Float64Array(batch)
  const methods: string[] = new Array(batch).fill('')
  const urls: string[] = new Array(batch).fill('')
  const ids: string[] = new Array(batch).fill('')
  let count = 0
  let timer: ReturnType<typeof setTimeout> | null = null
  const drain = () => {
    for (let index = 0; index < count; index++) inner.request(ats[index]!, methods[index]!, urls[index]!, statuses[index]!, sizes[index]! < 0 ? null : sizes[index]!, durations[index]!, ids[index]!)
    count = 0
  }
  const flush = () => {
    if (timer !== null) {
      clearTimeout(timer)
      timer = null
    }
    drain()
    inner.flush()
  }
  return {
    log(line) {
      drain()
      inner.log(line)
    },
    request(at, method, url, status, bytes, durationMs, requestId) {
      if (count === batch) drain()
      ats[count] = at
      methods[count] = method
      urls[count] = url
      statuses[count] = status
      sizes[count] = bytes === null ? -1 : bytes
      durations[count] = durationMs
      ids[count] = requestId
      count++
      if (timer === null) {
        timer = setTimeout(flush, flushMs)
        timer.unref?.()
      }
    },
    flush,
  }
}
