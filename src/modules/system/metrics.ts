// GET /api/metrics: request counts and latencies per route group, transfers, devices and storage, in Prometheus text format 0.0.4.
import { statSync } from 'node:fs'
import { timingSafeEqual } from 'node:crypto'
import type { Db } from '../../db/open'
import type { DataDirPaths } from '../../data-dir'
import type { Clock } from '../../ids'
import type { JobQueue } from '../../jobs/queue'
import { AppError } from '../../http/errors'
import { bearerToken } from '../../http/guards'
import { userFromAccessToken } from '../auth/access'
import { pathStartOf } from '../../http/request-log'
import type { TokenService } from '../auth/tokens'
import { fileKindNames } from '../versions/file-kinds'
import { deviceEvents, otherPrefix, utcDay, type AppTotals, type Totals } from '../insights/counters'
import { distinctDevices, sketchFromRow, type DeviceSketch } from '../insights/sketch'

/** Route groups: few and fixed, so that every label set exists from the start and costs an array slot. */
export const routeGroups = ['install_info', 'update_check', 'release_file', 'version_file', 'events', 'upload', 'auth', 'admin', 'mini_apps', 'health', 'metrics', 'api_other', 'console'] as const
export type RouteGroup = (typeof routeGroups)[number]
const groupIndex = Object.fromEntries(routeGroups.map((group, index) => [group, index])) as Record<RouteGroup, number>
const statusClasses = ['1xx', '2xx', '3xx', '4xx', '5xx'] as const
/** seconds; the runtime's answers take well under a millisecond, uploads seconds */
export const latencyBuckets = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const

const uploadPath = /^\/api\/mini-apps\/by-app-id\/[^/]+\/versions\/upload\/?$/

/** The group of a request URL, by string tests on the path only (this runs on every request). */
export function routeGroupOf(url: string): RouteGroup {
  const pathStart = pathStartOf(url)
  if (pathStart === -1) return 'console'
  const queryStart = url.indexOf('?', pathStart)
  const path = url.slice(pathStart, queryStart === -1 ? url.length : queryStart)
  if (!path.startsWith('/api/')) return 'console'
  if (path.startsWith('/api/mini-apps/')) {
    if (path.startsWith('/api/mini-apps/access/')) {
      if (path === '/api/mini-apps/access/events') return 'events'
      if (path.endsWith('/install')) return 'install_info'
      if (path.startsWith('/api/mini-apps/access/apps/')) return path.endsWith('/update') ? 'update_check' : 'release_file'
      return 'version_file'
    }
    return uploadPath.test(path) ? 'upload' : 'mini_apps'
  }
  if (path === '/api/mini-apps') return 'mini_apps'
  if (path.startsWith('/api/auth/')) return 'auth'
  if (path.startsWith('/api/admin/')) return 'admin'
  if (path === '/api/health') return 'health'
  if (path === '/api/metrics') return 'metrics'
  return 'api_other'
}

/** Told of each answered request by the request log; must be cheap. */
export type ObserveRequest = (request: Request, url: string, status: number, seconds: number) => void

export interface RequestMetrics {
  /** called by the request log once per answered request */
  observe: ObserveRequest
  /** `observe` for a route whose group is known beforehand (serve's native routes): no path to read */
  observerOf(group: RouteGroup): ObserveRequest
  render(lines: string[]): void
}

export function createRequestMetrics(): RequestMetrics {
  const cells = routeGroups.length * statusClasses.length
  const counts = new Float64Array(cells)
  const sums = new Float64Array(cells)
  // per cell, the count of requests in each bucket (not cumulative: summed when rendered)
  const buckets = new Float64Array(cells * latencyBuckets.length)
  let uploads = 0
  let uploadBytes = 0
  function record(group: RouteGroup, request: Request, status: number, seconds: number): void {
    const statusClass = Math.min(4, Math.max(0, Math.floor(status / 100) - 1))
    const cell = groupIndex[group] * statusClasses.length + statusClass
    counts[cell]!++
    sums[cell]! += seconds
    let bucket = 0
    while (bucket < latencyBuckets.length && seconds > latencyBuckets[bucket]!) bucket++
    if (bucket < latencyBuckets.length) buckets[cell * latencyBuckets.length + bucket]!++
    if (group === 'upload' && status === 201) {
      uploads++
      uploadBytes += Number(request.headers.get('content-length')) || 0
    }
  }
  return {
    observe: (request, url, status, seconds) => record(routeGroupOf(url), request, status, seconds),
    observerOf: (group) => (request, _url, status, seconds) => record(group, request, status, seconds),
    render(lines) {
      lines.push('# HELP miniship_http_requests_total Requests answered, by route group and status class.', '# TYPE miniship_http_requests_total counter')
      for (let cell = 0; cell < cells; cell++) {
        lines.push(`miniship_http_requests_total{${labelsOf(cell)}} ${counts[cell]}`)
      }
      lines.push('# HELP miniship_http_request_duration_seconds Time to the response head, by route group and status class.', '# TYPE miniship_http_request_duration_seconds histogram')
      for (let cell = 0; cell < cells; cell++) {
        if (counts[cell] === 0) continue
        const labels = labelsOf(cell)
        let cumulative = 0
        latencyBuckets.forEach((bound, bucket) => {
          cumulative += buckets[cell * latencyBuckets.length + bucket]!
          lines.push(`miniship_http_request_duration_seconds_bucket{${labels},le="${bound}"} ${cumulative}`)
        })
        lines.push(`miniship_http_request_duration_seconds_bucket{${labels},le="+Inf"} ${counts[cell]}`)
        lines.push(`miniship_http_request_duration_seconds_sum{${labels}} ${sums[cell]}`)
        lines.push(`miniship_http_request_duration_seconds_count{${labels}} ${counts[cell]}`)
      }
      metric(lines, 'miniship_uploads_total', 'counter', 'Uploads accepted (201).', [['', uploads]])
      metric(lines, 'miniship_upload_bytes_total', 'counter', 'Request bytes of accepted uploads.', [['', uploadBytes]])
    },
  }
}

function labelsOf(cell: number): string {
  return `group="${routeGroups[Math.floor(cell / statusClasses.length)]}",status_class="${statusClasses[cell % statusClasses.length]}"`
}

/** A label value as the text format wants it: backslash, quote and newline escaped. */
export function labelValue(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')
}

function metric(lines: string[], name: string, type: 'counter' | 'gauge', help: string, samples: [labels: string, value: number][]): void {
  lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`)
  for (const [labels, value] of samples) lines.push(`${name}${labels === '' ? '' : `{${labels}}`} ${value}`)
}

export interface MetricsDeps {
  db: Db
  paths: Pick<DataDirPaths, 'database'>
  clock: Clock
  startedAt: number
  requestMetrics: RequestMetrics
  totals: Totals
  /** writes the insight counters first, so device gauges include the last seconds */
  flushInsights: () => void
  /** the background queue's backlog (release mirror writes, webhook deliveries) */
  jobs: Pick<JobQueue, 'backlog'>
}

/** The per-miniapp counts of a miniapp nothing was counted for since start. */
const noCounts: AppTotals = Object.freeze({ installInfos: 0, updateChecks: 0, downloads: Object.freeze({ ios: 0, android: 0 }), installed: 0, launched: 0, failed: 0, rolledBack: 0 })

/** Distinct stored files and their bytes: the blob store's size without walking it (works for any store). */
const blobBytesQuery = 'SELECT count(*) AS files, coalesce(sum(size), 0) AS bytes FROM (SELECT DISTINCT sha256, size FROM version_files)'

export function renderMetrics(deps: MetricsDeps): string {
  deps.flushInsights()
  const client = deps.db.$client
  const lines: string[] = []
  deps.requestMetrics.render(lines)
  const { totals } = deps
  metric(lines, 'miniship_downloads_total', 'counter', 'File downloads, each counted once when it starts (a 200, a 206 from byte 0, or a redirect to the bucket from byte 0; a resumed download is not counted again, nor a probe of the first byte alone, bytes=0-0), by file kind.', fileKindNames.map((kind) => [`kind="${kind}"`, totals.downloads[kind]]))
  metric(lines, 'miniship_download_bytes_total', 'counter', 'Bytes of file answers (200, 206, and ranges redirected to the bucket), every byte sent: resumes and first-byte probes included, though they start no download, by file kind.', fileKindNames.map((kind) => [`kind="${kind}"`, totals.downloadBytes[kind]]))
  metric(lines, 'miniship_install_info_total', 'counter', 'Install-info answers counted by insights.', [['', totals.installInfos]])
  metric(lines, 'miniship_update_checks_total', 'counter', 'Update-check answers counted by insights.', [['', totals.updateChecks]])
  metric(lines, 'miniship_device_events_total', 'counter', 'Device events accepted, by event.', deviceEvents.map((event) => [`event="${event}"`, totals.events[event]]))
  metric(lines, 'miniship_device_events_rejected_total', 'counter', 'Device events refused (malformed, or naming an app or channel the server does not have).', [['', totals.rejectedEvents]])
  // the same counts per miniapp (decisions §13: a miniapp's /insights totals are the sums of its counters)
  const appIds = new Map(client.query<{ id: string; appId: string }, []>('SELECT id, app_id AS appId FROM mini_apps').all().map((row) => [row.id, `app_id="${labelValue(row.appId)}"`]))
  // every miniapp has its series from the first scrape, zeros included: Prometheus' increase() takes
  // a series' first sample as its start, so counts made before a series first appears (a new
  // miniapp, the first requests after a restart) would never show in it
  const apps = [...appIds].map(([id, label]) => [label, totals.byApp.get(id) ?? noCounts] as const).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
  if (apps.length > 0) {
    metric(lines, 'miniship_app_install_info_total', 'counter', 'Install-info answers counted by insights, by miniapp.', apps.map(([label, app]) => [label, app.installInfos]))
    metric(lines, 'miniship_app_update_checks_total', 'counter', 'Update-check answers counted by insights, by miniapp.', apps.map(([label, app]) => [label, app.updateChecks]))
    metric(lines, 'miniship_app_bundle_downloads_total', 'counter', 'Bundle downloads, each counted once when it starts (what insights count as downloads), by miniapp and platform.', apps.flatMap(([label, app]) => (['ios', 'android'] as const).map((platform) => [`${label},platform="${platform}"`, app.downloads[platform]] as [string, number])))
    const events = { installed: 'installed', launched: 'launched', failed: 'failed', rolled_back: 'rolledBack' } as const
    metric(lines, 'miniship_app_device_events_total', 'counter', 'Device events accepted, by miniapp and event.', apps.flatMap(([label, app]) => deviceEvents.map((event) => [`${label},event="${event}"`, app[events[event]]] as [string, number])))
  }
  metric(lines, 'miniship_insights_flushes_total', 'counter', 'Insight counter flushes written.', [['', totals.flushes]])
  metric(lines, 'miniship_insights_flush_failures_total', 'counter', 'Insight counter flushes that failed (the counts stayed in memory).', [['', totals.flushFailures]])

  const today = utcDay(deps.clock())
  // a miniapp's devices today: the union of its versions' sketches
  const sketches = new Map<string, DeviceSketch[]>()
  // and the devices of its `other` row (versions unknown or withdrawn, decisions §13), as the insights report counts them
  for (const row of client
    .query<{ appId: string; hashes: string | null; registers: Uint8Array | null }, [string, string]>(
      `SELECT m.app_id AS appId, d.hashes, d.registers FROM versions v JOIN insight_device_sketches d ON d.version_id = v.id AND d.day = ? JOIN mini_apps m ON m.id = v.mini_app_id
       UNION ALL SELECT m.app_id AS appId, d.hashes, d.registers FROM insight_device_sketches d JOIN mini_apps m ON d.version_id = '${otherPrefix}' || m.id WHERE d.day = ?
       ORDER BY appId`,
    )
    .all(today, today)) {
    const ofApp = sketches.get(row.appId)
    if (ofApp === undefined) sketches.set(row.appId, [sketchFromRow(row.hashes, row.registers)])
    else ofApp.push(sketchFromRow(row.hashes, row.registers))
  }
  metric(lines, 'miniship_active_devices', 'gauge', 'Distinct devices seen today (UTC), by miniapp: exact up to 2,048, estimated (about 1 % error) past that.', [...sketches].map(([appId, ofApp]) => [`app_id="${labelValue(appId)}"`, distinctDevices(ofApp)]))
  const statuses = new Map(client.query<{ status: string; n: number }, []>('SELECT status, count(*) AS n FROM versions GROUP BY status').all().map((row) => [row.status, row.n]))
  metric(lines, 'miniship_versions', 'gauge', 'Versions, by status.', ['DRAFT', 'IN_REVIEW', 'PUBLISHED'].map((status) => [`status="${status}"`, statuses.get(status) ?? 0]))
  metric(lines, 'miniship_mini_apps', 'gauge', 'Miniapps.', [['', client.query<{ n: number }, []>('SELECT count(*) AS n FROM mini_apps').get()!.n]])
  const fileSize = (path: string) => statSync(path, { throwIfNoEntry: false })?.size ?? 0
  metric(lines, 'miniship_database_bytes', 'gauge', 'Size of the SQLite database file and its write-ahead log.', [['', fileSize(deps.paths.database) + fileSize(`${deps.paths.database}-wal`)]])
  const blobs = client.query<{ files: number; bytes: number }, []>(blobBytesQuery).get()!
  metric(lines, 'miniship_blob_files', 'gauge', 'Distinct stored files referenced by versions.', [['', blobs.files]])
  metric(lines, 'miniship_blob_bytes', 'gauge', 'Bytes of the distinct stored files referenced by versions.', [['', blobs.bytes]])
  const jobKinds = Object.entries(deps.jobs.backlog().byKind)
  // every registered kind is listed (zeros included); a family without a sample would not parse
  if (jobKinds.length > 0) {
    metric(lines, 'miniship_jobs_pending', 'gauge', 'Background jobs waiting to run (or running), by kind.', jobKinds.map(([kind, of]) => [`kind="${labelValue(kind)}"`, of.pending + of.running]))
    metric(lines, 'miniship_jobs_oldest_pending_seconds', 'gauge', 'Age of the oldest background job still waiting, by kind (0 when none waits).', jobKinds.map(([kind, of]) => [`kind="${labelValue(kind)}"`, of.oldestPendingSeconds]))
    metric(lines, 'miniship_jobs_failed', 'gauge', 'Background jobs that gave up after their retries (kept 30 days), by kind.', jobKinds.map(([kind, of]) => [`kind="${labelValue(kind)}"`, of.failed]))
  }
  metric(lines, 'miniship_uptime_seconds', 'gauge', 'Seconds since this server started.', [['', Math.floor((deps.clock() - deps.startedAt) / 1000)]])
  return lines.join('\n') + '\n'
}

/**
 * Who may scrape: the configured metrics token, or an administrator's access token. The token is
 * compared in constant time; a wrong one falls through to the access-token check (and its 401).
 */
export async function authoriseScrape(header: string | undefined, metricsToken: string | null, db: Db, tokens: TokenService): Promise<void> {
  const token = bearerToken(header)
  if (metricsToken !== null) {
    const given = Buffer.from(token)
    const expected = Buffer.from(metricsToken)
    if (given.length === expected.length && timingSafeEqual(given, expected)) return
  }
  const user = await userFromAccessToken(db, tokens, token)
  if (user.role !== 'ADMIN') throw new AppError(403, 'ADMIN_REQUIRED', 'Only administrators (or a scraper with the metrics token) may read metrics')
}
