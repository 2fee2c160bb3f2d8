// API key rules: create (shown once, stored as sha256), list, revoke, and authenticating a key with its scopes and last use batched.
import { and, desc, eq, isNull, sql } from 'drizzle-orm'
import { apiKeys, users, type ApiKeyRow } from '../../db/schema'
import type { Db } from '../../db/open'
import { AppError } from '../../http/errors'
import { requireVisibleName } from '../../http/text'
import type { ApiKeyGrant, AuthUser } from '../../http/guards'
import { newId, isoAt, type Clock } from '../../ids'
import { recordAudit } from '../audit/service'
import { requireVisibleMiniApp, type UserSummary } from '../miniapps/service'
import { apiKeyScopes, type ApiKeyScope } from './model'
import { scopeRequiredText } from './words'

export const apiKeyMarker = 'msk_'
/** `msk_` and 32 random bytes in base64url (43 characters, no padding). */
const keyPattern = /^msk_[A-Za-z0-9_-]{43}$/
const prefixLength = apiKeyMarker.length + 8
/** Addresses remembered per key to notice (and audit) the first use from a new one. */
const knownAddressLimit = 20

export function isApiKey(token: string): boolean {
  return token.startsWith(apiKeyMarker)
}

export function hashApiKey(key: string): string {
  return new Bun.CryptoHasher('sha256').update(key).digest('hex')
}

export function generateApiKey(): string {
  return apiKeyMarker + Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64url')
}

/** What a key lets its bearer do; the guard hands it to handlers on the caller. */
export type { ApiKeyGrant }

export interface ApiKeyRecord {
  id: string
  name: string
  scopes: ApiKeyScope[]
  miniAppIds: string[] | null
  prefix: string
  createdAt: string
  expiresAt: string | null
  lastUsedAt: string | null
  revokedAt: string | null
}

export interface ApiKeyDeps {
  db: Db
  clock: Clock
}

interface Actor {
  id: string
  email: string
}

function parseList(text: string | null): string[] | null {
  if (text === null) return null
  const parsed = JSON.parse(text) as unknown
  return Array.isArray(parsed) ? parsed.filter((item): item is string => typeof item === 'string') : []
}

function toRecord(row: ApiKeyRow, lastUsedAt: string | null): ApiKeyRecord {
  return {
    id: row.id,
    name: row.name,
    scopes: parseList(row.scopes) as ApiKeyScope[],
    miniAppIds: parseList(row.miniAppIds),
    prefix: row.prefix,
    createdAt: row.createdAt,
    expiresAt: row.expiresAt,
    lastUsedAt,
    revokedAt: row.revokedAt,
  }
}

function notFound(id: string): AppError {
  return new AppError(404, 'API_KEY_NOT_FOUND', `API key ${id.slice(0, 64)} not found`)
}

export interface CreateApiKeyInput {
  name: string
  scopes: ApiKeyScope[]
  miniAppIds?: string[] | null
  expiresAt?: string | null
}

/**
 * Creates a key for `owner`. The listed miniapps must be ones the owner is a member of (an
 * admin's key gets no admin powers, so the same rule applies to admins); a key answers 404 for
 * the rest just as a non-member is answered.
 */
export function createApiKey(deps: ApiKeyDeps, owner: Actor, input: CreateApiKeyInput): ApiKeyRecord & { key: string } {
  const { db, clock } = deps
  const name = requireVisibleName(input.name)
  const scopes = apiKeyScopes.filter((scope) => input.scopes.includes(scope))
  let miniAppIds: string[] | null = null
  if (input.miniAppIds) {
    // the appId users know is taken as well as the UUID; the key keeps the UUID
    miniAppIds = [...new Set(input.miniAppIds.map((miniAppId) => requireVisibleMiniApp(db, { id: owner.id, email: owner.email, role: 'USER' }, miniAppId).id))]
  }
  let expiresAt: string | null = null
  if (input.expiresAt) {
    const at = Date.parse(input.expiresAt)
    if (!/^\d{4}-\d{2}-\d{2}T/.test(input.expiresAt) || Number.isNaN(at)) {
      throw new AppError(400, 'VALIDATION_ERROR', 'expiresAt must be an ISO 8601 time such as 2027-01-31T00:00:00Z', [{ field: 'expiresAt', message: 'must be an ISO 8601 time' }])
    }
    if (at <= clock()) throw new AppError(400, 'VALIDATION_ERROR', 'expiresAt must be in the future', [{ field: 'expiresAt', message: 'must be in the future' }])
    expiresAt = new Date(at).toISOString()
  }
  const key = generateApiKey()
  const now = isoAt(clock)
  const row: ApiKeyRow = {
    id: newId(),
    userId: owner.id,
    name,
    keyHash: hashApiKey(key),
    prefix: key.slice(0, prefixLength),
    scopes: JSON.stringify(scopes),
    miniAppIds: miniAppIds === null ? null : JSON.stringify(miniAppIds),
    knownAddresses: '[]',
    createdAt: now,
    expiresAt,
    lastUsedAt: null,
    revokedAt: null,
  }
  db.transaction((tx) => {
    tx.insert(apiKeys).values(row).run()
    recordAudit(tx, clock, {
      actor: owner,
      action: 'api_key.create',
      targetType: 'api_key',
      targetId: row.id,
      summary: `${owner.email} created API key "${name}" (${row.prefix}…) with ${scopes.join(', ')}${miniAppIds ? ` for ${miniAppIds.length} miniapp(s)` : ''}`,
      metadata: { name, prefix: row.prefix, scopes, miniAppIds, expiresAt },
    })
  })
  const { lastUsedAt: _unused, revokedAt: _none, ...record } = toRecord(row, null)
  return { ...record, key, lastUsedAt: null, revokedAt: null }
}

export function listApiKeys(deps: ApiKeyDeps, usage: ApiKeyUsage, ownerId: string): ApiKeyRecord[] {
  return deps.db
    .select()
    .from(apiKeys)
    .where(eq(apiKeys.userId, ownerId))
    .orderBy(desc(apiKeys.createdAt), desc(apiKeys.id))
    .all()
    .map((row) => toRecord(row, usage.lastUsedAt(row)))
}

export function listAllApiKeys(deps: ApiKeyDeps, usage: ApiKeyUsage): (ApiKeyRecord & { owner: UserSummary })[] {
  return deps.db
    .select({ key: apiKeys, owner: { id: users.id, email: users.email, displayName: users.displayName } })
    .from(apiKeys)
    .innerJoin(users, eq(users.id, apiKeys.userId))
    .orderBy(desc(apiKeys.createdAt), desc(apiKeys.id))
    .all()
    .map(({ key, owner }) => ({ ...toRecord(key, usage.lastUsedAt(key)), owner }))
}

/**
 * Revokes at once (the guard reads the row on every use). Owners revoke their own keys; admins,
 * with `anyOwner`, any key. Revoking a revoked key answers success again and changes nothing.
 */
export function revokeApiKey(deps: ApiKeyDeps, actor: Actor, id: string, options: { anyOwner: boolean }): { success: true; id: string } {
  const { db, clock } = deps
  const row = db.select().from(apiKeys).where(eq(apiKeys.id, id)).get()
  if (!row || (!options.anyOwner && row.userId !== actor.id)) throw notFound(id)
  if (row.revokedAt !== null) return { success: true, id }
  db.transaction((tx) => {
    tx.update(apiKeys).set({ revokedAt: isoAt(clock) }).where(and(eq(apiKeys.id, id), isNull(apiKeys.revokedAt))).run()
    recordAudit(tx, clock, {
      actor,
      action: 'api_key.revoke',
      targetType: 'api_key',
      targetId: id,
      summary: `${actor.email} revoked API key "${row.name}" (${row.prefix}…)${row.userId !== actor.id ? ' of another user' : ''}`,
      metadata: { name: row.name, prefix: row.prefix, ownerId: row.userId },
    })
  })
  return { success: true, id }
}

/** Last use of each key, held in memory and written in batches rather than once per request. */
export interface ApiKeyUsage {
  lastUsedAt(row: Pick<ApiKeyRow, 'id' | 'lastUsedAt'>): string | null
  /** writes what is pending; `serve` calls it on shutdown, a timer every `flushEveryMs` */
  flush(): void
  stop(): void
}

export interface ApiKeyAuthenticator {
  /**
   * The caller a key stands for, or the AppError: 401 for a malformed, unknown, revoked or expired
   * key or a disabled owner; 403 SCOPE_REQUIRED when the key lacks `scope` (null: no scope check). `address` (null when
   * unknown) is how the first use from a new client address is noticed.
   */
  authenticate(key: string, scope: ApiKeyScope | null, address: string | null): AuthUser
  usage: ApiKeyUsage
}

const invalidKey = () => new AppError(401, 'INVALID_API_KEY', 'The API key is not valid; create a new one in the console or with POST /api/auth/api-keys')

/**
 * Failed key authentication per client address (decisions §18), as login limits attempts: the app
 * wires it to the rate limiter. `check` throws 429 RATE_LIMITED once an address has used up its
 * failures (a good key from there is refused too, so guessing learns nothing); `failed` counts one.
 */
export interface KeyFailureLimit {
  check(address: string): void
  failed(address: string): void
}

/** The codes of a key that does not authenticate; a missing scope (403) is no failed authentication. */
const authenticationFailures = new Set(['INVALID_API_KEY', 'API_KEY_REVOKED', 'API_KEY_EXPIRED', 'API_KEY_OWNER_DISABLED'])

export function createApiKeyAuthenticator(deps: ApiKeyDeps & { flushEveryMs?: number; failures?: KeyFailureLimit }): ApiKeyAuthenticator {
  const { db, clock } = deps
  const pending = new Map<string, string>()
  function prepareByHash() {
    return db
      .select({
        id: apiKeys.id,
        name: apiKeys.name,
        prefix: apiKeys.prefix,
        scopes: apiKeys.scopes,
        miniAppIds: apiKeys.miniAppIds,
        knownAddresses: apiKeys.knownAddresses,
        expiresAt: apiKeys.expiresAt,
        revokedAt: apiKeys.revokedAt,
        userId: users.id,
        email: users.email,
        displayName: users.displayName,
        status: users.status,
      })
      .from(apiKeys)
      .innerJoin(users, eq(users.id, apiKeys.userId))
      .where(eq(apiKeys.keyHash, sql.placeholder('keyHash')))
      .prepare()
  }
  // prepared on the first key presented, not on the way to the first answer (issue 30: start to first 200)
  let byHashStatement: ReturnType<typeof prepareByHash> | null = null
  const byHash = () => (byHashStatement ??= prepareByHash())

  const usage: ApiKeyUsage = {
    lastUsedAt: (row) => pending.get(row.id) ?? row.lastUsedAt,
    flush() {
      if (pending.size === 0) return
      const batch = [...pending]
      pending.clear()
      db.transaction((tx) => {
        for (const [id, at] of batch) tx.update(apiKeys).set({ lastUsedAt: at }).where(eq(apiKeys.id, id)).run()
      })
    },
    stop() {
      clearInterval(timer)
      usage.flush()
    },
  }
  const timer = setInterval(() => {
    try {
      usage.flush()
    } catch {
      // the database is closing; the next flush (or the one on shutdown) writes what is pending
    }
  }, deps.flushEveryMs ?? 30_000)
  timer.unref()

  function noticeAddress(row: { id: string; name: string; prefix: string; knownAddresses: string; userId: string; email: string }, address: string): void {
    // The stored JSON array of strings holds each address exactly as JSON.stringify writes it.
    if (row.knownAddresses.includes(JSON.stringify(address))) return
    const known = [...(parseList(row.knownAddresses) ?? []), address].slice(-knownAddressLimit)
    db.transaction((tx) => {
      tx.update(apiKeys).set({ knownAddresses: JSON.stringify(known) }).where(eq(apiKeys.id, row.id)).run()
      recordAudit(tx, clock, {
        actor: { id: row.userId, email: row.email },
        action: 'api_key.new_address',
        targetType: 'api_key',
        targetId: row.id,
        summary: `API key "${row.name}" (${row.prefix}…) of ${row.email} was used from ${address} for the first time`,
        metadata: { address, prefix: row.prefix },
      })
    })
  }

  function authenticate(key: string, scope: ApiKeyScope | null, address: string | null): AuthUser {
    if (address === null || !deps.failures) return verify(key, scope, address)
    deps.failures.check(address)
    try {
      return verify(key, scope, address)
    } catch (error) {
      if (error instanceof AppError && authenticationFailures.has(error.code)) deps.failures.failed(address)
      throw error
    }
  }

  return { usage, authenticate }

  function verify(key: string, scope: ApiKeyScope | null, address: string | null): AuthUser {
    if (!keyPattern.test(key)) throw invalidKey()
    const row = byHash().get({ keyHash: hashApiKey(key) })
    if (!row) throw invalidKey()
    if (row.revokedAt !== null) throw new AppError(401, 'API_KEY_REVOKED', `The API key ${row.prefix}… was revoked on ${row.revokedAt}; create a new one`)
    const now = clock()
    if (row.expiresAt !== null && Date.parse(row.expiresAt) <= now) {
      throw new AppError(401, 'API_KEY_EXPIRED', `The API key ${row.prefix}… expired on ${row.expiresAt}; create a new one`)
    }
    if (row.status !== 'ACTIVE') throw new AppError(401, 'API_KEY_OWNER_DISABLED', `The account that owns API key ${row.prefix}… is disabled`)
    pending.set(row.id, new Date(now).toISOString())
    if (address !== null) noticeAddress(row, address)
    const scopes = parseList(row.scopes) as ApiKeyScope[]
    if (scope !== null && !scopes.includes(scope)) {
      throw new AppError(403, 'SCOPE_REQUIRED', scopeRequiredText(scope, { prefix: row.prefix, scopes }))
    }
    const grant: ApiKeyGrant = { id: row.id, name: row.name, prefix: row.prefix, scopes, miniAppIds: parseList(row.miniAppIds) }
    // An admin's key is no admin: keys reach only what membership grants (and never admin endpoints).
    return { id: row.userId, email: row.email, displayName: row.displayName, role: 'USER', status: 'ACTIVE', apiKey: grant }
  }
}
