// The audit log: who did what to which record, one line each (decisions §2, §7).
import { and, desc, eq, lt, or } from 'drizzle-orm'
import { auditLogs } from '../../db/schema'
import type { Db } from '../../db/open'
import { newId, isoAt, type Clock } from '../../ids'

export interface AuditEntry {
  /** null for the system itself (e.g. a burst of failed logins by an unknown caller) */
  actor: { id: string; email: string } | null
  action: string
  targetType: string
  targetId: string | null
  summary: string
  metadata?: Record<string, unknown>
}

/** Writes one entry; call it inside the transaction of the change it describes. */
export function recordAudit(db: Pick<Db, 'insert'>, clock: Clock, entry: AuditEntry): void {
  db.insert(auditLogs)
    .values({
      id: newId(),
      actorId: entry.actor?.id ?? null,
      actorEmail: entry.actor?.email ?? null,
      action: entry.action,
      targetType: entry.targetType,
      targetId: entry.targetId,
      summary: entry.summary,
      metadata: JSON.stringify(entry.metadata ?? {}),
      createdAt: isoAt(clock),
    })
    .run()
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
        : or(lt(auditLogs.createdAt, before), and(eq(auditLogs.createdAt, before), lt(auditLogs.id, beforeId)))
  const rows = (older === undefined ? query : query.where(older))
    .orderBy(desc(auditLogs.createdAt), desc(auditLogs.id))
    .limit(options.limit)
    .all()
  return rows.map((row) => ({ ...row, metadata: parseMetadata(row.metadata) }))
}
