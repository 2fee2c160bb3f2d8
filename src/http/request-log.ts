// One JSON line per request on stdout, with the query redacted and an X-Request-Id on every response.
import type { Clock } from '../ids'

export type FetchHandler<S, R extends Request = Request> = (request: R, server: S) => Response | Promise<Response>

const deviceSessionPath = '/api/auth/cli/sessions/'

/**
 * The path of a request URL with every query value (and a device-flow code) redacted: "/a?token=abc&x=1" →
 * "/a?token=[redacted]&x=[redacted]" (tokens travel in query strings). String work instead of
 * `new URL`, since this runs on every request.
 */
export function redactedPath(url: string): string {
  // Bun's URL of a request with a Host that is no host name is the path alone
  const pathStart = url.startsWith('/') ? 0 : url.indexOf('/', url.indexOf('//') + 2)
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
  log(line: string): void
  /** writes what is buffered; call before exiting */
  flush(): void
}

/**
 * Buffers log lines and writes them in batches (at most `flushMs` late, or once 64 KB gather):
 * one write per request was a large part of a small request's cost. A crash can lose the last
 * `flushMs` of lines, never a line's middle.
 */
export function createLogSink(write: (chunk: string) => void, flushMs = 50): LogSink {
  let pending: string[] = []
  let size = 0
  let timer: ReturnType<typeof setTimeout> | null = null
  const flush = () => {
    if (timer !== null) {
      clearTimeout(timer)
      timer = null
    }
    if (pending.length === 0) return
    const chunk = pending.join('')
    pending = []
    size = 0
    write(chunk)
  }
  return {
    log(line) {
      pending.push(line + '\n')
      size += line.length + 1
      if (size >= 64 * 1024) flush()
      else if (timer === null) timer = setTimeout(flush, flushMs)
    },
    flush,
  }
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

/** The ISO time of a millisecond, reused while requests arrive within the same one. */
function isoTimeSource(clock: Clock): () => string {
  let lastMs = -1
  let lastIso = ''
  return () => {
    const now = clock()
    if (now !== lastMs) {
      lastMs = now
      lastIso = new Date(now).toISOString()
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
  handler: FetchHandler<S, R>,
  log: (line: string) => void,
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
  const isoNow = isoTimeSource(clock)

  function finish(request: Request, url: string, response: Response, length: string | null, requestId: string, started: number): Response {
    try {
      response.headers.set('x-request-id', requestId)
    } catch {
      response = new Response(response.body, response)
      response.headers.set('x-request-id', requestId)
    }
    // A template rather than JSON.stringify of an object: the same line at a fraction of the cost.
    // Only the path can hold characters JSON must escape; the id matched requestIdPattern.
    const bytes = length === null ? 'null' : String(Number(length))
    const elapsed = performance.now() - started
    const durationMs = Math.round(elapsed * 100) / 100
    observe?.(request, url, response.status, elapsed / 1000)
    log(
      `{"time":"${isoNow()}","method":${methodJson.get(request.method) ?? jsonString(request.method)},"path":${jsonString(redactedPath(url))},"status":${response.status},"bytes":${bytes},"durationMs":${durationMs},"requestId":"${requestId}"}`,
    )
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
    const result = handler(request, server)
    return result instanceof Promise
      ? result.then((response) => measure(request, url, response, requestId, started))
      : measure(request, url, result, requestId, started)
  }
}
