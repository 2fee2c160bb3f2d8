// Where a webhook may point (decisions §16): http(s) to a public address, checked at creation and again after DNS at each delivery.
import ipaddr from 'ipaddr.js'
import { AppError } from '../../http/errors'

/**
 * Whether a delivery may go to `address`: only global unicast. Refused: loopback, private (10/8,
 * 172.16/12, 192.168/16), link-local (169.254/16 with the cloud metadata address, fe80::/10),
 * unique-local (fc00::/7, fd00:ec2::254 included), carrier-grade NAT (100.64/10), unspecified,
 * broadcast, multicast, reserved and documentation ranges, and IPv6 forms that carry an IPv4
 * address (mapped ::ffff:a.b.c.d — judged by that address —, IPv4-compatible ::a.b.c.d, NAT64, 6to4,
 * Teredo).
 */
export function isPublicAddress(address: string): boolean {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6
  try {
    parsed = ipaddr.parse(address)
  } catch {
    return false
  }
  if (parsed.kind() === 'ipv6') {
    const v6 = parsed as ipaddr.IPv6
    if (v6.isIPv4MappedAddress()) return isPublicAddress(v6.toIPv4Address().toString())
    // the deprecated IPv4-compatible form ::a.b.c.d (RFC 4291 §2.5.5.1), which ipaddr.js calls
    // unicast: some stacks still reach a.b.c.d through it, and nothing public lives there
    const parts = v6.parts
    if (parts[0] === 0 && parts[1] === 0 && parts[2] === 0 && parts[3] === 0 && parts[4] === 0 && parts[5] === 0) return false
  }
  return parsed.range() === 'unicast'
}

/** The host of a URL as an address literal (brackets of IPv6 removed), or null when it is a name. */
export function addressLiteral(hostname: string): string | null {
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname
  return ipaddr.isValid(bare) && (bare.includes(':') || ipaddr.IPv4.isValidFourPartDecimal(bare)) ? bare : null
}

/** The longest webhook URL, as the body sends it and as it is stored (percent-encoded). */
export const webhookUrlLimit = 2000

export const urlNotAllowed = (message: string) => new AppError(400, 'WEBHOOK_URL_NOT_ALLOWED', message)

const privateAdvice = 'webhooks go to public addresses only, unless the server runs with --webhooks-allow-private (MINISHIP_WEBHOOKS_ALLOW_PRIVATE=1)'

/** Parses and checks the form of a webhook URL: http or https, a host, no credentials. */
export function parseWebhookUrl(text: string): URL {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    throw new AppError(400, 'VALIDATION_ERROR', `"${text.slice(0, 100)}" is not a URL; give the receiver's full http(s) address`, [{ field: 'url', message: 'must be a full http(s) URL' }])
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw urlNotAllowed(`A webhook URL must start with http:// or https:// (got ${url.protocol})`)
  if (url.username !== '' || url.password !== '') throw new AppError(400, 'VALIDATION_ERROR', 'A webhook URL must not carry a user name or password; the signature authenticates deliveries', [
      { field: 'url', message: 'must not carry a user name or password' },
    ])
  // what is stored and sent to is the URL written out, where each non-ASCII character of a path is
  // up to 12 (%F0%9F%98%80): 900 emoji passed the body's 2000 and were stored as 10,822 characters
  if (url.href.length > webhookUrlLimit) {
    throw new AppError(400, 'VALIDATION_ERROR', `A webhook URL must be at most ${webhookUrlLimit} characters written out (percent-encoded); this one is ${url.href.length}`, [
      { field: 'url', message: `must be at most ${webhookUrlLimit} characters percent-encoded` },
    ])
  }
  return url
}

export type Resolve = (hostname: string) => Promise<string[]>

export const systemResolve: Resolve = async (hostname) => {
  // loaded by the first delivery, not at start (issue 30: start to first 200)
  const { lookup } = await import('node:dns/promises')
  return (await lookup(hostname, { all: true, verbatim: true })).map((entry) => entry.address)
}

/**
 * The addresses a delivery to `url` would reach, every one of them allowed; throws 400
 * WEBHOOK_URL_NOT_ALLOWED naming the first that is not. A name that does not resolve throws
 * `unresolved` (at creation it is let through: the delivery checks again).
 */
export async function checkWebhookTarget(url: URL, allowPrivate: boolean, resolve: Resolve = systemResolve): Promise<string[]> {
  const literal = addressLiteral(url.hostname)
  let addresses: string[]
  if (literal !== null) addresses = [literal]
  else {
    try {
      addresses = await resolve(url.hostname)
    } catch (error) {
      throw Object.assign(new Error(`${url.hostname} did not resolve: ${(error as Error).message}`), { unresolved: true })
    }
    if (addresses.length === 0) throw Object.assign(new Error(`${url.hostname} did not resolve`), { unresolved: true })
  }
  if (allowPrivate) return addresses
  for (const address of addresses) {
    if (!isPublicAddress(address)) {
      // the address a name resolves to is not told: webhook creation must not be a DNS lookup of internal names
      throw urlNotAllowed(literal !== null ? `${url.hostname} is not a public address: ${privateAdvice}` : `${url.hostname} resolves to an address that is not public: ${privateAdvice}`)
    }
  }
  return addresses
}

/**
 * The request a delivery makes: to the address that was checked (so a DNS answer that changes
 * between the check and the connection cannot lead elsewhere), with the URL's own Host header and,
 * over https, its name for SNI and the certificate check. IPv4 is preferred when a name has both.
 */
export function pinnedTarget(url: URL, addresses: string[]): { url: string; host: string; serverName: string | null } {
  const address = addresses.find((candidate) => !candidate.includes(':')) ?? addresses[0]!
  const pinned = new URL(url.href)
  pinned.hostname = address.includes(':') ? `[${address}]` : address
  return { url: pinned.href, host: url.host, serverName: addressLiteral(url.hostname) === null ? url.hostname : null }
}
