// Insight rules: writing the counters (one transaction per flush), device events, pruning, and the per-miniapp report.
import type { Db } from '../../db/open'
import { AppError } from '../../http/errors'
import type { Clock } from '../../ids'
import type { Caller } from '../miniapps/service'
import { requireVisibleMiniApp } from '../miniapps/service'
import { createInsightCounters, utcDay, type DayBatch, type DeviceEvent, type InsightCounters } from './counters'

export interface InsightsDeps {
  db: Db
  clock: Clock
  /** the HMAC key of the data directory (insights.key) */
  key: Uint8Array
  enabled: boolean
  flushSeconds: number
  log: (line: string) => void
}

/** Days of active-device rows kept (today included). */
export const deviceRetentionDays = 90
/** Failure messages kept per version, and the length a message is cut to. */
export const failuresPerVersion = 20
export const failureMessageLimit = 500
const recentFailureCount = 20
const maxReportDays = 90
const dayMs = 86_400_000

export interface DeviceEventInput {
  appId: string
  versionId: string
  platform: 'ios' | 'android'
  event: DeviceEvent
  channel?: string
  deviceId?: string
  hostVersion?: string
  message?: string
  at?: string
}

/** Device hashes per INSERT: they travel as one JSON array (json_each), not as three bound values each. */
const deviceRowsPerStatement = 1000
/** Device ids already written today, per version, so each flush writes only new ones; past this many the memory is let go. */
const writtenDeviceLimit = 500_000

const countColumns = ['install_infos', 'update_checks', 'downloads', 'installed', 'launched', 'failed', 'rolled_back'] as const

function prepareStatements(db: Db) {
  const client = db.$client
  return {
    upsertCount: client.prepare<unknown, [string, string, string, string, string, number, number, number, number, number, number, number]>(
      `INSERT INTO insight_counts (version_id, day, platform, channel, mini_app_id, ${countColumns.join(', ')})
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (version_id, day, platform, channel) DO UPDATE SET ${countColumns.map((column) => `${column} = ${column} + excluded.${column}`).join(', ')}`,
    ),
    // many rows per statement: a fleet's first check of the day brings many new devices at once, and
    // binding one JSON array costs a third less than binding each row's values
    insertDevices: client.prepare<unknown, [string, string, string]>('INSERT OR IGNORE INTO insight_devices (version_id, day, device_hash) SELECT ?1, ?2, value FROM json_each(?3)'),
    insertFailure: client.prepare<unknown, [string, string, string, string, string]>('INSERT INTO insight_failures (version_id, mini_app_id, platform, message, at) VALUES (?, ?, ?, ?, ?)'),
    trimFailures: client.prepare<unknown, [string, string, number]>(
      'DELETE FROM insight_failures WHERE version_id = ? AND id NOT IN (SELECT id FROM insight_failures WHERE version_id = ? ORDER BY id DESC LIMIT ?)',
    ),
    versionOfEvent: client.prepare<{ id: string; miniAppId: string; appId: string }, [string]>(
      'SELECT v.id AS id, v.mini_app_id AS miniAppId, m.app_id AS appId FROM versions v JOIN mini_apps m ON m.id = v.mini_app_id WHERE v.id = ?',
    ),
  }
}

/** `day` plus `offset` days, as `YYYY-MM-DD`. */
export function shiftDay(day: string, offset: number): string {
  return utcDay(Date.parse(`${day}T00:00:00.000Z`) + offset * dayMs)
}

export interface VersionDay {
  versionId: string
  version: string
  downloads: { ios: number; android: number }
  installs: number
  failures: number
  activeDevices: number
  /** additions beyond the agreed shape: update checks answered, and the events devices reported */
  updateChecks: number
  installed: number
  launched: number
  rolledBack: number
}

export interface InsightsReport {
  from: string
  to: string
  channel: string | null
  days: { day: string; versions: VersionDay[] }[]
  totals: { downloads: { ios: number; android: number }; installs: number; failures: number; activeDevices: number; updateChecks: number }
  adoption: { versionId: string | null; share: number; day: string | null }
  recentFailures: { versionId: string; version: string; platform: string; message: string; at: string }[]
}

export function createInsightsService(deps: InsightsDeps) {
  const { db, clock, log } = deps
  const statements = prepareStatements(db)
  let pressureFlush: ReturnType<typeof setTimeout> | null = null
  const counters: InsightCounters = createInsightCounters({
    clock,
    enabled: deps.enabled,
    onPressure: () => {
      pressureFlush ??= setTimeout(() => {
        pressureFlush = null
        flush()
      }, 0)
    },
  })

  /** HMAC-SHA256 of a device id, 128 bits in base64url: enough to tell devices apart, useless to find one. */
  const keyedHasher = new Bun.CryptoHasher('sha256', deps.key)
  const hashDevice = (deviceId: string) => keyedHasher.copy().update(deviceId).digest('base64url').slice(0, 22)

  // `${day}\u0000${versionId}` → device ids written that day (in memory only, like the pending ones)
  let writtenDevices = new Map<string, Set<string>>()
  let writtenDeviceCount = 0
  let writtenDay = ''

  /**
   * Writes the device rows of one version and day, a thousand per statement, in hash order: random
   * keys inserted in order touch each B-tree page once (unsorted, 50,000 new devices cost ten times
   * as much). Answers the ids written.
   */
  function writeDevices(versionId: string, day: string, devices: Set<string>): string[] {
    const written = writtenDevices.get(`${day}\u0000${versionId}`)
    const fresh = written ? [...devices].filter((deviceId) => !written.has(deviceId)) : [...devices]
    const hashes = fresh.map(hashDevice).sort()
    // base64url hashes need no escaping, so the array is written by hand
    for (let at = 0; at < hashes.length; at += deviceRowsPerStatement) statements.insertDevices.run(versionId, day, `["${hashes.slice(at, at + deviceRowsPerStatement).join('","')}"]`)
    return fresh
  }

  /** After a commit: remember what was written, so the next flush skips it (yesterday's are dropped). */
  function rememberWritten(written: { key: string; day: string; devices: string[] }[]): void {
    for (const { key, day, devices } of written) {
      if (day !== writtenDay) {
        if (day < writtenDay) continue
        writtenDevices = new Map()
        writtenDeviceCount = 0
        writtenDay = day
      }
      if (writtenDeviceCount + devices.length > writtenDeviceLimit) {
        writtenDevices = new Map()
        writtenDeviceCount = 0
      }
      let set = writtenDevices.get(key)
      if (!set) writtenDevices.set(key, (set = new Set()))
      for (const deviceId of devices) set.add(deviceId)
      writtenDeviceCount += devices.length
    }
  }

  function write(batches: DayBatch[], written: { key: string; day: string; devices: string[] }[]): void {
    const touchedByFailures = new Set<string>()
    for (const batch of batches) {
      for (const slot of batch.slots.values()) {
        const { versionId, miniAppId } = slot
        for (const [channel, cells] of slot.channels) {
          cells.forEach((cell, index) => {
            if (cell.installInfos + cell.updateChecks + cell.downloads + cell.installed + cell.launched + cell.failed + cell.rolledBack === 0) return
            const platform = index === 0 ? 'ios' : index === 1 ? 'android' : 'unknown'
            statements.upsertCount.run(versionId, batch.day, platform, channel, miniAppId, cell.installInfos, cell.updateChecks, cell.downloads, cell.installed, cell.launched, cell.failed, cell.rolledBack)
          })
        }
        if (slot.devices.size > 0) written.push({ key: `${batch.day}\u0000${versionId}`, day: batch.day, devices: writeDevices(versionId, batch.day, slot.devices) })
      }
      for (const failure of batch.failures) {
        statements.insertFailure.run(failure.versionId, failure.miniAppId, failure.platform, failure.message, failure.at)
        touchedByFailures.add(failure.versionId)
      }
    }
    for (const versionId of touchedByFailures) statements.trimFailures.run(versionId, versionId, failuresPerVersion)
  }

  /**
   * Writes everything counted so far in one transaction. On failure (a full disk, say) the counts
   * go back in memory and the next flush tries again; nothing is lost unless the process dies.
   */
  function flush(): void {
    if (!counters.pending()) return
    const batches = counters.drain()
    const written: { key: string; day: string; devices: string[] }[] = []
    try {
      db.$client.transaction(() => write(batches, written))()
      rememberWritten(written)
      counters.totals.flushes++
    } catch (error) {
      counters.restore(batches)
      counters.totals.flushFailures++
      log(JSON.stringify({ level: 'error', msg: 'insights flush failed; the counts stay in memory', error: (error as Error).message }))
    }
  }

  /** Drops active-device rows older than the retention, and counts of versions that no longer exist. */
  function prune(): { devices: number; orphans: number } {
    const cutoff = shiftDay(utcDay(clock()), -(deviceRetentionDays - 1))
    const client = db.$client
    let devices = 0
    let orphans = 0
    client.transaction(() => {
      devices = client.run('DELETE FROM insight_devices WHERE day < ?', [cutoff]).changes
      for (const table of ['insight_counts', 'insight_devices', 'insight_failures']) {
        orphans += client.run(`DELETE FROM ${table} WHERE version_id NOT IN (SELECT id FROM versions)`).changes
      }
    })()
    return { devices, orphans }
  }

  /**
   * Accepts the events whose app and version exist and belong together; the rest are counted as
   * rejected and not stored. Events count on the UTC day they arrive (`at` is kept with failure
   * messages only): a device's clock is not trusted to file counts into past days.
   */
  function recordEvents(events: DeviceEventInput[]): { accepted: number; rejected: number } {
    const now = clock()
    const versions = new Map<string, { id: string; miniAppId: string; appId: string } | null>()
    let accepted = 0
    for (const event of events) {
      let version = versions.get(event.versionId)
      if (version === undefined) {
        version = statements.versionOfEvent.get(event.versionId) ?? null
        versions.set(event.versionId, version)
      }
      if (version === null || version.appId !== event.appId) continue
      let failure: { message: string; at: string } | null = null
      if (event.event === 'failed') {
        const sentAt = event.at === undefined ? NaN : Date.parse(event.at)
        const at = Number.isFinite(sentAt) && sentAt <= now ? sentAt : now
        failure = { message: (event.message ?? '').slice(0, failureMessageLimit), at: new Date(at).toISOString() }
      }
      counters.countEvent(version, event.channel ?? 'stable', event.platform, event.event, event.deviceId, failure)
      accepted++
    }
    const rejected = events.length - accepted
    counters.countRejected(rejected)
    return { accepted, rejected }
  }

  /** The report of GET /api/mini-apps/{id}/insights; flushes first, so it includes what was just counted. */
  function report(user: Caller, miniAppId: string, options: { days: number; channel: string | null }): InsightsReport {
    const miniApp = requireVisibleMiniApp(db, user, miniAppId)
    if (!Number.isInteger(options.days) || options.days < 1 || options.days > maxReportDays) {
      const message = `must be a whole number of days from 1 to ${maxReportDays}`
      throw new AppError(400, 'VALIDATION_ERROR', `Invalid query: days ${message}`, [{ field: 'days', message }])
    }
    flush()
    const client = db.$client
    const to = utcDay(clock())
    const from = shiftDay(to, -(options.days - 1))
    const versionNames = new Map(
      client
        .query<{ id: string; version: string }, [string]>('SELECT id, version FROM versions WHERE mini_app_id = ?')
        .all(miniApp.id)
        .map((row) => [row.id, row.version]),
    )
    const countRows = client
      .query<
        { day: string; versionId: string; platform: string; installInfos: number; updateChecks: number; downloads: number; installed: number; launched: number; failed: number; rolledBack: number },
        [string, string, string, string | null, string | null]
      >(
        `SELECT day, version_id AS versionId, platform, sum(install_infos) AS installInfos, sum(update_checks) AS updateChecks, sum(downloads) AS downloads,
           sum(installed) AS installed, sum(launched) AS launched, sum(failed) AS failed, sum(rolled_back) AS rolledBack
         FROM insight_counts WHERE mini_app_id = ? AND day BETWEEN ? AND ? AND (? IS NULL OR channel = ?)
         GROUP BY day, version_id, platform`,
      )
      .all(miniApp.id, from, to, options.channel, options.channel)
    const ofApp = 'version_id IN (SELECT id FROM versions WHERE mini_app_id = ?)'
    const deviceRows = client
      .query<{ day: string; versionId: string; devices: number }, [string, string, string]>(
        `SELECT day, version_id AS versionId, count(*) AS devices FROM insight_devices WHERE ${ofApp} AND day BETWEEN ? AND ? GROUP BY day, version_id`,
      )
      .all(miniApp.id, from, to)

    const byDay = new Map<string, Map<string, VersionDay>>()
    const entry = (day: string, versionId: string): VersionDay | null => {
      const version = versionNames.get(versionId)
      if (version === undefined) return null // deleted since: its rows go with the next prune
      let versionsOfDay = byDay.get(day)
      if (!versionsOfDay) byDay.set(day, (versionsOfDay = new Map()))
      let found = versionsOfDay.get(versionId)
      if (!found) {
        found = { versionId, version, downloads: { ios: 0, android: 0 }, installs: 0, failures: 0, activeDevices: 0, updateChecks: 0, installed: 0, launched: 0, rolledBack: 0 }
        versionsOfDay.set(versionId, found)
      }
      return found
    }
    const countedInChannel = new Set<string>()
    for (const row of countRows) {
      const found = entry(row.day, row.versionId)
      if (!found) continue
      countedInChannel.add(`${row.day}\u0000${row.versionId}`)
      if (row.platform === 'ios') found.downloads.ios += row.downloads
      if (row.platform === 'android') found.downloads.android += row.downloads
      found.installs += row.installInfos
      found.failures += row.failed
      found.updateChecks += row.updateChecks
      found.installed += row.installed
      found.launched += row.launched
      found.rolledBack += row.rolledBack
    }
    for (const row of deviceRows) {
      // devices are per version, not per channel: with a channel, only versions counted in it show
      if (options.channel !== null && !countedInChannel.has(`${row.day}\u0000${row.versionId}`)) continue
      const found = entry(row.day, row.versionId)
      if (found) found.activeDevices = row.devices
    }

    const days: InsightsReport['days'] = []
    const totals: InsightsReport['totals'] = { downloads: { ios: 0, android: 0 }, installs: 0, failures: 0, activeDevices: 0, updateChecks: 0 }
    for (let day = from; day <= to; day = shiftDay(day, 1)) {
      const versionsOfDay = [...(byDay.get(day)?.values() ?? [])].sort((a, b) => b.activeDevices - a.activeDevices || a.version.localeCompare(b.version))
      for (const version of versionsOfDay) {
        totals.downloads.ios += version.downloads.ios
        totals.downloads.android += version.downloads.android
        totals.installs += version.installs
        totals.failures += version.failures
        totals.updateChecks += version.updateChecks
      }
      days.push({ day, versions: versionsOfDay })
    }
    const distinct = (sql: string, ...params: string[]) => client.query<{ devices: number }, string[]>(sql).get(...params)?.devices ?? 0
    totals.activeDevices = distinct(`SELECT count(DISTINCT device_hash) AS devices FROM insight_devices WHERE ${ofApp} AND day BETWEEN ? AND ?`, miniApp.id, from, to)

    // adoption: the current release's share of the devices seen on the latest day that saw any
    const releaseId = miniApp.currentReleaseVersionId
    const latest = [...days].reverse().find((day) => day.versions.some((version) => version.activeDevices > 0)) ?? null
    let share = 0
    if (latest && releaseId) {
      const all = distinct(`SELECT count(DISTINCT device_hash) AS devices FROM insight_devices WHERE ${ofApp} AND day = ?`, miniApp.id, latest.day)
      const ofRelease = latest.versions.find((version) => version.versionId === releaseId)?.activeDevices ?? 0
      share = all > 0 ? Math.min(1, ofRelease / all) : 0
    }

    const recentFailures = client
      .query<{ versionId: string; platform: string; message: string; at: string }, [string, number]>(
        'SELECT version_id AS versionId, platform, message, at FROM insight_failures WHERE mini_app_id = ? ORDER BY id DESC LIMIT ?',
      )
      .all(miniApp.id, recentFailureCount)
      .flatMap((row) => {
        const version = versionNames.get(row.versionId)
        return version === undefined ? [] : [{ versionId: row.versionId, version, platform: row.platform, message: row.message, at: row.at }]
      })

    return { from, to, channel: options.channel, days, totals, adoption: { versionId: releaseId, share, day: latest?.day ?? null }, recentFailures }
  }

  let timers: ReturnType<typeof setInterval>[] = []
  return {
    counters,
    flush,
    prune,
    recordEvents,
    report,
    /** `serve`: flush every few seconds, prune now and daily. `stop()` ends the timers and flushes what is left. */
    start(): { stop(): void } {
      const safely = (work: () => unknown, what: string) => () => {
        try {
          work()
        } catch (error) {
          log(JSON.stringify({ level: 'error', msg: `insights ${what} failed`, error: (error as Error).message }))
        }
      }
      safely(prune, 'prune')()
      timers = [setInterval(flush, deps.flushSeconds * 1000), setInterval(safely(prune, 'prune'), dayMs)]
      for (const timer of timers) timer.unref()
      return {
        stop() {
          for (const timer of timers) clearInterval(timer)
          timers = []
          if (pressureFlush !== null) clearTimeout(pressureFlush)
          pressureFlush = null
          flush()
        },
      }
    },
  }
}

export type InsightsService = ReturnType<typeof createInsightsService>
