// Where a request comes from: the client address for rate limits and the origin for links we hand out.
import type { Config } from '../config'
import { apiBase } from './urls'

interface AddressSource {
  requestIP?(request: Request): { address: string } | null
}

/**
 * Requests that `serve` rebuilt (a bounded chunked body, a routable URL) → the request Bun handed
 * over: only that one knows the peer's address (`server.requestIP` answers null for any other).
 */
const originals = new WeakMap<Request, Request>()

/** Records that `derived` was built from `original`, so the client address survives the copy. */
export function derivedFrom(derived: Request, original: Request): Request {
  if (derived !== original) originals.set(derived, originals.get(original) ?? original)
  return derived
}

export function clientAddress(request: Request, server: AddressSource | null | undefined, config: Pick<Config, 'trustProxy'>): string {
  if (config.trustProxy) {
    // Proxies append the address they saw; entries to its left come from the client and can be
    // anything, so only the right-most one (added by our proxy) is trusted.
    const forwarded = request.headers.get('x-forwarded-for')
    const last = forwarded?.split(',').pop()?.trim()
    if (last) return last
  }
  return server?.requestIP?.(originals.get(request) ?? request)?.address ?? 'local'
}

/**
 * Origin of `--public-url` if set, else the request's own (forwarded headers only when trusted): the
 * origin `apiBase` builds install URLs on, so a Host that is no host name is 400 INVALID_HOST here too.
 */
export function publicOrigin(request: Request, config: Pick<Config, 'trustProxy' | 'publicUrl'>): string {
  if (config.publicUrl) return new URL(config.publicUrl).origin
  return apiBase(request, { publicUrl: null, trustProxy: config.trustProxy }).slice(0, -'/api'.length)
}
