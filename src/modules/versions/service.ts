// Version rules: upload (validate, store, record), review, publish, rollback, delete, and the workspace view.
import { and, desc, eq, inArray, isNull, lt } from 'drizzle-orm'
import { readFile, stat } from 'node:fs/promises'
import { channelReleases, miniApps, releaseHistory, versionFiles, versionSignatures, versions, type MiniAppRow, type VersionRow } from '../../db/schema'
import type { Db } from '../../db/open'
import type { Config } from '../../config'
import { AppError } from '../../http/errors'
import { recordAudit } from '../audit/service'
import { newId, isoAt, type Clock } from '../../ids'
import { removeTemp, writeTempBytes, type BlobStore, type TempFile } from '../../storage'
import type { TokenService } from '../auth/tokens'
import { grantOf } from '../auth/grants'
import { memberRole, miniAppRecord, requireVisibleMiniApp, toMiniAppRecord, userSummaries, type Caller, type MemberRole, type MiniAppRecord, type UserSummary } from '../miniapps/service'
import { nextStatus, refusals, type VersionAction, type VersionStatus } from './lifecycle'
import { isCleanText, textLength } from '../../http/text'
import { foldVersionIntoOther } from '../insights/fold'
import { discardUpload, fileFields, type FileField, type ReceivedUpload } from './upload'
import { releaseTypes, versionPattern, type ReleaseType } from './model'
import { checkManifest, type UploadWarning } from './manifest'
import { publishedText, rollbackClearsPauseText, rollbackOfRevertedText, type ReleaseWarning } from '../channels/words'
import { channelRecords, channelsHolding, channelsRevertedIn, checkReleaseOptions, defaultChannel, liveReleases, pausedBelowNewest, releaseIntoChannel, requireChannel, rollbackChannel, wasRevertedIn, type ChannelRecord } from '../channels/service'
import { deepLink, installUrl } from '../../http/urls'
import { requireSignedIfRequired, requireUsableKey, signingKeyNames, statementOf, verifySignature, type VerifiedSignature } from '../signing/service'

export interface StoredFile {
  size: number
  sha256: string
}

export interface VersionRecord {
  id: string
  miniAppId: string
  version: string
  buildNumber: number
  releaseType: ReleaseType
  status: VersionStatus
  changelog: string | null
  /** the channel its upload named (decisions §10) */
  channel: string
  createdAt: string
  updatedAt: string
  createdBy: UserSummary | null
  publishedAt: string | null
  files: Record<FileField, StoredFile>
  /** who signed its files (decisions §14), null when unsigned */
  signature: VersionSignatureRecord | null
}

/** A version's signature as the console and the CLI show it; install info carries `{ algorithm, keyId, statement, value }`. */
export interface VersionSignatureRecord {
  algorithm: 'ed25519'
  keyId: string
  /** the trusted key's name; null when the key is no longer on the miniapp's list */
  keyName: string | null
  /** set when the key was revoked after signing */
  keyRevokedAt: string | null
  statement: string
  value: string
  signedAt: string
}

/** What the services need from the app: the database, the clock, the blob store, the configuration. */
export interface VersionDeps {
  db: Db
  clock: Clock
  config: Config
  blobs: BlobStore
}

type Reader = Pick<Db, 'select'>
type Tx = Parameters<Parameters<Db['transaction']>[0]>[0]

/** The files of each version, in one indexed query: versionId → kind → { size, sha256 }. */
export function filesOfVersions(db: Reader, versionIds: string[]): Map<string, Record<FileField, StoredFile>> {
  const byVersion = new Map<string, Record<FileField, StoredFile>>()
  if (versionIds.length === 0) return byVersion
  const rows = db.select().from(versionFiles).where(inArray(versionFiles.versionId, versionIds)).all()
  for (const row of rows) {
    let files = byVersion.get(row.versionId)
    if (!files) byVersion.set(row.versionId, (files = {} as Record<FileField, StoredFile>))
    files[row.kind] = { size: row.size, sha256: row.sha256 }
  }
  return byVersion
}

/** The five files of one version. */
export function filesOf(db: Reader, versionId: string): Record<FileField, StoredFile> {
  return filesOfVersions(db, [versionId]).get(versionId)!
}

/** The signature of each version with its key's name, in two indexed queries. */
export function signaturesOfVersions(db: Reader, miniAppId: string, versionIds: string[]): Map<string, VersionSignatureRecord> {
  const found = new Map<string, VersionSignatureRecord>()
  if (versionIds.length === 0) return found
  const rows = db.select().from(versionSignatures).where(inArray(versionSignatures.versionId, versionIds)).all()
  if (rows.length === 0) return found
  const keys = signingKeyNames(db, miniAppId)
  for (const row of rows) {
    const key = keys.get(row.keyId)
    found.set(row.versionId, { algorithm: 'ed25519', keyId: row.keyId, keyName: key?.name ?? null, keyRevokedAt: key?.revokedAt ?? null, statement: row.statement, value: row.value, signedAt: row.signedAt })
  }
  return found
}

/** Stores (or, with null, removes) a version's signature inside the transaction that changes it. */
function writeSignature(tx: Tx, versionId: string, signature: VerifiedSignature | null, user: Caller, now: string): void {
  tx.delete(versionSignatures).where(eq(versionSignatures.versionId, versionId)).run()
  if (signature) tx.insert(versionSignatures).values({ versionId, keyId: signature.keyId, statement: signature.statement, value: signature.value, signedBy: user.id, signedAt: now }).run()
}

/** Records (or replaces) a version's files inside the transaction that writes its row. */
function writeFiles(tx: Tx, versionId: string, files: Record<FileField, StoredFile>): void {
  tx.delete(versionFiles).where(eq(versionFiles.versionId, versionId)).run()
  tx.insert(versionFiles)
    .values(fileFields.map((kind) => ({ versionId, kind, sha256: files[kind].sha256, size: files[kind].size })))
    .run()
}

export function toVersionRecord(row: VersionRow, people: Map<string, UserSummary>, files: Record<FileField, StoredFile>, signature: VersionSignatureRecord | null = null): VersionRecord {
  return {
    id: row.id,
    miniAppId: row.miniAppId,
    version: row.version,
    buildNumber: row.buildNumber,
    releaseType: row.releaseType,
    status: row.status,
    changelog: row.changelog,
    channel: row.channel,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
    createdBy: row.createdBy ? (people.get(row.createdBy) ?? null) : null,
    publishedAt: row.publishedAt,
    files,
    signature,
  }
}

function versionRecord(db: Db, row: VersionRow): VersionRecord {
  return toVersionRecord(row, userSummaries(db, [row.createdBy]), filesOf(db, row.id), signaturesOfVersions(db, row.miniAppId, [row.id]).get(row.id) ?? null)
}

function versionNotFound(versionId: string): AppError {
  return new AppError(404, 'VERSION_NOT_FOUND', `Version ${versionId} not found`)
}

/** A version of this miniapp, or 404 (a version of another miniapp is not found here either). */
function requireVersion(db: Pick<Db, 'select'>, miniAppId: string, versionId: string): VersionRow {
  const row = db.select().from(versions).where(and(eq(versions.id, versionId), eq(versions.miniAppId, miniAppId))).get()
  if (!row) throw versionNotFound(versionId)
  return row
}

function refuse(action: VersionAction, row: VersionRow): never {
  const refusal = refusals[action]
  throw new AppError(409, refusal.code, refusal.message(row.version, row.status))
}

/** True when any version still names this blob: one lookup in the sha256 index of version_files. */
function isBlobReferenced(db: Reader, sha256: string): boolean {
  return db.select({ versionId: versionFiles.versionId }).from(versionFiles).where(eq(versionFiles.sha256, sha256)).limit(1).get() !== undefined
}

function badField(code: string, field: string, message: string): AppError {
  return new AppError(400, code, `${field} ${message}`, [{ field, message }])
}

const manifestLimitBytes = 1024 * 1024

interface UploadInput {
  version: string
  channel: string
  changelog: string | null
  releaseType: ReleaseType
  files: Record<FileField, TempFile>
  /** the optional signature fields of decisions §14 */
  signature: { keyId: string; value: string } | null
}

/** The text fields and the presence of every file; the first problem is a 400 that names its field. */
function checkUploadForm(received: ReceivedUpload): UploadInput {
  const { fields, files } = received
  const version = fields.version?.trim()
  if (!version) throw badField('VALIDATION_ERROR', 'version', 'is required (a version number such as 1.0.0)')
  if (version.length > 64 || !versionPattern.test(version)) {
    throw badField('VALIDATION_ERROR', 'version', `must be MAJOR.MINOR.PATCH with an optional -prerelease, such as 1.0.0 or 2.1.0-beta.1: numbers of at most 15 digits without leading zeros, at most 64 characters in all (got "${version.slice(0, 64)}")`)
  }
  const releaseType = (fields.releaseType?.trim() || 'RELEASE').toUpperCase()
  if (!(releaseTypes as readonly string[]).includes(releaseType)) {
    throw badField('VALIDATION_ERROR', 'releaseType', `must be one of ${releaseTypes.join(', ')}`)
  }
  const channel = fields.channel?.trim() || defaultChannel
  const changelog = fields.changelog?.trim() || null
  if (changelog !== null && textLength(changelog) > 10_000) throw badField('VALIDATION_ERROR', 'changelog', 'must be at most 10000 characters')
  if (changelog !== null && !isCleanText(changelog, true)) throw badField('VALIDATION_ERROR', 'changelog', 'must not hold control characters (line breaks and tabs are fine)')
  for (const field of fileFields) {
    if (!files[field]) throw badField('MISSING_FILE', field, 'is required: send all five files (bundleIos, bundleAndroid, manifest, assetsIos, assetsAndroid)')
  }
  for (const field of ['bundleIos', 'bundleAndroid'] as const) {
    if (files[field]!.size === 0) throw badField('EMPTY_BUNDLE', field, 'is empty; send the JS bundle built for this platform')
  }
  const keyId = fields.signatureKeyId?.trim() || undefined
  const value = fields.signature?.trim() || undefined
  if ((keyId === undefined) !== (value === undefined)) {
    const [missing, sent] = keyId === undefined ? ['signatureKeyId', 'signature'] : ['signature', 'signatureKeyId']
    throw badField('VALIDATION_ERROR', missing, `is required with ${sent}: send both (or neither for an unsigned version)`)
  }
  const signature = keyId !== undefined && value !== undefined ? { keyId, value } : null
  // A copy: the manifest may be swapped for a rewritten one, and the received temp files must all still be discarded.
  return { version, channel, changelog, releaseType: releaseType as ReleaseType, files: { ...files } as Record<FileField, TempFile>, signature }
}

async function readManifest(file: TempFile): Promise<Uint8Array> {
  if ((await stat(file.path)).size > manifestLimitBytes) throw badField('INVALID_MANIFEST', 'manifest', 'must be at most 1 MB')
  return new Uint8Array(await readFile(file.path))
}

/**
 * Records an upload whose parts are in tmp/ (decisions §5, §8). Validates everything first, moves
 * the files into the blob store, then commits the row in one transaction. Whatever happens, the
 * temp files are gone afterwards; on failure so is every blob this upload created that no row
 * refers to. Re-uploading an unpublished version string keeps its id and gives it a new build.
 */
/** What an upload stored, handed to `uploaded` inside its transaction (the version.uploaded event's `version`). */
export interface UploadedVersion {
  id: string
  version: string
  buildNumber: number
  channel: string
  releaseType: string
}

/**
 * Upload (decisions §5, §9). `uploaded` runs inside the transaction that stores the version, so what
 * it queues (the version.uploaded deliveries) commits with it or not at all.
 */
export async function uploadVersion(deps: VersionDeps, user: Caller, miniApp: MiniAppRow, received: ReceivedUpload, uploaded?: (tx: Tx, version: UploadedVersion) => void): Promise<VersionRecord & { warnings: UploadWarning[] }> {
  const { db, clock, blobs } = deps
  const extraTemps: TempFile[] = []
  const held: string[] = []
  const created: string[] = []
  let warnings: UploadWarning[] = []
  let committed = false
  try {
    const input = checkUploadForm(received)
    requireSignedIfRequired(miniApp, input.signature !== null, 'upload')
    requireChannel(db, miniApp.id, input.channel)
    const manifest = checkManifest(await readManifest(input.files.manifest), miniApp.appId, input.version)
    warnings = manifest.warnings
    if (manifest.bytes) {
      const file = await writeTempBytes(blobs.paths, manifest.bytes)
      extraTemps.push(file)
      input.files.manifest = file
    }
    // the archive reader (and node:zlib with it) is loaded by the upload parsers' preload or the first upload, not at start (issue 30)
    const { checkAssetsArchive } = await import('./archive')
    for (const [field, platform] of [['assetsIos', 'ios'], ['assetsAndroid', 'android']] as const) {
      const problem = await checkAssetsArchive(input.files[field].path, platform, deps.config.archiveLimits)
      if (problem) throw badField('INVALID_ARCHIVE', field, problem)
    }
    // Refuse a published version string before its files reach the store (checked again below).
    const before = db.select().from(versions).where(and(eq(versions.miniAppId, miniApp.id), eq(versions.version, input.version))).get()
    if (before && nextStatus('upload', before.status) === null) refuse('upload', before)

    // The statement of the files as they will be stored (the manifest as rewritten), checked before any reaches the store.
    const signature = input.signature && verifySignature(db, miniApp.id, input.signature.keyId, input.signature.value, statementOf(miniApp.appId, input.version, input.files))

    const files = {} as Record<FileField, StoredFile>
    for (const field of fileFields) {
      const temp = input.files[field]
      const result = await blobs.commit(temp)
      held.push(result.sha256)
      if (result.created) created.push(result.sha256)
      files[field] = { size: temp.size, sha256: temp.sha256 }
    }

    const now = isoAt(clock)
    const { versionId, replaced } = db.transaction(
      (tx) => {
        const app = tx.select().from(miniApps).where(eq(miniApps.id, miniApp.id)).get()
        if (!app) throw new AppError(404, 'MINI_APP_NOT_FOUND', `Miniapp ${miniApp.appId} not found`)
        const existing = tx.select().from(versions).where(and(eq(versions.miniAppId, app.id), eq(versions.version, input.version))).get()
        // what may have changed since the checks above: the switch, the key's revocation
        requireSignedIfRequired(app, signature !== null, 'upload')
        if (signature) requireUsableKey(tx, app.id, signature.keyId)
        const buildNumber = app.nextBuildNumber
        let versionId: string
        if (existing) {
          const status = nextStatus('upload', existing.status)
          if (status === null || status === 'DELETED') refuse('upload', existing)
          versionId = existing.id
          tx.update(versions)
            .set({ buildNumber, status, releaseType: input.releaseType, channel: input.channel, changelog: input.changelog, updatedAt: now, publishedAt: null })
            .where(eq(versions.id, existing.id))
            .run()
        } else {
          versionId = newId()
          tx.insert(versions)
            .values({
              id: versionId,
              miniAppId: app.id,
              version: input.version,
              buildNumber,
              releaseType: input.releaseType,
              status: 'DRAFT',
              channel: input.channel,
              changelog: input.changelog,
              createdBy: user.id,
              createdAt: now,
              updatedAt: now,
              publishedAt: null,
            })
            .run()
        }
        const replaced = existing ? Object.values(filesOf(tx, existing.id)).map((file) => file.sha256) : []
        writeFiles(tx, versionId, files)
        writeSignature(tx, versionId, signature, user, now)
        tx.update(miniApps)
          .set({
            nextBuildNumber: buildNumber + 1,
            currentExperienceVersionId: versionId,
            // A replaced build is back to DRAFT: it is no longer the one under review.
            currentReviewVersionId: app.currentReviewVersionId === versionId ? null : app.currentReviewVersionId,
            updatedAt: now,
          })
          .where(eq(miniApps.id, app.id))
          .run()
        recordAudit(tx, clock, {
          actor: user,
          action: 'version.upload',
          targetType: 'version',
          targetId: versionId,
          summary: `${user.email} uploaded ${app.appId} ${input.version} (build ${buildNumber})${existing ? ', replacing the earlier build' : ''}`,
          metadata: { miniAppId: app.id, appId: app.appId, version: input.version, buildNumber, releaseType: input.releaseType, channel: input.channel, replaced: existing !== undefined, files, warnings: warnings.map((warning) => warning.code), signatureKeyId: signature?.keyId ?? null },
        })
        uploaded?.(tx, { id: versionId, version: input.version, buildNumber, channel: input.channel, releaseType: input.releaseType })
        return { versionId, replaced }
      },
      { behavior: 'immediate' },
    )
    committed = true
    blobs.release(held)
    held.length = 0
    // The replaced build's files go unless another version (or this one) still uses them.
    await blobs.removeUnreferenced(replaced, (sha256) => isBlobReferenced(db, sha256))
    return { ...versionRecord(db, requireVersion(db, miniApp.id, versionId)), warnings }
  } finally {
    blobs.release(held)
    if (!committed) await blobs.removeUnreferenced(created, (sha256) => isBlobReferenced(db, sha256))
    await discardUpload(received)
    await Promise.all(extraTemps.map((file) => removeTemp(file)))
  }
}

/** Review (decisions §5): DRAFT or IN_REVIEW → IN_REVIEW, and it becomes the review version. */
export function reviewVersion(deps: Pick<VersionDeps, 'db' | 'clock'>, user: Caller, miniAppId: string, versionId: string): VersionRecord {
  const { db, clock } = deps
  const app = requireVisibleMiniApp(db, user, miniAppId)
  db.transaction(
    (tx) => {
      const row = requireVersion(tx, app.id, versionId)
      const status = nextStatus('review', row.status)
      if (status === null || status === 'DELETED') refuse('review', row)
      const now = isoAt(clock)
      tx.update(versions).set({ status, updatedAt: now }).where(eq(versions.id, row.id)).run()
      tx.update(miniApps).set({ currentReviewVersionId: row.id, updatedAt: now }).where(eq(miniApps.id, app.id)).run()
      recordAudit(tx, clock, {
        actor: user,
        action: 'version.review',
        targetType: 'version',
        targetId: row.id,
        summary: `${user.email} submitted ${app.appId} ${row.version} for review`,
        metadata: { miniAppId: app.id, appId: app.appId, version: row.version, buildNumber: row.buildNumber },
      })
    },
    { behavior: 'immediate' },
  )
  return versionRecord(db, requireVersion(db, app.id, versionId))
}

export interface PublishInput {
  notes?: string | null
  channel?: string
  rolloutPercent?: unknown
  hostVersionRange?: unknown
  mandatory?: unknown
}

/**
 * Publish (decisions §5, §10): PUBLISHED and publishedAt on the first publish, and the newest
 * release of the channel (default: the one its upload named) for `rolloutPercent` of devices.
 * A published version may be published again into another channel (beta → stable).
 */
export function publishVersion(deps: Pick<VersionDeps, 'db' | 'clock'>, user: Caller, miniAppId: string, versionId: string, input: PublishInput = {}): VersionRecord {
  const { db, clock } = deps
  const app = requireVisibleMiniApp(db, user, miniAppId)
  const options = checkReleaseOptions(input)
  db.transaction(
    (tx) => {
      const current = tx.select().from(miniApps).where(eq(miniApps.id, app.id)).get()!
      const row = requireVersion(tx, app.id, versionId)
      const status = nextStatus('publish', row.status)
      if (status === null || status === 'DELETED') refuse('publish', row)
      const signed = tx.select({ keyId: versionSignatures.keyId }).from(versionSignatures).where(eq(versionSignatures.versionId, row.id)).get()
      requireSignedIfRequired(current, signed !== undefined, 'publish', row.version)
      // a key revoked since it signed: the server can see it, so it publishes nothing signed by it
      if (signed) requireUsableKey(tx, app.id, signed.keyId, { appId: app.appId, version: row.version })
      const channel = input.channel ?? row.channel
      const now = isoAt(clock)
      tx.update(versions)
        .set({ status, publishedAt: row.publishedAt ?? now, updatedAt: now })
        .where(eq(versions.id, row.id))
        .run()
      if (current.currentReviewVersionId === row.id) tx.update(miniApps).set({ currentReviewVersionId: null, updatedAt: now }).where(eq(miniApps.id, app.id)).run()
      const replaced = releaseIntoChannel(tx, clock, user, current, row, { ...options, channel, notes: input.notes ?? null })
      recordAudit(tx, clock, {
        actor: user,
        action: 'version.publish',
        targetType: 'version',
        targetId: row.id,
        // the words of the CLI's publish line, the console's notice and the Slack line: "1.2.0 to stable (25 %, mandatory)"
        summary: `${user.email} published ${app.appId} ${publishedText(row.version, channel, options)}`,
        metadata: { miniAppId: app.id, appId: app.appId, version: row.version, channel, previousVersionId: replaced?.versionId ?? null, notes: input.notes ?? null, ...options },
      })
    },
    { behavior: 'immediate' },
  )
  return versionRecord(db, requireVersion(db, app.id, versionId))
}

/**
 * Signs an uploaded version later (decisions §14), e.g. by a release manager whose key is on a
 * hardware token: the statement is built from its stored files, checked, and stored with it
 * (replacing an earlier signature). `updatedAt` moves, so cached install info is rebuilt with it.
 */
export function signVersion(deps: Pick<VersionDeps, 'db' | 'clock'>, user: Caller, miniAppId: string, versionId: string, input: { keyId: string; signature: string }): { record: VersionRecord; liveChannels: string[] } {
  const { db, clock } = deps
  const app = requireVisibleMiniApp(db, user, miniAppId)
  const row = requireVersion(db, app.id, versionId)
  const statement = statementOf(app.appId, row.version, filesOf(db, row.id))
  const signature = verifySignature(db, app.id, input.keyId.trim(), input.signature, statement)
  db.transaction(
    (tx) => {
      const current = requireVersion(tx, app.id, versionId)
      // a re-upload in between changed the files: the signature was made over the old ones
      if (statementOf(app.appId, current.version, filesOf(tx, current.id)) !== statement) {
        throw new AppError(422, 'SIGNATURE_INVALID', `Version ${current.version} was uploaded again while it was being signed; sign the new build`)
      }
      requireUsableKey(tx, app.id, signature.keyId)
      const now = isoAt(clock)
      writeSignature(tx, current.id, signature, user, now)
      tx.update(versions).set({ updatedAt: now }).where(eq(versions.id, current.id)).run()
      recordAudit(tx, clock, {
        actor: user,
        action: 'version.sign',
        targetType: 'version',
        targetId: current.id,
        summary: `${user.email} signed ${app.appId} ${current.version} with the key ${signature.keyId}`,
        metadata: { miniAppId: app.id, appId: app.appId, version: current.version, buildNumber: current.buildNumber, keyId: signature.keyId },
      })
    },
    { behavior: 'immediate' },
  )
  const live = db.selectDistinct({ channel: channelReleases.channel }).from(channelReleases).where(and(eq(channelReleases.versionId, versionId), isNull(channelReleases.withdrawnAt))).all()
  return { record: versionRecord(db, requireVersion(db, app.id, versionId)), liveChannels: live.map((row) => row.channel) }
}

/** Rollback (decisions §5, §10): the channel (default: the target's) serves an earlier release to everyone again; statuses stay. */
export function rollbackRelease(
  deps: Pick<VersionDeps, 'db' | 'clock'>,
  user: Caller,
  miniAppId: string,
  targetVersionId: string,
  notes: string | null,
  channel?: string,
): { miniApp: MiniAppRecord; version: VersionRecord; warnings: ReleaseWarning<'ROLLBACK_CLEARS_PAUSE' | 'ROLLBACK_OF_REVERTED'>[] } {
  const { db, clock } = deps
  const app = requireVisibleMiniApp(db, user, miniAppId)
  const warnings: ReleaseWarning<'ROLLBACK_CLEARS_PAUSE' | 'ROLLBACK_OF_REVERTED'>[] = []
  db.transaction(
    (tx) => {
      const row = requireVersion(tx, app.id, targetVersionId)
      if (nextStatus('rollback', row.status) === null) refuse('rollback', row)
      // the channel serves it to everyone again: the signature rules of a publish (decisions §14), so
      // an emergency rollback does not quietly hand pinned devices a version they refuse
      const current = tx.select().from(miniApps).where(eq(miniApps.id, app.id)).get()!
      const rollbackSignature = tx.select({ keyId: versionSignatures.keyId }).from(versionSignatures).where(eq(versionSignatures.versionId, row.id)).get()
      requireSignedIfRequired(current, rollbackSignature !== undefined, 'publish', row.version)
      if (rollbackSignature) requireUsableKey(tx, app.id, rollbackSignature.keyId, { appId: app.appId, version: row.version })
      const target = channel ?? row.channel
      // a paused release below the newest (§13) comes back only this way: at 100 %, its pause cleared
      const paused = pausedBelowNewest(liveReleases(tx, app.id, target)).find((release) => release.versionId === row.id)
      // a reverted release (below the newest, or withdrawn since) goes to no device (decide.ts): the rollback sends it to every one
      const reverted = wasRevertedIn(tx, app.id, target, row.id)
      const replaced = rollbackChannel(tx, clock, user, app, row, target, notes)
      if (reverted) warnings.push({ code: 'ROLLBACK_OF_REVERTED', message: rollbackOfRevertedText(row.version, target) })
      else if (paused) warnings.push({ code: 'ROLLBACK_CLEARS_PAUSE', message: rollbackClearsPauseText(row.version, target, paused) })
      recordAudit(tx, clock, {
        actor: user,
        action: 'version.rollback',
        targetType: 'version',
        targetId: row.id,
        summary: `${user.email} rolled ${app.appId} back to ${row.version} on ${target}${reverted ? ', a release reverted there' : paused ? ', clearing its pause' : ''}`,
        metadata: {
          miniAppId: app.id,
          appId: app.appId,
          version: row.version,
          channel: target,
          previousVersionId: replaced?.versionId ?? null,
          notes,
          ...(paused ? { clearedPause: { pausedAt: paused.pausedAt, pausedBy: paused.pausedBy, reason: paused.pauseReason } } : {}),
        },
      })
    },
    { behavior: 'immediate' },
  )
  return {
    miniApp: miniAppRecord(db, db.select().from(miniApps).where(eq(miniApps.id, app.id)).get()!),
    version: versionRecord(db, requireVersion(db, app.id, targetVersionId)),
    warnings,
  }
}

/**
 * Delete: only versions that were never published. Pointers that named it move to the newest
 * remaining version (highest buildNumber) or null; files no other version uses are removed.
 */
export async function deleteVersion(deps: Pick<VersionDeps, 'db' | 'clock' | 'blobs'>, user: Caller, miniAppId: string, versionId: string): Promise<{ success: true; versionId: string }> {
  const { db, clock, blobs } = deps
  const app = requireVisibleMiniApp(db, user, miniAppId)
  const removedFiles = db.transaction(
    (tx) => {
      const current = tx.select().from(miniApps).where(eq(miniApps.id, app.id)).get()!
      const row = requireVersion(tx, app.id, versionId)
      if (current.currentReleaseVersionId === row.id) {
        throw new AppError(409, 'VERSION_IS_LIVE', `Version ${row.version} is the current release; roll back to another version before deleting it`)
      }
      if (nextStatus('delete', row.status) === null) refuse('delete', row)
      const removed = Object.values(filesOf(tx, row.id)).map((file) => file.sha256)
      tx.delete(versions).where(eq(versions.id, row.id)).run()
      // what devices reported of it stays counted, as a version the server does not know (decisions §13)
      foldVersionIntoOther(db.$client, app.id, row.id)
      const newest = tx.select({ id: versions.id }).from(versions).where(eq(versions.miniAppId, app.id)).orderBy(desc(versions.buildNumber)).limit(1).get()
      const replacement = newest?.id ?? null
      tx.update(miniApps)
        .set({
          currentExperienceVersionId: current.currentExperienceVersionId === row.id ? replacement : current.currentExperienceVersionId,
          currentReviewVersionId: current.currentReviewVersionId === row.id ? replacement : current.currentReviewVersionId,
          updatedAt: isoAt(clock),
        })
        .where(eq(miniApps.id, app.id))
        .run()
      recordAudit(tx, clock, {
        actor: user,
        action: 'version.delete',
        targetType: 'version',
        targetId: row.id,
        summary: `${user.email} deleted ${app.appId} ${row.version} (build ${row.buildNumber})`,
        metadata: { miniAppId: app.id, appId: app.appId, version: row.version, buildNumber: row.buildNumber, status: row.status },
      })
      return removed
    },
    { behavior: 'immediate' },
  )
  await blobs.removeUnreferenced(removedFiles, (sha256) => isBlobReferenced(db, sha256))
  return { success: true, versionId }
}

export interface ReleaseHistoryRecord {
  id: string
  action: 'PUBLISH' | 'ROLLBACK' | 'ROLLOUT'
  channel: string
  versionId: string
  version: string
  previousVersionId: string | null
  rolloutPercent: number | null
  notes: string | null
  actor: UserSummary | null
  createdAt: string
}

export interface AccessLink {
  versionId: string
  version: string
  installUrl: string
  /** opens the test install in the host app (decisions §9); the console's QR code encodes it */
  deepLink: string
  /** when the link's download token stops working; null for published versions (never) */
  expiresAt: string | null
}

/** A version as the workspace lists it: with the channels it is still a release of, where publishing it is refused. */
export type WorkspaceVersion = VersionRecord & { releaseOf: string[]; revertedIn: string[] }

export interface Workspace {
  miniApp: MiniAppRecord
  /** one page, newest first */
  versions: WorkspaceVersion[]
  releaseHistory: ReleaseHistoryRecord[]
  /** one per version of the page */
  accessLinks: AccessLink[]
  channels: ChannelRecord[]
  /** pass as `cursor` for the next page; null on the last */
  nextCursor: string | null
  /** what the caller is to this miniapp, so a console shows only what they may do */
  viewer: { memberRole: MemberRole | null; isAdmin: boolean; canManageMembers: boolean }
}

export interface WorkspaceQuery {
  limit?: number
  cursor?: string
  status?: VersionStatus
}

/** The most versions one workspace page holds (`?limit=`). */
const workspaceLimitMax = 200

/** The release history shown with a workspace: the newest entries (the console pages nothing older yet). */
const historyLimit = 200

function badCursor(): AppError {
  return new AppError(400, 'VALIDATION_ERROR', 'Invalid query: cursor must be the nextCursor of an earlier page', [{ field: 'cursor', message: 'must be the nextCursor of an earlier page' }])
}

/**
 * The miniapp, a page of its versions newest first (default 50) with an install link each, its
 * channels, and its release history newest first. Download tokens are signed only for the page.
 * `base` is the API base of the request (decisions §6): the links are full URLs.
 */
export async function getWorkspace(
  deps: Pick<VersionDeps, 'db' | 'clock' | 'config'> & { tokens: TokenService },
  user: Caller,
  miniAppId: string,
  base: string,
  query: WorkspaceQuery = {},
): Promise<Workspace> {
  const { db, clock, config, tokens } = deps
  const app = requireVisibleMiniApp(db, user, miniAppId)
  const viewerRole = memberRole(db, user.id, app.id)
  const limit = query.limit ?? 50
  if (!Number.isInteger(limit) || limit < 1 || limit > workspaceLimitMax) {
    throw new AppError(400, 'VALIDATION_ERROR', `Invalid query: limit must be a whole number from 1 to ${workspaceLimitMax}`, [{ field: 'limit', message: `must be a whole number from 1 to ${workspaceLimitMax}` }])
  }
  let before = Number.MAX_SAFE_INTEGER
  if (query.cursor !== undefined) {
    if (!/^b\d{1,15}$/.test(query.cursor)) throw badCursor()
    before = Number(query.cursor.slice(1))
  }
  const conditions = [eq(versions.miniAppId, app.id), lt(versions.buildNumber, before)]
  if (query.status) conditions.push(eq(versions.status, query.status))
  const page = db.select().from(versions).where(and(...conditions)).orderBy(desc(versions.buildNumber)).limit(limit + 1).all()
  const versionRows = page.slice(0, limit)
  const nextCursor = page.length > limit ? `b${versionRows[versionRows.length - 1]!.buildNumber}` : null
  const historyRows = db.select().from(releaseHistory).where(eq(releaseHistory.miniAppId, app.id)).orderBy(desc(releaseHistory.createdAt), desc(releaseHistory.id)).limit(historyLimit).all()
  const people = userSummaries(db, [app.createdBy, ...versionRows.map((row) => row.createdBy), ...historyRows.map((row) => row.actorId)])
  const files = filesOfVersions(db, versionRows.map((row) => row.id))
  const signatures = signaturesOfVersions(db, app.id, versionRows.map((row) => row.id))
  const held = channelsHolding(db, app.id, versionRows.map((row) => row.id))
  const reverted = channelsRevertedIn(db, app.id, versionRows.map((row) => row.id))
  const accessLinks: AccessLink[] = []
  // drafts' links are handed out on the viewer's authority (and their API key's, if they came with one): decisions §18
  const grant = grantOf(db, user)
  for (const row of versionRows) {
    // Published versions get the stable, non-expiring token a CDN can cache (decisions §6).
    const expiresAt = row.status === 'PUBLISHED' ? null : clock() + config.downloadTokenTtlSeconds * 1000
    // a draft's link names the grant it is handed out on: it stops working when that authority ends
    const token = await tokens.signDownload(row.id, expiresAt, expiresAt === null ? undefined : grant)
    const install = installUrl(base, row.id, token)
    accessLinks.push({ versionId: row.id, version: row.version, installUrl: install, deepLink: deepLink(config, row.id, install), expiresAt: expiresAt === null ? null : new Date(Math.floor(expiresAt / 1000) * 1000).toISOString() })
  }
  return {
    miniApp: toMiniAppRecord(app, people),
    versions: versionRows.map((row) => ({ ...toVersionRecord(row, people, files.get(row.id)!, signatures.get(row.id) ?? null), releaseOf: held.get(row.id)!, revertedIn: reverted.get(row.id)! })),
    releaseHistory: historyRows.map((row) => ({
      id: row.id,
      action: row.action,
      channel: row.channel,
      versionId: row.versionId,
      version: row.version,
      previousVersionId: row.previousVersionId,
      rolloutPercent: row.rolloutPercent,
      notes: row.notes,
      actor: row.actorId ? (people.get(row.actorId) ?? null) : null,
      apiKey: row.actorKeyName === null ? null : { name: row.actorKeyName },
      createdAt: row.createdAt,
    })),
    accessLinks,
    channels: channelRecords(db, app),
    nextCursor,
    viewer: { memberRole: viewerRole, isAdmin: user.role === 'ADMIN', canManageMembers: user.role === 'ADMIN' || viewerRole === 'OWNER' },
  }
}
