// The release mirror (issue 14, decisions §11): each channel's release written to the bucket as static objects a CDN serves.
import { and, eq, isNull, or } from 'drizzle-orm'
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
import type { JobQueue } from '../../jobs/queue'

/** Release-stable objects are overwritten on every change: caches must come back soon (decisions §11). */
export const mirrorCacheControl = 'public, max-age=60'

export interface ReleaseMirror {
  /**
   * Queues a rewrite of `releases/{appId}/{channel}/…` from what the database says when the job
   * runs (the release a device without deviceId gets; mid-rollout, the previous one; nothing, so the
   * objects go, when the channel serves none). Call it right after every publish, rollback, rollout
   * and pause change has committed: it only writes a row, so the request never waits on the bucket
   * (decisions §18). One pending write per channel; writes of one channel never overlap, and a
   * failed one is retried. `app` is the miniapp's id or its appId.
   */
  releaseChanged(app: string, channel?: string): void
  /** Queues a write of every channel with a live release of the miniapp: its install.json names the miniapp (`appName`), so a rename moves them. */
  miniAppChanged(miniAppId: string): void
  /**
   * Queues a write of every channel of every miniapp that has a release (serve start), then of every
   * channel the bucket still holds objects of but the database serves nothing on (a deleted channel
   * whose removal gave up, or was dropped while the mirror was off; a miniapp the database, restored
   * from an older backup, does not have): those objects go.
   */
  syncAll(): Promise<void>
}

/** The job kind of the mirror's writes. */
export const mirrorJobKind = 'release-mirror'

/**
 * One channel's write: of a miniapp by its id, or (`appId` only) of a folder in the bucket whose
 * appId no miniapp has (a restore of a backup from before that miniapp was created): its objects go.
 */
type MirrorJob = { miniAppId: string; channel: string } | { appId: string; channel: string }

export interface MirrorDeps {
  db: Db
  config: Pick<Config, 'cdnUrl' | 'routeScheme'>
  tokens: TokenService
  blobs: S3BlobStore
  jobs: JobQueue
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

/** Removes one channel's folder under `releases/`: install.json and the manifests first, so no runtime starts on a half-removed release. */
async function removeChannel(blobs: S3BlobStore, appId: string, channel: string, step: () => void = () => {}): Promise<void> {
  const root = `releases/${appId}/${channel}`
  await blobs.deleteObject(`${root}/install.json`)
  for (const object of [...mirroredObjects].reverse()) {
    step()
    await blobs.deleteObject(`${root}/${object.name}`)
  }
}

/**
 * With the mirror off, serve's start removes every folder the mirror left under `releases/`:
 * nothing rewrites them any more, so through a rollback or a revert they would go on serving the
 * release that was live when the mirror was turned off. Answers how many channels went.
 */
export async function removeMirror(blobs: S3BlobStore): Promise<number> {
  const channels = await blobs.listMirroredChannels()
  for (const { appId, channel } of channels) await removeChannel(blobs, appId, channel)
  return channels.length
}

export function createReleaseMirror(deps: MirrorDeps): ReleaseMirror {
  const { db, config, tokens, blobs, jobs } = deps

  /**
   * The release a device without deviceId (and without hostVersion) gets on `channel`, by the one
   * rule of decisions §10: mid-rollout that is the channel's previous release.
   */
  function releaseOf(miniAppId: string, channel: string) {
    const miniApp = db.select({ id: miniApps.id, appId: miniApps.appId, appName: miniApps.name }).from(miniApps).where(eq(miniApps.id, miniAppId)).get()
    if (!miniApp) return null
    const decision = decideRelease(miniApp.appId, liveReleases(db, miniApp.id, channel), {})
    const version = decision.release && db.select().from(versions).where(eq(versions.id, decision.release.versionId)).get()
    return { appId: miniApp.appId, appName: miniApp.appName, version: version || null, hostVersionRange: decision.release?.hostVersionRange ?? null }
  }

  /** `{ signature }` of a signed version as install info carries it (decisions §14), else nothing. */
  function signatureOf(miniAppId: string, versionId: string) {
    const signed = signaturesOfVersions(db, miniAppId, [versionId]).get(versionId)
    return signed ? { signature: { algorithm: signed.algorithm, keyId: signed.keyId, statement: signed.statement, value: signed.value } } : {}
  }

  async function write(job: MirrorJob, signal: AbortSignal): Promise<void> {
    const { channel } = job
    // a timed-out attempt stops before its next object: its retry (or a newer job) writes them all
    const step = () => signal.throwIfAborted()
    if (!('miniAppId' in job)) {
      const owner = db.select({ id: miniApps.id }).from(miniApps).where(eq(miniApps.appId, job.appId)).get()
      // a miniapp of that appId was created since: its own job (one per channel, never two at once) decides
      if (owner) return enqueue(owner.id, channel)
      return removeChannel(blobs, job.appId, channel, step)
    }
    const release = releaseOf(job.miniAppId, channel)
    if (!release) return
    const { appId, appName, version, hostVersionRange } = release
    const root = `releases/${appId}/${channel}`
    // nothing to serve on this channel now (its release halted at 0 %, the channel deleted): the CDN answers 404 like the server does
    if (!version) return removeChannel(blobs, appId, channel, step)
    const files = filesOf(db, version.id)
    for (const object of mirroredObjects) {
      step()
      const file = files[object.kind]
      await blobs.writeObject(`${root}/${object.name}`, blobs.read(file.sha256), { contentType: fileKinds[object.kind].contentType, cacheControl: mirrorCacheControl })
    }
    step()
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
      // install info of a release carries its host range, null for any (decisions §17)
      hostVersionRange,
    }
    await blobs.writeObject(`${root}/install.json`, JSON.stringify(install), { contentType: 'application/json', cacheControl: mirrorCacheControl })
  }

  jobs.register<MirrorJob>(mirrorJobKind, {
    run: (job, { signal }) => write(job, signal),
    // a channel's objects are copied through this node (bundles up to the upload limit); past five
    // minutes the bucket is as good as down, and the attempt is retried once the write has stopped
    timeoutMs: 300_000,
    // the mirror must catch up whenever the bucket is back: keep trying for about a day (serve start tries again)
    retryDelaysMs: [5_000, 15_000, 60_000, 300_000, 900_000],
    maxAttempts: 100,
  })

  function enqueue(miniAppId: string, channel: string): void {
    jobs.enqueue(mirrorJobKind, { miniAppId, channel } satisfies MirrorJob, { dedupeKey: `${mirrorJobKind}:${miniAppId}:${channel}` })
  }

  return {
    releaseChanged(app, channel = 'stable') {
      const miniApp = db.select({ id: miniApps.id }).from(miniApps).where(or(eq(miniApps.id, app), eq(miniApps.appId, app))).get()
      if (miniApp) enqueue(miniApp.id, channel)
    },
    miniAppChanged(miniAppId) {
      const live = db.selectDistinct({ channel: channelReleases.channel }).from(channelReleases).where(and(eq(channelReleases.miniAppId, miniAppId), isNull(channelReleases.withdrawnAt))).all()
      for (const { channel } of live) enqueue(miniAppId, channel)
    },
    async syncAll() {
      const live = db.selectDistinct({ miniAppId: channelReleases.miniAppId, channel: channelReleases.channel }).from(channelReleases).where(isNull(channelReleases.withdrawnAt)).all()
      for (const { miniAppId, channel } of live) enqueue(miniAppId, channel)
      const queued = new Set(live.map(({ miniAppId, channel }) => `${miniAppId}/${channel}`))
      // a write of a channel that serves nothing removes its objects (see write)
      for (const { appId, channel } of await blobs.listMirroredChannels()) {
        const miniApp = db.select({ id: miniApps.id }).from(miniApps).where(eq(miniApps.appId, appId)).get()
        if (!miniApp) {
          // no miniapp has this appId (the database restored from before it was created): the CDN
          // would serve its last release for ever
          jobs.enqueue(mirrorJobKind, { appId, channel } satisfies MirrorJob, { dedupeKey: `${mirrorJobKind}:app:${appId}:${channel}` })
        } else if (!queued.has(`${miniApp.id}/${channel}`)) enqueue(miniApp.id, channel)
      }
    },
  }
}
