// What `serve` does to a request before the Elysia app sees it: bound bodies that announce no
// length, and give Elysia a URL it can split (it assumes a host of at least four characters).
// A rebuilt request keeps its client address (client.ts), or every such client shares one.
import { AppError } from './errors'
import { derivedFrom } from './client'
import type { Config } from '../config'

const methodsWithoutBody = new Set(['GET', 'HEAD', 'OPTIONS'])

/**
 * A chunked JSON body is read up to the limit and no further (413 past it), so a client cannot make
 * the server hold an unbounded body in memory; the upload route counts its own bytes as it streams.
 */
async function bounded(request: Request, limitBytes: number): Promise<Request> {
  const reader = request.body!.getReader()
  const chunks: Uint8Array[] = []
  let total = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    total += value.byteLength
    if (total > limitBytes) {
      await reader.cancel().catch(() => {})
      throw new AppError(413, 'PAYLOAD_TOO_LARGE', `The request body is larger than the limit of ${Math.floor(limitBytes / 1024 / 1024)} MB`)
    }
    chunks.push(value)
  }
  const headers = new Headers(request.headers)
  headers.delete('transfer-encoding')
  headers.set('content-length', String(total))
  return derivedFrom(new Request(request.url, { method: request.method, headers, body: Buffer.concat(chunks), signal: request.signal }), request)
}

/**
 * Elysia finds the path with `url.indexOf('/', 11)`: behind a proxy that forwards `Host: nas`,
 * `http://nas/api/health` would route as `/health`. Such requests get `localhost` in the URL;
 * the Host header itself is kept (links are built from it).
 *
 * So do requests whose Host is no host name. Bun's URL is then the path alone ("evil example",
 * "a/b", none at all: every route answered 404 ROUTE_NOT_FOUND), or keeps an authority that no URL
 * parser takes ("x:y:z", "h:99999", "[zz]": every `new URL(request.url)` threw, a 500). Routed
 * by their path, they answer as the route does; where a URL is built on the Host, `apiBase`
 * refuses it (400 INVALID_HOST).
 */
function routableUrl(request: Request): Request {
  const url = request.url
  if (url.charCodeAt(0) === 0x2f) return derivedFrom(new Request(`http://localhost${url}`, request), request)
  const authorityStart = url.indexOf('//') + 2
  const pathStart = url.indexOf('/', authorityStart)
  if (pathStart === -1) return request
  if (pathStart >= 11) {
    // only a port or an IPv6 literal can make Bun's authority unparseable: the common Host pays nothing more
    const portOrLiteral = url.charCodeAt(authorityStart) === 0x5b || url.lastIndexOf(':', pathStart) >= authorityStart
    if (!portOrLiteral || URL.canParse(url)) return request
  }
  return derivedFrom(new Request(`http://localhost${url.slice(pathStart)}`, request), request)
}

export function prepareRequest(request: Request, config: Pick<Config, 'jsonLimitBytes'>, isUpload: (pathname: string) => boolean): Request | Promise<Request> {
  const routable = routableUrl(request)
  if (methodsWithoutBody.has(routable.method) || routable.body === null || routable.headers.has('content-length')) return routable
  const url = routable.url
  const pathStart = url.indexOf('/', url.indexOf('//') + 2)
  const queryStart = url.indexOf('?', pathStart)
  if (isUpload(url.slice(pathStart, queryStart === -1 ? undefined : queryStart))) return routable
  return bounded(routable, config.jsonLimitBytes)
}
