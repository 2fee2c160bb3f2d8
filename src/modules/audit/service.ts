// The audit log: who did what to which record, one line each (decisions §2, §7).
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
