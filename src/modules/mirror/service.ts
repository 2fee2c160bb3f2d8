// The release mirror (issue 14, decisions §11): each channel's release written to the bucket as static objects a CDN serves.
import { eq, isNull, or } from 'drizzle-orm'
import { channelReleases, miniApps, versions } from '../../db/schema'
import { decideRelease } from '../channels/decide'
import { liveReleases } from '../channels/service'
import type { Db } from '../../db/open'
import type { Config } from '../../config'
import type { TokenService } from '../auth/tokens'
import { filesOf, signaturesOfVersions } from '../versions/service'
import { fileKinds, type FileKind } from '../versions/file-kinds'
import { routeUrl, type DownloadUrls } from '../../http/urls'
import type { S3BlobStore } from '../../storage/s3'

/** Release-stable objects are overwritten on every change: caches must come back soon (decisions §11). */
export const mirrorCacheControl = 'public, max-age=60'

export interface ReleaseMirror {
  /**
   * Rewrites `releases/{appId}/{channel}/…` from what the database says now (the release a device
   * without deviceId gets; mid-rollout, the previous one; nothing, so the objects go, when the
   * channel serves none): call it after every
   * publish, rollback and rollout change has committed. `app` is the miniapp's id or its appId.
   * Calls for one channel run one after another, each reading the state when it starts, so the
   * last write always reflects the last change. Never throws: a failure is logged, and `syncAll`
   * (at serve start) writes everything again.
   */
  releaseChanged(app: string, channel?: string): Promise<void>
  /** Mirrors every channel of every miniapp that has a release. */
  syncAll(): Promise<void>
  /** Settles when no write is in flight: shutdown waits for it, so no object is left half-written. */
  idle(): Promise<void>
}

export interface MirrorDeps {
  db: Db
  config: Pick<Config, 'cdnUrl' | 'routeScheme'>
  tokens: TokenService
  blobs: S3BlobStore
  log: (line: string) => void
}

/** The object names below `releases/{appId}/{channel}/` and which file each holds, in write order. */
export const mirroredObjects: readonly { name: string; kind: FileKind }[] = [
  { name: 'assets/ios', kind: 'assetsIos' },
  { name: 'assets/android', kind: 'assetsAndroid' },
  { name: 'bundles/ios', kind: 'bundleIos' },
  { name: 'bundles/android', kind: 'bundleAndroid' },
  // the manifests last: a runtime checking for updates reads these, then fetches the files above
  { name: 'manifest', kind: 'manifest' },
  { name: 'app.json', kind: 'manifest' },
  { name: 'bundles/app.json', kind: 'manifest' },
]

/** The URLs install.json hands out: on the CDN base, release-stable, each with the version's download token. */
export function mirroredUrls(cdnUrl: string, appId: string, channel: string, token: string): DownloadUrls {
  const base = `${cdnUrl}/releases/${encodeURIComponent(appId)}/${encodeURIComponent(channel)}`
  const query = `?token=${encodeURIComponent(token)}`
  const bundles = { ios: `${base}/bundles/ios${query}`, android: `${base}/bundles/android${query}` }
  return { bundleUrl: bundles.ios, bundles, assetsUrl: { ios: `${base}/assets/ios${query}`, android: `${base}/assets/android${query}` }, manifestUrl: `${base}/manifest${query}` }
}

export function createReleaseMirror(deps: MirrorDeps): ReleaseMirror {
  const { db, config, tokens, blobs, log } = deps
  const queues = new Map<string, Promise<void>>()

  /**
   * The release a device without deviceId (and without hostVersion) gets on `channel`, by the one
   * rule of decisions §10: mid-rollout that is the channel's previous release.
   */
  function releaseOf(app: string, channel: string) {
    const miniApp = db.select({ id: miniApps.id, appId: miniApps.appId, appName: miniApps.name }).from(miniApps).where(or(eq(miniApps.id, app), eq(miniApps.appId, app))).get()
    if (!miniApp) return null
    const decision = decideRelease(miniApp.appId, liveReleases(db, miniApp.id, channel), {})
    const version = decision.release && db.select().from(versions).where(eq(versions.id, decision.release.versionId)).get()
    return { appId: miniApp.appId, appName: miniApp.appName, version: version || null }
  }

  /** `{ signature }` of a signed version as install info carries it (decisions §14), else nothing. */
  function signatureOf(miniAppId: string, versionId: string) {
    const signed = signaturesOfVersions(db, miniAppId, [versionId]).get(versionId)
    return signed ? { signature: { algorithm: signed.algorithm, keyId: signed.keyId, statement: signed.statement, value: signed.value } } : {}
  }

  async function write(app: string, channel: string): Promise<void> {
    const release = releaseOf(app, channel)
    if (!release) return
    const { appId, appName, version } = release
    const root = `releases/${appId}/${channel}`
    if (!version) {
      // nothing to serve on this channel now (its release halted at 0 %, the channel deleted): the
      // CDN answers 404 like the server does, install.json and the manifests going first
      await blobs.deleteObject(`${root}/install.json`)
      for (const object of [...mirroredObjects].reverse()) await blobs.deleteObject(`${root}/${object.name}`)
      return
    }
    const files = filesOf(db, version.id)
    for (const object of mirroredObjects) {
      const file = files[object.kind]
      await blobs.writeObject(`${root}/${object.name}`, blobs.read(file.sha256), { contentType: fileKinds[object.kind].contentType, cacheControl: mirrorCacheControl })
    }
    // the release token the server's own release-stable URLs carry (decisions §9); the CDN ignores it
    const token = await tokens.signRelease(appId)
    const install = {
      appId,
      appName,
      versionId: version.id,
      version: version.version,
      releaseType: version.releaseType,
      routeUrl: routeUrl(config, appId),
      ...mirroredUrls(config.cdnUrl ?? '', appId, channel, token),
      files,
      ...signatureOf(version.miniAppId, version.id),
    }
    await blobs.writeObject(`${root}/install.json`, JSON.stringify(install), { contentType: 'application/json', cacheControl: mirrorCacheControl })
  }

  function releaseChanged(app: string, channel = 'stable'): Promise<void> {
    const key = `${app}\u0000${channel}`
    const run = (queues.get(key) ?? Promise.resolve())
      .then(() => write(app, channel))
      .catch((error: unknown) => {
        log(JSON.stringify({ level: 'error', msg: 'release mirror: writing the release failed; it is written again at the next change or serve start', app, channel, error: (error as Error).message }))
      })
    queues.set(key, run)
    void run.finally(() => {
      if (queues.get(key) === run) queues.delete(key)
    })
    return run
  }

  return {
    releaseChanged,
    async idle() {
      while (queues.size > 0) await Promise.all(queues.values())
    },
    async syncAll() {
      const live = db.selectDistinct({ miniAppId: channelReleases.miniAppId, channel: channelReleases.channel }).from(channelReleases).where(isNull(channelReleases.withdrawnAt)).all()
      for (const { miniAppId, channel } of live) await releaseChanged(miniAppId, channel)
    },
  }
}
