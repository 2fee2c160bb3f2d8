// One JSON line per request on stdout, with the query redacted and an X-Request-Id on every response.
import type { Clock } from '../ids'

export type FetchHandler<S> = (request: Request, server: S) => Response | Promise<Response>

/** "/a?token=abc&x=1" → "/a?token=[redacted]&x=[redacted]": tokens travel in query strings. */
export function redactedPath(url: URL): string {
  if (!url.search) return url.pathname
  const keys = [...url.searchParams.keys()].map((key) => `${encodeURIComponent(key)}=[redacted]`)
  return `${url.pathname}?${keys.join('&')}`
}

const requestIdPattern = /^[A-Za-z0-9._:-]{1,64}$/

export function withRequestLog<S>(handler: FetchHandler<S>, log: (line: string) => void, clock: Clock = Date.now): FetchHandler<S> {
  return async (request, server) => {
    const started = performance.now()
    const incoming = request.headers.get('x-request-id')
    const requestId = incoming && requestIdPattern.test(incoming) ? incoming : Bun.randomUUIDv7()
    let response = await handler(request, server)
    const type = response.headers.get('content-type') ?? ''
    if (!response.headers.has('content-length') && type.startsWith('application/json') && response.body !== null) {
      // JSON answers are small: measure them so the log line has bytes (Bun would add the header anyway)
      const body = await response.arrayBuffer()
      response = new Response(body, response)
      response.headers.set('content-length', String(body.byteLength))
    }
    try {
      response.headers.set('x-request-id', requestId)
    } catch {
      response = new Response(response.body, response)
      response.headers.set('x-request-id', requestId)
    }
    const length = response.headers.get('content-length')
    log(
      JSON.stringify({
        time: new Date(clock()).toISOString(),
        method: request.method,
        path: redactedPath(new URL(request.url)),
        status: response.status,
        bytes: length === null ? null : Number(length),
        durationMs: Math.round((performance.now() - started) * 100) / 100,
        requestId,
      }),
    )
    return response
  }
}
