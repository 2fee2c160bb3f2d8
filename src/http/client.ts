// Where a request comes from: the client address for rate limits and the origin for links we hand out.
import type { Config } from '../config'

interface AddressSource {
  requestIP?(request: Request): { address: string } | null
}

export function clientAddress(request: Request, server: AddressSource | null | undefined, config: Pick<Config, 'trustProxy'>): string {
  if (config.trustProxy) {
    const forwarded = request.headers.get('x-forwarded-for')
    if (forwarded) return forwarded.split(',')[0]!.trim()
  }
  return server?.requestIP?.(request)?.address ?? 'local'
}

/** Origin of `--public-url` if set, else the request's own (forwarded headers only when trusted). */
export function publicOrigin(request: Request, config: Pick<Config, 'trustProxy' | 'publicUrl'>): string {
  if (config.publicUrl) return new URL(config.publicUrl).origin
  const url = new URL(request.url)
  if (config.trustProxy) {
    const proto = request.headers.get('x-forwarded-proto')?.split(',')[0]?.trim()
    const host = request.headers.get('x-forwarded-host')?.split(',')[0]?.trim()
    if (proto === 'http' || proto === 'https') url.protocol = `${proto}:`
    if (host && /^[A-Za-z0-9.\-:[\]]+$/.test(host)) url.host = host
  }
  const host = request.headers.get('host')
  if (!config.trustProxy && host && /^[A-Za-z0-9.\-:[\]]+$/.test(host)) url.host = host
  return url.origin
}
