// Signed releases (decisions §14): the keys a miniapp trusts, and the check of a signature over the statement of a version's stored files.
import { and, asc, eq } from 'drizzle-orm'
import { createPublicKey, verify } from 'node:crypto'
import { signingKeys, type MiniAppRow, type SigningKeyRow } from '../../db/schema'
import type { Db } from '../../db/open'
import { AppError } from '../../http/errors'
import { requireVisibleName } from '../../http/text'
import { isoAt, type Clock } from '../../ids'
import { recordAudit } from '../audit/service'
import { memberRole, requireVisibleMiniApp, type Caller } from '../miniapps/service'
import { decodeBase64, keyIdOf, unsoundKeyReason } from './keys'
import { liveReleaseKeyRevokedText, signAgainText, signatureRequiredText } from './words'
import { buildStatement, utf8Bytes, statementFileKinds, type StatementFileKind } from '../../sdk/statement'

type Reader = Pick<Db, 'select'>

export interface SigningKeyRecord {
  keyId: string
  name: string
  /** base64 of the raw 32 bytes */
  publicKey: string
  createdAt: string
  revokedAt: string | null
}

/** What install info carries for a signed version (decisions §14), exactly as stored at signing. */
export interface SignatureInfo {
  algorithm: 'ed25519'
  keyId: string
  statement: string
  value: string
}

/** A signature that passed the check, ready to be stored with its version. */
export interface VerifiedSignature {
  keyId: string
  statement: string
  value: string
}

function invalidPublicKey(why: string): AppError {
  return new AppError(400, 'INVALID_PUBLIC_KEY', `publicKey ${why}; send the base64 of the raw 32-byte Ed25519 public key (miniship keys generate prints it)`, [{ field: 'publicKey', message: why }])
}

/** Why text is not the standard base64 a key is written in, naming the usual mix-ups (a PEM pasted whole, base64url). */
function notBase64Reason(text: string): string {
  const trimmed = text.trim()
  if (trimmed.startsWith('-----BEGIN')) return 'is a PEM file, not the base64 of the raw key (miniship keys add FILE reads a PEM file)'
  if (/^[A-Za-z0-9_-]+={0,2}$/.test(trimmed) && /[-_]/.test(trimmed)) return 'is base64url; write it in standard base64 (+ and / for - and _, padded with =)'
  return 'is not base64'
}

/** The raw key, its canonical base64 and keyId; 400 INVALID_PUBLIC_KEY when it is not 32 bytes of an Ed25519 key. */
export function parsePublicKey(text: string): { raw: Uint8Array; publicKey: string; keyId: string } {
  const raw = decodeBase64(text)
  if (raw === null) throw invalidPublicKey(notBase64Reason(text))
  if (raw.length === 0) throw invalidPublicKey('is empty')
  if (raw.length !== 32) throw invalidPublicKey(`is ${raw.length} bytes, not 32`)
  // no curve point, or one of small or mixed order: anyone could sign under it (keys.ts)
  const unsound = unsoundKeyReason(raw)
  if (unsound !== null) throw invalidPublicKey(unsound)
  return { raw, publicKey: Buffer.from(raw).toString('base64'), keyId: keyIdOf(raw) }
}

/** The statement of a version's files as stored (decisions §14): the one builder in sdk/statement.ts. */
export function statementOf(appId: string, version: string, files: Partial<Record<StatementFileKind, { sha256: string }>>): string {
  const digests: Partial<Record<StatementFileKind, string>> = {}
  for (const kind of statementFileKinds) {
    const file = files[kind]
    if (file) digests[kind] = file.sha256
  }
  return buildStatement(appId, version, digests)
}

function toRecord(row: SigningKeyRow): SigningKeyRecord {
  return { keyId: row.keyId, name: row.name, publicKey: row.publicKey, createdAt: row.createdAt, revokedAt: row.revokedAt }
}

/** Keys are managed by owners and admins; other members get 403, the rest 404. */
function requireKeyManager(db: Db, user: Caller, miniAppId: string): MiniAppRow {
  const row = requireVisibleMiniApp(db, user, miniAppId)
  if (user.role !== 'ADMIN' && memberRole(db, user.id, row.id) !== 'OWNER') {
    throw new AppError(403, 'OWNER_REQUIRED', 'Only owners of this miniapp and administrators may manage its signing keys')
  }
  return row
}

/** Every key of the miniapp, revoked ones too, oldest first (members). */
export function listSigningKeys(db: Db, user: Caller, miniAppId: string): SigningKeyRecord[] {
  const app = requireVisibleMiniApp(db, user, miniAppId)
  return db.select().from(signingKeys).where(eq(signingKeys.miniAppId, app.id)).orderBy(asc(signingKeys.createdAt), asc(signingKeys.keyId)).all().map(toRecord)
}

/** The names of keys by keyId, for version records (a key is named by the miniapp that trusts it). */
export function signingKeyNames(db: Reader, miniAppId: string): Map<string, { name: string; revokedAt: string | null }> {
  const rows = db.select({ keyId: signingKeys.keyId, name: signingKeys.name, revokedAt: signingKeys.revokedAt }).from(signingKeys).where(eq(signingKeys.miniAppId, miniAppId)).all()
  return new Map(rows.map((row) => [row.keyId, { name: row.name, revokedAt: row.revokedAt }]))
}

export function addSigningKey(db: Db, clock: Clock, user: Caller, miniAppId: string, input: { name: string; publicKey: string }): SigningKeyRecord {
  const app = requireKeyManager(db, user, miniAppId)
  const name = requireVisibleName(input.name)
  const key = parsePublicKey(input.publicKey)
  const now = isoAt(clock)
  db.transaction(
    (tx) => {
      const existing = tx.select().from(signingKeys).where(and(eq(signingKeys.miniAppId, app.id), eq(signingKeys.keyId, key.keyId))).get()
      if (existing) {
        const state = existing.revokedAt ? `was revoked at ${existing.revokedAt}; a revoked key cannot be trusted again, generate a new one` : 'is already trusted'
        throw new AppError(409, 'SIGNING_KEY_EXISTS', `The key ${key.keyId} ("${existing.name}") ${state}`)
      }
      tx.insert(signingKeys).values({ miniAppId: app.id, keyId: key.keyId, name, publicKey: key.publicKey, createdBy: user.id, createdAt: now, revokedAt: null }).run()
      recordAudit(tx, clock, {
        actor: user,
        action: 'miniapp.signing_key.add',
        targetType: 'miniapp',
        targetId: app.id,
        summary: `${user.email} added the signing key ${key.keyId} ("${name}") to miniapp ${app.appId}`,
        metadata: { appId: app.appId, keyId: key.keyId, name, publicKey: key.publicKey },
      })
    },
    { behavior: 'immediate' },
  )
  return { keyId: key.keyId, name, publicKey: key.publicKey, createdAt: now, revokedAt: null }
}

/** What revoking a key warns of: a version it signed that devices get now (§14: host apps that drop the key refuse it). */
export interface RevokeWarning {
  code: 'LIVE_RELEASE_KEY_REVOKED'
  message: string
}

/** The versions a key signed that devices get now, each with where (channels/service.ts liveVersionsSignedBy, handed in by the app). */
export type LiveVersionsSignedBy = (miniAppId: string, keyId: string) => { version: string; standings: string[] }[]

/**
 * Revokes a key: kept (so signed versions still name it), never usable again. Revoking twice
 * answers the same record, and warns of nothing (nothing changed). A revoke that happens warns of
 * each version the key signed that devices get now: host apps that no longer trust the key refuse it.
 */
export function revokeSigningKey(db: Db, clock: Clock, user: Caller, miniAppId: string, keyId: string, liveSignedBy?: LiveVersionsSignedBy): SigningKeyRecord & { warnings: RevokeWarning[] } {
  const app = requireKeyManager(db, user, miniAppId)
  let changed = false
  const record = db.transaction(
    (tx) => {
      const row = tx.select().from(signingKeys).where(and(eq(signingKeys.miniAppId, app.id), eq(signingKeys.keyId, keyId))).get()
      if (!row) throw new AppError(404, 'SIGNING_KEY_NOT_FOUND', `Miniapp ${app.appId} has no signing key ${keyId.slice(0, 64)}`)
      if (row.revokedAt) return toRecord(row)
      changed = true
      const now = isoAt(clock)
      tx.update(signingKeys).set({ revokedAt: now }).where(and(eq(signingKeys.miniAppId, app.id), eq(signingKeys.keyId, keyId))).run()
      recordAudit(tx, clock, {
        actor: user,
        action: 'miniapp.signing_key.revoke',
        targetType: 'miniapp',
        targetId: app.id,
        summary: `${user.email} revoked the signing key ${keyId} ("${row.name}") of miniapp ${app.appId}`,
        metadata: { appId: app.appId, keyId, name: row.name },
      })
      return toRecord({ ...row, revokedAt: now })
    },
    { behavior: 'immediate' },
  )
  const live = changed && liveSignedBy ? liveSignedBy(app.id, keyId) : []
  return { ...record, warnings: live.map((version) => ({ code: 'LIVE_RELEASE_KEY_REVOKED', message: liveReleaseKeyRevokedText(app.appId, version.version, version.standings) })) }
}

/**
 * The key a signature names, if it may sign now: 422 SIGNING_KEY_UNKNOWN / SIGNING_KEY_REVOKED.
 * `signedVersion`: the check is of a stored version's signature (publish, rollback), so the way out is
 * to sign that version again, which the message says as a command that runs as printed.
 */
export function requireUsableKey(db: Reader, miniAppId: string, keyId: string, signedVersion?: { appId: string; version: string }): SigningKeyRow {
  const row = db.select().from(signingKeys).where(and(eq(signingKeys.miniAppId, miniAppId), eq(signingKeys.keyId, keyId))).get()
  if (!row) throw new AppError(422, 'SIGNING_KEY_UNKNOWN', `The miniapp trusts no signing key ${keyId.slice(0, 64)}; add it first (miniship keys add, or the console's Settings › Signing)`)
  if (row.revokedAt) {
    const how = signedVersion ? signAgainText(signedVersion.appId, signedVersion.version) : 'sign with a current key'
    throw new AppError(422, 'SIGNING_KEY_REVOKED', `The signing key ${keyId} ("${row.name}") was revoked at ${row.revokedAt}; ${how}`)
  }
  return row
}

/**
 * Checks `signature` (base64 of 64 bytes) by the miniapp's key `keyId` over `statement`. Unknown
 * or revoked key, or a signature that does not verify: 422 with the code of decisions §14.
 */
export function verifySignature(db: Reader, miniAppId: string, keyId: string, signature: string, statement: string): VerifiedSignature {
  const key = requireUsableKey(db, miniAppId, keyId)
  const value = decodeBase64(signature)
  if (value === null || value.length !== 64) {
    throw new AppError(422, 'SIGNATURE_INVALID', 'The signature is not the base64 of a 64-byte Ed25519 signature')
  }
  const publicKey = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(key.publicKey, 'base64').toString('base64url') }, format: 'jwk' })
  if (!verify(null, utf8Bytes(statement), publicKey, value)) {
    throw new AppError(422, 'SIGNATURE_INVALID', `The signature by ${keyId} does not match these files: it must be made over the statement ${statement}`)
  }
  return { keyId, statement, value: Buffer.from(value).toString('base64') }
}

/** 422 SIGNATURE_REQUIRED when the miniapp requires signatures and `signed` is false. */
export function requireSignedIfRequired(app: Pick<MiniAppRow, 'appId' | 'requireSignature'>, signed: boolean, what: 'upload' | 'publish', version = 'VERSION'): void {
  if (!app.requireSignature || signed) return
  // push's check before an upload says the same words (words.ts)
  throw new AppError(422, 'SIGNATURE_REQUIRED', signatureRequiredText(app.appId, what, version))
}
