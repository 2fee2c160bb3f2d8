// The developer CLI's one fetch wrapper: JSON in and out, the server's refusals as exit 1, an unreachable server as exit 3, --json output.

/** A failure with the exit code the CLI ends with: 1 the server refused, 2 bad usage, 3 unreachable. */
export class CliError extends Error {
  constructor(
    readonly exitCode: 1 | 2 | 3,
    message: string,
    /** the server's error body when it refused */
    readonly body?: { statusCode: number; code: string; message: string },
  ) {
    super(message)
    this.name = 'CliError'
  }
}

export interface RequestOptions {
  json?: unknown
  body?: BodyInit | ReadableStream<Uint8Array>
  headers?: Record<string, string>
  /** statuses answered to the caller instead of failing (e.g. 429 while polling) */
  accept?: number[]
}

export interface ApiResponse<T> {
  status: number
  headers: Headers
  body: T
}

export interface ApiClient {
  server: string
  request<T = unknown>(method: string, path: string, options?: RequestOptions): Promise<ApiResponse<T>>
}

export function unreachable(server: string, error: unknown): CliError {
  const cause = (error as { code?: string; message?: string }) ?? {}
  const why = cause.code === 'ConnectionRefused' || cause.code === 'ECONNREFUSED' ? 'connection refused' : (cause.message ?? String(error))
  return new CliError(3, `cannot reach ${server}: ${why}`)
}

export function createApiClient(server: string, token: string | null, userAgent = 'miniship-cli'): ApiClient {
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
      try {
        response = await fetch(`${server}${path}`, { method, headers, body: body as BodyInit | undefined, duplex: 'half', redirect: 'manual' } as RequestInit)
      } catch (error) {
        throw unreachable(server, error)
      }
      const text = await response.text()
      let parsed: unknown = text
      try {
        parsed = text === '' ? null : JSON.parse(text)
      } catch {
        // not JSON; refused below unless accepted
      }
      if (response.ok || options.accept?.includes(response.status)) return { status: response.status, headers: response.headers, body: parsed as T }
      const error = parsed as { code?: unknown; message?: unknown } | null
      if (error && typeof error === 'object' && typeof error.code === 'string' && typeof error.message === 'string') {
        throw new CliError(1, `${error.message} (${error.code}, HTTP ${response.status})`, { statusCode: response.status, code: error.code, message: error.message })
      }
      // Not our error shape: a proxy, or not a miniship server at that URL.
      throw new CliError(1, `${server}${path} answered HTTP ${response.status}${text ? `: ${text.slice(0, 200)}` : ''}; is ${server} a miniship server (the URL includes /api)?`)
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
 * the one JSON document) and exits with its code; anything else is a bug and exits 1.
 */
export async function runClient(json: boolean, action: () => Promise<void>): Promise<void> {
  try {
    await action()
  } catch (error) {
    if (error instanceof CliError) {
      process.stderr.write(`miniship: ${error.message}\n`)
      if (json) process.stdout.write(`${JSON.stringify({ error: error.body ?? { code: error.exitCode === 3 ? 'UNREACHABLE' : error.exitCode === 2 ? 'USAGE' : 'FAILED', message: error.message } }, null, 2)}\n`)
      process.exit(error.exitCode)
    }
    if (Bun.env.MINISHIP_DEBUG === '1') throw error
    process.stderr.write(`miniship: ${error instanceof Error ? error.message.split('\n')[0] : String(error)} (run with MINISHIP_DEBUG=1 for details)\n`)
    process.exit(1)
  }
}
