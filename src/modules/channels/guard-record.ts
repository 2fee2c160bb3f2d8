// What a channel answers about its release guard (decisions §15): the settings and the last F, T seen. Reads only; guard.ts acts.
import { eq } from 'drizzle-orm'
import { channelGuards } from '../../db/schema'
import type { Db } from '../../db/open'

export const guardDefaults = { enabled: false, maxFailureRate: 0.05, minDevices: 20 } as const

/** F and T of the channel's newest release as the guard last counted them. */
interface GuardCount {
  failedDevices: number
  totalDevices: number
  /** F / T (0 while T is 0) */
  failureRate: number
  /** when the guard counted these numbers (the last flush that changed them) */
  at: string
}

export interface GuardRecord {
  enabled: boolean
  /** pause when F / T is above this (0–1) */
  maxFailureRate: number
  /** and T is at least this */
  minDevices: number
  /** the last count of the newest release; null before the guard counted it */
  lastCheck: GuardCount | null
  /** the numbers with which the guard paused the newest release; null when it did not */
  trip: (GuardCount & { maxFailureRate: number }) | null
  /** F as last counted while the newest release was paused or reverted (by a person or the guard; counted again as a person resumes it): after the resume the guard pauses it again only once more devices fail; null when nothing holds it back */
  heldAtFailedDevices: number | null
}

type GuardRow = typeof channelGuards.$inferSelect

export function rateOf(failed: number, total: number): number {
  return total > 0 ? failed / total : 0
}

/** The answer of a channel whose newest release is `releaseId` (counts of an older release are not shown). */
export function toGuardRecord(row: GuardRow | undefined, releaseId: string | null): GuardRecord {
  if (!row) return { ...guardDefaults, lastCheck: null, trip: null, heldAtFailedDevices: null }
  const current = releaseId !== null && row.releaseId === releaseId
  const lastCheck =
    current && row.failedDevices !== null && row.totalDevices !== null && row.checkedAt !== null
      ? { failedDevices: row.failedDevices, totalDevices: row.totalDevices, failureRate: rateOf(row.failedDevices, row.totalDevices), at: row.checkedAt }
      : null
  const trip =
    releaseId !== null && row.tripReleaseId === releaseId && row.tripFailedDevices !== null && row.tripTotalDevices !== null && row.trippedAt !== null
      ? {
          failedDevices: row.tripFailedDevices,
          totalDevices: row.tripTotalDevices,
          failureRate: rateOf(row.tripFailedDevices, row.tripTotalDevices),
          maxFailureRate: row.tripMaxFailureRate ?? row.maxFailureRate,
          at: row.trippedAt,
        }
      : null
  const heldAtFailedDevices = current ? row.resumedFailedDevices : null
  return { enabled: row.enabled, maxFailureRate: row.maxFailureRate, minDevices: row.minDevices, lastCheck, trip, heldAtFailedDevices }
}

/** The guard rows of a miniapp by channel name. */
export function guardRows(db: Pick<Db, 'select'>, miniAppId: string): Map<string, GuardRow> {
  return new Map(db.select().from(channelGuards).where(eq(channelGuards.miniAppId, miniAppId)).all().map((row) => [row.channel, row]))
}
