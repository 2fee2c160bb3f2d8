// One JSON line per request on stdout, with the query redacted and an X-Request-Id on every response.
import type { Clock } from '../ids'

export type FetchHandler<S, R extends Request = Request> = (request: R, server: S) => Response | Promise<Response>
/** A handler under the request log: it also gets the request's URL the log read (Bun builds the string anew on every read of `request.url`). */
export type LoggedHandler<S, R extends Request = Request> = (request: R, server: S, url: string) => Response | Promise<Response>

const deviceSessionPath = '/api/auth/cli/sessions/'

/** Where a request URL's path starts (-1: it has none). Bun's URL of a request whose Host is no host name is the path alone. */
export function pathStartOf(url: string): number {
  return url.startsWith('/') ? 0 : url.indexOf('/', url.indexOf('//') + 2)
}

/**
 * The path of a request URL with every query value (and a device-flow code) redacted: "/a?token=abc&x=1" →
 * "/a?token=[redacted]&x=[redacted]" (tokens travel in query strings). String work instead of
 * `new URL`, since this runs on every request.
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

/** A request's log line as its parts: the sink formats it when it writes, in a batch. */
export interface RequestRecord {
  /** milliseconds since the epoch, when the answer was ready */
  at: number
  method: string
  url: string
  status: number
  bytes: number | null
  durationMs: number
  requestId: string
}

export interface LogSink {
  log(line: string): void
  /** a request's line, formatted when the batch is written (the same line `withRequestLog` would log) */
  request(record: RequestRecord): void
  /** writes what is buffered; call before exiting */
  flush(): void
}

/**
 * Buffers log lines and writes them in batches (at most `flushMs` late, or once about 64 KB
 * gather): one write per request was a large part of a small request's cost, and so was building
 * each request's line while answering it, so request lines are kept as their parts and formatted
 * together when written. A crash can lose the last `flushMs` of lines, never a line's middle.
 */
export function createLogSink(write: (chunk: string) => void, flushMs = 50): LogSink {
  let pending: (string | RequestRecord)[] = []
  let size = 0
  let timer: ReturnType<typeof setTimeout> | null = null
  const isoOf = isoTimeOf()
  const flush = () => {
    if (timer !== null) {
      clearTimeout(timer)
      timer = null
    }
    if (pending.length === 0) return
    const lines = pending
    pending = []
    size = 0
    for (let index = 0; index < lines.length; index++) {
      const entry = lines[index]!
      if (typeof entry !== 'string') lines[index] = requestLine(entry, isoOf(entry.at))
    }
    write(lines.join('\n') + '\n')
  }
  const added = (length: number) => {
    size += length
    if (size >= 64 * 1024) flush()
    else if (timer === null) timer = setTimeout(flush, flushMs)
  }
  return {
    log(line) {
      pending.push(line)
      added(line.length + 1)
    },
    request(record) {
      pending.push(record)
      // the line's length, near enough: the URL and about 150 characters of fields
      added(record.url.length + 150)
    },
    flush,
  }
}

/** The JSON line of a request; a template rather than JSON.stringify of an object: the same line at a fraction of the cost. */
function requestLine(record: RequestRecord, iso: string): string {
  // Only the path (and an unusual method) can hold characters JSON must escape; the id matched requestIdPattern.
  return `{"time":"${iso}","method":${methodJson.get(record.method) ?? jsonString(record.method)},"path":${jsonString(redactedPath(record.url))},"status":${record.status},"bytes":${record.bytes},"durationMs":${record.durationMs},"requestId":"${record.requestId}"}`
}

const requestIdPattern = /^[A-Za-z0-9._:-]{1,64}$/

// Lone surrogates are left to the UTF-8 writer (a replacement character, still valid JSON): with a
// surrogate range in the class the test costs several times as much on every request.
const needsEscape = /["\\\u0000-\u001f\u007f-\u009f\u2028\u2029]/

/** A JSON string literal; JSON.stringify only when something needs escaping (it rarely does, and it costs per request). */
function jsonString(text: string): string {
  return needsEscape.test(text) ? JSON.stringify(text) : `"${text}"`
}

/** The log's JSON of the usual methods, written without a test per request. */
const methodJson = new Map(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'].map((method) => [method, `"${method}"`]))

/** Request ids: a random prefix per process and a counter; unique, cheap, not secret. */
const requestIdPrefix = Bun.randomUUIDv7().slice(-12)
let requestCounter = 0
const nextRequestId = () => `${requestIdPrefix}-${(++requestCounter).toString(36)}`

/** The ISO time of a millisecond, reused while lines of the same one follow each other. */
function isoTimeOf(): (ms: number) => string {
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
 * Wraps a fetch handler: the response gets `X-Request-Id` (the caller's own when it is sane) and
 * one JSON line is logged. This runs on every request, so it avoids what costs: URL parsing,
 * random ids, a date per request, a closure per request.
 */
export function withRequestLog<S, R extends Request = Request>(
  handler: LoggedHandler<S, R>,
  /** a line at a time, or a sink that formats request lines when it writes them (serve) */
  log: ((line: string) => void) | LogSink,
  clock: Clock = Date.now,
  /** told of every answered request (the metrics' counts and latencies); must be cheap */
  observe?: (request: Request, url: string, status: number, seconds: number) => void,
  /**
   * Keep a sane `X-Request-Id` the caller sent. serve's native runtime routes turn this off: reading
   * one header makes Bun build all of them, a cost on every install-info answer and update check
   * (their answers still carry an id, the one logged).
   */
  keepIncomingId = true,
): FetchHandler<S, R> {
  const isoOf = isoTimeOf()
  // the line's time is the record's: one clock read per request
  const emit = typeof log === 'function' ? (record: RequestRecord) => log(requestLine(record, isoOf(record.at))) : (record: RequestRecord) => log.request(record)

  function finish(request: Request, url: string, response: Response, length: string | null, requestId: string, started: number): Response {
    try {
      response.headers.set('x-request-id', requestId)
    } catch {
      response = new Response(response.body, response)
      response.headers.set('x-request-id', requestId)
    }
    const elapsed = performance.now() - started
    observe?.(request, url, response.status, elapsed / 1000)
    emit({ at: clock(), method: request.method, url, status: response.status, bytes: length === null ? null : Number(length), durationMs: Math.round(elapsed * 100) / 100, requestId })
    return response
  }

  function measure(request: Request, url: string, response: Response, requestId: string, started: number): Response | Promise<Response> {
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

  return (request, server) => {
    const started = performance.now()
    // read once: Bun builds the URL string anew on every access, and that costs more than the log line
    const url = request.url
    const incoming = keepIncomingId ? request.headers.get('x-request-id') : null
    const requestId = incoming !== null && requestIdPattern.test(incoming) ? incoming : nextRequestId()
    const result = handler(request, server, url)
    return result instanceof Promise
      ? result.then((response) => measure(request, url, response, requestId, started))
      : measure(request, url, result, requestId, started)
  }
}
