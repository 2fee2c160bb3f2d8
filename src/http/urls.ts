// The URLs install info hands out (decisions §6, §9): full URLs on the CDN, the public URL or the request's own origin.
import type { Config } from '../config'
import { AppError } from './errors'

export type Platform = 'ios' | 'android'

export const platforms: readonly Platform[] = ['ios', 'android']

export function isPlatform(value: string): value is Platform {
  return value === 'ios' || value === 'android'
}

/**
 * A device's id (decisions §18): 1–200 characters of `[A-Za-z0-9._:-]`, and not `.` or `..`, so
 * that a device-scoped URL (`…/devices/{deviceId}/release/…`) is one path segment that resolves to
 * itself. A host app whose ids are base64 sends them as base64url (`-_` for `+/`, no `=`).
 */
const deviceIdPattern = /^[A-Za-z0-9._:-]{1,200}$/

export function isDeviceId(value: string): boolean {
  return deviceIdPattern.test(value) && value !== '.' && value !== '..'
}

/** The 400 every endpoint that takes a deviceId answers for one that breaks the rule; `field` names where it came. */
export function invalidDeviceId(field = 'deviceId'): AppError {
  return new AppError(
    400,
    'INVALID_DEVICE_ID',
    `${field} must be 1 to 200 characters of A-Z a-z 0-9 . _ : - (and not "." or ".."); send a base64 id as base64url`,
    [{ field, message: 'must be 1 to 200 characters of A-Z a-z 0-9 . _ : -, not "." or ".."' }],
  )
}

export interface DownloadUrls {
  /** the iOS bundle (decisions §6) */
  bundleUrl: string
  bundles: Record<Platform, string>
  assetsUrl: Record<Platform, string>
  manifestUrl: string
}

/**
 * A Host header (or X-Forwarded-Host) that URLs can be built on: a name or IPv4 address, or an IPv6
 * literal in brackets, with an optional port up to 65535. "x:y:z", "h:99999" or "[zz]" passed the
 * former character-set check and were written into URLs no client can parse. A name may hold `_`
 * (an RFC 3986 reg-name does, and docker-compose service names such as `miniship_app` do); what is
 * not a host (spaces, controls, `@`, `/`, quotes, percent escapes) stays refused.
 */
const hostPattern = /^(?:[A-Za-z0-9_][A-Za-z0-9._-]{0,252}|\[[0-9A-Fa-f:.]{2,45}\])(?::(?:6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[0-9]{1,4}))?$/
const bases = new Map<string, string>()

/**
 * The API base that URLs handed out are built on: `--public-url` (which includes `/api`), else the
 * request's own origin + `/api` (`X-Forwarded-Proto`/`-Host` only with `--trust-proxy on`). A Host
 * that is not a host name (a path, spaces) is refused rather than written into URLs phones follow.
 * Answers are cached per (proto, host) pair, bounded, because this runs on every install request.
 * `url` is `request.url` when the caller has read it already.
 */
export function apiBase(request: Request, config: Pick<Config, 'publicUrl' | 'trustProxy'>, url: string = request.url): string {
  if (config.publicUrl) return config.publicUrl
  let protocol = url.startsWith('https:') ? 'https' : 'http'
  let host = request.headers.get('host')
  if (config.trustProxy) {
    const forwardedProto = request.headers.get('x-forwarded-proto')?.split(',')[0]?.trim()
    const forwardedHost = request.headers.get('x-forwarded-host')?.split(',')[0]?.trim()
    if (forwardedProto === 'http' || forwardedProto === 'https') protocol = forwardedProto
    if (forwardedHost) host = forwardedHost
  }
  if (host === null) {
    // no Host header (HTTP/1.0, a test's Request): the URL's own authority
    const start = url.indexOf('//') + 2
    const end = url.indexOf('/', start)
    host = url.slice(start, end === -1 ? undefined : end)
  }
  const key = `${protocol}\u0000${host}`
  let base = bases.get(key)
  if (base === undefined) {
    if (!hostPattern.test(host)) {
      throw new AppError(400, 'INVALID_HOST', `The Host header ${JSON.stringify(host.slice(0, 80))} is not a host name, so no download URL can be built from it; set --public-url when a proxy rewrites it`)
    }
    base = `${protocol}://${host.toLowerCase()}/api`
    if (bases.size >= 1000) bases.clear()
    bases.set(key, base)
  }
  return base
}

const servedBases = new Map<string, string>()
/** the origin `servedApiBase` answered last, and its base */
let lastServed: { origin: string; base: string } | null = null

/**
 * `apiBase` of a request Bun served, from the URL Bun built for it: that URL's authority is the
 * request's Host header, lowercased, and Bun leaves it out (the URL is only a path) when the Host
 * is not a host name. Reading it there spares materialising the request's headers, a cost on every
 * install-info answer and update check. Behind a trusted proxy, or without a host in the URL, the
 * headers are read as `apiBase` does (the latter refused there as INVALID_HOST).
 */
export function servedApiBase(request: Request, config: Pick<Config, 'publicUrl' | 'trustProxy'>, url: string): string {
  if (config.publicUrl) return config.publicUrl
  // most requests come by the same host as the one before: compared in place, nothing sliced
  if (lastServed !== null && !config.trustProxy && url.startsWith(lastServed.origin) && url.charCodeAt(lastServed.origin.length) === 0x2f) return lastServed.base
  const start = url.indexOf('//') + 2
  if (config.trustProxy || start === 1 || !url.startsWith('http')) return apiBase(request, config, url)
  const end = url.indexOf('/', start)
  const origin = end === -1 ? url : url.slice(0, end)
  let base = servedBases.get(origin)
  if (base === undefined) {
    const host = origin.slice(start)
    if (!hostPattern.test(host)) return apiBase(request, config, url)
    base = `${origin.toLowerCase()}/api`
    if (servedBases.size >= 1000) servedBases.clear()
    servedBases.set(origin, base)
  }
  if (end !== -1) lastServed = { origin, base }
  return base
}

/** Where files are fetched from: the CDN base (assumed to forward `<cdn>/x` to our `/api/x`), else the API base. */
export function fileBase(config: Pick<Config, 'cdnUrl'>, base: string): string {
  return config.cdnUrl ?? base
}

function urlsUnder(prefix: string, query: string): DownloadUrls {
  const bundles = { ios: `${prefix}/bundles/ios${query}`, android: `${prefix}/bundles/android${query}` }
  return {
    bundleUrl: bundles.ios,
    bundles,
    assetsUrl: { ios: `${prefix}/assets/ios${query}`, android: `${prefix}/assets/android${query}` },
    manifestUrl: `${prefix}/manifest${query}`,
  }
}

/**
 * Every file URL of one version, each carrying `token`. The bundle URLs end in `/bundles/{platform}`
 * so that the manifest path a runtime derives from them (parent path + `/app.json`) is one we answer,
 * on the CDN too since it forwards the same paths. `channel` (a channel name other than stable: the
 * update check's answers) rides along as `&channel=` for insights to count the downloads under.
 */
export function downloadUrls(files: string, versionId: string, token: string, channel?: string): DownloadUrls {
  return urlsUnder(`${files}/mini-apps/access/versions/${encodeURIComponent(versionId)}`, `?token=${encodeURIComponent(token)}${channel === undefined || channel === 'stable' ? '' : `&channel=${encodeURIComponent(channel)}`}`)
}

/** What the release-stable URLs of a device are scoped to; the path keeps it, since a derived manifest URL loses the query. */
export interface ReleaseScope {
  channel: string
  deviceId?: string
  hostVersion?: string
}

/**
 * The path segment of a scope: empty for the stable channel asked without deviceId or hostVersion
 * (the §9 paths), else `channels/{channel}/[devices/{id}/][hosts/{version}/]`.
 */
export function scopePath(scope: ReleaseScope): string {
  if (scope.channel === 'stable' && scope.deviceId === undefined && scope.hostVersion === undefined) return ''
  let path = `channels/${scope.channel}/`
  if (scope.deviceId !== undefined) {
    // checked where it arrives; checked again here, where a "." or ".." would become a path that resolves elsewhere
    if (!isDeviceId(scope.deviceId)) throw invalidDeviceId()
    // of the id's characters only ':' is one encodeURIComponent changes
    path += `devices/${scope.deviceId.indexOf(':') === -1 ? scope.deviceId : encodeURIComponent(scope.deviceId)}/`
  }
  if (scope.hostVersion !== undefined) path += `hosts/${encodeURIComponent(scope.hostVersion)}/`
  return path
}

/**
 * The release-stable file URLs of decisions §9: they always answer what the scope's device gets
 * now, so the manifest a runtime derives from its installed bundle URL names the next release.
 */
export function releaseUrls(files: string, appId: string, scope: string, token: string): DownloadUrls {
  return urlsUnder(`${files}/mini-apps/access/apps/${appId}/${scope}release`, `?token=${encodeURIComponent(token)}`)
}

/** Where a runtime fetches install info for a version. */
export function installUrl(base: string, versionId: string, token: string): string {
  return `${base}/mini-apps/access/versions/${encodeURIComponent(versionId)}/install?token=${encodeURIComponent(token)}`
}

/** The deep link that opens a test install in the host app (decisions §9). */
export function deepLink(config: Pick<Config, 'routeScheme'>, versionId: string, install: string): string {
  return `${config.routeScheme}://miniapp/install/${encodeURIComponent(versionId)}?installUrl=${encodeURIComponent(install)}`
}

/** `routeUrl` of install info: `<scheme>://<appId>` (appIds are validated on create). */
export function routeUrl(config: Pick<Config, 'routeScheme'>, appId: string): string {
  return `${config.routeScheme}://${appId}`
}
