// The developer CLI's one fetch wrapper: JSON in and out, the server's refusals as exit 1, an unreachable (or silent) server as exit 3, --json output.
import { writeJsonError, type ErrorBody } from '../cli/json-output'

/**
 * A failure with the exit code the CLI ends with: 1 the server refused, 2 bad usage (or a build that
 * fails the local checks, or no sign-in: no server was asked), 3 unreachable.
 */
export class CliError extends Error {
  constructor(
    readonly exitCode: 1 | 2 | 3,
    message: string,
    /** the --json error: the server's error body when it refused, else a local check's code; without it USAGE, FAILED or UNREACHABLE by the exit code */
    readonly body?: ErrorBody,
    /** more of the --json error document, beside `error`: what a script can act on (e.g. the version uploaded before a refused publish) */
    readonly more?: Record<string, unknown>,
  ) {
    super(message)
    this.name = 'CliError'
  }
}

export interface RequestOptions {
  json?: unknown
  body?: BodyInit
  headers?: Record<string, string>
  /** statuses answered to the caller instead of failing (e.g. 429 while polling) */
  accept?: number[]
}

export interface ApiResponse<T> {
  status: number
  headers: Headers
  body: T
}

export interface StreamBody {
  contentType: string
  /** exact byte count of what `chunks` yields */
  length: number
  /** the body; views of `buffer` may be yielded (each is written out before the next is asked for) */
  chunks(buffer?: Uint8Array): AsyncIterable<Uint8Array>
  onBytes?(count: number): void
}

export interface ApiClient {
  server: string
  request<T = unknown>(method: string, path: string, options?: RequestOptions): Promise<ApiResponse<T>>
  /** A large body streamed with backpressure and one reused buffer (uploads): memory stays flat. */
  send<T = unknown>(method: string, path: string, body: StreamBody): Promise<ApiResponse<T>>
}

function apiUrl(server: string): boolean {
  try {
    return new URL(server).pathname.replace(/\/+$/, '').endsWith('/api')
  } catch {
    return true
  }
}

/** A server URL that reaches a web page, not miniship's API: say which URL to use instead. */
function notTheApi(server: string, path: string, status: number, headers: Headers): CliError {
  let suggestion = ''
  try {
    const url = new URL(server)
    if (!url.pathname.replace(/\/+$/, '').endsWith('/api')) suggestion = ` Use the API's URL, which ends in /api: ${url.origin}/api (or ${url.origin}${url.pathname.replace(/\/+$/, '')}/api if miniship is served under ${url.pathname})`
  } catch {
    // the server URL was checked when it was given
  }
  const type = headers.get('content-type')?.split(';')[0] ?? 'no content type'
  return new CliError(1, `${server}${path} answered HTTP ${status} with ${type}, not miniship's JSON: ${server} is not a miniship API URL.${suggestion}`)
}

/** The answer as the CLI wants it: the parsed body when accepted, else a CliError with the server's message and code. */
function answer<T>(server: string, path: string, status: number, headers: Headers, text: string, accept: number[] = []): ApiResponse<T> {
  let parsed: unknown = text
  let json = text === ''
  try {
    parsed = text === '' ? null : JSON.parse(text)
    json = true
  } catch {
    // not JSON; refused below unless accepted
  }
  if ((status >= 200 && status < 300) || accept.includes(status)) {
    // a 200 that is not JSON is some other page at that URL (the console answers /apps/… with HTML)
    if (!json) throw notTheApi(server, path, status, headers)
    return { status, headers, body: parsed as T }
  }
  const error = parsed as { code?: unknown; message?: unknown } | null
  if (error && typeof error === 'object' && typeof error.code === 'string' && typeof error.message === 'string') {
    // miniship's own "no such route" at a server URL beside /api (…/apps, the console's): the URL is wrong, not the command
    if (error.code === 'ROUTE_NOT_FOUND' && !apiUrl(server)) throw notTheApi(server, path, status, headers)
    throw new CliError(1, `${error.message} (${error.code}, HTTP ${status})`, { statusCode: status, code: error.code, message: error.message })
  }
  // Not our error shape: a proxy, or not a miniship server at that URL.
  throw new CliError(1, `${server}${path} answered HTTP ${status}${text ? `: ${text.slice(0, 200)}` : ''}; is ${server} a miniship server (the URL includes /api)?`)
}

/** Status, headers and body of an HTTP/1.1 response read to the end (Connection: close). */
export function parseHttpResponse(bytes: Uint8Array): { status: number; headers: Headers; body: Uint8Array } | null {
  const text = new TextDecoder('latin1').decode(bytes)
  const end = text.indexOf('\r\n\r\n')
  if (end < 0) return null
  const [statusLine, ...lines] = text.slice(0, end).split('\r\n')
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine ?? '')?.[1])
  if (!status) return null
  const headers = new Headers()
  for (const line of lines) {
    const colon = line.indexOf(':')
    if (colon > 0) headers.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim())
  }
  let body = bytes.subarray(end + 4)
  if (headers.get('transfer-encoding')?.toLowerCase().includes('chunked')) {
    const parts: Uint8Array[] = []
    let offset = 0
    const raw = new TextDecoder('latin1').decode(body)
    for (;;) {
      const lineEnd = raw.indexOf('\r\n', offset)
      if (lineEnd < 0) break
      const size = parseInt(raw.slice(offset, lineEnd), 16)
      if (!(size > 0)) break
      parts.push(body.subarray(lineEnd + 2, lineEnd + 2 + size))
      offset = lineEnd + 2 + size + 2
    }
    body = new Uint8Array(Buffer.concat(parts))
  } else {
    const declared = headers.get('content-length')
    if (declared !== null) body = body.subarray(0, Number(declared))
  }
  return { status, headers, body }
}

/**
 * One request on its own connection (Bun.connect, TLS for https) writing `body` with backpressure:
 * fetch with a streamed body held about 35 MB more for a 200 MB upload. If the server answers
 * before the body is sent (a refusal), writing stops and its answer is what counts.
 */
async function sendStreaming(server: string, token: string | null, userAgent: string, method: string, path: string, body: StreamBody): Promise<{ status: number; headers: Headers; text: string }> {
  const url = new URL(`${server}${path}`)
  const secure = url.protocol === 'https:'
  const received: Uint8Array[] = []
  let closed = false
  let failure: Error | null = null
  let wake: (() => void) | null = null
  // over TLS nothing (not even the Authorization header) is written before the certificate is verified
  let ready = !secure
  const notify = () => {
    const resolve = wake
    wake = null
    resolve?.()
  }
  let socket: Awaited<ReturnType<typeof Bun.connect>>
  try {
    socket = await Bun.connect({
      hostname: url.hostname.replace(/^\[|\]$/g, ''),
      port: Number(url.port) || (secure ? 443 : 80),
      tls: secure ? { serverName: url.hostname, rejectUnauthorized: true } : undefined,
      socket: {
        data(_socket, data) {
          received.push(new Uint8Array(data))
          notify()
        },
        drain: notify,
        close() {
          closed = true
          notify()
        },
        error(_socket, error) {
          failure = error
          closed = true
          notify()
        },
        connectError(_socket, error) {
          failure = error
        },
        handshake(socket, success, authorizationError) {
          if (success && !authorizationError) ready = true
          else {
            failure = authorizationError ?? new Error('the TLS handshake failed')
            closed = true
            socket.terminate()
          }
          notify()
        },
      },
    })
  } catch (error) {
    throw unreachable(server, error, serveAdvice)
  }
  const headers = [
    `${method} ${url.pathname}${url.search} HTTP/1.1`,
    `Host: ${url.host}`,
    `User-Agent: ${userAgent}`,
    'Accept: application/json',
    `Content-Type: ${body.contentType}`,
    `Content-Length: ${body.length}`,
    'Connection: close',
    ...(token ? [`Authorization: Bearer ${token}`] : []),
  ]
  const answered = () => closed || received.length > 0
  const waitForSocket = () => new Promise<void>((resolve) => (wake = resolve))
  const writeAll = async (bytes: Uint8Array): Promise<boolean> => {
    let offset = 0
    while (offset < bytes.length) {
      if (answered()) return false
      const written = socket.write(offset === 0 ? bytes : bytes.subarray(offset))
      if (written < 0) return false
      offset += written
      if (offset < bytes.length) await waitForSocket()
    }
    return true
  }
  while (!ready && !closed) await waitForSocket()
  if (failure) throw unreachable(server, failure, serveAdvice)
  const buffer = new Uint8Array(256 * 1024)
  const sending = await writeAll(new TextEncoder().encode(headers.join('\r\n') + '\r\n\r\n'))
  if (sending) {
    for await (const chunk of body.chunks(buffer)) {
      if (!(await writeAll(chunk))) break
      body.onBytes?.(chunk.length)
    }
  }
  while (!closed) await waitForSocket()
  if (failure && received.length === 0) throw unreachable(server, failure, serveAdvice)
  const response = parseHttpResponse(new Uint8Array(Buffer.concat(received)))
  if (!response) {
    const cause = failure as Error | null
    throw new CliError(3, `the connection to ${server} was lost before it answered${cause ? ` (${cause.message})` : ''}`)
  }
  return { status: response.status, headers: response.headers, text: new TextDecoder().decode(response.body) }
}

/**
 * Exit 3 naming what could not be reached. `whenRefused` is what to check when nothing listens there:
 * the API client's advice is about miniship serve, which is no help for a CDN (verify --install-url).
 */
export function unreachable(server: string, error: unknown, whenRefused?: string): CliError {
  const cause = (error as { code?: string; message?: string }) ?? {}
  const refused = cause.code === 'ConnectionRefused' || cause.code === 'ECONNREFUSED'
  const why = refused ? `connection refused${whenRefused ? ` (${whenRefused})` : ''}` : (cause.message ?? String(error))
  return new CliError(3, `cannot reach ${server}: ${why}`)
}

// refused at miniship's own API: nothing listens there; say what to check, not only what happened
const serveAdvice = 'nothing listens there: check that miniship serve runs and that the address and port are right'

/**
 * Exit 3 for an answer that did not come in time. It said "took the connection but did not
 * answer", which was also printed when the connection never opened or the body stalled.
 */
export function notAnswered(server: string, timeoutMs: number): CliError {
  return new CliError(3, `${server} did not answer within ${timeoutMs / 1000} s; is it overloaded or stopped, or is a proxy holding the connection?`)
}

/**
 * How long a JSON request may wait for the whole answer (uploads, `send`, are not limited: the
 * server checks what it received before answering), and verify for each part of its downloads. A
 * server that took the connection and never answered (a stopped process, a proxy holding it) kept
 * the command waiting for good, with no line and, with --json, no document.
 */
export const answerTimeoutMs = 60_000

export function createApiClient(server: string, token: string | null, userAgent = 'miniship-cli', timeoutMs = answerTimeoutMs): ApiClient {
  return {
    server,
    async request<T>(method: string, path: string, options: RequestOptions = {}): Promise<ApiResponse<T>> {
      const headers: Record<string, string> = { accept: 'application/json', 'user-agent': userAgent, ...options.headers }
      if (token) headers.authorization = `Bearer ${token}`
      let body = options.body
      if (options.json !== undefined) {
        headers['content-type'] = 'application/json'
        body = JSON.stringify(options.json)
      }
      let response: Response
      let text: string
      try {
        response = await fetch(`${server}${path}`, { method, headers, body: body as BodyInit | undefined, duplex: 'half', redirect: 'manual', signal: AbortSignal.timeout(timeoutMs) } as RequestInit)
        text = await response.text()
      } catch (error) {
        if ((error as Error | null)?.name === 'TimeoutError') throw notAnswered(server, timeoutMs)
        throw unreachable(server, error, serveAdvice)
      }
      return answer<T>(server, path, response.status, response.headers, text, options.accept)
    },
    async send<T>(method: string, path: string, body: StreamBody): Promise<ApiResponse<T>> {
      const response = await sendStreaming(server, token, userAgent, method, path, body)
      return answer<T>(server, path, response.status, response.headers, response.text)
    },
  }
}

/** Where a command writes: human lines, or with --json one document at the end. */
export interface Output {
  json: boolean
  /** a human line on stdout (nothing in --json mode) */
  line(text: string): void
  /** a note on stderr (always) */
  note(text: string): void
  /** the command's one JSON document (only in --json mode) */
  result(value: unknown): void
}

export function createOutput(json: boolean): Output {
  return {
    json,
    line: (text) => {
      if (!json) process.stdout.write(`${text}\n`)
    },
    note: (text) => process.stderr.write(`${text}\n`),
    result: (value) => {
      if (json) process.stdout.write(`${JSON.stringify(value, null, 2)}\n`)
    },
  }
}

/**
 * Runs a client command: a CliError prints its message on stderr (and, with --json, the error as
 * the one JSON document) and exits with its code; anything else is a bug and exits 1 (with --json,
 * code FAILED).
 */
export async function runClient(json: boolean, action: () => Promise<void>): Promise<void> {
  try {
    await action()
  } catch (error) {
    if (error instanceof CliError) {
      process.stderr.write(`miniship: ${error.message}\n`)
      if (json) writeJsonError(error.body ?? { code: error.exitCode === 3 ? 'UNREACHABLE' : error.exitCode === 2 ? 'USAGE' : 'FAILED', message: error.message }, error.more)
      process.exit(error.exitCode)
    }
    if (Bun.env.MINISHIP_DEBUG === '1') throw error
    const message = `${error instanceof Error ? error.message.split('\n')[0] : String(error)} (run with MINISHIP_DEBUG=1 for details)`
    process.stderr.write(`miniship: ${message}\n`)
    if (json) writeJsonError({ code: 'FAILED', message })
    process.exit(1)
  }
}
