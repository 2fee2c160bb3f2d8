// AppDeps: everything a feature module may use. Types only, so no module imports app.ts (which imports them all).
import type { Config } from './config'
import type { Db } from './db/open'
import type { DataDirPaths } from './data-dir'
import type { Clock } from './ids'
import type { Guard } from './http/guards'
import type { RateLimiter } from './http/rate-limit'
import type { WriteWatch } from './db/write-watch'
import type { BlobStore } from './storage'
import type { TokenService } from './modules/auth/tokens'
import type { ApiKeyAuthenticator } from './modules/api-keys/service'
import type { InsightsService } from './modules/insights/service'
import type { RequestMetrics } from './modules/system/metrics'
import type { ReleaseMirror } from './modules/mirror/service'
import type { JobQueue } from './jobs/queue'
import type { ReleaseGuard } from './modules/channels/guard'

/** Everything a feature module may use; services take the parts they need from it. */
export interface AppDeps {
  config: Config
  db: Db
  paths: DataDirPaths
  clock: Clock
  log: (line: string) => void
  tokens: TokenService
  rateLimiter: RateLimiter
  guard: Guard
  /** API keys as callers: the guard and the runtime's `?token=` use it */
  apiKeys: ApiKeyAuthenticator
  startedAt: number
  /** the requests that may be writing (db/write-watch.ts): the runtime's caches ask SQLite only after one */
  writes: WriteWatch
  /** the in-memory counters of what phones do, and the report built from them */
  insights: InsightsService
  /** request counts and latencies, fed by the request log under `serve` */
  requestMetrics: RequestMetrics
  /** where stored files live: the data directory or an S3 bucket (issue 14) */
  blobs: BlobStore
  /** the durable queue of background work (src/jobs/): handlers register by kind */
  jobs: JobQueue
  /** with --mirror-releases on: queues a write of each channel's release to the bucket on every change */
  mirror: ReleaseMirror | null
  /** decisions §15: counts failing devices of guarded channels' newest releases (fed by insights), pauses them */
  releaseGuard: ReleaseGuard
}
