// BaseDeps: what the app hands every feature module from the floors below them (configuration, database,
// storage, queue, HTTP guard). Types only, and no module type: the modules' own services join it in
// modules/deps.ts, so no arrow runs from here up to a module and no module imports app.ts.
import type { Config } from './config'
import type { Db } from './db/open'
import type { DataDirPaths } from './data-dir'
import type { Clock } from './ids'
import type { Guard } from './http/guards'
import type { RateLimiter } from './http/rate-limit'
import type { WriteWatch } from './db/write-watch'
import type { BlobStore } from './storage'
import type { JobQueue } from './jobs/queue'

export interface BaseDeps {
  config: Config
  db: Db
  paths: DataDirPaths
  clock: Clock
  log: (line: string) => void
  rateLimiter: RateLimiter
  /** who is calling: the Bearer-token macro, handed its verifiers by the app */
  guard: Guard
  startedAt: number
  /** the requests that may be writing (db/write-watch.ts): the runtime's caches ask SQLite only after one */
  writes: WriteWatch
  /** where stored files live: the data directory or an S3 bucket (issue 14) */
  blobs: BlobStore
  /** the durable queue of background work (src/jobs/): handlers register by kind */
  jobs: JobQueue
}
