// Insight rules: writing the counters (one transaction per flush), device events, pruning, and the per-miniapp report.
import type { Db } from '../../db/open'
import { AppError } from '../../http/errors'
import { cutText } from '../../http/text'
import { invalidDeviceId, isDeviceId } from '../../http/urls'
import type { Clock } from '../../ids'
import type { Caller } from '../miniapps/service'
import { requireVisibleMiniApp } from '../miniapps/service'
import { createInsightCounters, failuresPerVersion, isOtherKey, otherPrefix, otherSubject, utcDay, type CountSubject, type DayBatch, type DeviceEvent, type InsightCounters } from './counters'
import { checkDeviceEvent, type EventError } from './events'
import { channelExists, defaultChannel, fallbackOf, liveReleases, releaseState } from '../channels/service'
import { countOf, deviceHashLength, deviceHasher, distinctDevices, emptySketch, exactLimit, hasDevices, isOversized, mergeInto, sketchFromRow, sketchRow, type DeviceSketch } from './sketch'

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
/** Failure messages kept per version (counters.ts), and the length a message is cut to, in characters (code points) as every text limit. */
export { failuresPerVersion }
export const failureMessageLimit = 500
const recentFailureCount = 20
const maxReportDays = 90
const dayMs = 86_400_000



const countColumns = ['install_infos', 'update_checks', 'downloads', 'installed', 'launched', 'failed', 'rolled_back'] as const

function prepareStatements(db: Db) {
  const client = db.$client
  return {
    upsertCount: client.prepare<unknown, [string, string, string, string, string, number, number, number, number, number, number, number]>(
      `INSERT INTO insight_counts (version_id, day, platform, channel, mini_app_id, ${countColumns.join(', ')})
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (version_id, day, platform, channel) DO UPDATE SET ${countColumns.map((column) => `${column} = ${column} + excluded.${column}`).join(', ')}`,
    ),
    deviceSketch: client.prepare<{ hashes: string | null; registers: Uint8Array | null }, [string, string]>('SELECT hashes, registers FROM insight_device_sketches WHERE version_id = ? AND day = ?'),
    oversizedSketches: client.prepare<{ versionId: string; day: string; hashes: string }, [number]>(
      'SELECT version_id AS versionId, day, hashes FROM insight_device_sketches WHERE registers IS NULL AND length(hashes) > ?',
    ),
    putDeviceSketch: client.prepare<unknown, [string, string, string | null, Uint8Array | null]>(
      'INSERT INTO insight_device_sketches (version_id, day, hashes, registers) VALUES (?1, ?2, ?3, ?4) ON CONFLICT (version_id, day) DO UPDATE SET hashes = ?3, registers = ?4',
    ),
    channelDeviceSketch: client.prepare<{ hashes: string | null; registers: Uint8Array | null }, [string, string, string]>(
      'SELECT hashes, registers FROM insight_channel_device_sketches WHERE version_id = ? AND day = ? AND channel = ?',
    ),
    putChannelDeviceSketch: client.prepare<unknown, [string, string, string, string | null, Uint8Array | null]>(
      'INSERT INTO insight_channel_device_sketches (version_id, day, channel, hashes, registers) VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (version_id, day, channel) DO UPDATE SET hashes = ?4, registers = ?5',
    ),
    insertFailure: client.prepare<unknown, [string, string, string, string, string, string]>('INSERT INTO insight_failures (version_id, mini_app_id, platform, channel, message, at) VALUES (?, ?, ?, ?, ?, ?)'),
    // per version and channel, so a busy channel does not push a quieter one's failures out of `?channel=` reports
    trimFailures: client.prepare<unknown, [string, string, number]>(
      'DELETE FROM insight_failures WHERE version_id = ?1 AND channel = ?2 AND id NOT IN (SELECT id FROM insight_failures WHERE version_id = ?1 AND channel = ?2 ORDER BY id DESC LIMIT ?3)',
    ),
    versionAndApp: client.prepare<{ version: number | null; app: number | null }, [string, string]>('SELECT (SELECT 1 FROM versions WHERE id = ?1) AS version, (SELECT 1 FROM mini_apps WHERE id = ?2) AS app'),
    appOfEvent: client.prepare<{ id: string }, [string]>('SELECT id FROM mini_apps WHERE app_id = ?'),
  }
}

/**
 * What insights count a device's report of a version under (decisions §13), for events and update
 * checks alike: the version, when the miniapp has it (by id, or by version string) and the channel
 * has not withdrawn it; else the miniapp's `other` row.
 */
export function createSubjectLookup(client: Db['$client']): (miniAppId: string, channel: string, named: { versionId: string } | { version: string }) => CountSubject {
  const versionById = client.prepare<{ id: string }, [string, string]>('SELECT id FROM versions WHERE id = ? AND mini_app_id = ?')
  const versionByName = client.prepare<{ id: string }, [string, string]>('SELECT id FROM versions WHERE mini_app_id = ? AND version = ? ORDER BY build_number DESC LIMIT 1')
  const releasesOf = client.prepare<{ total: number; live: number }, [string, string, string]>(
    'SELECT count(*) AS total, coalesce(sum(withdrawn_at IS NULL), 0) AS live FROM channel_releases WHERE mini_app_id = ? AND channel = ? AND version_id = ?',
  )
  return (miniAppId, channel, named) => {
    const version = 'versionId' in named ? versionById.get(named.versionId, miniAppId) : versionByName.get(miniAppId, named.version)
    const releases = version ? releasesOf.get(miniAppId, channel, version.id) : null
    const withdrawn = releases !== null && releases !== undefined && releases.total > 0 && releases.live === 0
    return version && !withdrawn ? { id: version.id, miniAppId } : otherSubject(miniAppId)
  }
}

/** `day` plus `offset` days, as `YYYY-MM-DD`. */
export function shiftDay(day: string, offset: number): string {
  return utcDay(Date.parse(`${day}T00:00:00.000Z`) + offset * dayMs)
}

export interface VersionDay {
  /** null for the `other` row (versions unknown or withdrawn, decisions §13) */
  versionId: string | null
  version: string
  downloads: { ios: number; android: number }
  /** install-info answers (`installs` is its former name, kept one release) */
  installInfoRequests: number
  installs: number
  failures: number
  activeDevices: number
  /** additions beyond the agreed shape: update checks answered, and the events devices reported */
  updateChecks: number
  installed: number
  launched: number
  rolledBack: number
}

export interface ReportTotals {
  downloads: { ios: number; android: number }
  installInfoRequests: number
  /** alias of installInfoRequests, kept one release */
  installs: number
  installed: number
  launched: number
  failures: number
  rolledBack: number
  activeDevices: number
  updateChecks: number
}

export interface InsightsReport {
  from: string
  to: string
  channel: string | null
  /** `devices`: the distinct devices seen that day, the one denominator of every share of that day */
  days: { day: string; devices: number; versions: VersionDay[] }[]
  totals: ReportTotals
  /** the current release's share of `devices`, the distinct devices seen on `day` (the latest day that saw any) */
  adoption: { versionId: string | null; share: number; day: string | null; devices: number }
  /** newest first; `channel` null for failures stored before schema 15 */
  recentFailures: { versionId: string | null; version: string; platform: string; channel: string | null; message: string; at: string }[]
}

/** Hears each accepted device event and each flush (the release guard, channels/guard.ts). */
export interface InsightObserver {
  event(version: { id: string; miniAppId: string }, channel: string, event: DeviceEvent, deviceId: string | undefined): void
  /** after every flush tick, whether or not there was anything to write */
  flushed(): void
}

export function createInsightsService(deps: InsightsDeps) {
  const { db, clock, log } = deps
  const statements = prepareStatements(db)
  const subjectOf = createSubjectLookup(db.$client)
  /** HMAC-SHA256 of a device id (the sketches keep its first 128 bits, as 22 base64url characters): enough to tell devices apart, useless to find one. */
  const counters: InsightCounters = createInsightCounters({ clock, enabled: deps.enabled, hashDevice: deviceHasher(deps.key) })

  /**
   * Adds the devices counted for one version and day to its stored sketch: one row read and, when
   * a device was new to it, written back. Merging is idempotent, so a flush retried after a failure
   * counts no device twice, and neither does a device seen again after a restart.
   */
  function writeDevices(versionId: string, day: string, devices: DeviceSketch): void {
    const row = statements.deviceSketch.get(versionId, day)
    const sketch = row ? sketchFromRow(row.hashes, row.registers) : emptySketch()
    const changed = mergeInto(sketch, devices)
    if (!changed && !isOversized(row?.hashes ?? null)) return
    const stored = sketchRow(sketch)
    statements.putDeviceSketch.run(versionId, day, stored.hashes, stored.registers)
  }

  /** The same for the version's devices on one channel (what `?channel=` reports count). */
  function writeChannelDevices(versionId: string, day: string, channel: string, devices: DeviceSketch): void {
    const row = statements.channelDeviceSketch.get(versionId, day, channel)
    const sketch = row ? sketchFromRow(row.hashes, row.registers) : emptySketch()
    if (!mergeInto(sketch, devices)) return
    const stored = sketchRow(sketch)
    statements.putChannelDeviceSketch.run(versionId, day, channel, stored.hashes, stored.registers)
  }

  function write(batches: DayBatch[]): void {
    /** version id and channel, NUL-separated */
    const touchedByFailures = new Set<string>()
    // a version deleted since it was counted (a draft) of a miniapp that still exists is counted in
    // its `other` row, where deleting it moved what was stored of it (foldVersionIntoOther): checked
    // here, once per version and flush, not on the requests
    const keys = new Map<string, string>()
    const keyOf = (versionId: string, miniAppId: string): string => {
      if (isOtherKey(versionId)) return versionId
      let key = keys.get(versionId)
      if (key === undefined) {
        const found = statements.versionAndApp.get(versionId, miniAppId)!
        keys.set(versionId, (key = found.version === null && found.app !== null ? otherSubject(miniAppId).id : versionId))
      }
      return key
    }
    for (const batch of batches) {
      for (const slot of batch.slots.values()) {
        const { miniAppId } = slot
        const versionId = keyOf(slot.versionId, miniAppId)
        for (const [channel, cells] of slot.channels) {
          cells.forEach((cell, index) => {
            if (cell.installInfos + cell.updateChecks + cell.downloads + cell.installed + cell.launched + cell.failed + cell.rolledBack === 0) return
            const platform = index === 0 ? 'ios' : index === 1 ? 'android' : 'unknown'
            statements.upsertCount.run(versionId, batch.day, platform, channel, miniAppId, cell.installInfos, cell.updateChecks, cell.downloads, cell.installed, cell.launched, cell.failed, cell.rolledBack)
          })
          if (cells.devices !== undefined && hasDevices(cells.devices)) writeChannelDevices(versionId, batch.day, channel, cells.devices)
        }
        if (hasDevices(slot.devices)) writeDevices(versionId, batch.day, slot.devices)
      }
      for (const failure of batch.failures) {
        const versionId = keyOf(failure.versionId, failure.miniAppId)
        statements.insertFailure.run(versionId, failure.miniAppId, failure.platform, failure.channel, failure.message, failure.at)
        touchedByFailures.add(`${versionId}\u0000${failure.channel}`)
      }
    }
    for (const touched of touchedByFailures) {
      const [versionId, channel] = touched.split('\u0000') as [string, string]
      statements.trimFailures.run(versionId, channel, failuresPerVersion)
    }
  }

  /**
   * Writes everything counted so far in one transaction. On failure (a full disk, say) the counts
   * go back in memory and the next flush tries again; nothing is lost unless the process dies.
   */
  const observers: InsightObserver[] = []

  function flush(): void {
    writePending()
    for (const observer of observers) observer.flushed()
  }

  function writePending(): void {
    if (!counters.pending()) return
    const batches = counters.drain()
    try {
      db.$client.transaction(() => write(batches))()
      counters.totals.flushes++
    } catch (error) {
      counters.restore(batches)
      counters.totals.flushFailures++
      log(JSON.stringify({ level: 'error', msg: 'insights flush failed; the counts stay in memory', error: (error as Error).message }))
    }
  }

  /**
   * Drops active-device sketches older than the retention (`deviceDays`: one per version and day),
   * and counts of versions that no longer exist. Rows migrated from schema 6 with more hashes than
   * a sketch keeps exactly are rewritten as registers (`compacted`), once: past days' rows are never
   * written again, and every report would parse their hashes anew.
   */
  function prune(): { deviceDays: number; orphans: number; compacted: number } {
    const cutoff = shiftDay(utcDay(clock()), -(deviceRetentionDays - 1))
    const client = db.$client
    let deviceDays = 0
    let orphans = 0
    let compacted = 0
    client.transaction(() => {
      deviceDays = client.run('DELETE FROM insight_device_sketches WHERE day < ?', [cutoff]).changes
      client.run('DELETE FROM insight_channel_device_sketches WHERE day < ?', [cutoff])
      for (const table of ['insight_counts', 'insight_device_sketches', 'insight_channel_device_sketches', 'insight_failures']) {
        // a miniapp's `other` row goes with the miniapp
        orphans += client.run(
          `DELETE FROM ${table} WHERE version_id NOT IN (SELECT id FROM versions) AND NOT (substr(version_id, 1, ${otherPrefix.length}) = '${otherPrefix}' AND substr(version_id, ${otherPrefix.length + 1}) IN (SELECT id FROM mini_apps))`,
        ).changes
      }
      for (const row of statements.oversizedSketches.all(exactLimit * deviceHashLength)) {
        const stored = sketchRow(sketchFromRow(row.hashes, null))
        statements.putDeviceSketch.run(row.versionId, row.day, stored.hashes, stored.registers)
        compacted++
      }
    })()
    return { deviceDays, orphans, compacted }
  }

  /**
   * Decisions §13: each event of a batch on its own. An event whose app is unknown, whose channel
   * the miniapp does not have, or that is malformed is refused with its index and code; the others
   * count. An event naming a version the miniapp does not have (by `versionId` or `version`), or
   * one withdrawn from its channel, counts in the miniapp's `other` row of that channel: rows stay
   * bounded by the apps and channels the server knows, whatever devices send. Events count on the
   * UTC day they arrive (`at` is kept with failure messages only): a device's clock is not trusted
   * to file counts into past days.
   */
  function recordEvents(events: readonly unknown[]): { accepted: number; rejected: number; errors: EventError[]; counted: boolean } {
    const now = clock()
    const apps = new Map<string, string | null>()
    const knownChannels = new Map<string, boolean>()
    const subjects = new Map<string, CountSubject>()
    const errors: EventError[] = []
    let accepted = 0
    events.forEach((raw, index) => {
      const event = checkDeviceEvent(raw)
      if ('field' in event) {
        errors.push({ index, code: 'VALIDATION_ERROR', message: `events.${index}${event.field ? `.${event.field}` : ''} ${event.message}` })
        return
      }
      // decisions §18: a deviceId that could not be one refuses that event
      if (event.deviceId !== undefined && !isDeviceId(event.deviceId)) {
        errors.push({ index, code: 'INVALID_DEVICE_ID', message: invalidDeviceId(`events.${index}.deviceId`).message })
        return
      }
      let miniAppId = apps.get(event.appId)
      if (miniAppId === undefined) apps.set(event.appId, (miniAppId = statements.appOfEvent.get(event.appId)?.id ?? null))
      if (miniAppId === null) {
        errors.push({ index, code: 'MINI_APP_NOT_FOUND', message: `There is no miniapp ${event.appId.slice(0, 64)}` })
        return
      }
      const channel = event.channel ?? defaultChannel
      const channelKey = `${miniAppId}\u0000${channel}`
      let known = knownChannels.get(channelKey)
      if (known === undefined) knownChannels.set(channelKey, (known = channelExists(db, miniAppId, channel)))
      if (!known) {
        errors.push({ index, code: 'CHANNEL_NOT_FOUND', message: `${event.appId.slice(0, 64)} has no channel "${channel}"` })
        return
      }
      const named = event.versionId !== undefined ? `id\u0000${event.versionId}` : `v\u0000${event.version}`
      const subjectKey = `${channelKey}\u0000${named}`
      let subject = subjects.get(subjectKey)
      if (subject === undefined) {
        subject = subjectOf(miniAppId, channel, event.versionId !== undefined ? { versionId: event.versionId } : { version: event.version! })
        subjects.set(subjectKey, subject)
      }
      let failure: { message: string; at: string } | null = null
      if (event.event === 'failed') {
        const sentAt = event.at === undefined ? NaN : Date.parse(event.at)
        const at = Number.isFinite(sentAt) && sentAt <= now ? sentAt : now
        // cut in characters, never between the halves of one (a lone half is stored as U+FFFD)
        failure = { message: cutText(event.message ?? '', failureMessageLimit), at: new Date(at).toISOString() }
      }
      counters.countEvent(subject, channel, event.platform, event.event, event.deviceId, failure)
      // the release guard (channels/guard.ts) counts devices of known releases only
      if (subject.id !== otherSubject(subject.miniAppId).id) for (const observer of observers) observer.event(subject, channel, event.event, event.deviceId)
      accepted++
    })
    counters.countRejected(errors.length)
    // --insights off: still checked one by one, and heard by the release guard, but not counted; the answer says so
    return { accepted, rejected: errors.length, errors, counted: counters.enabled }
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
    const otherKey = otherSubject(miniApp.id).id
    versionNames.set(otherKey, 'other')
    const ofApp = '(version_id IN (SELECT id FROM versions WHERE mini_app_id = ?) OR version_id = ?)'
    // with a channel, the devices seen on it (kept per channel since schema 14), else those of every channel
    const deviceRows = (
      options.channel === null
        ? client
            .query<{ day: string; versionId: string; hashes: string | null; registers: Uint8Array | null }, [string, string, string, string]>(
              `SELECT day, version_id AS versionId, hashes, registers FROM insight_device_sketches WHERE ${ofApp} AND day BETWEEN ? AND ?`,
            )
            .all(miniApp.id, otherKey, from, to)
        : client
            .query<{ day: string; versionId: string; hashes: string | null; registers: Uint8Array | null }, [string, string, string, string, string]>(
              `SELECT day, version_id AS versionId, hashes, registers FROM insight_channel_device_sketches WHERE ${ofApp} AND day BETWEEN ? AND ? AND channel = ?`,
            )
            .all(miniApp.id, otherKey, from, to, options.channel)
    ).map((row) => {
        const sketch = sketchFromRow(row.hashes, row.registers)
        return { day: row.day, versionId: row.versionId, sketch, devices: countOf(sketch) }
      })
    const distinct = (rows: typeof deviceRows) => distinctDevices(rows.map((row) => row.sketch))

    const byDay = new Map<string, Map<string, VersionDay>>()
    const entry = (day: string, versionId: string): VersionDay | null => {
      const version = versionNames.get(versionId)
      if (version === undefined) return null // deleted since: its rows go with the next prune
      let versionsOfDay = byDay.get(day)
      if (!versionsOfDay) byDay.set(day, (versionsOfDay = new Map()))
      let found = versionsOfDay.get(versionId)
      if (!found) {
        found = { versionId: isOtherKey(versionId) ? null : versionId, version, downloads: { ios: 0, android: 0 }, installInfoRequests: 0, installs: 0, failures: 0, activeDevices: 0, updateChecks: 0, installed: 0, launched: 0, rolledBack: 0 }
        versionsOfDay.set(versionId, found)
      }
      return found
    }
    for (const row of countRows) {
      const found = entry(row.day, row.versionId)
      if (!found) continue
      if (row.platform === 'ios') found.downloads.ios += row.downloads
      if (row.platform === 'android') found.downloads.android += row.downloads
      found.installInfoRequests += row.installInfos
      found.installs += row.installInfos
      found.failures += row.failed
      found.updateChecks += row.updateChecks
      found.installed += row.installed
      found.launched += row.launched
      found.rolledBack += row.rolledBack
    }
    for (const row of deviceRows) {
      const found = entry(row.day, row.versionId)
      if (found) found.activeDevices = row.devices
    }

    const days: InsightsReport['days'] = []
    const totals: ReportTotals = { downloads: { ios: 0, android: 0 }, installInfoRequests: 0, installs: 0, installed: 0, launched: 0, failures: 0, rolledBack: 0, activeDevices: 0, updateChecks: 0 }
    for (let day = from; day <= to; day = shiftDay(day, 1)) {
      // the other row last: it is what devices run that is no release
      const versionsOfDay = [...(byDay.get(day)?.values() ?? [])].sort((a, b) => Number(a.versionId === null) - Number(b.versionId === null) || b.activeDevices - a.activeDevices || a.version.localeCompare(b.version))
      for (const version of versionsOfDay) {
        totals.downloads.ios += version.downloads.ios
        totals.downloads.android += version.downloads.android
        totals.installInfoRequests += version.installInfoRequests
        totals.installs += version.installs
        totals.installed += version.installed
        totals.launched += version.launched
        totals.failures += version.failures
        totals.rolledBack += version.rolledBack
        totals.updateChecks += version.updateChecks
      }
      const devices = versionsOfDay.some((version) => version.activeDevices > 0) ? distinct(deviceRows.filter((row) => row.day === day)) : 0
      days.push({ day, devices, versions: versionsOfDay })
    }
    totals.activeDevices = distinct(deviceRows)

    // adoption: the current release's share of the devices seen on the latest day that saw any; with
    // a channel, that channel's newest live release (the miniapp's current release is stable's). A
    // reverted newest release goes to no device: the current release is then the one they fall back
    // to, as the console's "Live release" and `miniship status` say (decisions §13), or none.
    const rows = liveReleases(db, miniApp.id, options.channel ?? defaultChannel)
    const releaseId =
      rows[0] && releaseState(rows[0]) === 'reverted' ? (fallbackOf(rows).previous?.versionId ?? null) : options.channel === null ? miniApp.currentReleaseVersionId : (rows[0]?.versionId ?? null)
    const latest = [...days].reverse().find((day) => day.versions.some((version) => version.activeDevices > 0)) ?? null
    let share = 0
    const all = latest?.devices ?? 0
    if (latest && releaseId) {
      const ofRelease = latest.versions.find((version) => version.versionId === releaseId)?.activeDevices ?? 0
      share = all > 0 ? Math.min(1, ofRelease / all) : 0
    }

    // with a channel, that channel's; failures stored before schema 15 have no channel and show only without one
    const recentFailures = client
      .query<{ versionId: string; platform: string; channel: string | null; message: string; at: string }, [string, string | null, string | null, number]>(
        'SELECT version_id AS versionId, platform, channel, message, at FROM insight_failures WHERE mini_app_id = ? AND (? IS NULL OR channel = ?) ORDER BY id DESC LIMIT ?',
      )
      .all(miniApp.id, options.channel, options.channel, recentFailureCount)
      .flatMap((row) => {
        const version = versionNames.get(row.versionId)
        return version === undefined ? [] : [{ versionId: isOtherKey(row.versionId) ? null : row.versionId, version, platform: row.platform, channel: row.channel, message: row.message, at: row.at }]
      })

    return { from, to, channel: options.channel, days, totals, adoption: { versionId: releaseId, share, day: latest?.day ?? null, devices: all }, recentFailures }
  }

  let timers: ReturnType<typeof setInterval>[] = []
  return {
    counters,
    flush,
    observe(observer: InsightObserver): void {
      observers.push(observer)
    },
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
      // the first prune a few seconds after start, not on the way to the first answer: it deletes
      // across every version's rows, a while on a large database (issue 30)
      const firstPrune = setTimeout(safely(prune, 'prune'), 5000)
      timers = [firstPrune, setInterval(flush, deps.flushSeconds * 1000), setInterval(safely(prune, 'prune'), dayMs)]
      for (const timer of timers) timer.unref()
      return {
        stop() {
          for (const timer of timers) clearInterval(timer)
          timers = []
          flush()
        },
      }
    },
  }
}

export type InsightsService = ReturnType<typeof createInsightsService>
