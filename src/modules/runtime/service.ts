// Runtime download rules (decisions §6, §9, §10): who may fetch which version, install info, release-stable files, the update check, and their caches.
import { eq, sql } from 'drizzle-orm'
import { miniApps, versionFiles, versionSignatures, versions } from '../../db/schema'
import type { Db } from '../../db/open'
import { createChangeCheck, type WriteWatch } from '../../db/write-watch'
import type { Config } from '../../config'
import type { Clock } from '../../ids'
import { AppError } from '../../http/errors'
import { userFromAccessToken } from '../auth/access'
import { createGrantCheck, grantOf, type Grant } from '../auth/grants'
import type { BlobStore } from '../../storage'
import { publicExperienceGrant, type DownloadClaims, type IssuedTo, type TokenService } from '../auth/tokens'
import { canSeeMiniApp, isValidAppId } from '../miniapps/service'
import { isApiKey, type ApiKeyAuthenticator } from '../api-keys/service'
import { channelExists, channelNotFound, defaultChannel, isChannelName, liveReleases } from '../channels/service'
import { decideRelease, type Decision, type LiveRelease } from '../channels/decide'
import { versionPattern } from '../versions/model'
import { releaseCacheControl, type StoredFile } from './files'
import type { FileKind } from '../versions/file-kinds'
import type { CountSubject } from '../insights/counters'
import { createSubjectLookup } from '../insights/service'
import type { SignatureInfo } from '../signing/service'
import { downloadUrls, fileBase, invalidDeviceId, isDeviceId, releaseUrls, routeUrl, scopePath, type DownloadUrls, type Platform, isPlatform } from '../../http/urls'

export interface RuntimeDeps {
  db: Db
  clock: Clock
  config: Config
  tokens: TokenService
  blobs: BlobStore
  /** API keys with the `read` scope open what their owner's membership (and the key) allows */
  apiKeys?: Pick<ApiKeyAuthenticator, 'authenticate'>
  /** the app's writing requests: without it the database is asked on every lookup */
  writes?: WriteWatch
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
  /** signed versions only (decisions §14) */
  signature?: SignatureInfo
  /** release install info and the update check only (decisions §17): the channel release's range, null for any */
  hostVersionRange?: string | null
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
  appId: miniApps.appId,
  appName: miniApps.name,
  currentReleaseVersionId: miniApps.currentReleaseVersionId,
}

const appColumns = {
  id: miniApps.id,
  appId: miniApps.appId,
  name: miniApps.name,
  experiencePublic: miniApps.experiencePublic,
  currentExperienceVersionId: miniApps.currentExperienceVersionId,
}

function prepareQueries(db: Db) {
  return {
    byVersionId: db
      .select(versionColumns)
      .from(versions)
      .innerJoin(miniApps, eq(miniApps.id, versions.miniAppId))
      .where(eq(versions.id, sql.placeholder('id')))
      .prepare(),
    appByAppId: db.select(appColumns).from(miniApps).where(eq(miniApps.appId, sql.placeholder('appId'))).prepare(),
    filesOf: db.select({ kind: versionFiles.kind, sha256: versionFiles.sha256, size: versionFiles.size }).from(versionFiles).where(eq(versionFiles.versionId, sql.placeholder('id'))).prepare(),
    signatureOf: db.select({ keyId: versionSignatures.keyId, statement: versionSignatures.statement, value: versionSignatures.value }).from(versionSignatures).where(eq(versionSignatures.versionId, sql.placeholder('id'))).prepare(),
  }
}

export type VersionFacts = NonNullable<ReturnType<ReturnType<typeof prepareQueries>['byVersionId']['get']>> & {
  files: Record<FileKind, FileInfo>
  signature: SignatureInfo | null
  /**
   * A download token that opens this version for good (a published version's: no expiry, no
   * user, no key), remembered while these facts are: the next request with the same string is
   * let through by comparing it, not by hashing it into the token cache.
   */
  openedBy: string | undefined
  /** this version's install info by file base, while these facts are the current ones */
  installJson: Map<string, SerialisedJson> | undefined
  /** its stored files as last answered, by kind */
  stored: Partial<Record<FileKind, StoredFile>> | undefined
}
type AppFacts = NonNullable<ReturnType<ReturnType<typeof prepareQueries>['appByAppId']['get']>>

/** A live release of a channel with the facts of its version. */
export interface ReleaseFacts extends LiveRelease {
  facts: VersionFacts
  /** its install-info template's key (version and host range), made on first use */
  templateKey?: string
}

/** A channel as the runtime serves it: its live releases newest first, read once per database change. */
interface ChannelFacts {
  app: AppFacts
  name: string
  releases: ReleaseFacts[]
  /** some live release is paused: then `currentVersion` may decide what a device gets (§13) */
  paused: boolean
  /** release install info for a request that names no device, host or current version, by file base: the same answer for all of them while these facts hold */
  anonymous: Map<string, SerialisedJson> | undefined
  /** what insights count an update check under, by the `currentVersion` it names when that is no live release of the channel (`countedUnder`) */
  reported: Map<string, CountSubject> | undefined
}

/**
 * Everything install info is built from except the clock: a cached answer is reused only while
 * these are unchanged. buildNumber changes on every re-upload (new files, maybe a new releaseType),
 * status on publish, the name on a rename; a deleted version has no row at all. Checking them on
 * each request keeps the cache right without the lifecycle code having to call us.
 */
function stampOf(facts: VersionFacts): string {
  return `${facts.status}\u0000${facts.buildNumber}\u0000${facts.updatedAt}\u0000${facts.appName}`
}

/**
 * A JSON body and its length in bytes, so the route can send Content-Length without measuring
 * again; `version` is the version it answers with, which insights count it under (absent when
 * it names none).
 */
export interface SerialisedJson {
  text: string
  bytes: number
  version?: CountSubject
}

export function serialise(value: unknown): SerialisedJson {
  const text = JSON.stringify(value)
  return { text, bytes: Buffer.byteLength(text) }
}

const tokenRequired = () => new AppError(401, 'TOKEN_REQUIRED', 'Add the query parameter token: an access token, or the download token from install info')
const versionNotFound = (versionId: string) => new AppError(404, 'VERSION_NOT_FOUND', `Version ${versionId} not found`)
/** The same answer for an unknown appId and an app with nothing released, so appIds cannot be probed. */
const releaseNotFound = (appId: string) => new AppError(404, 'RELEASE_NOT_FOUND', `There is no release of ${appId.slice(0, 64)} to install`)

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
 * Release install info with a hole where the scope path goes: the same release is answered to
 * every device of a channel, and only the path segment naming the device differs.
 */
interface ReleaseTemplate {
  facts: VersionFacts
  stamp: string
  parts: string[]
  byteParts: number
  /** the answer for the unscoped stable paths, built once */
  plain: SerialisedJson | null
  /** the version's download token that never expires (its version-pinned URLs, decisions §6) */
  versionToken: string
  /** the update check's answers offering this release, by channel, then by mandatory and percent (`pinnedUpdate`) */
  updates: Map<string, Map<number, { text: string; bytes: number }>>
  /** release/install answers naming the version's own URLs, by channel (`pinnedInstall`) */
  pinnedInstalls: Map<string, SerialisedJson>
}

const scopeMarker = '@@scope@@'

/** What a device tells about itself on release/install and the update check (all optional). */
export interface DeviceQuery {
  channel?: string
  deviceId?: string
  hostVersion?: string
}

/** The release a device gets, with what the answer needs. */
export interface DeviceRelease {
  channel: ChannelFacts
  decision: Decision<ReleaseFacts>
  release: ReleaseFacts
  /** the device's checked query: its scope path is made only for an answer that names it (most update checks answer none) */
  query: ReturnType<typeof checkDeviceQuery>
}

function invalid(field: string, message: string): AppError {
  return new AppError(400, 'VALIDATION_ERROR', `Invalid query: ${field} ${message}`, [{ field, message }])
}

/** `checkDeviceQuery`'s answer for a query that names no channel, device or host version (never changed by its readers). */
const anonymousQuery: Readonly<Required<Pick<DeviceQuery, 'channel'>> & DeviceQuery> = Object.freeze({ channel: defaultChannel, deviceId: undefined, hostVersion: undefined })

/** Checks the device's query parameters (decisions §10); the channel defaults to stable. */
export function checkDeviceQuery(query: DeviceQuery): Required<Pick<DeviceQuery, 'channel'>> & DeviceQuery {
  const channel = query.channel || defaultChannel
  if (channel !== defaultChannel && !isChannelName(channel)) throw invalid('channel', 'must be a channel name such as stable or beta')
  // decisions §18: present means 1–200 of [A-Za-z0-9._:-], not "." or ".." (an empty one too is refused)
  const deviceId = query.deviceId
  if (deviceId !== undefined && !isDeviceId(deviceId)) throw invalidDeviceId()
  const hostVersion = query.hostVersion || undefined
  if (hostVersion !== undefined && (hostVersion.length > 64 || !versionPattern.test(hostVersion))) throw invalid('hostVersion', 'must be a version such as 2.3.0')
  // the common case (a device that names nothing): one object for all of them, read only
  if (channel === defaultChannel && deviceId === undefined && hostVersion === undefined) return anonymousQuery
  return { channel, deviceId, hostVersion }
}

/**
 * The runtime rules for one app instance, built for the hot path: a runtime (or a CDN) fetching
 * install info, update checks and files again and again. The caches:
 * - the facts of each version, each appId and each channel's live releases as last read from the
 *   database, trusted only while SQLite's `total_changes()` for our connection is unchanged. That
 *   counter moves on every INSERT, UPDATE or DELETE this connection makes, so any publish,
 *   rollback, rollout change, delete, re-upload or rename drops them all. Only the serving
 *   process writes (the data directory's lock allows one server), so no other connection's
 *   writes need watching; and the counter is read only when a writing request ran since the last
 *   read (`writes`, db/write-watch.ts), or a second later.
 * - the serialised install info of published versions per file base (the same bytes every time:
 *   their download token never expires and is deterministic), and of each channel's releases as
 *   a template per file base, reused while the facts they were built from (`stampOf`) hold.
 * - the claims of download tokens the token service has verified, so that a request carrying one
 *   is answered synchronously (the token service's own cache sits behind an async API); expiry is
 *   still checked against the clock on every use.
 * Only the rollout bucket (one sha256 of a few bytes) is computed per request.
 */
export function createRuntimeService(deps: RuntimeDeps) {
  const { db, clock, config, tokens } = deps
  // prepared on first use: building drizzle's statements is the largest part of making the app at start (issue 30)
  let prepared: ReturnType<typeof prepareQueries> | null = null
  const queries = () => (prepared ??= prepareQueries(db))
  const totalChanges = db.$client.query<{ changes: number }, []>('SELECT total_changes() AS changes')
  const mayHaveChanged = createChangeCheck(deps.writes)
  const installCache = new Map<string, CachedInstall>()
  /** by file base, then version id */
  const releaseTemplates = new Map<string, Map<string, ReleaseTemplate>>()
  const factsById = new Map<string, VersionFacts | null>()
  const appsById = new Map<string, AppFacts | null>()
  const channelsByKey = new Map<string, ChannelFacts | null>()
  let lastChannelApp = ''
  let lastChannelName = ''
  let lastChannelKey = ''
  const downloadTokens = new Map<string, DownloadClaims>()
  const releaseTokens = new Map<string, MaybePromise<string>>()
  /** whether the authority a draft link was handed out on still holds (decisions §18), from memory while nothing was written */
  const grants = createGrantCheck(db, deps.writes)
  let factsAsOf = -1

  /** Drops the facts caches when the database changed since they were filled (asked only when a write may have happened). */
  function freshen(): void {
    if (factsById.size < cacheLimit && appsById.size < cacheLimit && channelsByKey.size < cacheLimit) {
      if (!mayHaveChanged()) return
      const changes = totalChanges.get()!.changes
      if (changes === factsAsOf) return
      factsAsOf = changes
    } else factsAsOf = totalChanges.get()!.changes
    factsById.clear()
    appsById.clear()
    channelsByKey.clear()
  }

  function versionFacts(versionId: string): VersionFacts | null {
    freshen()
    let facts = factsById.get(versionId)
    if (facts === undefined) {
      const row = queries().byVersionId.get({ id: versionId })
      if (row) {
        const files = {} as Record<FileKind, FileInfo>
        for (const file of queries().filesOf.all({ id: versionId })) files[file.kind] = { size: file.size, sha256: file.sha256 }
        const signed = queries().signatureOf.get({ id: versionId })
        facts = { ...row, files, signature: signed ? { algorithm: 'ed25519', ...signed } : null, openedBy: undefined, installJson: undefined, stored: undefined }
      } else facts = null
      factsById.set(versionId, facts)
    }
    return facts
  }

  function appFacts(appId: string): AppFacts | null {
    freshen()
    let facts = appsById.get(appId)
    if (facts === undefined) {
      facts = isValidAppId(appId) ? (queries().appByAppId.get({ appId }) ?? null) : null
      appsById.set(appId, facts)
    }
    return facts
  }

  /** The channel's live releases; null for an unknown appId; 404 CHANNEL_NOT_FOUND for an unknown channel of a known app. */
  function channelFacts(appId: string, channel: string): ChannelFacts | null {
    // most requests name the app and channel the one before did: its key, not a new string to hash
    if (appId !== lastChannelApp || channel !== lastChannelName) {
      lastChannelApp = appId
      lastChannelName = channel
      lastChannelKey = `${appId}\u0000${channel}`
    }
    const key = lastChannelKey
    freshen()
    let found = channelsByKey.get(key)
    if (found === undefined) {
      const app = appFacts(appId)
      if (!app) found = null
      else if (!channelExists(db, app.id, channel)) throw channelNotFound(channel)
      else {
        const releases = liveReleases(db, app.id, channel).map((row) => ({ ...row, facts: versionFacts(row.versionId)! }))
        found = { app, name: channel, releases, paused: releases.some((release) => release.paused), anonymous: undefined, reported: undefined }
      }
      channelsByKey.set(key, found)
    }
    return found
  }

  /** The version a known, unexpired download token of exactly this version opens; null means "take the full path". */
  function fastAuthorise(versionId: string, token: string | undefined): VersionFacts | null {
    if (token === undefined) return null
    const facts = versionFacts(versionId)
    if (facts !== null && facts.openedBy === token) return facts
    const claims = downloadTokens.get(token)
    if (!claims || claims.vid !== versionId || (claims.exp !== undefined && claims.exp * 1000 <= clock())) return null
    if (grants.refusal(claims, clock()) !== null) return null
    // nothing of such a token can end (no expiry, no grant): only the version's facts changing can
    if (facts !== null && claims.exp === undefined && claims.uid === undefined && claims.kid === undefined && claims.pub === undefined) facts.openedBy = token
    return facts
  }

  /**
   * The version `token` opens, or the AppError decisions §6 asks for: 401 missing/invalid/expired
   * token or a disabled user, 403 a download token of another version, 404 an unknown version or
   * one whose miniapp the token's user cannot see. Without a token only the current release
   * version passes, and only where `anonymousRelease` allows it (the derived manifest paths).
   */
  async function authorise(versionId: string, token: string | undefined, anonymousRelease = false): Promise<VersionFacts> {
    return (await authoriseCaller(versionId, token, anonymousRelease)).facts
  }

  /** `authorise`, with the grant a fresh draft link would be handed out on (a caller with an access token or an API key). */
  async function authoriseCaller(versionId: string, token: string | undefined, anonymousRelease = false): Promise<{ facts: VersionFacts; grant?: Grant }> {
    if (token === undefined || token === '') {
      if (anonymousRelease) {
        const facts = versionFacts(versionId)
        if (facts && facts.currentReleaseVersionId === facts.id) return { facts }
      }
      throw tokenRequired()
    }
    if (isApiKey(token) && deps.apiKeys) {
      const user = deps.apiKeys.authenticate(token, 'read', null)
      const facts = versionFacts(versionId)
      if (!facts || !canSeeMiniApp(db, user, facts.miniAppId)) throw versionNotFound(versionId)
      return { facts, grant: facts.status === 'PUBLISHED' ? undefined : grantOf(db, user) }
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
      const ended = grants.refusal(verified.claims, clock())
      if (ended) throw ended
      if (downloadTokens.size >= cacheLimit) downloadTokens.clear()
      downloadTokens.set(token, verified.claims)
      const facts = versionFacts(versionId)
      if (!facts) throw versionNotFound(versionId)
      return { facts }
    }
    // user status, token version and membership change without a version changing: always read
    const user = await userFromAccessToken(db, tokens, token)
    const facts = versionFacts(versionId)
    if (!facts || !canSeeMiniApp(db, user, facts.miniAppId)) throw versionNotFound(versionId)
    return { facts, grant: facts.status === 'PUBLISHED' ? undefined : grantOf(db, user) }
  }

  /**
   * `presented` is the download token the caller came with, if any. An unpublished version's links
   * carry that same token rather than a fresh one: otherwise a link could renew itself forever, and
   * a removed member or a disabled user's tester would keep access to drafts by polling.
   */
  async function buildInstallInfo(facts: VersionFacts, files: string, presented?: string, issuedTo?: IssuedTo): Promise<InstallInfo> {
    const published = facts.status === 'PUBLISHED'
    const token = published
      ? await tokens.signDownload(facts.id, null)
      : (presented ?? (await tokens.signDownload(facts.id, clock() + config.downloadTokenTtlSeconds * 1000, issuedTo)))
    return installInfoOf(facts, downloadUrls(files, facts.id, token))
  }

  function installInfoOf(facts: VersionFacts, urls: DownloadUrls, release?: Pick<LiveRelease, 'hostVersionRange'>): InstallInfo {
    return {
      appId: facts.appId,
      appName: facts.appName,
      versionId: facts.id,
      version: facts.version,
      releaseType: facts.releaseType,
      routeUrl: routeUrl(config, facts.appId),
      ...urls,
      files: facts.files,
      ...(facts.signature ? { signature: facts.signature } : {}),
      ...(release ? { hostVersionRange: release.hostVersionRange } : {}),
    }
  }

  /** Install info of a published version from the cache while the facts it was built from hold. */
  function cachedInstallJson(facts: VersionFacts, files: string): SerialisedJson | null {
    if (facts.status !== 'PUBLISHED') return null
    const known = facts.installJson?.get(files)
    if (known !== undefined) return known
    const cached = installCache.get(`${files}\u0000${facts.id}`)
    if (!cached) return null
    if (cached.facts !== facts && cached.stamp !== stampOf(facts)) return null
    cached.facts = facts
    ;(facts.installJson ??= new Map()).set(files, cached.json)
    return cached.json
  }

  /** `issuedTo`: the grant of whoever asked (a user, or a user through an API key), named in a draft's fresh download token. */
  async function installJson(facts: VersionFacts, files: string, presented?: string, issuedTo?: IssuedTo): Promise<SerialisedJson> {
    const cached = cachedInstallJson(facts, files)
    if (cached) return cached
    const json = serialise(await buildInstallInfo(facts, files, presented, issuedTo))
    json.version = facts
    // drafts get a fresh expiring token on every request; only published versions are kept
    if (facts.status === 'PUBLISHED') {
      const key = `${files}\u0000${facts.id}`
      installCache.delete(key)
      if (installCache.size >= installCacheLimit) installCache.delete(installCache.keys().next().value!)
      installCache.set(key, { facts, stamp: stampOf(facts), json })
    }
    return json
  }

  function storedFile(facts: VersionFacts, kind: FileKind, cacheControl?: string): StoredFile {
    // the same object for every download of the file while these facts hold
    const known = facts.stored?.[kind]
    if (known !== undefined && known.cacheControl === cacheControl) return known
    const info = facts.files[kind]
    const stored: StoredFile = { kind, path: deps.blobs.kind === 'local' ? deps.blobs.describe(info.sha256) : '', sha256: info.sha256, size: info.size, published: facts.status === 'PUBLISHED', cacheControl, version: facts }
    ;(facts.stored ??= {})[kind] = stored
    return stored
  }

  /** The release token of an app: signed once, and the first requests share the one signature in flight. */
  function releaseToken(appId: string): MaybePromise<string> {
    const known = releaseTokens.get(appId)
    if (known !== undefined) return known
    if (releaseTokens.size >= cacheLimit) releaseTokens.clear()
    const signing = tokens.signRelease(appId).then((token) => {
      releaseTokens.set(appId, token)
      return token
    })
    releaseTokens.set(appId, signing)
    return signing
  }

  /** The release a device gets on a channel (404 when none), decided by the one pure rule of §10. */
  function deviceRelease(appId: string, query: ReturnType<typeof checkDeviceQuery>, currentVersion?: string): DeviceRelease {
    const channel = channelFacts(appId, query.channel)
    if (!channel || channel.releases.length === 0) throw releaseNotFound(appId)
    const decision = decideRelease(appId, channel.releases, { deviceId: query.deviceId, hostVersion: query.hostVersion, currentVersion })
    if (!decision.release) {
      if (query.hostVersion !== undefined) {
        throw new AppError(404, 'NO_COMPATIBLE_RELEASE', `No release of ${appId} on ${query.channel} supports host app version ${query.hostVersion}`)
      }
      throw releaseNotFound(appId)
    }
    return { channel, decision, release: decision.release, query }
  }

  /** The install-info template of the release a device gets; built (async) once per release (version and host range) and file base. */
  function releaseTemplate(found: DeviceRelease, files: string): MaybePromise<ReleaseTemplate> {
    const facts = found.release.facts
    // the same version may be released with another host range (another channel, a republish)
    const key = (found.release.templateKey ??= found.release.hostVersionRange === null ? facts.id : `${facts.id}\u0000${found.release.hostVersionRange}`)
    let templates = releaseTemplates.get(files)
    if (templates === undefined) {
      if (releaseTemplates.size >= installCacheLimit) releaseTemplates.clear()
      releaseTemplates.set(files, (templates = new Map()))
    }
    const template = templates.get(key)
    if (template && (template.facts === facts || template.stamp === stampOf(facts))) {
      template.facts = facts
      return template
    }
    const built = templates
    return Promise.all([releaseToken(facts.appId), tokens.signDownload(facts.id, null)]).then(([token, versionToken]) => {
      const text = JSON.stringify(installInfoOf(facts, releaseUrls(files, facts.appId, scopeMarker, token), found.release))
      const parts = text.split(scopeMarker)
      const made: ReleaseTemplate = { facts, stamp: stampOf(facts), parts, byteParts: Buffer.byteLength(text) - scopeMarker.length * (parts.length - 1), plain: null, versionToken, updates: new Map(), pinnedInstalls: new Map() }
      if (built.size >= installCacheLimit) built.delete(built.keys().next().value!)
      built.set(key, made)
      return made
    })
  }

  /** Release install info for a scope from its template. */
  function releaseInstallJson(found: DeviceRelease, files: string): MaybePromise<SerialisedJson> {
    return then(releaseTemplate(found, files), (template) => fill(template, scopePath(found.query)))
  }

  function fill(template: ReleaseTemplate, scope: string): SerialisedJson {
    if (scope === '') return (template.plain ??= { text: template.parts.join(''), bytes: template.byteParts, version: template.facts })
    // scope paths are ASCII (encodeURIComponent), so their length is their byte count
    return { text: template.parts.join(scope), bytes: template.byteParts + scope.length * (template.parts.length - 1), version: template.facts }
  }

  /**
   * The update check's answer offering the template's release: its install info with the
   * version-pinned URLs of decisions §6 (the exact files of the version offered, the same for every
   * device, immutable, so a CDN keeps one copy), wrapped in the `updateAvailable` object. Built once
   * per (channel, mandatory, percent): a request builds no string.
   */
  function pinnedUpdate(template: ReleaseTemplate, found: DeviceRelease, files: string, mandatory: boolean, percent: number, running: CountSubject | undefined): SerialisedJson {
    const channel = found.channel.name
    let answers = template.updates.get(channel)
    if (answers === undefined) template.updates.set(channel, (answers = new Map()))
    const key = mandatory ? -1 - percent : percent
    let update = answers.get(key)
    if (update === undefined) {
      const facts = template.facts
      const install = JSON.stringify(installInfoOf(facts, downloadUrls(files, facts.id, template.versionToken, channel), found.release))
      const text = `{"updateAvailable":true,"mandatory":${mandatory},"rollout":{"percent":${percent}},"install":${install}}`
      update = { text, bytes: Buffer.byteLength(text) }
      answers.set(key, update)
    }
    return { text: update.text, bytes: update.bytes, version: running }
  }

  let subjectLookup: ReturnType<typeof createSubjectLookup> | null = null
  /**
   * What insights count an update check under when its `currentVersion` is no live release of the
   * channel: the version when the miniapp has it and the channel has not withdrawn it (a draft, a
   * release of another channel), else the miniapp's `other` row, as for events (§13). Remembered
   * with the channel's facts, which any write to the database renews; bounded, so a stream of
   * made-up versions costs a lookup each and no memory.
   */
  function countedUnder(channel: ChannelFacts, currentVersion: string): CountSubject {
    const known = channel.reported?.get(currentVersion)
    if (known !== undefined) return known
    subjectLookup ??= createSubjectLookup(db.$client)
    const subject = subjectLookup(channel.app.id, channel.name, { version: currentVersion })
    if (channel.reported === undefined || channel.reported.size >= 256) channel.reported = new Map()
    channel.reported.set(currentVersion, subject)
    return subject
  }

  /**
   * Release install info naming the version's own (version-pinned) URLs: for a device whose
   * `currentVersion` decides its release while a release is paused (§13), where the release-stable
   * URLs, which carry no currentVersion, would serve another release than the answer names.
   */
  function pinnedInstall(template: ReleaseTemplate, found: DeviceRelease, files: string): SerialisedJson {
    const channel = found.channel.name
    let answer = template.pinnedInstalls.get(channel)
    if (answer === undefined) {
      const facts = template.facts
      const text = JSON.stringify(installInfoOf(facts, downloadUrls(files, facts.id, template.versionToken, channel), found.release))
      answer = { text, bytes: Buffer.byteLength(text), version: facts }
      template.pinnedInstalls.set(channel, answer)
    }
    return answer
  }

  return {
    /** Install info of the version the token opens; synchronous when the caches can answer. */
    versionInstallJson(versionId: string, token: string | undefined, base: string): MaybePromise<SerialisedJson> {
      const files = fileBase(config, base)
      const facts = fastAuthorise(versionId, token)
      const cached = facts && cachedInstallJson(facts, files)
      if (cached) return cached
      return authoriseCaller(versionId, token).then(({ facts: found, grant }) => {
        // a download token's own links carry that same token (and so its grant); see buildInstallInfo
        if (grant === undefined && token !== undefined && !isApiKey(token)) return installJson(found, files, token)
        return installJson(found, files, undefined, grant)
      })
    },

    /**
     * Public: install info of the release a device gets on a channel (decisions §9, §10), with
     * release-stable URLs scoped to the device. 404 RELEASE_NOT_FOUND alike for an unknown appId
     * and an app with nothing released.
     */
    releaseInstallJson(appId: string, query: DeviceQuery & { currentVersion?: string }, base: string): MaybePromise<SerialisedJson> {
      const currentVersion = query.currentVersion || undefined
      if (currentVersion !== undefined && (currentVersion.length > 64 || !versionPattern.test(currentVersion))) throw invalid('currentVersion', 'must be the version the device runs, such as 1.2.0')
      const files = fileBase(config, base)
      const checked = checkDeviceQuery(query)
      if (currentVersion !== undefined || checked.deviceId !== undefined || checked.hostVersion !== undefined) {
        const found = deviceRelease(appId, checked, currentVersion)
        // While a release is paused (the newest, or one below it), currentVersion decides (§13), but
        // the release-stable URLs carry none and follow the frozen bucket: where that names another
        // release, the answer names the version's own files, so what a device is told is what it downloads.
        if (currentVersion !== undefined && found.channel.paused && decideRelease(appId, found.channel.releases, { deviceId: checked.deviceId, hostVersion: checked.hostVersion }).release !== found.release) {
          return then(releaseTemplate(found, files), (template) => pinnedInstall(template, found, files))
        }
        return releaseInstallJson(found, files)
      }
      // nothing names the device: every such request of the channel gets the same answer
      const channel = channelFacts(appId, checked.channel)
      const known = channel?.anonymous?.get(files)
      if (known !== undefined) return known
      return then(releaseInstallJson(deviceRelease(appId, checked), files), (json) => {
        if (channel) (channel.anonymous ??= new Map()).set(files, json)
        return json
      })
    },

    /**
     * Public: the update check of decisions §10. `{ updateAvailable: false }` when the device has
     * what it would get, else the install info with `mandatory` and the rollout; 404 as
     * release/install when the device gets nothing (RELEASE_NOT_FOUND, NO_COMPATIBLE_RELEASE).
     */
    updateJson(appId: string, query: DeviceQuery & { platform?: string; currentVersion?: string }, base: string): MaybePromise<SerialisedJson> {
      if (query.platform === undefined || !isPlatform(query.platform)) throw invalid('platform', 'must be ios or android')
      const currentVersion = query.currentVersion
      if (currentVersion === undefined || currentVersion.length > 64 || !versionPattern.test(currentVersion)) throw invalid('currentVersion', 'must be the version the device runs, such as 1.2.0')
      const checked = checkDeviceQuery(query)
      const found = deviceRelease(appId, checked, currentVersion)
      if (found.release.version === currentVersion) return noUpdateOn(found.release.facts)
      const percent = found.release === found.channel.releases[0] ? found.release.rolloutPercent : 100
      // insights count the check under the version the device runs when it is a release of the
      // channel, not the one offered; a version unknown or withdrawn goes in the app's `other` row (§13)
      const running = found.channel.releases.find((release) => release.version === currentVersion)?.facts ?? countedUnder(found.channel, currentVersion)
      const files = fileBase(config, base)
      return then(releaseTemplate(found, files), (template) => pinnedUpdate(template, found, files, found.decision.mandatory, percent, running))
    },

    /**
     * What insights count an update check answered 404 under (RELEASE_NOT_FOUND: every release of
     * the channel reverted, or none yet; NO_COMPATIBLE_RELEASE): the version the device runs, as
     * for one answered 200. A device on a reverted first release gets this 404 on every check, and
     * without it insights would lose exactly those devices (§13). Null for a miniapp or channel that
     * does not exist: insight rows stay bounded by what the server knows.
     */
    refusedUpdateSubject(appId: string, query: DeviceQuery & { currentVersion?: string }): CountSubject | null {
      const currentVersion = query.currentVersion
      if (currentVersion === undefined) return null
      let channel: ChannelFacts | null
      try {
        channel = channelFacts(appId, checkDeviceQuery(query).channel)
      } catch {
        return null
      }
      if (!channel) return null
      return channel.releases.find((release) => release.version === currentVersion)?.facts ?? countedUnder(channel, currentVersion)
    },

    /**
     * The experience install of decisions §9: the current experience version's install info, with
     * a member's token always, without one only while the miniapp's `experiencePublic` is on.
     * Without a valid member's token an unknown appId is answered as a miniapp that is not public
     * (no token) or by the token's own 401, so the answer does not tell whether it exists (§5).
     */
    async experienceInstallJson(appId: string, token: string | undefined, base: string): Promise<SerialisedJson> {
      const app = appFacts(appId)
      const files = fileBase(config, base)
      if (token === undefined || token === '') {
        if (!app?.experiencePublic) {
          throw new AppError(401, 'EXPERIENCE_NOT_PUBLIC', `The experience version of ${appId.slice(0, 64)} is not public: add ?token= with a member's access token, or turn on experiencePublic (PATCH /api/mini-apps/{miniAppId} {"experiencePublic": true}, or the console's Settings)`)
        }
        const facts = app.currentExperienceVersionId ? versionFacts(app.currentExperienceVersionId) : null
        if (!facts) throw new AppError(404, 'EXPERIENCE_NOT_FOUND', `Miniapp ${appId} has no experience version yet; upload one`)
        // a draft's links hold while the experience stays public (decisions §18: they were handed out on that switch)
        return installJson(facts, files, undefined, facts.status === 'PUBLISHED' ? undefined : publicExperienceGrant)
      }
      let user
      if (isApiKey(token) && deps.apiKeys) user = deps.apiKeys.authenticate(token, 'read', null)
      else {
        const verified = await tokens.verify(token)
        if (!verified.ok || verified.kind !== 'access') {
          throw new AppError(401, verified.ok ? 'INVALID_TOKEN' : verified.reason === 'expired' ? 'TOKEN_EXPIRED' : 'INVALID_TOKEN', 'The experience install takes the access token of a member of the miniapp')
        }
        user = await userFromAccessToken(db, tokens, token)
      }
      if (!app || !canSeeMiniApp(db, user, app.id)) throw new AppError(404, 'MINI_APP_NOT_FOUND', `Miniapp ${appId.slice(0, 64)} not found`)
      const facts = app.currentExperienceVersionId ? versionFacts(app.currentExperienceVersionId) : null
      if (!facts) throw new AppError(404, 'EXPERIENCE_NOT_FOUND', `Miniapp ${appId} has no experience version yet; upload one`)
      return installJson(facts, files, undefined, facts.status === 'PUBLISHED' ? undefined : grantOf(db, user))
    },

    /** A file of the release a device gets (release-stable URLs, public): short-cached, revalidated by ETag. */
    releaseFile(appId: string, query: DeviceQuery, kind: FileKind): StoredFile {
      // the wildcard route has no params schema: Elysia hands an undecodable segment (%ff) over as null
      if (typeof appId !== 'string') throw new AppError(400, 'VALIDATION_ERROR', 'Invalid params: appId expected string', [{ field: 'appId', message: 'expected string' }])
      const found = deviceRelease(appId, checkDeviceQuery(query))
      return storedFile(found.release.facts, kind, releaseCacheControl)
    },

    /**
     * The channel insights count a version-pinned download under: the one its URL names
     * (`&channel=`, on the update check's URLs) when the version's miniapp has that channel, else
     * stable. Never refuses: a download does not fail over what it is counted under.
     */
    downloadChannel(versionId: string, channel: string | undefined): string {
      if (channel === undefined || channel === defaultChannel || !isChannelName(channel)) return defaultChannel
      const facts = versionFacts(versionId)
      if (facts === null) return defaultChannel
      try {
        return channelFacts(facts.appId, channel) === null ? defaultChannel : channel
      } catch {
        // CHANNEL_NOT_FOUND: a channel since deleted, or a name made up
        return defaultChannel
      }
    },

    /** The stored file of `kind` that the token opens; synchronous when the caches can answer. */
    file(versionId: string, token: string | undefined, kind: FileKind, options: { anonymousRelease?: boolean } = {}): MaybePromise<StoredFile> {
      const facts = fastAuthorise(versionId, token)
      if (facts) return storedFile(facts, kind)
      return authorise(versionId, token, options.anonymousRelease).then((found) => storedFile(found, kind))
    },
  }
}

const noUpdate: SerialisedJson = serialise({ updateAvailable: false })

/** `{ updateAvailable: false }` for a device that runs `facts` (insights count the check under it), one object per version. */
const noUpdates = new WeakMap<VersionFacts, SerialisedJson>()
function noUpdateOn(facts: VersionFacts): SerialisedJson {
  let answer = noUpdates.get(facts)
  if (answer === undefined) noUpdates.set(facts, (answer = { ...noUpdate, version: facts }))
  return answer
}

/** Applies `next` to a value that may still be on its way, staying synchronous when it is there. */
export function then<T, R>(value: T | Promise<T>, next: (value: T) => R): R | Promise<R> {
  return value instanceof Promise ? value.then(next) : next(value)
}

export type RuntimeService = ReturnType<typeof createRuntimeService>
export type { Platform }
