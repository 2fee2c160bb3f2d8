// Where a request comes from: the client address for rate limits and the origin for links we hand out.
import type { Config } from '../config'

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

const hostPattern = /^[A-Za-z0-9.\-:[\]]+$/

/** Origin of `--public-url` if set, else the request's own (forwarded headers only when trusted). */
export function publicOrigin(request: Request, config: Pick<Config, 'trustProxy' | 'publicUrl'>): string {
  if (config.publicUrl) return new URL(config.publicUrl).origin
  const url = new URL(request.url)
  let protocol = url.protocol.slice(0, -1)
  let host = url.host
  const hostHeader = request.headers.get('host')
  if (hostHeader && hostPattern.test(hostHeader)) host = hostHeader
  if (config.trustProxy) {
    const forwardedProto = request.headers.get('x-forwarded-proto')?.split(',')[0]?.trim()
    const forwardedHost = request.headers.get('x-forwarded-host')?.split(',')[0]?.trim()
    if (forwardedProto === 'http' || forwardedProto === 'https') protocol = forwardedProto
    if (forwardedHost && hostPattern.test(forwardedHost)) host = forwardedHost
  }
  return `${protocol}://${host}`
}
