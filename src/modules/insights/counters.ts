// In-memory insight counters: the hot path adds to Maps, a flush hands whole days of them to be written at once.
import type { FileKind } from '../versions/file-kinds'
import { parseRange } from '../../http/range'
import { addDigest, emptySketch, mergeInto, type DeviceSketch } from './sketch'

export type CountPlatform = 'ios' | 'android' | 'unknown'
export type DeviceEvent = 'installed' | 'launched' | 'failed' | 'rolled_back'
export const deviceEvents: readonly DeviceEvent[] = ['installed', 'launched', 'failed', 'rolled_back']

/** The version a count is about: the runtime hands over the facts objects it already holds, so counting allocates nothing. */
export interface CountSubject {
  /** the version's id */
  id: string
  miniAppId: string
}

/**
 * Decisions §13: what devices report about a version the server does not know, or one withdrawn
 * from the channel, is counted in one row per miniapp, channel and day, stored under this key
 * (`other:` + the miniapp's id; no version id has a colon) and reported as `versionId: null,
 * version: "other"`. However many made-up versions arrive, they add no rows.
 */
export const otherPrefix = 'other:'
/** Failure messages kept per version and channel (and per miniapp's `other` row and channel). */
export const failuresPerVersion = 20
const otherSubjects = new Map<string, CountSubject>()

/** The count subject of a miniapp's `other` row; one object per miniapp, so counting allocates nothing. */
export function otherSubject(miniAppId: string): CountSubject {
  let subject = otherSubjects.get(miniAppId)
  if (subject === undefined) {
    // miniapps are few; a server with very many starts the map again rather than grow it
    if (otherSubjects.size >= 100_000) otherSubjects.clear()
    otherSubjects.set(miniAppId, (subject = { id: `${otherPrefix}${miniAppId}`, miniAppId }))
  }
  return subject
}

export function isOtherKey(versionId: string): boolean {
  return versionId.startsWith(otherPrefix)
}

/** A file answer as the runtime produced it (a StoredFile). */
export interface CountedFile {
  version: CountSubject
  kind: FileKind
  size: number
}

/** The numbers of one (version, day, platform, channel) row; the flush adds them to the stored ones. */
export class Cell {
  installInfos = 0
  updateChecks = 0
  downloads = 0
  installed = 0
  launched = 0
  failed = 0
  rolledBack = 0
}

export interface PendingFailure {
  versionId: string
  miniAppId: string
  platform: 'ios' | 'android'
  channel: string
  message: string
  at: string
}

/**
 * One channel's cells of a version and day, one per platform (ios, android, unknown), and the
 * devices seen on that channel since the last flush (by their keyed hash, never the id as sent).
 */
export type ChannelCells = [Cell, Cell, Cell] & { devices?: DeviceSketch }

/** One version's counts of one day, per channel. */
export interface VersionSlot {
  versionId: string
  miniAppId: string
  channels: Map<string, ChannelCells>
  /** the devices of every channel together, made when the counters are drained: merged into the stored sketch when written */
  devices: DeviceSketch
}

/** Everything counted during one UTC day since the last flush. */
export interface DayBatch {
  day: string
  slots: Map<string, VersionSlot>
  failures: PendingFailure[]
}

/** Running totals since start, never reset: Prometheus counters. */
export interface Totals {
  installInfos: number
  updateChecks: number
  downloads: Record<FileKind, number>
  downloadBytes: Record<FileKind, number>
  events: Record<DeviceEvent, number>
  rejectedEvents: number
  flushes: number
  flushFailures: number
  /**
   * The same counts per miniapp (by its id), as its insights report counts them (decisions §13):
   * added up from the counters' cells when they are drained for a flush (a scrape flushes first), so
   * the requests themselves pay nothing for them. Bundle downloads by platform, as the report has them.
   */
  byApp: Map<string, AppTotals>
}

/** One miniapp's counts since start (see Totals.byApp). */
export interface AppTotals {
  installInfos: number
  updateChecks: number
  downloads: { ios: number; android: number }
  installed: number
  launched: number
  failed: number
  rolledBack: number
}

const dayMs = 86_400_000
const pendingFailureLimit = 1_000
/** device ids hashed together (see seeDevice) */
const deviceBatch = 256
/** Longer ids are not ids a runtime sends; ignoring them keeps a hostile client from filling memory. */
const deviceIdLimit = 200

const newKindRecord = (): Record<FileKind, number> => ({ bundleIos: 0, bundleAndroid: 0, manifest: 0, assetsIos: 0, assetsAndroid: 0 })

/** The bundle is the file every install fetches exactly once per platform: it is what `downloads` counts. */
const downloadPlatform: Record<FileKind, 0 | 1 | null> = { bundleIos: 0, bundleAndroid: 1, manifest: null, assetsIos: null, assetsAndroid: null }

/** `YYYY-MM-DD` of a UTC millisecond. */
export function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10)
}

/**
 * Whether a range (inclusive positions) of a file of `size` bytes starts a download: it starts at byte
 * 0 and asks for more than the first byte, or is the whole file. `bytes=0-0` alone is a probe (a
 * client asking whether ranges are served, or the size, before it downloads), not a download; a range
 * from byte 1 is the rest of the file after such a probe (a client that keeps the probe's byte), so it
 * starts one. A download cut off after exactly its first byte and resumed would count twice: rarer by
 * far than the probe-then-rest clients, which would otherwise count never.
 */
function rangeStartsDownload(start: number, end: number, size: number): boolean {
  return start === 0 ? end > 0 || end === size - 1 : start === 1
}

/**
 * Whether a file answer starts a download, and how many bytes it sends. A download is counted once,
 * when it starts: at the answer that sends the file from its first byte, a 200 to GET or a 206 whose
 * range starts at byte 0 and is more than a probe of that byte (see rangeStartsDownload). A 206 from
 * a later byte is a download resumed (or a later part of one), counted when it began, so a download
 * cut off and resumed counts once; counting where it ends instead would count a 200 that was cut off
 * and then a resume that reached the last byte, twice. HEAD and 304 send no file. `bytes` is every
 * byte the answer sends, a probe's and a resume's too (the bandwidth, not the downloads). The 200
 * path and a redirect without a Range touch nothing but numbers; a 206 reads its Content-Range, a
 * redirect for a ranged request the range asked for.
 */
export function downloadOf(method: string, status: number, size: number, range: string | null, contentRange: () => string | null): { starts: boolean; bytes: number } | null {
  if (method !== 'GET') return null
  if (status === 200) return { starts: true, bytes: size }
  // 302: with --s3-downloads redirect the bytes come from the bucket, the range too; the redirect is the download
  if (status === 302) {
    if (range === null) return { starts: true, bytes: size }
    const asked = parseRange(range, size)
    if (asked === 'unsatisfiable') return null // answered 416 before it came to this
    return asked === 'ignore' ? { starts: true, bytes: size } : { starts: rangeStartsDownload(asked.start, asked.end, size), bytes: asked.end - asked.start + 1 }
  }
  if (status !== 206) return null
  const match = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(contentRange() ?? '')
  if (!match) return null
  const start = Number(match[1])
  const end = Number(match[2])
  return { starts: rangeStartsDownload(start, end, size), bytes: end - start + 1 }
}

export interface InsightCounters {
  readonly enabled: boolean
  readonly totals: Totals
  /** an install-info answer of `subject` (install info names no platform unless the caller did) */
  countInstall(subject: CountSubject, channel: string, platform?: CountPlatform, deviceId?: string): void
  /** an update-check answer of a device running `subject` (a miniapp's `otherSubject` for a version that is no live release of the channel) */
  countUpdateCheck(subject: CountSubject | undefined, channel: string, platform: CountPlatform, deviceId?: string): void
  /** a file answer to `request` (its method and Range header): counted when it starts a download (see downloadOf) */
  countDownload(file: CountedFile, channel: string, request: { method: string; range: string | null }, response: Response): void
  /** one accepted device event */
  countEvent(subject: CountSubject, channel: string, platform: 'ios' | 'android', event: DeviceEvent, deviceId: string | undefined, failure: { message: string; at: string } | null): void
  countRejected(count: number): void
  /** takes every batch counted so far (the counters start empty again) */
  drain(): DayBatch[]
  /** puts batches back in front after a failed write, so the next flush tries them again */
  restore(batches: DayBatch[]): void
  /** whether anything waits to be written */
  pending(): boolean
}

/**
 * Counting costs a clock read, two Map lookups and an increment, and for a device its keyed hash
 * (`hashDevice`: an HMAC digest, taken a batch at a time) added to the version's sketch; objects are made only for the
 * first count of a version, channel or day. A sketch holds at most 2,048 hashes or 16 KB of
 * registers, so memory stays bounded under a flood of new devices without an early flush.
 */
export function createInsightCounters(options: { clock: () => number; enabled: boolean; hashDevice: (deviceId: string) => Buffer }): InsightCounters {
  const { clock, enabled } = options
  const totals: Totals = {
    installInfos: 0,
    updateChecks: 0,
    downloads: newKindRecord(),
    downloadBytes: newKindRecord(),
    events: { installed: 0, launched: 0, failed: 0, rolled_back: 0 },
    rejectedEvents: 0,
    flushes: 0,
    flushFailures: 0,
    byApp: new Map(),
  }
  /** Adds (sign 1) or takes back (-1: a batch restored after a failed write, drained again later) a batch's counts to its miniapps' totals. */
  const addToApps = (batches: DayBatch[], sign: 1 | -1) => {
    for (const batch of batches) {
      for (const slot of batch.slots.values()) {
        let app = totals.byApp.get(slot.miniAppId)
        if (app === undefined) totals.byApp.set(slot.miniAppId, (app = { installInfos: 0, updateChecks: 0, downloads: { ios: 0, android: 0 }, installed: 0, launched: 0, failed: 0, rolledBack: 0 }))
        for (const [ios, android, unknown] of slot.channels.values()) {
          for (const cell of [ios, android, unknown]) {
            app.installInfos += sign * cell.installInfos
            app.updateChecks += sign * cell.updateChecks
            app.installed += sign * cell.installed
            app.launched += sign * cell.launched
            app.failed += sign * cell.failed
            app.rolledBack += sign * cell.rolledBack
          }
          app.downloads.ios += sign * ios.downloads
          app.downloads.android += sign * android.downloads
        }
      }
    }
  }
  let sealed: DayBatch[] = []
  let current: DayBatch = { day: '', slots: new Map(), failures: [] }
  let dayEndsAt = -Infinity
  const { hashDevice } = options

  /** The batch of today, sealing yesterday's when the clock passed midnight UTC. */
  function today(): DayBatch {
    const now = clock()
    if (now >= dayEndsAt) {
      if (current.slots.size > 0 || current.failures.length > 0) sealed.push(current)
      current = { day: utcDay(now), slots: new Map(), failures: [] }
      dayEndsAt = (Math.floor(now / dayMs) + 1) * dayMs
    }
    return current
  }

  function slotOf(subject: CountSubject): VersionSlot {
    const slots = today().slots
    let slot = slots.get(subject.id)
    if (slot === undefined) {
      slot = { versionId: subject.id, miniAppId: subject.miniAppId, channels: new Map(), devices: emptySketch() }
      slots.set(subject.id, slot)
    }
    return slot
  }

  function cellsOf(slot: VersionSlot, channel: string): ChannelCells {
    let cells = slot.channels.get(channel)
    if (cells === undefined) {
      cells = [new Cell(), new Cell(), new Cell()]
      slot.channels.set(channel, cells)
    }
    return cells
  }

  // compared, not looked up: the platform is a slice of the request's URL, and a property
  // lookup by a string made per request costs more than two comparisons
  const platformIndex = (platform: CountPlatform): 0 | 1 | 2 => (platform === 'ios' ? 0 : platform === 'android' ? 1 : 2)

  function cellOf(slot: VersionSlot, channel: string, platform: CountPlatform): Cell {
    return cellsOf(slot, channel)[platformIndex(platform)]
  }

  // Devices are hashed into their sketches `deviceBatch` at a time: hashing a few hundred ids in one
  // go costs the server less than a hash in the middle of each update check (scripts/bench/ab.ts).
  // Whatever waits is hashed before a drain, so a flush writes every device counted.
  // Each device goes into its channel's sketch only; the version's sketch (all channels) is their union, made at drain.
  const waitingIds: string[] = new Array(deviceBatch).fill('')
  const waitingCells: (ChannelCells | null)[] = new Array(deviceBatch).fill(null)
  let waiting = 0
  function hashWaiting(): void {
    for (let index = 0; index < waiting; index++) {
      const cells = waitingCells[index]!
      addDigest((cells.devices ??= emptySketch()), hashDevice(waitingIds[index]!))
      waitingCells[index] = null
    }
    waiting = 0
  }

  function seeDevice(cells: ChannelCells, deviceId: string | undefined): void {
    if (deviceId === undefined || deviceId === '' || deviceId.length > deviceIdLimit) return
    if (waiting === deviceBatch) hashWaiting()
    waitingIds[waiting] = deviceId
    waitingCells[waiting] = cells
    waiting++
  }

  return {
    enabled,
    totals,
    countInstall(subject, channel, platform = 'unknown', deviceId) {
      if (!enabled) return
      totals.installInfos++
      const cells = cellsOf(slotOf(subject), channel)
      cells[platformIndex(platform)].installInfos++
      seeDevice(cells, deviceId)
    },
    countUpdateCheck(subject, channel, platform, deviceId) {
      if (!enabled) return
      totals.updateChecks++
      if (subject === undefined) return
      const cells = cellsOf(slotOf(subject), channel)
      cells[platformIndex(platform)].updateChecks++
      seeDevice(cells, deviceId)
    },
    countDownload(file, channel, request, response) {
      if (!enabled) return
      const download = downloadOf(request.method, response.status, file.size, request.range, () => response.headers.get('content-range'))
      if (download === null) return
      totals.downloadBytes[file.kind] += download.bytes
      if (!download.starts) return
      totals.downloads[file.kind]++
      const platform = downloadPlatform[file.kind]
      if (platform === null) return
      cellOf(slotOf(file.version), channel, platform === 0 ? 'ios' : 'android').downloads++
    },
    countEvent(subject, channel, platform, event, deviceId, failure) {
      if (!enabled) return
      totals.events[event]++
      const cells = cellsOf(slotOf(subject), channel)
      const cell = cells[platformIndex(platform)]
      if (event === 'installed') cell.installed++
      else if (event === 'launched') cell.launched++
      else if (event === 'failed') cell.failed++
      else cell.rolledBack++
      seeDevice(cells, deviceId)
      if (failure !== null) {
        const failures = today().failures
        // a flood of failures keeps the newest: only the last few per version are kept anyway
        if (failures.length >= pendingFailureLimit) failures.shift()
        failures.push({ versionId: subject.id, miniAppId: subject.miniAppId, platform, channel, message: failure.message, at: failure.at })
      }
    },
    countRejected(count) {
      if (enabled) totals.rejectedEvents += count
    },
    drain() {
      hashWaiting()
      const batches = sealed
      if (current.slots.size > 0 || current.failures.length > 0) batches.push(current)
      sealed = []
      current = { day: current.day, slots: new Map(), failures: [] }
      addToApps(batches, 1)
      // each version's devices of all channels together (a batch drained again after a failed write: the union again, unchanged)
      for (const batch of batches) {
        for (const slot of batch.slots.values()) for (const cells of slot.channels.values()) if (cells.devices !== undefined) mergeInto(slot.devices, cells.devices)
      }
      return batches
    },
    restore(batches) {
      addToApps(batches, -1)
      sealed = [...batches, ...sealed]
    },
    pending() {
      return sealed.length > 0 || current.slots.size > 0 || current.failures.length > 0
    },
  }
}
