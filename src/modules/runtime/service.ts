// Runtime download rules (decisions §6): who may fetch which version with which token, install info, and its cache.
import { eq, sql } from 'drizzle-orm'
import { miniApps, versions } from '../../db/schema'
import type { Db } from '../../db/open'
import type { Config } from '../../config'
import type { Clock } from '../../ids'
import { AppError } from '../../http/errors'
import { userFromAccessToken } from '../../http/guards'
import type { BlobStore } from '../../storage'
import type { DownloadClaims, TokenService } from '../auth/tokens'
import { canSeeMiniApp, isValidAppId } from '../miniapps/service'
import type { FileKind, StoredFile } from './files'
import { filesOf } from '../versions/service'
import { downloadUrls, routeUrl, type DownloadUrls } from './urls'

export interface RuntimeDeps {
  db: Db
  clock: Clock
  config: Config
  tokens: TokenService
  blobs: BlobStore
}

/** One file of install info's `files` (an addition to the contract that clients may ignore). */
export interface FileInfo {
  size: number
  sha256: string
}

export interface InstallInfo extends DownloadUrls {
  appId: string
  appName: string
  versionId: string
  version: string
  releaseType: string
  routeUrl: string
  files: Record<FileKind, FileInfo>
}

/** What every runtime request needs about a version, read in one indexed query. */
const versionColumns = {
  id: versions.id,
  miniAppId: versions.miniAppId,
  version: versions.version,
  releaseType: versions.releaseType,
  status: versions.status,
  buildNumber: versions.buildNumber,
  updatedAt: versions.updatedAt,
  bundleIosSha256: versions.bundleIosSha256,
  bundleIosSize: versions.bundleIosSize,
  bundleAndroidSha256: versions.bundleAndroidSha256,
  bundleAndroidSize: versions.bundleAndroidSize,
  manifestSha256: versions.manifestSha256,
  manifestSize: versions.manifestSize,
  assetsIosSha256: versions.assetsIosSha256,
  assetsIosSize: versions.assetsIosSize,
  assetsAndroidSha256: versions.assetsAndroidSha256,
  assetsAndroidSize: versions.assetsAndroidSize,
  appId: miniApps.appId,
  appName: miniApps.name,
  currentReleaseVersionId: miniApps.currentReleaseVersionId,
}

function prepareQueries(db: Db) {
  return {
    byVersionId: db
      .select(versionColumns)
      .from(versions)
      .innerJoin(miniApps, eq(miniApps.id, versions.miniAppId))
      .where(eq(versions.id, sql.placeholder('id')))
      .prepare(),
    releaseByAppId: db
      .select(versionColumns)
      .from(miniApps)
      .innerJoin(versions, eq(versions.id, miniApps.currentReleaseVersionId))
      .where(eq(miniApps.appId, sql.placeholder('appId')))
      .prepare(),
    appExists: db.select({ id: miniApps.id }).from(miniApps).where(eq(miniApps.appId, sql.placeholder('appId'))).prepare(),
  }
}

type VersionFacts = NonNullable<ReturnType<ReturnType<typeof prepareQueries>['byVersionId']['get']>>

/**
 * Everything install info is built from except the clock: a cached answer is reused only while
 * these are unchanged. buildNumber changes on every re-upload (new files, maybe a new releaseType),
 * status on publish, the name on a rename; a deleted version has no row at all. Checking them on
 * each request keeps the cache right without the lifecycle code having to call us.
 */
function stampOf(facts: VersionFacts): string {
  return `${facts.status}\u0000${facts.buildNumber}\u0000${facts.updatedAt}\u0000${facts.appName}`
}

/** A JSON body and its length in bytes, so the route can send Content-Length without measuring again. */
export interface SerialisedJson {
  text: string
  bytes: number
}

function serialise(value: unknown): SerialisedJson {
  const text = JSON.stringify(value)
  return { text, bytes: Buffer.byteLength(text) }
}

const tokenRequired = () => new AppError(401, 'TOKEN_REQUIRED', 'Add the query parameter token: an access token, or the download token from install info')
const versionNotFound = (versionId: string) => new AppError(404, 'VERSION_NOT_FOUND', `Version ${versionId} not found`)

/** Bounds of the in-memory caches; past them the oldest entry (install info) or everything (the others) goes. */
const installCacheLimit = 1000
const cacheLimit = 10_000

/** A value, or a promise of it when the caches could not answer. */
type MaybePromise<T> = T | Promise<T>

interface CachedInstall {
  /** the facts object the JSON was last confirmed against: the same object means nothing was re-read */
  facts: VersionFacts
  stamp: string
  json: SerialisedJson
}

/**
 * The runtime rules for one app instance, built for the hot path: a runtime (or a CDN) fetching
 * install info and files of a published version again and again. Three caches:
 * - the facts of each version (and of each appId's current release) as last read from the
 *   database, trusted only while SQLite's `total_changes()` for our connection is unchanged. That
 *   counter moves on every INSERT, UPDATE or DELETE this connection makes, so any publish,
 *   rollback, delete, re-upload or rename (or any other write) drops them all; reading it costs a
 *   fraction of the lookup it saves. Only the serving process writes versions and miniapps (the
 *   data directory's lock allows one server), so no other connection's writes need watching.
 * - the serialised install info of published versions (the same bytes every time: their download
 *   token never expires and is deterministic), reused while the facts it was built from (`stampOf`)
 *   are unchanged.
 * - the claims of download tokens the token service has verified, so that a request carrying one
 *   is answered synchronously (the token service's own cache sits behind an async API); expiry is
 *   still checked against the clock on every use.
 * A request with a download token for a published version then costs one counter read and a few
 * Map lookups; anything the caches cannot answer takes the full path below.
 */
export function createRuntimeService(deps: RuntimeDeps) {
  const { db, clock, config, tokens } = deps
  const queries = prepareQueries(db)
  const totalChanges = db.$client.query<{ changes: number }, []>('SELECT total_changes() AS changes')
  const installCache = new Map<string, CachedInstall>()
  const factsById = new Map<string, VersionFacts | null>()
  const releaseByAppId = new Map<string, VersionFacts | null>()
  const downloadTokens = new Map<string, DownloadClaims>()
  let factsAsOf = -1

  /** Drops the facts caches when the database changed since they were filled. */
  function freshen(): void {
    const changes = totalChanges.get()!.changes
    if (changes === factsAsOf && factsById.size < cacheLimit && releaseByAppId.size < cacheLimit) return
    factsById.clear()
    releaseByAppId.clear()
    factsAsOf = changes
  }

  function versionFacts(versionId: string): VersionFacts | null {
    freshen()
    let facts = factsById.get(versionId)
    if (facts === undefined) {
      facts = queries.byVersionId.get({ id: versionId }) ?? null
      factsById.set(versionId, facts)
    }
    return facts
  }

  function releaseFacts(appId: string): VersionFacts | null {
    freshen()
    let facts = releaseByAppId.get(appId)
    if (facts === undefined) {
      facts = queries.releaseByAppId.get({ appId }) ?? null
      releaseByAppId.set(appId, facts)
    }
    return facts
  }

  /** The version a known, unexpired download token of exactly this version opens; null means "take the full path". */
  function fastAuthorise(versionId: string, token: string | undefined): VersionFacts | null {
    if (token === undefined) return null
    const claims = downloadTokens.get(token)
    if (!claims || claims.vid !== versionId || (claims.exp !== undefined && claims.exp * 1000 <= clock())) return null
    return versionFacts(versionId)
  }

  /**
   * The version `token` opens, or the AppError decisions §6 asks for: 401 missing/invalid/expired
   * token or a disabled user, 403 a download token of another version, 404 an unknown version or
   * one whose miniapp the token's user cannot see. Without a token only the current release
   * version passes, and only where `anonymousRelease` allows it (the derived manifest paths).
   */
  async function authorise(versionId: string, token: string | undefined, anonymousRelease = false): Promise<VersionFacts> {
    if (token === undefined || token === '') {
      if (anonymousRelease) {
        const facts = versionFacts(versionId)
        if (facts && facts.currentReleaseVersionId === facts.id) return facts
      }
      throw tokenRequired()
    }
    const verified = await tokens.verify(token)
    if (!verified.ok) {
      throw verified.reason === 'expired'
        ? new AppError(401, 'TOKEN_EXPIRED', 'The token has expired; fetch install info again for fresh download links')
        : new AppError(401, 'INVALID_TOKEN', 'The token is not valid; use the download token from install info or a current access token')
    }
    if (verified.kind === 'download') {
      if (verified.claims.vid !== versionId) {
        throw new AppError(403, 'TOKEN_WRONG_VERSION', `This download token is for another version, not ${versionId}`)
      }
      if (downloadTokens.size >= cacheLimit) downloadTokens.clear()
      downloadTokens.set(token, verified.claims)
      const facts = versionFacts(versionId)
      if (!facts) throw versionNotFound(versionId)
      return facts
    }
    // user status, token version and membership change without a version changing: always read
    const user = await userFromAccessToken(db, tokens, token)
    const facts = versionFacts(versionId)
    if (!facts || !canSeeMiniApp(db, user, facts.miniAppId)) throw versionNotFound(versionId)
    return facts
  }

  /**
   * `presented` is the download token the caller came with, if any. An unpublished version's links
   * carry that same token rather than a fresh one: otherwise a link could renew itself forever, and
   * a removed member or a disabled user's tester would keep access to drafts by polling.
   */
  async function buildInstallInfo(facts: VersionFacts, presented?: string): Promise<InstallInfo> {
    const published = facts.status === 'PUBLISHED'
    const token = published
      ? await tokens.signDownload(facts.id, null)
      : (presented ?? (await tokens.signDownload(facts.id, clock() + config.downloadTokenTtlSeconds * 1000)))
    return {
      appId: facts.appId,
      appName: facts.appName,
      versionId: facts.id,
      version: facts.version,
      releaseType: facts.releaseType,
      routeUrl: routeUrl(config, facts.appId),
      ...downloadUrls(config, facts.id, token),
      files: filesOf(facts),
    }
  }

  /** Install info of a published version from the cache while the facts it was built from hold. */
  function cachedInstallJson(facts: VersionFacts): SerialisedJson | null {
    if (facts.status !== 'PUBLISHED') return null
    const cached = installCache.get(facts.id)
    if (!cached) return null
    if (cached.facts === facts) return cached.json
    if (cached.stamp !== stampOf(facts)) return null
    cached.facts = facts
    return cached.json
  }

  async function installJson(facts: VersionFacts, presented?: string): Promise<SerialisedJson> {
    const cached = cachedInstallJson(facts)
    if (cached) return cached
    const json = serialise(await buildInstallInfo(facts, presented))
    // drafts get a fresh expiring token on every request; only published versions are kept
    if (facts.status === 'PUBLISHED') {
      installCache.delete(facts.id)
      if (installCache.size >= installCacheLimit) installCache.delete(installCache.keys().next().value!)
      installCache.set(facts.id, { facts, stamp: stampOf(facts), json })
    }
    return json
  }

  function storedFile(facts: VersionFacts, kind: FileKind): StoredFile {
    const info = filesOf(facts)[kind]
    return { kind, path: deps.blobs.kind === 'local' ? deps.blobs.describe(info.sha256) : '', sha256: info.sha256, size: info.size, published: facts.status === 'PUBLISHED' }
  }

  return {
    /** Install info of the version the token opens; synchronous when the caches can answer. */
    versionInstallJson(versionId: string, token: string | undefined): MaybePromise<SerialisedJson> {
      const facts = fastAuthorise(versionId, token)
      const cached = facts && cachedInstallJson(facts)
      if (cached) return cached
      return authorise(versionId, token).then(async (found) => {
        const verified = token ? await tokens.verify(token) : null
        return installJson(found, verified?.ok && verified.kind === 'download' ? token : undefined)
      })
    },

    /** Public: the current release of `appId` (404 for an unknown appId or one never published). */
    releaseInstallJson(appId: string): MaybePromise<SerialisedJson> {
      // built only when thrown: an Error captures a stack trace, which costs more than the cached answer
      const unknown = () => new AppError(404, 'MINI_APP_NOT_FOUND', `Mini app ${appId} not found`)
      if (!isValidAppId(appId)) throw unknown()
      const facts = releaseFacts(appId)
      if (facts) return cachedInstallJson(facts) ?? installJson(facts)
      if (!queries.appExists.get({ appId })) throw unknown()
      throw new AppError(404, 'RELEASE_NOT_FOUND', `Mini app ${appId} has no published release yet`)
    },

    /** The stored file of `kind` that the token opens; synchronous when the caches can answer. */
    file(versionId: string, token: string | undefined, kind: FileKind, options: { anonymousRelease?: boolean } = {}): MaybePromise<StoredFile> {
      const facts = fastAuthorise(versionId, token)
      if (facts) return storedFile(facts, kind)
      return authorise(versionId, token, options.anonymousRelease).then((found) => storedFile(found, kind))
    },
  }
}

export type RuntimeService = ReturnType<typeof createRuntimeService>
