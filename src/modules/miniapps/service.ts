// Miniapp rules: who may see and manage which miniapp (decisions §5), create/update, and members.
import { and, desc, eq, inArray, sql } from 'drizzle-orm'
import { miniApps, miniAppMembers, users, type MiniAppRow } from '../../db/schema'
import type { Db } from '../../db/open'
import { AppError } from '../../http/errors'
import { requireVisibleName } from '../../http/text'
import { recordAudit } from '../audit/service'
import { bumpedGrantGeneration } from '../auth/grants'
import { normaliseEmail } from '../auth/service'
import { newId, isoAt, type Clock } from '../../ids'
import { appIdPattern } from './model'

/** The caller as the rules need it; `AuthUser` from the guard fits. */
export interface Caller {
  id: string
  email: string
  role: 'ADMIN' | 'USER'
  /** a caller with an API key restricted to some miniapps sees only those (the rest answer 404) */
  apiKey?: { id?: string; miniAppIds: readonly string[] | null; /** named in the audit log */ name?: string }
}

/** False when the caller's API key is restricted to other miniapps. */
function keyAllows(user: Caller, miniAppId: string): boolean {
  const allowed = user.apiKey?.miniAppIds
  return allowed === undefined || allowed === null || allowed.includes(miniAppId)
}

export type MemberRole = 'OWNER' | 'DEVELOPER'

export interface UserSummary {
  id: string
  email: string
  displayName: string
}

export interface MiniAppRecord {
  id: string
  appId: string
  name: string
  description: string | null
  iconUrl: string | null
  currentExperienceVersionId: string | null
  currentReviewVersionId: string | null
  currentReleaseVersionId: string | null
  /** the experience install answers without a token (decisions §9) */
  experiencePublic: boolean
  /** uploads and publishes of unsigned versions are refused (decisions §14) */
  requireSignature: boolean
  createdAt: string
  updatedAt: string
  createdBy: UserSummary | null
}

const appIdRegExp = new RegExp(appIdPattern)

/**
 * decisions §2's pattern, and no `..` anywhere: the pattern alone admits `a..b`, and an appId
 * ends up in runtime sandbox paths on devices.
 */
export function isValidAppId(appId: string): boolean {
  return appIdRegExp.test(appId) && !appId.includes('..')
}

function notFound(miniAppId: string): AppError {
  return new AppError(404, 'MINI_APP_NOT_FOUND', `Miniapp ${miniAppId} not found`)
}

export function memberRole(db: Db, userId: string, miniAppId: string): MemberRole | null {
  const row = db
    .select({ role: miniAppMembers.role })
    .from(miniAppMembers)
    .where(and(eq(miniAppMembers.miniAppId, miniAppId), eq(miniAppMembers.userId, userId)))
    .get()
  return row?.role ?? null
}

/**
 * The miniapp if `user` may see it (a member, or an admin), else null: callers answer 404 alike.
 * `miniAppId`: the UUID, or the appId users know (console URLs, API keys' miniAppIds).
 */
export function findVisibleMiniApp(db: Db, user: Caller, miniAppId: string): MiniAppRow | null {
  const row = db.select().from(miniApps).where(eq(miniApps.id, miniAppId)).get() ?? (isValidAppId(miniAppId) ? db.select().from(miniApps).where(eq(miniApps.appId, miniAppId)).get() : undefined)
  if (!row || !keyAllows(user, row.id)) return null
  if (user.role === 'ADMIN' || memberRole(db, user.id, row.id) !== null) return row
  return null
}

export function canSeeMiniApp(db: Db, user: Caller, miniAppId: string): boolean {
  return findVisibleMiniApp(db, user, miniAppId) !== null
}

export function requireVisibleMiniApp(db: Db, user: Caller, miniAppId: string): MiniAppRow {
  const row = findVisibleMiniApp(db, user, miniAppId)
  if (!row) throw notFound(miniAppId)
  return row
}

/** Same as `requireVisibleMiniApp` by `appId` (the CLI's upload path). */
export function requireVisibleMiniAppByAppId(db: Db, user: Caller, appId: string): MiniAppRow {
  const missing = new AppError(404, 'MINI_APP_NOT_FOUND', `Miniapp ${appId} not found`)
  if (!isValidAppId(appId)) throw missing
  const row = db.select().from(miniApps).where(eq(miniApps.appId, appId)).get()
  if (!row || !keyAllows(user, row.id)) throw missing
  if (user.role !== 'ADMIN' && memberRole(db, user.id, row.id) === null) throw missing
  return row
}

/** Members endpoints: owners and admins. Others who can see the miniapp get 403, the rest 404. */
function requireOwner(db: Db, user: Caller, miniAppId: string): MiniAppRow {
  const row = requireVisibleMiniApp(db, user, miniAppId)
  if (user.role !== 'ADMIN' && memberRole(db, user.id, row.id) !== 'OWNER') {
    throw new AppError(403, 'OWNER_REQUIRED', 'Only owners of this miniapp and administrators may manage its members')
  }
  return row
}

export function userSummaries(db: Db, ids: (string | null)[]): Map<string, UserSummary> {
  const wanted = [...new Set(ids.filter((id): id is string => id !== null))]
  if (wanted.length === 0) return new Map()
  const rows = db.select({ id: users.id, email: users.email, displayName: users.displayName }).from(users).where(inArray(users.id, wanted)).all()
  return new Map(rows.map((row) => [row.id, row]))
}

export function toMiniAppRecord(row: MiniAppRow, creators: Map<string, UserSummary>): MiniAppRecord {
  return {
    id: row.id,
    appId: row.appId,
    name: row.name,
    description: row.description,
    iconUrl: row.iconUrl,
    currentExperienceVersionId: row.currentExperienceVersionId,
    currentReviewVersionId: row.currentReviewVersionId,
    currentReleaseVersionId: row.currentReleaseVersionId,
    experiencePublic: row.experiencePublic,
    requireSignature: row.requireSignature,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
    createdBy: row.createdBy ? (creators.get(row.createdBy) ?? null) : null,
  }
}

export function miniAppRecord(db: Db, row: MiniAppRow): MiniAppRecord {
  return toMiniAppRecord(row, userSummaries(db, [row.createdBy]))
}

/** What the caller can see, newest first. */
export function listMiniApps(db: Db, user: Caller): MiniAppRecord[] {
  const rows =
    user.role === 'ADMIN'
      ? db.select().from(miniApps).orderBy(desc(miniApps.createdAt), desc(miniApps.id)).all()
      : db
          .select()
          .from(miniApps)
          .where(inArray(miniApps.id, db.select({ id: miniAppMembers.miniAppId }).from(miniAppMembers).where(eq(miniAppMembers.userId, user.id))))
          .orderBy(desc(miniApps.createdAt), desc(miniApps.id))
          .all()
  const visible = rows.filter((row) => keyAllows(user, row.id))
  const creators = userSummaries(db, visible.map((row) => row.createdBy))
  return visible.map((row) => toMiniAppRecord(row, creators))
}

function checkIconUrl(iconUrl: string | null | undefined): string | null | undefined {
  if (iconUrl === undefined || iconUrl === null) return iconUrl
  const trimmed = iconUrl.trim()
  if (trimmed === '') return null
  let url: URL | null = null
  try {
    url = new URL(trimmed)
  } catch {
    url = null
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    throw new AppError(400, 'VALIDATION_ERROR', 'Invalid body: iconUrl must be an http(s) URL', [{ field: 'iconUrl', message: 'must be an http(s) URL' }])
  }
  return trimmed
}

function checkName(name: string | undefined): string | undefined {
  return name === undefined ? undefined : requireVisibleName(name)
}

export interface CreateMiniAppInput {
  appId: string
  name: string
  description?: string | null
  iconUrl?: string | null
}

/** Any active user may create a miniapp and becomes its OWNER. Duplicate appIds (any case) are 409. */
export function createMiniApp(db: Db, clock: Clock, user: Caller, input: CreateMiniAppInput): MiniAppRecord {
  if (!isValidAppId(input.appId)) {
    throw new AppError(400, 'VALIDATION_ERROR', 'Invalid body: appId must be a letter followed by letters, digits, ".", "_" or "-", without ".."', [
      { field: 'appId', message: 'must be 2–64 characters: a letter, then letters, digits, ".", "_" or "-", and no ".."' },
    ])
  }
  const name = checkName(input.name)!
  const iconUrl = checkIconUrl(input.iconUrl) ?? null
  const description = input.description?.trim() || null
  const now = isoAt(clock)
  const id = newId()
  db.transaction(
    (tx) => {
      // Case-insensitive: a runtime keeps each miniapp in a folder named after its appId, and
      // default iOS/macOS file systems do not tell `Shop` from `shop`.
      const taken = tx.select({ id: miniApps.id }).from(miniApps).where(sql`lower(${miniApps.appId}) = lower(${input.appId})`).get()
      // say what to do: the one who asked may be its member already (then nothing to create), or not (then it is someone else's);
      // not "push to it": the id as typed may differ in case from the stored one, and the CLI's lookups are case-sensitive
      if (taken) throw new AppError(409, 'APP_ID_TAKEN', `The appId ${input.appId} is already registered (app ids are unique on this server, whatever their letter case): miniship apps lists the miniapps you are a member of (its id may differ in letter case; push takes it as listed there), ask one of its owners to add you, or choose another appId`)
      tx.insert(miniApps).values({ id, appId: input.appId, name, description, iconUrl, createdBy: user.id, createdAt: now, updatedAt: now }).run()
      tx.insert(miniAppMembers).values({ miniAppId: id, userId: user.id, role: 'OWNER', createdAt: now }).run()
      recordAudit(tx, clock, {
        actor: user,
        action: 'miniapp.create',
        targetType: 'miniapp',
        targetId: id,
        summary: `${user.email} created miniapp ${input.appId}`,
        metadata: { appId: input.appId, name },
      })
    },
    { behavior: 'immediate' },
  )
  return miniAppRecord(db, db.select().from(miniApps).where(eq(miniApps.id, id)).get()!)
}

export interface UpdateMiniAppInput {
  name?: string
  description?: string | null
  iconUrl?: string | null
  experiencePublic?: boolean
  requireSignature?: boolean
}

/**
 * Members and admins may change name, description, icon and experiencePublic; requireSignature only owners and admins; appId never changes.
 * A body that changes nothing writes nothing (no transaction, no audit entry), so it answers even while
 * another process holds the write lock. `onChanged` runs inside the change's transaction with the
 * miniapp's id and the fields that changed: what it queues (the release mirror's write) commits with the change or not at all.
 */
export function updateMiniApp(db: Db, clock: Clock, user: Caller, miniAppId: string, input: UpdateMiniAppInput, onChanged?: (change: { miniAppId: string; changed: string[] }) => void): MiniAppRecord {
  const row = requireVisibleMiniApp(db, user, miniAppId)
  const changes: Partial<Pick<MiniAppRow, 'name' | 'description' | 'iconUrl' | 'experiencePublic' | 'requireSignature'>> = {}
  const name = checkName(input.name)
  if (name !== undefined) changes.name = name
  if (input.description !== undefined) changes.description = input.description?.trim() || null
  const iconUrl = checkIconUrl(input.iconUrl)
  if (iconUrl !== undefined) changes.iconUrl = iconUrl
  if (input.experiencePublic !== undefined) changes.experiencePublic = input.experiencePublic
  if (input.requireSignature !== undefined) {
    if (memberRole(db, user.id, row.id) !== 'OWNER' && user.role !== 'ADMIN') {
      throw new AppError(403, 'OWNER_REQUIRED', 'Only owners of this miniapp and administrators may change requireSignature')
    }
    changes.requireSignature = input.requireSignature
  }
  const changed = Object.keys(changes).filter((key) => changes[key as keyof typeof changes] !== row[key as keyof typeof changes])
  if (changed.length > 0) {
    db.transaction(
      (tx) => {
        tx.update(miniApps).set({ ...changes, updatedAt: isoAt(clock) }).where(eq(miniApps.id, row.id)).run()
        recordAudit(tx, clock, {
          actor: user,
          action: 'miniapp.update',
          targetType: 'miniapp',
          targetId: row.id,
          summary: `${user.email} changed ${changed.join(', ')} of miniapp ${row.appId}`,
          metadata: { appId: row.appId, changed, ...('experiencePublic' in changes ? { experiencePublic: changes.experiencePublic } : {}), ...('requireSignature' in changes ? { requireSignature: changes.requireSignature } : {}) },
        })
        onChanged?.({ miniAppId: row.id, changed })
      },
      { behavior: 'immediate' },
    )
  }
  return miniAppRecord(db, db.select().from(miniApps).where(eq(miniApps.id, row.id)).get()!)
}

export interface MemberRecord {
  userId: string
  email: string
  displayName: string
  role: MemberRole
  createdAt: string
}

function memberRows(db: Pick<Db, 'select'>, miniAppId: string, userId?: string): MemberRecord[] {
  const where = userId === undefined ? eq(miniAppMembers.miniAppId, miniAppId) : and(eq(miniAppMembers.miniAppId, miniAppId), eq(miniAppMembers.userId, userId))
  return db
    .select({ userId: users.id, email: users.email, displayName: users.displayName, role: miniAppMembers.role, createdAt: miniAppMembers.createdAt })
    .from(miniAppMembers)
    .innerJoin(users, eq(users.id, miniAppMembers.userId))
    .where(where)
    // owners first (OWNER sorts after DEVELOPER), then in the order they joined
    .orderBy(desc(miniAppMembers.role), miniAppMembers.createdAt, users.email)
    .all()
}

export function listMembers(db: Db, user: Caller, miniAppId: string): MemberRecord[] {
  const row = requireOwner(db, user, miniAppId)
  return memberRows(db, row.id)
}

export function addMember(db: Db, clock: Clock, user: Caller, miniAppId: string, input: { email: string; role: MemberRole }): MemberRecord {
  const row = requireOwner(db, user, miniAppId)
  // as accounts store it (an international domain in punycode); what is no address is simply found by no one
  const email = normaliseEmail(input.email) ?? input.email.trim().toLowerCase()
  db.transaction(
    (tx) => {
      const member = tx.select({ id: users.id }).from(users).where(eq(users.email, email)).get()
      if (!member) throw new AppError(404, 'USER_NOT_FOUND', `No user with the email ${email}; they must register first`)
      const existing = tx
        .select({ role: miniAppMembers.role })
        .from(miniAppMembers)
        .where(and(eq(miniAppMembers.miniAppId, row.id), eq(miniAppMembers.userId, member.id)))
        .get()
      if (existing) throw new AppError(409, 'ALREADY_MEMBER', `${email} is already a member (${existing.role}) of ${row.appId}; remove them first to change the role`)
      tx.insert(miniAppMembers).values({ miniAppId: row.id, userId: member.id, role: input.role, createdAt: isoAt(clock) }).run()
      recordAudit(tx, clock, {
        actor: user,
        action: 'miniapp.member.add',
        targetType: 'miniapp',
        targetId: row.id,
        summary: `${user.email} added ${email} to miniapp ${row.appId} as ${input.role}`,
        metadata: { appId: row.appId, userId: member.id, email, role: input.role },
      })
    },
    { behavior: 'immediate' },
  )
  return memberRows(db, row.id).find((member) => member.email === email)!
}

/** Removes a member; the last OWNER stays (409), so a miniapp is never left without one. */
export function removeMember(db: Db, clock: Clock, user: Caller, miniAppId: string, userId: string): { success: true; userId: string } {
  const row = requireOwner(db, user, miniAppId)
  db.transaction(
    (tx) => {
      const member = memberRows(tx, row.id, userId)[0]
      if (!member) throw new AppError(404, 'MEMBER_NOT_FOUND', `User ${userId} is not a member of ${row.appId}`)
      if (member.role === 'OWNER') {
        const owners = tx
          .select({ n: sql<number>`count(*)` })
          .from(miniAppMembers)
          .where(and(eq(miniAppMembers.miniAppId, row.id), eq(miniAppMembers.role, 'OWNER')))
          .get()!.n
        if (owners <= 1) throw new AppError(409, 'LAST_OWNER', `${member.email} is the last owner of ${row.appId}; add another owner first`)
      }
      tx.delete(miniAppMembers).where(and(eq(miniAppMembers.miniAppId, row.id), eq(miniAppMembers.userId, userId))).run()
      // links handed out on their authority end with their membership (decisions §18)
      tx.update(users).set({ grantGeneration: bumpedGrantGeneration }).where(eq(users.id, userId)).run()
      recordAudit(tx, clock, {
        actor: user,
        action: 'miniapp.member.remove',
        targetType: 'miniapp',
        targetId: row.id,
        summary: `${user.email} removed ${member.email} (${member.role}) from miniapp ${row.appId}`,
        metadata: { appId: row.appId, userId, email: member.email, role: member.role },
      })
    },
    { behavior: 'immediate' },
  )
  return { success: true, userId }
}
