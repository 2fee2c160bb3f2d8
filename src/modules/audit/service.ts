// The audit log: who did what to which record, one line each (decisions §2, §7).
import { desc, eq, inArray, lt, sql } from 'drizzle-orm'
import { apiKeys, auditLogs, miniApps, users, versions } from '../../db/schema'
import type { Db } from '../../db/open'
import { newId, isoAt, type Clock } from '../../ids'

export interface AuditEntry {
  /** null for the system itself (e.g. a burst of failed logins by an unknown caller) */
  actor: { id: string; email: string; /** set when the change was made with an API key: it is named in the log */ apiKey?: { id?: string; name?: string } } | null
  action: string
  targetType: string
  targetId: string | null
  summary: string
  metadata?: Record<string, unknown>
}

/** Writes one entry; call it inside the transaction of the change it describes. */
export function recordAudit(db: Pick<Db, 'insert'>, clock: Clock, entry: AuditEntry): void {
  // a change made with an API key names the key (and its owner, the actor): CI is told apart from its owner at a keyboard
  const key = entry.actor?.apiKey
  const metadata = key?.name && !(entry.metadata && 'apiKey' in entry.metadata) ? { ...entry.metadata, apiKey: { id: key.id ?? null, name: key.name } } : entry.metadata
  db.insert(auditLogs)
    .values({
      id: newId(),
      actorId: entry.actor?.id ?? null,
      actorEmail: entry.actor?.email ?? null,
      action: entry.action,
      targetType: entry.targetType,
      targetId: entry.targetId,
      summary: summaryOf(entry),
      metadata: JSON.stringify(metadata ?? {}),
      createdAt: isoAt(clock),
    })
    .run()
}

/** A change made with an API key, named as the audit log, release history and the CLI name it. */
export function keyActorText(keyName: string, ownerEmail: string): string {
  return `API key "${keyName}" of ${ownerEmail}`
}

/**
 * The entry's sentence. Services write it as "<email> did …"; made with an API key, it names the key
 * and its owner as the column "Who" does, so the console never reads as if the owner acted by hand.
 */
function summaryOf(entry: AuditEntry): string {
  const actor = entry.actor
  const keyName = actor?.apiKey?.name
  if (!actor || !keyName || !entry.summary.startsWith(`${actor.email} `)) return entry.summary
  return keyActorText(keyName, actor.email) + entry.summary.slice(actor.email.length)
}

export interface AuditLogRecord {
  id: string
  actorId: string | null
  actorEmail: string | null
  action: string
  targetType: string
  targetId: string | null
  summary: string
  metadata: unknown
  createdAt: string
  /** who, in words: the email, `API key "ci" of owner@example.com`, or `release-guard` */
  actorName: string | null
  /** the target by the name people know (an appId, "appId 1.2.0", an email, a key's name); null when it is gone */
  targetName: string | null
}

function parseMetadata(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return {}
  }
}

/**
 * Newest first, at most `limit`, in (createdAt, id) order. With `before` (a createdAt), only entries
 * strictly older, which is how a reader pages back; with `beforeId` too, entries of that very
 * createdAt whose id sorts before it also come, so a page boundary inside one millisecond (one
 * admin change can write several entries) loses nothing.
 */
export function listAuditLogs(db: Db, options: { limit: number; before?: string; beforeId?: string }): AuditLogRecord[] {
  const query = db.select().from(auditLogs)
  const { before, beforeId } = options
  const older =
    before === undefined
      ? undefined
      : beforeId === undefined
        ? lt(auditLogs.createdAt, before)
        : // a row value: the page starts in audit_logs_created_at_id (an OR of the two made SQLite sort every older entry)
          sql`(${auditLogs.createdAt}, ${auditLogs.id}) < (${before}, ${beforeId})`
  const rows = (older === undefined ? query : query.where(older))
    .orderBy(desc(auditLogs.createdAt), desc(auditLogs.id))
    .limit(options.limit)
    .all()
  const names = targetNames(db, rows)
  return rows.map((row) => {
    const metadata = parseMetadata(row.metadata)
    const key = (metadata as { apiKey?: { name?: unknown } } | null)?.apiKey
    // what the server does by itself (the release guard's pause) names its actor in the metadata
    const system = row.actorId === null ? (metadata as { actor?: unknown } | null)?.actor : undefined
    const actorName = typeof key?.name === 'string' ? keyActorText(key.name, row.actorEmail ?? 'a deleted user') : (row.actorEmail ?? (typeof system === 'string' ? system : null))
    return { ...row, metadata, actorName, targetName: row.targetId === null ? null : (names.get(`${row.targetType}\u0000${row.targetId}`) ?? null) }
  })
}

/** The names of a page's targets, one query per kind of target. */
function targetNames(db: Db, rows: { targetType: string; targetId: string | null }[]): Map<string, string> {
  const ids = (type: string) => [...new Set(rows.filter((row) => row.targetType === type && row.targetId !== null).map((row) => row.targetId!))]
  const names = new Map<string, string>()
  const put = (type: string, id: string, name: string) => names.set(`${type}\u0000${id}`, name)
  const apps = ids('miniapp')
  if (apps.length) for (const row of db.select({ id: miniApps.id, appId: miniApps.appId }).from(miniApps).where(inArray(miniApps.id, apps)).all()) put('miniapp', row.id, row.appId)
  const versionIds = ids('version')
  if (versionIds.length) {
    for (const row of db.select({ id: versions.id, version: versions.version, appId: miniApps.appId }).from(versions).innerJoin(miniApps, eq(miniApps.id, versions.miniAppId)).where(inArray(versions.id, versionIds)).all()) {
      put('version', row.id, `${row.appId} ${row.version}`)
    }
  }
  const userIds = ids('user')
  if (userIds.length) for (const row of db.select({ id: users.id, email: users.email }).from(users).where(inArray(users.id, userIds)).all()) put('user', row.id, row.email)
  const keyIds = ids('api_key')
  if (keyIds.length) for (const row of db.select({ id: apiKeys.id, name: apiKeys.name, prefix: apiKeys.prefix }).from(apiKeys).where(inArray(apiKeys.id, keyIds)).all()) put('api_key', row.id, `API key "${row.name}" (${row.prefix}…)`)
  return names
}
