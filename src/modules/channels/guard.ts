// The release guard (decisions §15): per channel settings, distinct failed and reporting devices of the newest release, and the pause when too many fail.
//
// Counting: each accepted device event of a known version (insights hands them over, InsightObserver)
// adds the device's keyed hash to an in-memory sketch of (channel, version): every event to `all`,
// `failed` and `rolled_back` also to `failed`. Devices, not events: a device sending 50 `failed`
// events is one hash. After each insights flush the pending sketches of the version that is its
// channel's newest release are merged into that release's stored pair (guard_device_sketches, so a
// restart keeps them), whether or not the channel's guard is on: F and T count "since it was
// published" (§15), so a guard switched on mid-rollout knows the devices that reported before. For
// each guarded channel F and T are read off them and written to its guard row, and the release is
// paused when T ≥ minDevices and F / T > maxFailureRate. Sketches are exact up to 2,048 devices and
// a HyperLogLog past that (insights/sketch.ts); only channels' newest releases have them.
import { and, eq } from 'drizzle-orm'
import { channelGuards, type MiniAppRow } from '../../db/schema'
import { atomically, type Db } from '../../db/open'
import { AppError } from '../../http/errors'
import { isoAt, type Clock } from '../../ids'
import { recordAudit } from '../audit/service'
import { memberRole, requireVisibleMiniApp, type Caller } from '../miniapps/service'
import type { DeviceEvent } from '../insights/counters'
import type { InsightObserver } from '../insights/service'
import { addDigest, countOf, deviceHasher, emptySketch, mergeInto, sketchFromRow, sketchRow, type DeviceSketch } from '../insights/sketch'
import { guardDefaults, rateOf } from './guard-record'
import { failedText, guardStateText, thresholdText } from './guard-text'
import { channelRecords, liveReleases, pauseRollout, releaseState, requireChannel, type ChannelRecord, type RolloutWarning } from './service'

/** Who the audit log and a paused release name when the guard acts. */
const guardActor = 'release-guard'
/** With a slower insights flush than this the guard keeps its own timer, so a pause comes within 60 s of the events (§15). */
const guardCheckSeconds = 30
/** Longer ids are not ids a runtime sends (as the insight counters) */
const deviceIdLimit = 200

// ---- settings: PATCH /api/mini-apps/{miniAppId}/channels/{channel} { guard }

interface GuardSettings {
  enabled: boolean
  maxFailureRate: number
  minDevices: number
}

const settingNames = ['enabled', 'maxFailureRate', 'minDevices'] as const

/** The settings after `input` (fields left out keep `current`); every problem is one `details` entry of a 400 VALIDATION_ERROR. */
function checkGuardSettings(input: unknown, current: GuardSettings): GuardSettings {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new AppError(400, 'VALIDATION_ERROR', 'Invalid body: guard must be an object such as {"enabled": true, "maxFailureRate": 0.05, "minDevices": 20}', [{ field: 'guard', message: 'must be an object' }])
  }
  const given = input as Record<string, unknown>
  const details: { field: string; message: string }[] = []
  for (const key of Object.keys(given)) {
    if (!(settingNames as readonly string[]).includes(key)) details.push({ field: `guard.${key}`, message: 'is not a guard setting (enabled, maxFailureRate, minDevices)' })
  }
  const next = { ...current }
  if (given.enabled !== undefined) {
    if (typeof given.enabled === 'boolean') next.enabled = given.enabled
    else details.push({ field: 'guard.enabled', message: 'must be true or false' })
  }
  if (given.maxFailureRate !== undefined) {
    const rate = given.maxFailureRate
    if (typeof rate === 'number' && Number.isFinite(rate) && rate > 0 && rate <= 1) next.maxFailureRate = rate
    else details.push({ field: 'guard.maxFailureRate', message: 'must be a number above 0 and at most 1 (0.05 is 5 %)' })
  }
  if (given.minDevices !== undefined) {
    const count = given.minDevices
    if (typeof count === 'number' && Number.isSafeInteger(count) && count >= 1) next.minDevices = count
    else details.push({ field: 'guard.minDevices', message: 'must be a whole number of at least 1' })
  }
  if (details.length > 0) throw new AppError(400, 'VALIDATION_ERROR', `Invalid guard: ${details.map((entry) => `${entry.field} ${entry.message}`).join('; ')}`, details)
  return next
}

/** Owners of the miniapp and administrators change its guard; other members get 403. */
function requireGuardOwner(db: Db, user: Caller, miniAppId: string): MiniAppRow {
  const app = requireVisibleMiniApp(db, user, miniAppId)
  if (user.role !== 'ADMIN' && memberRole(db, user.id, app.id) !== 'OWNER') {
    throw new AppError(403, 'OWNER_REQUIRED', 'Only owners of this miniapp and administrators may change its release guard')
  }
  return app
}

/** `PATCH …/channels/{channel}` `{ guard }`: sets the channel's guard, audited; answers the channel. */
export function patchChannel(db: Db, clock: Clock, user: Caller, miniAppId: string, channel: string, body: { guard?: unknown }): ChannelRecord {
  const app = requireGuardOwner(db, user, miniAppId)
  if (body.guard === undefined) throw new AppError(400, 'VALIDATION_ERROR', 'Invalid body: send guard, e.g. {"guard": {"enabled": true}}', [{ field: 'guard', message: 'is required' }])
  // settings it already has (a script's --enable run twice): nothing to write or audit, and no write
  // lock taken, so it answers while a backup or a sqlite3 shell holds it (as a no-op rollout PATCH does)
  requireChannel(db, app.id, channel)
  const stored = db.select().from(channelGuards).where(and(eq(channelGuards.miniAppId, app.id), eq(channelGuards.channel, channel))).get()
  const current: GuardSettings = stored ? { enabled: stored.enabled, maxFailureRate: stored.maxFailureRate, minDevices: stored.minDevices } : { ...guardDefaults }
  const wanted = checkGuardSettings(body.guard, current)
  if (settingNames.every((name) => wanted[name] === current[name])) return channelRecords(db, app).find((record) => record.name === channel)!
  db.transaction(
    (tx) => {
      requireChannel(tx, app.id, channel)
      const row = tx.select().from(channelGuards).where(and(eq(channelGuards.miniAppId, app.id), eq(channelGuards.channel, channel))).get()
      const before: GuardSettings = row ? { enabled: row.enabled, maxFailureRate: row.maxFailureRate, minDevices: row.minDevices } : { ...guardDefaults }
      const after = checkGuardSettings(body.guard, before)
      const now = isoAt(clock)
      // switched on: F and T are read again from the release's devices since it was published, and a
      // person's earlier resume no longer holds the guard back
      const restart = after.enabled && !before.enabled ? { releaseId: null, failedDevices: null, totalDevices: null, checkedAt: null, resumedFailedDevices: null } : {}
      tx.insert(channelGuards)
        .values({ miniAppId: app.id, channel, ...after, updatedAt: now })
        .onConflictDoUpdate({ target: [channelGuards.miniAppId, channelGuards.channel], set: { ...after, updatedAt: now, ...restart } })
        .run()
      recordAudit(tx, clock, {
        actor: user,
        action: 'channel.guard',
        targetType: 'miniapp',
        targetId: app.id,
        summary: `${user.email} set ${app.appId} ${channel}'s ${guardStateText(after)}`,
        metadata: { appId: app.appId, channel, ...after, previous: before },
      })
    },
    { behavior: 'immediate' },
  )
  return channelRecords(db, app).find((record) => record.name === channel)!
}

// ---- counting and the check

/** What `rollout.paused` carries (decisions §16), handed to the listeners of `onPaused`. */
export interface GuardPause {
  miniAppId: string
  appId: string
  channel: string
  versionId: string
  version: string
  failedDevices: number
  totalDevices: number
  failureRate: number
  threshold: number
  /** the percent the paused release stays at */
  rolloutPercent: number
  /** its percent and state before the pause, as a person's pause tells them */
  previousPercent: number
  previousState: string
  /** why, in words: the figures against the threshold */
  reason: string
  /** the pause's answer's warnings: the release the others fall back to is one signature rules refuse (FALLBACK_UNSIGNED, FALLBACK_KEY_REVOKED) */
  warnings: readonly RolloutWarning[]
}

interface Pending {
  miniAppId: string
  channel: string
  versionId: string
  /** ms of the last event added */
  lastAt: number
  all: DeviceSketch
  failed: DeviceSketch
}

interface ReleaseGuardDeps {
  db: Db
  clock: Clock
  /** the data directory's HMAC key for device ids (insights.key): the same hashes as insights */
  key: Uint8Array
  log: (line: string) => void
}

const isFailure = (event: DeviceEvent) => event === 'failed' || event === 'rolled_back'

export function createReleaseGuard(deps: ReleaseGuardDeps) {
  const { db, clock, log } = deps
  const hashDevice = deviceHasher(deps.key)
  let pending = new Map<string, Pending>()
  const pauseListeners: ((pause: GuardPause) => void)[] = []
  const client = db.$client
  const readSketch = client.prepare<{ kind: 'all' | 'failed'; hashes: string | null; registers: Uint8Array | null }, [string]>('SELECT kind, hashes, registers FROM guard_device_sketches WHERE release_id = ?')
  const putSketch = client.prepare<unknown, [string, string, string | null, Uint8Array | null]>(
    'INSERT INTO guard_device_sketches (release_id, kind, hashes, registers) VALUES (?1, ?2, ?3, ?4) ON CONFLICT (release_id, kind) DO UPDATE SET hashes = ?3, registers = ?4',
  )

  const guardedRows = (): (typeof channelGuards.$inferSelect)[] => db.select().from(channelGuards).where(eq(channelGuards.enabled, true)).all()
  // the sketches of releases that are no channel's newest any more (withdrawn, or released over) go
  const pruneSketches = client.prepare<unknown, []>(
    `DELETE FROM guard_device_sketches WHERE release_id NOT IN (
       SELECT r.id FROM channel_releases r WHERE r.withdrawn_at IS NULL
         AND r.seq = (SELECT max(n.seq) FROM channel_releases n WHERE n.mini_app_id = r.mini_app_id AND n.channel = r.channel AND n.withdrawn_at IS NULL))`,
  )

  const observer: InsightObserver = {
    event(version, channel, event, deviceId) {
      if (deviceId === undefined || deviceId === '' || deviceId.length > deviceIdLimit) return
      const key = `${version.miniAppId}\u0000${channel}\u0000${version.id}`
      let entry = pending.get(key)
      if (entry === undefined) {
        entry = { miniAppId: version.miniAppId, channel, versionId: version.id, lastAt: 0, all: emptySketch(), failed: emptySketch() }
        pending.set(key, entry)
      }
      entry.lastAt = clock()
      const digest = hashDevice(deviceId)
      addDigest(entry.all, digest)
      if (isFailure(event)) addDigest(entry.failed, digest)
    },
    flushed() {
      try {
        check()
      } catch (error) {
        log(JSON.stringify({ level: 'error', msg: 'release guard check failed', error: (error as Error).message }))
      }
    },
  }

  /** Merges a release's pending devices (if any) into its stored sketches (idempotent: a device merged twice counts once); answers F and T. */
  function mergePending(releaseId: string, add: Pending | undefined): { failed: number; total: number } {
    const stored: Record<'all' | 'failed', DeviceSketch> = { all: emptySketch(), failed: emptySketch() }
    for (const row of readSketch.all(releaseId)) stored[row.kind] = sketchFromRow(row.hashes, row.registers)
    for (const kind of ['all', 'failed'] as const) {
      if (add === undefined || !mergeInto(stored[kind], add[kind])) continue
      const row = sketchRow(stored[kind])
      putSketch.run(releaseId, kind, row.hashes, row.registers)
    }
    const failed = countOf(stored.failed)
    // every failing device is also in `all`; past the exact limit two estimates could disagree
    return { failed, total: Math.max(countOf(stored.all), failed) }
  }

  type GuardRow = typeof channelGuards.$inferSelect
  interface Trip {
    row: GuardRow
    releaseId: string
    versionId: string
    version: string
    failed: number
    total: number
  }

  /** One pass over every guarded channel: merge what was counted, record F and T, pause where the rule says. */
  function check(): void {
    const batch = pending
    pending = new Map()
    const now = isoAt(clock)
    let trips: Trip[]
    try {
      trips = measure(batch, now)
    } catch (error) {
      // a failed write (a full disk) loses no device: the batch waits for the next check, merged with what came since
      for (const [key, entry] of batch) {
        const later = pending.get(key)
        if (later) {
          mergeInto(entry.all, later.all)
          mergeInto(entry.failed, later.failed)
          entry.lastAt = Math.max(entry.lastAt, later.lastAt)
        }
        pending.set(key, entry)
      }
      throw error
    }
    for (const trip of trips) pause(trip, now)
  }

  /** In one transaction: each channel's newest release gets its pending devices; each guarded channel its F and T; answers the releases over the line. */
  function measure(batch: Map<string, Pending>, now: string): Trip[] {
    const trips: Trip[] = []
    client.transaction(() => {
      // every channel's newest release keeps its devices since it was published, guarded or not
      const merged = new Map<string, { failed: number; total: number }>()
      const newestOf = new Map<string, ReturnType<typeof liveReleases>[number] | undefined>()
      const newestIn = (miniAppId: string, channel: string) => {
        const key = `${miniAppId}\u0000${channel}`
        if (!newestOf.has(key)) newestOf.set(key, liveReleases(db, miniAppId, channel)[0])
        return newestOf.get(key)
      }
      for (const add of batch.values()) {
        const newest = newestIn(add.miniAppId, add.channel)
        // since the release was published: what arrived before it (a version released here again) is not its
        if (newest === undefined || newest.versionId !== add.versionId || add.lastAt < Date.parse(newest.createdAt)) continue
        merged.set(newest.id, mergePending(newest.id, add))
      }
      for (const row of guardedRows()) {
        const newest = newestIn(row.miniAppId, row.channel)
        if (!newest) continue
        const fresh = row.releaseId !== newest.id
        // a release the guard had not seen yet (new, or the guard just switched on): its devices so far
        const { failed, total } = merged.get(newest.id) ?? (fresh ? mergePending(newest.id, undefined) : { failed: row.failedDevices ?? 0, total: row.totalDevices ?? 0 })
        const state = releaseState(newest)
        const watching = state !== 'paused' && state !== 'reverted'
        // paused or reverted it is not watched, and F as it stands is what a person who resumes it saw
        const resumedFailed = !watching ? failed : fresh ? null : row.resumedFailedDevices
        // written when something moved: a quiet channel costs no write per flush
        if (fresh || failed !== row.failedDevices || total !== row.totalDevices || resumedFailed !== row.resumedFailedDevices) {
          db.update(channelGuards)
            .set({ releaseId: newest.id, failedDevices: failed, totalDevices: total, checkedAt: now, resumedFailedDevices: resumedFailed })
            .where(and(eq(channelGuards.miniAppId, row.miniAppId), eq(channelGuards.channel, row.channel)))
            .run()
        }
        const over = total >= row.minDevices && failed / total > row.maxFailureRate
        // after a person resumed, only more failing devices (and a rate still over) pause it again
        if (watching && over && (resumedFailed === null || failed > resumedFailed)) trips.push({ row, releaseId: newest.id, versionId: newest.versionId, version: newest.version, failed, total })
      }
      // bounded: only channels' newest releases keep sketches
      pruneSketches.run()
    })()
    return trips
  }

  /**
   * Pauses one release as release-guard (pauseRollout's history row and audit entry), records why and
   * announces it, all in one transaction: no crash between them leaves a pause nobody hears of, or a
   * trip the guard does not remember. A listener that fails (its deliveries cannot be queued) is
   * undone alone, in its savepoint: the pause itself stands, since stopping the release matters most.
   */
  function pause({ row, releaseId, versionId, version, failed, total }: Trip, now: string): void {
    const failureRate = rateOf(failed, total)
    let paused: GuardPause | null
    try {
      paused = atomically(db, () => {
        const { change, warnings } = pauseRollout(db, clock, guardActor, row.miniAppId, row.channel, {
          reason: `${failedText({ failedDevices: failed, totalDevices: total, failureRate }, row.maxFailureRate)}, above the threshold of ${thresholdText(row.maxFailureRate)}`,
          metadata: { failedDevices: failed, totalDevices: total, failureRate, maxFailureRate: row.maxFailureRate, minDevices: row.minDevices },
        })
        if (!change) return null
        db.update(channelGuards)
          .set({ resumedFailedDevices: failed, tripReleaseId: releaseId, tripFailedDevices: failed, tripTotalDevices: total, tripMaxFailureRate: row.maxFailureRate, trippedAt: now })
          .where(and(eq(channelGuards.miniAppId, row.miniAppId), eq(channelGuards.channel, row.channel)))
          .run()
        const pause: GuardPause = { miniAppId: row.miniAppId, appId: change.appId, channel: row.channel, versionId, version, failedDevices: failed, totalDevices: total, failureRate, threshold: row.maxFailureRate, rolloutPercent: change.rolloutPercent, previousPercent: change.previousPercent, previousState: change.previousState, reason: change.reason ?? '', warnings }
        // rollout.paused (decisions §16), { channel, versionId, version, failedDevices, totalDevices,
        // failureRate, threshold }: the one place the guard's pause is announced. The webhooks and
        // the release mirror subscribe in app.ts with releaseGuard.onPaused(...).
        for (const listener of pauseListeners) {
          try {
            atomically(db, () => listener(pause))
          } catch (error) {
            log(JSON.stringify({ level: 'error', msg: 'a rollout.paused listener failed', error: (error as Error).message }))
          }
        }
        return pause
      })
    } catch (error) {
      // one channel that cannot be paused (its miniapp deleted a moment ago) leaves the others be
      log(JSON.stringify({ level: 'error', msg: 'release guard could not pause a rollout', miniAppId: row.miniAppId, channel: row.channel, error: (error as Error).message }))
      return
    }
    if (paused) log(JSON.stringify({ level: 'warn', msg: 'release guard paused a rollout', ...paused }))
  }

  return {
    /** handed to insights.observe: events in, a check after each flush */
    observer,
    /** the check, now (tests and the slow-flush timer) */
    check,
    /**
     * Before a person resumes a paused release: the devices reported so far are counted (the check,
     * now, while it is still paused), so the F the resume holds the guard at includes those that failed
     * while it was paused; otherwise the next check would count them as new and pause it again at once.
     * Only when devices of that miniapp's channel wait to be counted: else it writes nothing (those of
     * another miniapp's channel of the same name are not this release's).
     */
    beforeResume(miniAppId: string, channel: string): void {
      const named = `${miniAppId}\u0000${channel}\u0000`
      for (const key of pending.keys()) {
        if (key.startsWith(named)) return observer.flushed()
      }
      // a guard that has not counted this release yet (switched on while it was paused, or paused
      // before any check): without a check now it would meet the resumed release with no F to hold
      // at, and pause it again at once for the failures the person saw before resuming
      const row = db.select({ enabled: channelGuards.enabled, releaseId: channelGuards.releaseId }).from(channelGuards).where(and(eq(channelGuards.miniAppId, miniAppId), eq(channelGuards.channel, channel))).get()
      if (row?.enabled && row.releaseId !== (liveReleases(db, miniAppId, channel)[0]?.id ?? null)) return observer.flushed()
      // else the stored count is current, and nothing is written
    },
    /** `listener` hears every pause the guard makes (the rollout.paused webhook) */
    onPaused(listener: (pause: GuardPause) => void): void {
      pauseListeners.push(listener)
    },
    /**
     * `serve`: the check runs after each insights flush; when that is slower than 30 s, also on a
     * timer of its own, so a pause comes within 60 s of the events. `stop()` ends the timer.
     */
    start(flushSeconds: number): { stop(): void } {
      if (flushSeconds <= guardCheckSeconds) return { stop() {} }
      const timer = setInterval(() => observer.flushed(), guardCheckSeconds * 1000)
      timer.unref()
      return { stop: () => clearInterval(timer) }
    },
  }
}

export type ReleaseGuard = ReturnType<typeof createReleaseGuard>
