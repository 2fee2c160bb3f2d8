// The download URLs install info hands out (decisions §6): on the CDN, on the public URL, or `/api/…` paths.
import type { Config } from '../../config'

export type Platform = 'ios' | 'android'

export const platforms: readonly Platform[] = ['ios', 'android']

export function isPlatform(value: string): value is Platform {
  return value === 'ios' || value === 'android'
}

export interface DownloadUrls {
  /** the iOS bundle (decisions §6) */
  bundleUrl: string
  bundles: Record<Platform, string>
  assetsUrl: Record<Platform, string>
  manifestUrl: string
}

/**
 * Where files are fetched from: the CDN base (assumed to forward `<cdn>/x` to our `/api/x`), else
 * the public URL (which includes `/api`), else the absolute path `/api`, which a runtime joins to
 * the origin of its `serverBaseURL` (the contract's URL resolution rule).
 */
export function fileBase(config: Pick<Config, 'publicUrl' | 'cdnUrl'>): string {
  return config.cdnUrl ?? config.publicUrl ?? '/api'
}

/**
 * Every file URL of one version, each carrying `token`. The bundle URLs end in `/bundles/{platform}`
 * so that the manifest path a runtime derives from them (parent path + `/app.json`) is one we answer,
 * on the CDN too since it forwards the same paths.
 */
export function downloadUrls(config: Pick<Config, 'publicUrl' | 'cdnUrl'>, versionId: string, token: string): DownloadUrls {
  const version = `${fileBase(config)}/mini-apps/access/versions/${encodeURIComponent(versionId)}`
  const query = `?token=${encodeURIComponent(token)}`
  const bundles = { ios: `${version}/bundles/ios${query}`, android: `${version}/bundles/android${query}` }
  return {
    bundleUrl: bundles.ios,
    bundles,
    assetsUrl: { ios: `${version}/assets/ios${query}`, android: `${version}/assets/android${query}` },
    manifestUrl: `${version}/manifest${query}`,
  }
}

/** `routeUrl` of install info: `<scheme>://<appId>` (appIds are validated on create). */
export function routeUrl(config: Pick<Config, 'routeScheme'>, appId: string): string {
  return `${config.routeScheme}://${appId}`
}
