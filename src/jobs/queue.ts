// The durable job queue: work that runs after the request that caused it has answered, kept in the `jobs` table until done or given up.
// It knows no feature module: modules (or the app) register a handler per kind and enqueue by kind.
import type { Database } from 'bun:sqlite'
import { and, eq } from 'drizzle-orm'
import { jobs } from '../db/schema'
import type { Db } from '../db/open'
import { newId, type Clock } from '../ids'

/** What a handler is told about the attempt it runs. */
export interface JobAttempt {
  /** 1 for the first attempt */
  attempt: number
  /** true when no retry follows a failure of this attempt */
  final: boolean
  /** aborted when the attempt's time is up: stop at the next step */
  signal: AbortSignal
}

export interface JobHandler<Payload> {
  /** throws (or rejects) to fail the attempt; the queue retries after the next wait of `retryDelaysMs` */
  run(payload: Payload, attempt: JobAttempt): Promise<void>
  /** one attempt's time; past it the attempt counts as failed (and its signal is aborted) */
  timeoutMs: number
  /** the wait after the 1st, 2nd, … failed attempt; the last wait repeats up to `maxAttempts` */
  retryDelaysMs: readonly number[]
  /** attempts in all before the job is marked failed */
  maxAttempts: number
  /** called once when the job is marked failed (its retries used up) */
  onGiveUp?(payload: Payload, lastError: string): void
}

export interface EnqueueOptions {
  /**
   * At most one pending job per key: enqueueing again while one waits replaces its payload and makes
   * it due now (one mirror write per channel, however many changes came meanwhile). A job of the same
   * key that is running keeps running; the pending one runs after it.
   */
  dedupeKey?: string
  /** run no earlier than this many ms from now */
  delayMs?: number
}

type Writer = Pick<Db, 'select' | 'insert' | 'update'>

/**
 * Adds a job. Pass the transaction of the change that causes it (or call it right after that
 * commit): the worker picks it up within its poll interval, or at once when woken.
 */
export function enqueueJob(db: Writer, clock: Clock, kind: string, payload: unknown, options: EnqueueOptions = {}): string {
  const now = clock()
  const at = new Date(now).toISOString()
  const runAfter = now + (options.delayMs ?? 0)
  const text = JSON.stringify(payload)
  if (options.dedupeKey !== undefined) {
    const waiting = db
      .select({ id: jobs.id, runAfter: jobs.runAfter })
      .from(jobs)
      .where(and(eq(jobs.dedupeKey, options.dedupeKey), eq(jobs.state, 'pending')))
      .get()
    if (waiting) {
      // new work (what is true now) with attempts of its own: a change that replaces a write waiting for
      // its third retry does not give up after the failures of the one it replaced
      db.update(jobs)
        .set({ kind, payload: text, attempts: 0, runAfter: Math.min(waiting.runAfter, runAfter), updatedAt: at })
        .where(eq(jobs.id, waiting.id))
        .run()
      return waiting.id
    }
  }
  const id = newId()
  db.insert(jobs)
    .values({ id, kind, payload: text, state: 'pending', attempts: 0, runAfter, dedupeKey: options.dedupeKey ?? null, lastError: null, createdAt: at, updatedAt: at })
    .run()
  return id
}

export interface KindBacklog {
  pending: number
  running: number
  failed: number
  /** seconds since the oldest pending (or running) job was first enqueued; 0 when none */
  oldestPendingSeconds: number
}

export interface JobBacklog {
  pending: number
  running: number
  failed: number
  oldestPendingSeconds: number
  byKind: Record<string, KindBacklog>
}

/** What waits and what gave up, per kind: health, metrics and doctor read it (a plain SQLite handle, so doctor can too). */
export function jobBacklog(client: Database, now: number): JobBacklog {
  const rows = client.query<{ kind: string; state: string; n: number; oldest: string }, []>('SELECT kind, state, count(*) AS n, min(created_at) AS oldest FROM jobs GROUP BY kind, state').all()
  const total: JobBacklog = { pending: 0, running: 0, failed: 0, oldestPendingSeconds: 0, byKind: {} }
  for (const row of rows) {
    const kind = (total.byKind[row.kind] ??= { pending: 0, running: 0, failed: 0, oldestPendingSeconds: 0 })
    const state = row.state as 'pending' | 'running' | 'failed'
    kind[state] += row.n
    total[state] += row.n
    if (state !== 'failed') {
      const age = Math.max(0, Math.floor((now - Date.parse(row.oldest)) / 1000))
      kind.oldestPendingSeconds = Math.max(kind.oldestPendingSeconds, age)
      total.oldestPendingSeconds = Math.max(total.oldestPendingSeconds, age)
    }
  }
  return total
}

/** The wait before attempt `attempts + 1` after `attempts` failed ones. */
export function retryDelay(handler: Pick<JobHandler<unknown>, 'retryDelaysMs'>, attempts: number): number {
  const delays = handler.retryDelaysMs
  if (delays.length === 0) return 0
  return delays[Math.min(attempts, delays.length) - 1] ?? delays[0]!
}

export interface JobQueueOptions {
  db: Db
  clock: Clock
  log: (line: string) => void
  /** jobs run at once, at most */
  concurrency?: number
  /** how often the worker looks for due jobs (it is also woken by `enqueue`) */
  pollMs?: number
  /** overrides every kind's attempt timeout (tests use a short one) */
  attemptTimeoutMs?: number
}

export interface JobQueue {
  register<Payload>(kind: string, handler: JobHandler<Payload>): void
  /** enqueueJob on this queue's database, then wakes the worker */
  enqueue(kind: string, payload: unknown, options?: EnqueueOptions): string
  /** starts the worker loop: jobs left `running` by a process that died run again */
  start(): void
  /** stops the worker: the jobs due now run and the attempts in flight settle, within `graceMs` at most */
  stop(graceMs: number): Promise<void>
  /** runs every job due now, and what they make due, until none is left; settles when all have (tests, and nothing else, call it) */
  drain(): Promise<void>
  /** the backlog, with every registered kind present (zeros where nothing waits) */
  backlog(): JobBacklog
}

interface Claimed {
  id: string
  kind: string
  payload: string
  attempts: number
  dedupeKey: string | null
}

export function createJobQueue(options: JobQueueOptions): JobQueue {
  const { db, clock, log } = options
  const client = db.$client
  const concurrency = options.concurrency ?? 4
  const pollMs = options.pollMs ?? 500
  const handlers = new Map<string, JobHandler<unknown>>()
  /** attempts whose promise has not settled yet, timed-out ones included (they block their dedupe key) */
  const inFlight = new Map<string, { key: string | null; kind: string; outcome: Promise<void>; decided: boolean; settled: Promise<void> }>()
  /** outcomes whose recording failed (another process held the write lock): recorded at the next tick, else the job would stay `running` until a restart */
  const unrecorded: { job: Claimed; handler: JobHandler<unknown>; error: string | null }[] = []
  let counted = 0
  let timer: ReturnType<typeof setInterval> | null = null
  let stopped = false

  /** keys with an attempt in flight, or with an outcome not recorded yet (its row still says `running`): the next job of such a key waits */
  const blockedKeys = () => new Set([...[...inFlight.values()].map((entry) => entry.key), ...unrecorded.map((entry) => entry.job.dedupeKey)].filter((key) => key !== null))

  /** Marks up to `limit` due jobs running (synchronously: no other claim can interleave). */
  function claim(limit: number): Claimed[] {
    if (limit <= 0 || handlers.size === 0) return []
    const kinds = [...handlers.keys()]
    const candidates = client
      .query<Claimed, (string | number)[]>(
        `SELECT id, kind, payload, attempts, dedupe_key AS dedupeKey FROM jobs WHERE state = 'pending' AND run_after <= ? AND kind IN (${kinds.map(() => '?').join(', ')}) ORDER BY run_after, created_at LIMIT ?`,
      )
      .all(clock(), ...kinds, Math.min(limit, 1000) + inFlight.size)
    const blocked = blockedKeys()
    const claimed: Claimed[] = []
    const at = new Date(clock()).toISOString()
    // one transaction: a claim that fails part way (the write lock taken between two jobs) marks none
    // `running`, rather than leaving the ones before it `running` and never run until a restart
    client.transaction(() => {
      for (const job of candidates) {
        if (claimed.length >= limit) break
        if (job.dedupeKey !== null && blocked.has(job.dedupeKey)) continue
        if (job.dedupeKey !== null) blocked.add(job.dedupeKey)
        client.query("UPDATE jobs SET state = 'running', attempts = attempts + 1, updated_at = ? WHERE id = ? AND state = 'pending'").run(at, job.id)
        claimed.push({ ...job, attempts: job.attempts + 1 })
      }
    })()
    return claimed
  }

  function finish(job: Claimed, handler: JobHandler<unknown>, error: string | null): void {
    const at = new Date(clock()).toISOString()
    if (error === null) {
      client.query('DELETE FROM jobs WHERE id = ?').run(job.id)
      // earlier jobs of its key that gave up are done now (the channel's mirror written): no longer a problem to report
      if (job.dedupeKey !== null) client.query("DELETE FROM jobs WHERE dedupe_key = ? AND state = 'failed'").run(job.dedupeKey)
      return
    }
    if (job.dedupeKey !== null) {
      // a newer job of the same key came meanwhile: it does this work with what is true now
      const newer = client.query<{ id: string }, [string]>("SELECT id FROM jobs WHERE dedupe_key = ? AND state = 'pending'").get(job.dedupeKey)
      if (newer) {
        client.query('DELETE FROM jobs WHERE id = ?').run(job.id)
        return
      }
    }
    if (job.attempts >= handler.maxAttempts) {
      client.query("UPDATE jobs SET state = 'failed', last_error = ?, updated_at = ? WHERE id = ?").run(error, at, job.id)
      log(JSON.stringify({ level: 'error', msg: 'background job gave up', kind: job.kind, job: job.id, attempts: job.attempts, error }))
      try {
        handler.onGiveUp?.(JSON.parse(job.payload), error)
      } catch (hookError) {
        log(JSON.stringify({ level: 'error', msg: 'background job: recording the give-up failed', kind: job.kind, job: job.id, error: (hookError as Error).message }))
      }
      return
    }
    const runAfter = clock() + retryDelay(handler, job.attempts)
    client.query("UPDATE jobs SET state = 'pending', run_after = ?, last_error = ?, updated_at = ? WHERE id = ?").run(runAfter, error, at, job.id)
    log(JSON.stringify({ level: 'warn', msg: 'background job failed; it runs again later', kind: job.kind, job: job.id, attempt: job.attempts, retryAt: new Date(runAfter).toISOString(), error }))
  }

  /** Runs one claimed job's attempt; settles when its row says what happened (a timed-out handler may run on). */
  function runAttempt(job: Claimed): Promise<void> {
    const handler = handlers.get(job.kind)!
    const controller = new AbortController()
    const timeoutMs = options.attemptTimeoutMs ?? handler.timeoutMs
    let timeout: ReturnType<typeof setTimeout> | undefined
    let payload: unknown
    const running = Promise.resolve().then(() => {
      payload = JSON.parse(job.payload)
      return handler.run(payload, { attempt: job.attempts, final: job.attempts >= handler.maxAttempts, signal: controller.signal })
    })
    const handlerSettled = running.then(
      () => null,
      (error: unknown) => (error instanceof Error ? error.message : String(error)) || 'failed',
    )
    const timedOut = new Promise<string>((resolve) => {
      timeout = setTimeout(() => {
        controller.abort(new Error(`timed out after ${timeoutMs} ms`))
        resolve(`timed out after ${Math.round(timeoutMs / 100) / 10} s`)
      }, timeoutMs)
    })
    counted++
    const outcome = Promise.race([handlerSettled, timedOut]).then((error) => {
      clearTimeout(timeout)
      counted--
      const entry = inFlight.get(job.id)
      if (entry) entry.decided = true
      try {
        finish(job, handler, error)
      } catch (finishError) {
        unrecorded.push({ job, handler, error })
        log(JSON.stringify({ level: 'error', msg: 'background job: recording the outcome failed; it is tried again shortly', kind: job.kind, job: job.id, error: (finishError as Error).message }))
      }
    })
    // the job's key stays blocked until its handler has really stopped, so two writes of one channel never overlap
    const settled = Promise.all([outcome, handlerSettled]).then(() => {
      inFlight.delete(job.id)
      if (timer !== null) wake()
    })
    inFlight.set(job.id, { key: job.dedupeKey, kind: job.kind, outcome, decided: false, settled })
    return outcome
  }

  /** Records the outcomes that could not be recorded before, in order; stops at the first that still cannot be. */
  function recordUnrecorded(): void {
    while (unrecorded.length > 0) {
      const { job, handler, error } = unrecorded[0]!
      try {
        finish(job, handler, error)
      } catch {
        return
      }
      unrecorded.shift()
    }
  }

  function tick(): void {
    if (stopped) return
    recordUnrecorded()
    try {
      for (const job of claim(concurrency - counted)) void runAttempt(job)
    } catch (error) {
      log(JSON.stringify({ level: 'error', msg: 'background jobs: looking for due jobs failed', error: (error as Error).message }))
    }
  }

  let wakeQueued = false
  function wake(): void {
    if (wakeQueued || timer === null) return
    wakeQueued = true
    setTimeout(() => {
      wakeQueued = false
      tick()
    }, 0)
  }

  return {
    register(kind, handler) {
      if (handlers.has(kind)) throw new Error(`job kind ${kind} is registered twice`)
      handlers.set(kind, handler as JobHandler<unknown>)
    },
    enqueue(kind, payload, enqueueOptions) {
      const id = enqueueJob(db, clock, kind, payload, enqueueOptions)
      wake()
      return id
    },
    start() {
      if (timer !== null) return
      stopped = false
      const at = new Date(clock()).toISOString()
      const gaveUp: { job: Claimed; handler: JobHandler<unknown>; error: string }[] = []
      // bun:sqlite's own transaction, like the rest of the worker: drizzle's cost a few ms of every start (issue 30)
      client.transaction(() => {
        // a job that was running when the process died runs again, unless a newer one of its key waits
        client.run("DELETE FROM jobs WHERE state = 'running' AND dedupe_key IN (SELECT dedupe_key FROM jobs WHERE state = 'pending' AND dedupe_key IS NOT NULL)")
        // … or unless it has had its last attempt and one more (cut off by a stop): a job the process
        // keeps dying in would otherwise run at every start, for ever
        const left = client.query<Claimed & { lastError: string | null }, []>("SELECT id, kind, payload, attempts, dedupe_key AS dedupeKey, last_error AS lastError FROM jobs WHERE state = 'running'").all()
        for (const job of left) {
          const handler = handlers.get(job.kind)
          if (!handler || job.attempts <= handler.maxAttempts) continue
          const error = `the process stopped during attempt ${job.attempts}${job.lastError ? ` (before it: ${job.lastError})` : ''}`.slice(0, 1000)
          client.query("UPDATE jobs SET state = 'failed', last_error = ?, updated_at = ? WHERE id = ?").run(error, at, job.id)
          gaveUp.push({ job, handler, error })
        }
        client.query("UPDATE jobs SET state = 'pending', updated_at = ? WHERE state = 'running'").run(at)
        // work of a kind this server does not do any more (the release mirror turned off) would wait forever
        const kinds = [...handlers.keys()]
        const orphaned = client
          .query<{ kind: string; n: number }, string[]>(`SELECT kind, count(*) AS n FROM jobs WHERE state = 'pending' AND kind NOT IN (${kinds.map(() => '?').join(', ')}) GROUP BY kind`)
          .all(...kinds)
        for (const { kind, n } of orphaned) {
          client.query("DELETE FROM jobs WHERE state = 'pending' AND kind = ?").run(kind)
          log(JSON.stringify({ level: 'warn', msg: 'background jobs: dropped pending jobs of a kind this server does not run', kind, jobs: n }))
        }
        // jobs that gave up a month ago have been seen (or never will be)
        client.query("DELETE FROM jobs WHERE state = 'failed' AND updated_at < ?").run(new Date(clock() - 30 * 24 * 3600_000).toISOString())
      })()
      for (const { job, handler, error } of gaveUp) {
        log(JSON.stringify({ level: 'error', msg: 'background job gave up: the process stopped during its attempts', kind: job.kind, job: job.id, attempts: job.attempts, error }))
        try {
          handler.onGiveUp?.(JSON.parse(job.payload), error)
        } catch (hookError) {
          log(JSON.stringify({ level: 'error', msg: 'background job: recording the give-up failed', kind: job.kind, job: job.id, error: (hookError as Error).message }))
        }
      }
      timer = setInterval(tick, pollMs)
      timer.unref?.()
      tick()
    },
    async stop(graceMs) {
      stopped = true
      if (timer !== null) clearInterval(timer)
      timer = null
      // what is due now (a publish's mirror write a moment ago) still runs, and what runs settles,
      // within the grace; what is left stays in the table and runs at the next start
      const deadline = Date.now() + graceMs
      const within = async (promises: Promise<unknown>[]) => {
        let graceTimer: ReturnType<typeof setTimeout> | undefined
        const grace = new Promise<void>((resolve) => {
          graceTimer = setTimeout(resolve, Math.max(0, deadline - Date.now()))
        })
        await Promise.race([Promise.all(promises), grace])
        clearTimeout(graceTimer)
      }
      while (Date.now() < deadline) {
        let claimed: Claimed[] = []
        try {
          claimed = claim(concurrency - counted)
        } catch (error) {
          log(JSON.stringify({ level: 'error', msg: 'background jobs: looking for due jobs failed', error: (error as Error).message }))
        }
        const undecided = [...inFlight.values()].filter((entry) => !entry.decided).map((entry) => entry.outcome)
        if (claimed.length === 0 && undecided.length === 0) break
        await within([...claimed.map(runAttempt), ...undecided])
      }
      if (inFlight.size > 0 && Date.now() < deadline) await within([...inFlight.values()].map((entry) => entry.settled))
      // what still cannot be recorded stays `running`: the next start runs it again
      recordUnrecorded()
      // said, as serve says which requests it cut off: a delivery to a slow receiver stays `running` and is sent again at the next start
      const cutOff = [...inFlight.entries()].filter(([, entry]) => !entry.decided)
      if (cutOff.length > 0) {
        log(JSON.stringify({ level: 'warn', msg: `background jobs: ${cutOff.length} still running when the stop's ${Math.round(graceMs / 100) / 10} s ran out; they run again at the next start`, jobs: cutOff.map(([id, entry]) => ({ kind: entry.kind, job: id })) }))
      }
    },
    async drain() {
      // waits for each attempt's outcome, not for a timed-out handler that may never return
      for (;;) {
        recordUnrecorded()
        const claimed = claim(Number.MAX_SAFE_INTEGER)
        const undecided = [...inFlight.values()].filter((entry) => !entry.decided).map((entry) => entry.outcome)
        if (claimed.length === 0 && undecided.length === 0) return
        await Promise.all([...claimed.map(runAttempt), ...undecided])
      }
    },
    backlog() {
      const backlog = jobBacklog(client, clock())
      for (const kind of handlers.keys()) backlog.byKind[kind] ??= { pending: 0, running: 0, failed: 0, oldestPendingSeconds: 0 }
      return backlog
    },
  }
}
