// Runtime download rules (decisions §6): who may fetch which version with which token, install info, and its cache.
import { eq, sql } from 'drizzle-orm'
import { miniApps, versions } from '../../db/schema'
import type { Db } from '../../db/open'
import type { Config } from '../../config'
import type { Clock } from '../../ids'
import type { DataDirPaths } from '../../data-dir'
import { AppError } from '../../http/errors'
import { userFromAccessToken } from '../../http/guards'
import { blobPath } from '../../storage'
import type { TokenService } from '../auth/tokens'
import { canSeeMiniApp, isValidAppId } from '../miniapps/service'
import type { FileKind, StoredFile } from './files'
import { downloadUrls, routeUrl, type DownloadUrls } from './urls'

export interface RuntimeDeps {
  db: Db
  clock: Clock
  config: Config
  tokens: TokenService
  paths: Pick<DataDirPaths, 'blobs'>
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

function filesOf(facts: VersionFacts): Record<FileKind, FileInfo> {
  return {
    bundleIos: { size: facts.bundleIosSize, sha256: facts.bundleIosSha256 },
    bundleAndroid: { size: facts.bundleAndroidSize, sha256: facts.bundleAndroidSha256 },
    manifest: { size: facts.manifestSize, sha256: facts.manifestSha256 },
    assetsIos: { size: facts.assetsIosSize, sha256: facts.assetsIosSha256 },
    assetsAndroid: { size: facts.assetsAndroidSize, sha256: facts.assetsAndroidSha256 },
  }
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

/** How many published versions' install info is kept; the oldest entry goes first. */
const installCacheLimit = 1000

/**
 * The runtime rules for one app instance. It keeps the serialised install info of published
 * versions (the same bytes every time: their download token never expires and is deterministic),
 * so the hot path is a cached token verification, one indexed SELECT and a Map lookup.
 */
export function createRuntimeService(deps: RuntimeDeps) {
  const { db, clock, config, tokens } = deps
  const queries = prepareQueries(db)
  const installCache = new Map<string, { stamp: string; json: SerialisedJson }>()

  /**
   * The version `token` opens, or the AppError decisions §6 asks for: 401 missing/invalid/expired
   * token or a disabled user, 403 a download token of another version, 404 an unknown version or
   * one whose miniapp the token's user cannot see. Without a token only the current release
   * version passes, and only where `anonymousRelease` allows it (the derived manifest paths).
   */
  async function authorise(versionId: string, token: string | undefined, anonymousRelease = false): Promise<VersionFacts> {
    if (token === undefined || token === '') {
      if (anonymousRelease) {
        const facts = queries.byVersionId.get({ id: versionId })
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
      const facts = queries.byVersionId.get({ id: versionId })
      if (!facts) throw versionNotFound(versionId)
      return facts
    }
    const user = await userFromAccessToken(db, tokens, token)
    const facts = queries.byVersionId.get({ id: versionId })
    if (!facts || !canSeeMiniApp(db, user, facts.miniAppId)) throw versionNotFound(versionId)
    return facts
  }

  async function buildInstallInfo(facts: VersionFacts): Promise<InstallInfo> {
    const published = facts.status === 'PUBLISHED'
    const token = await tokens.signDownload(facts.id, published ? null : clock() + config.downloadTokenTtlSeconds * 1000)
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

  /** Install info as JSON; published versions from the cache while their stamp holds. */
  async function installJson(facts: VersionFacts): Promise<SerialisedJson> {
    if (facts.status !== 'PUBLISHED') return serialise(await buildInstallInfo(facts))
    const stamp = stampOf(facts)
    const cached = installCache.get(facts.id)
    if (cached && cached.stamp === stamp) return cached.json
    const json = serialise(await buildInstallInfo(facts))
    installCache.delete(facts.id)
    if (installCache.size >= installCacheLimit) installCache.delete(installCache.keys().next().value!)
    installCache.set(facts.id, { stamp, json })
    return json
  }

  return {
    async versionInstallJson(versionId: string, token: string | undefined): Promise<SerialisedJson> {
      return installJson(await authorise(versionId, token))
    },

    /** Public: the current release of `appId` (404 for an unknown appId or one never published). */
    async releaseInstallJson(appId: string): Promise<SerialisedJson> {
      const unknown = new AppError(404, 'MINI_APP_NOT_FOUND', `Mini app ${appId} not found`)
      if (!isValidAppId(appId)) throw unknown
      const facts = queries.releaseByAppId.get({ appId })
      if (facts) return installJson(facts)
      if (!queries.appExists.get({ appId })) throw unknown
      throw new AppError(404, 'RELEASE_NOT_FOUND', `Mini app ${appId} has no published release yet`)
    },

    /** The stored file of `kind` that the token opens. */
    async file(versionId: string, token: string | undefined, kind: FileKind, options: { anonymousRelease?: boolean } = {}): Promise<StoredFile> {
      const facts = await authorise(versionId, token, options.anonymousRelease)
      const info = filesOf(facts)[kind]
      return { kind, path: blobPath(deps.paths, info.sha256), sha256: info.sha256, size: info.size, published: facts.status === 'PUBLISHED' }
    },
  }
}

export type RuntimeService = ReturnType<typeof createRuntimeService>
