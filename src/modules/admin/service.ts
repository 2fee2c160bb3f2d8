// User administration (decisions §7): the listing with the audit log, and changes to one user.
import { and, asc, eq, ne, sql } from 'drizzle-orm'
import { users } from '../../db/schema'
import type { Db } from '../../db/open'
import { AppError } from '../../http/errors'
import { isoAt, type Clock } from '../../ids'
import { listAuditLogs, recordAudit, type AuditEntry, type AuditLogRecord } from '../audit/service'
import { bumpedGrantGeneration } from '../auth/grants'
import { hashPassword, invalidField, requireDisplayName, requirePassword, toUserRecord, type AuditActor, type UserRecord, type UserStatus } from '../auth/service'
import type { Role } from '../auth/tokens'

export const auditLimitDefault = 100
export const auditLimitMax = 1000
export const userLimitDefault = 200
export const userLimitMax = 1000

export interface AdminListing {
  users: UserRecord[]
  /** pass as `userCursor` for the next page of users; null on the last */
  usersNextCursor: string | null
  auditLogs: AuditLogRecord[]
}

/** A page of users (oldest first, default 200) and a page of the audit log (newest first). */
export function listUsersWithAudit(db: Db, options: { auditLimit?: number; auditBefore?: string; auditBeforeId?: string; userLimit?: number; userCursor?: string }): AdminListing {
  const userLimit = options.userLimit ?? userLimitDefault
  if (!Number.isInteger(userLimit) || userLimit < 1 || userLimit > userLimitMax) {
    throw invalidField('userLimit', `must be a whole number from 1 to ${userLimitMax}`, 'query')
  }
  let after: { createdAt: string; id: string } | null = null
  if (options.userCursor !== undefined) {
    const [createdAt, id] = Buffer.from(options.userCursor, 'base64url').toString().split('\u0000')
    if (!createdAt || !id || !/^\d{4}-\d{2}-\d{2}T/.test(createdAt)) throw invalidField('userCursor', 'must be the usersNextCursor of an earlier page', 'query')
    after = { createdAt, id }
  }
  const limit = options.auditLimit ?? auditLimitDefault
  if (!Number.isInteger(limit) || limit < 1 || limit > auditLimitMax) {
    throw invalidField('auditLimit', `must be a whole number from 1 to ${auditLimitMax}`, 'query')
  }
  let before: string | undefined
  if (options.auditBefore !== undefined) {
    const at = Date.parse(options.auditBefore)
    if (!/^\d{4}-\d{2}-\d{2}T/.test(options.auditBefore) || Number.isNaN(at)) {
      throw invalidField('auditBefore', 'must be an ISO 8601 timestamp such as 2026-11-22T10:00:00.000Z (the createdAt of the oldest entry shown)', 'query')
    }
    before = new Date(at).toISOString()
  }
  const page = db
    .select()
    .from(users)
    // a row value, so the page after the cursor is found in users_created_at instead of walking it from the start
    .where(after ? sql`(${users.createdAt}, ${users.id}) > (${after.createdAt}, ${after.id})` : undefined)
    .orderBy(asc(users.createdAt), asc(users.id))
    .limit(userLimit + 1)
    .all()
  const rows = page.slice(0, userLimit)
  const last = rows[rows.length - 1]
  const usersNextCursor = page.length > userLimit && last ? Buffer.from(`${last.createdAt}\u0000${last.id}`).toString('base64url') : null
  if (options.auditBeforeId !== undefined && before === undefined) {
    throw invalidField('auditBeforeId', 'goes with auditBefore (the createdAt of the same entry)', 'query')
  }
  return { users: rows.map(toUserRecord), usersNextCursor, auditLogs: listAuditLogs(db, { limit, before, beforeId: options.auditBeforeId }) }
}

export interface UserPatch {
  displayName?: string
  role?: Role
  status?: UserStatus
  password?: string
}

/**
 * Applies an admin's change to one user, in one transaction with one audit entry per kind of
 * change. A role change, a disable and a password reset bump the token version, so the user's
 * existing tokens stop working at once. The last active admin cannot lose that standing (409).
 */
/** `passwordMinLength`: the server's --password-min-length, which a new password must meet (an existing one keeps working). */
export async function updateUser(db: Db, clock: Clock, actor: AuditActor, userId: string, patch: UserPatch, passwordMinLength?: number): Promise<UserRecord> {
  if (patch.displayName === undefined && patch.role === undefined && patch.status === undefined && patch.password === undefined) {
    throw new AppError(400, 'VALIDATION_ERROR', 'Invalid body: send at least one of displayName, role, status, password', [
      { field: 'body', message: 'must contain at least one of displayName, role, status, password' },
    ])
  }
  const displayName = patch.displayName === undefined ? undefined : requireDisplayName(patch.displayName)
  const password = patch.password === undefined ? undefined : requirePassword(patch.password, passwordMinLength)
  if (!db.select({ id: users.id }).from(users).where(eq(users.id, userId)).get()) throw userNotFound(userId)
  // Hashing is slow and async: done before the (synchronous) transaction, used only if it commits.
  const passwordHash = password === undefined ? undefined : await hashPassword(password)

  return db.transaction((tx) => {
    const row = tx.select().from(users).where(eq(users.id, userId)).get()
    if (!row) throw userNotFound(userId)
    const role = patch.role ?? row.role
    const status = patch.status ?? row.status
    if (row.role === 'ADMIN' && row.status === 'ACTIVE' && (role !== 'ADMIN' || status !== 'ACTIVE')) {
      const others = tx
        .select({ n: sql<number>`count(*)` })
        .from(users)
        .where(and(eq(users.role, 'ADMIN'), eq(users.status, 'ACTIVE'), ne(users.id, row.id)))
        .get()!.n
      if (others === 0) {
        throw new AppError(409, 'LAST_ADMIN', `${row.email} is the last active administrator; make another user an admin first`)
      }
    }

    const entries: Omit<AuditEntry, 'actor' | 'targetType' | 'targetId'>[] = []
    let revoke = false
    if (displayName !== undefined && displayName !== row.displayName) {
      entries.push({ action: 'user.update', summary: `Renamed ${row.email} from "${row.displayName}" to "${displayName}"`, metadata: { from: row.displayName, to: displayName } })
    }
    if (role !== row.role) {
      revoke = true
      entries.push({ action: 'user.role_change', summary: `Changed the role of ${row.email} from ${row.role} to ${role}`, metadata: { from: row.role, to: role } })
    }
    if (status !== row.status) {
      revoke ||= status === 'DISABLED'
      entries.push({ action: 'user.status_change', summary: `${status === 'DISABLED' ? 'Disabled' : 'Enabled'} ${row.email}`, metadata: { from: row.status, to: status } })
    }
    if (passwordHash !== undefined) {
      revoke = true
      entries.push({ action: 'user.password_reset', summary: `Reset the password of ${row.email}`, metadata: {} })
    }
    if (entries.length === 0) return toUserRecord(row)

    const updated = tx
      .update(users)
      .set({
        displayName: displayName ?? row.displayName,
        role,
        status,
        ...(passwordHash === undefined ? {} : { passwordHash }),
        tokenVersion: revoke ? row.tokenVersion + 1 : row.tokenVersion,
        // what was handed out on their authority (draft links) ends with it: decisions §18
        ...(revoke ? { grantGeneration: bumpedGrantGeneration } : {}),
        updatedAt: isoAt(clock),
      })
      .where(eq(users.id, row.id))
      .returning()
      .get()
    for (const entry of entries) recordAudit(tx, clock, { ...entry, actor, targetType: 'user', targetId: row.id })
    return toUserRecord(updated)
  })
}

function userNotFound(userId: string): AppError {
  return new AppError(404, 'USER_NOT_FOUND', `No user has the id ${userId.slice(0, 80)}`)
}
