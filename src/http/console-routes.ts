// Serves the bundled console (and any HTML we answer) with security headers: Bun's own HTML-import routes cannot carry headers.
import { basename } from 'node:path'
import type { HTMLBundle } from 'bun'

/**
 * The console runs only its own bundled script (web/ has no inline script, style attribute or
 * event handler), talks only to its own origin and may not be framed: a page that approves a
 * device login must not be clickjacked from another site.
 */
export const htmlSecurityHeaders: Record<string, string> = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
}

type Handler = (request: Request) => Response | Promise<Response>
type RouteHandler<S> = (request: Request, server: S) => Response | Promise<Response>
type Wrap<S> = (handler: Handler) => RouteHandler<S>
export type ConsoleRoute<S> = HTMLBundle | { GET: RouteHandler<S>; HEAD: RouteHandler<S> }

function fileResponse(request: Request, path: string, headers: Record<string, string>): Response {
  const etag = headers.etag ? `"${headers.etag}"` : null
  const all = { ...headers, ...(etag ? { etag } : {}) }
  if (etag && request.headers.get('if-none-match') === etag) return new Response(null, { status: 304, headers: all })
  const file = Bun.file(path)
  // the length up front, so the request log has the bytes
  return new Response(request.method === 'HEAD' ? null : file, { headers: { ...all, 'content-length': String(file.size) } })
}

/**
 * The Bun routes of the console: every page path answers the bundled index.html, and each bundled
 * chunk its own path (`/chunk-<hash>.js`), as Bun's HTML routes would, plus our headers, through
 * `wrap` (the request log and X-Request-Id). A bundle built ahead of time (`bun build --compile`,
 * the binary) lists its files; under `bun src/main.ts` it does not, and Bun serves the pages itself
 * (in development, without these headers).
 */
export function consoleRoutes<S>(page: HTMLBundle, pagePaths: readonly string[], wrap: Wrap<S>): Record<string, ConsoleRoute<S>> {
  const files = page.files
  const index = files?.find((file) => file.loader === 'html')
  if (!files || !index) return Object.fromEntries(pagePaths.map((path) => [path, page]))
  const routes: Record<string, ConsoleRoute<S>> = {}
  const both = (handler: Handler) => {
    const wrapped = wrap(handler)
    return { GET: wrapped, HEAD: wrapped }
  }
  const pageHeaders = { 'content-type': index.headers['content-type'], etag: index.headers.etag, 'cache-control': 'no-cache', ...htmlSecurityHeaders }
  for (const path of pagePaths) routes[path] = both((request) => fileResponse(request, index.path, pageHeaders))
  for (const file of files) {
    if (file === index) continue
    // hashed names: the content behind one never changes
    const headers = { 'content-type': file.headers['content-type'], etag: file.headers.etag, 'cache-control': 'public, max-age=31536000, immutable', 'x-content-type-options': 'nosniff' }
    routes[`/${basename(file.path)}`] = both((request) => fileResponse(request, file.path, headers))
    // browsers ask /favicon.ico of every page without an icon link (/setup, a JSON answer opened in a tab): the console's icon, not a 404
    if (basename(file.path).startsWith('favicon-')) routes['/favicon.ico'] = both((request) => fileResponse(request, file.path, { ...headers, 'cache-control': 'public, max-age=86400' }))
  }
  return routes
}
