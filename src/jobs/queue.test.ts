// The durable queue on a real SQLite file: runs, dedupe, retries with the kind's waits, give-up, timeouts, restart.
import { afterEach, describe, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { openDataDir, type OpenedDataDir } from '../data-dir'
import { tempDir } from '../test-support'
import { createJobQueue, enqueueJob, retryDelay, type JobHandler } from './queue'

const opened: { dir: string; dataDir: OpenedDataDir }[] = []
afterEach(() => {
  for (const { dir, dataDir } of opened.splice(0)) {
    try {
      dataDir.db.$client.close()
    } catch {
      // closed by the test
    }
    rmSync(dir, { recursive: true, force: true })
  }
})

function setUp(dir = tempDir()) {
  const dataDir = openDataDir(dir)
  opened.push({ dir, dataDir })
  const now = { value: Date.parse('2026-11-25T10:00:00.000Z') }
  const logs: string[] = []
  const queue = createJobQueue({ db: dataDir.db, clock: () => now.value, log: (line) => logs.push(line), pollMs: 20 })
  const rows = () => dataDir.db.$client.query<{ id: string; kind: string; state: string; attempts: number; run_after: number; last_error: string | null; payload: string }, []>('SELECT * FROM jobs ORDER BY created_at').all()
  return { dir, dataDir, now, logs, queue, rows }
}

function handler(run: JobHandler<{ n: number }>['run'], overrides: Partial<JobHandler<{ n: number }>> = {}): JobHandler<{ n: number }> {
  return { run, timeoutMs: 1000, retryDelaysMs: [10_000, 30_000, 120_000], maxAttempts: 4, ...overrides }
}

const until = async (condition: () => boolean) => {
  for (let i = 0; i < 200 && !condition(); i++) await Bun.sleep(10)
  expect(condition()).toBe(true)
}

describe('the job queue', () => {
  test('a due job runs once and its row goes; a job not yet due waits', async () => {
    const { queue, rows, now } = setUp()
    const seen: number[] = []
    queue.register('count', handler(async ({ n }) => void seen.push(n)))
    queue.enqueue('count', { n: 1 })
    queue.enqueue('count', { n: 2 }, { delayMs: 5000 })
    await queue.drain()
    expect(seen).toEqual([1])
    expect(rows().map((row) => row.payload)).toEqual(['{"n":2}'])
    now.value += 5000
    await queue.drain()
    expect(seen).toEqual([1, 2])
    expect(rows()).toEqual([])
  })

  test('a claim that fails part way marks no job running (none is left stuck until a restart); both run once the failure is gone', async () => {
    const { queue, rows, logs, dataDir } = setUp()
    const seen: number[] = []
    queue.register('count', handler(async ({ n }) => void seen.push(n)))
    queue.enqueue('count', { n: 1 })
    queue.enqueue('count', { n: 2 })
    // SQLite refuses to mark the second job running (as a write lock taken between the two would)
    dataDir.db.$client.run("CREATE TRIGGER refuse_second BEFORE UPDATE OF state ON jobs WHEN NEW.state = 'running' AND json_extract(OLD.payload, '$.n') = 2 BEGIN SELECT RAISE(ABORT, 'refused'); END")
    queue.start()
    await until(() => logs.some((line) => line.includes('looking for due jobs failed')))
    await queue.stop(0)
    expect(seen).toEqual([])
    expect(rows().map((row) => [row.payload, row.state, row.attempts])).toEqual([
      ['{"n":1}', 'pending', 0],
      ['{"n":2}', 'pending', 0],
    ])
    dataDir.db.$client.run('DROP TRIGGER refuse_second')
    const again = createJobQueue({ db: dataDir.db, clock: () => Date.parse('2026-11-25T10:00:00.000Z'), log: () => {}, pollMs: 20 })
    again.register('count', handler(async ({ n }) => void seen.push(n)))
    await again.drain()
    expect(seen.sort()).toEqual([1, 2])
    expect(rows()).toEqual([])
  })

  test('one pending job per dedupe key: the later payload wins', async () => {
    const { queue, rows } = setUp()
    const seen: number[] = []
    queue.register('count', handler(async ({ n }) => void seen.push(n)))
    queue.enqueue('count', { n: 1 }, { dedupeKey: 'k' })
    queue.enqueue('count', { n: 2 }, { dedupeKey: 'k' })
    queue.enqueue('count', { n: 3 }, { dedupeKey: 'other' })
    expect(rows()).toHaveLength(2)
    await queue.drain()
    expect(seen.sort()).toEqual([2, 3])
  })

  test('a job that replaces one waiting to retry starts its own attempts (and runs now), so it does not give up after the failures of the one it replaced', async () => {
    const { queue, rows, now } = setUp()
    const seen: number[] = []
    queue.register('count', handler(async ({ n }) => {
      seen.push(n)
      if (n === 1) throw new Error('bucket down')
    }, { maxAttempts: 3 }))
    queue.enqueue('count', { n: 1 }, { dedupeKey: 'channel' })
    await queue.drain()
    now.value += 10_000
    await queue.drain()
    expect(rows()[0]).toMatchObject({ state: 'pending', attempts: 2 })
    queue.enqueue('count', { n: 2 }, { dedupeKey: 'channel' })
    expect(rows()[0]).toMatchObject({ state: 'pending', attempts: 0, payload: '{"n":2}' })
    await queue.drain()
    expect(seen).toEqual([1, 1, 2])
    expect(rows()).toEqual([])
  })

  test('a job of a key that is running waits for it, then runs with what came meanwhile', async () => {
    const { queue } = setUp()
    const events: string[] = []
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    queue.register(
      'slow',
      handler(async ({ n }) => {
        events.push(`start ${n}`)
        if (n === 1) await gate
        events.push(`end ${n}`)
      }),
    )
    queue.enqueue('slow', { n: 1 }, { dedupeKey: 'channel' })
    const draining = queue.drain()
    await until(() => events.length === 1)
    queue.enqueue('slow', { n: 2 }, { dedupeKey: 'channel' })
    await Bun.sleep(30)
    expect(events).toEqual(['start 1'])
    release()
    await draining
    await queue.drain()
    expect(events).toEqual(['start 1', 'end 1', 'start 2', 'end 2'])
  })

  test('a failed attempt runs again after the kind\'s waits; past maxAttempts the job is failed and stays visible', async () => {
    const { queue, rows, now, logs } = setUp()
    let attempts = 0
    const gaveUp: string[] = []
    queue.register(
      'flaky',
      handler(
        async () => {
          attempts++
          throw new Error(`receiver said no (${attempts})`)
        },
        { onGiveUp: (_payload, error) => gaveUp.push(error) },
      ),
    )
    const start = now.value
    queue.enqueue('flaky', { n: 1 })
    await queue.drain()
    expect(rows()[0]).toMatchObject({ state: 'pending', attempts: 1, run_after: start + 10_000, last_error: 'receiver said no (1)' })
    now.value += 9_999
    await queue.drain()
    expect(attempts).toBe(1)
    now.value = start + 10_000
    await queue.drain()
    expect(rows()[0]).toMatchObject({ state: 'pending', attempts: 2, run_after: start + 10_000 + 30_000 })
    now.value += 30_000
    await queue.drain()
    expect(rows()[0]).toMatchObject({ attempts: 3, run_after: now.value + 120_000 })
    now.value += 120_000
    await queue.drain()
    expect(attempts).toBe(4)
    expect(rows()[0]).toMatchObject({ state: 'failed', attempts: 4, last_error: 'receiver said no (4)' })
    expect(gaveUp).toEqual(['receiver said no (4)'])
    expect(logs.some((line) => line.includes('gave up'))).toBe(true)
    expect(queue.backlog()).toMatchObject({ pending: 0, failed: 1, byKind: { flaky: { failed: 1, pending: 0 } } })
    now.value += 3_600_000
    await queue.drain()
    expect(attempts).toBe(4)
  })

  test('a job of a dedupe key that succeeds clears the ones of its key that gave up: their work is done, doctor and metrics stop counting them', async () => {
    const { queue, rows, now } = setUp()
    let down = true
    queue.register('mirror', handler(async () => {
      if (down) throw new Error('the bucket cannot be reached')
    }, { maxAttempts: 1 }))
    queue.register('other', handler(async () => {
      throw new Error('no')
    }, { maxAttempts: 1 }))
    queue.enqueue('mirror', { n: 1 }, { dedupeKey: 'release-mirror:a:stable' })
    queue.enqueue('mirror', { n: 2 }, { dedupeKey: 'release-mirror:b:stable' })
    queue.enqueue('other', { n: 3 })
    await queue.drain()
    expect(queue.backlog()).toMatchObject({ failed: 3 })
    // the bucket is back; the next serve start queues a write of the channel again, and it lands
    down = false
    now.value += 1000
    queue.enqueue('mirror', { n: 1 }, { dedupeKey: 'release-mirror:a:stable' })
    await queue.drain()
    // the other channel's write and the job without a key still gave up: they stay
    expect(rows().map((row) => [row.kind, row.payload, row.state])).toEqual([
      ['mirror', '{"n":2}', 'failed'],
      ['other', '{"n":3}', 'failed'],
    ])
    expect(queue.backlog()).toMatchObject({ failed: 2, byKind: { mirror: { failed: 1 } } })
  })

  test('retryDelay repeats the last wait', () => {
    const kind = { retryDelaysMs: [1, 2, 3] }
    expect([1, 2, 3, 4, 5].map((n) => retryDelay(kind, n))).toEqual([1, 2, 3, 3, 3])
  })

  test('an attempt that outlives its timeout fails (its signal aborted) and is retried; the backlog shows it waiting', async () => {
    const { queue, rows, now } = setUp()
    let aborted = false
    let calls = 0
    queue.register(
      'stuck',
      handler(
        (_payload, { signal }) => {
          calls++
          if (calls > 1) return Promise.resolve()
          return new Promise<void>((resolve) => signal.addEventListener('abort', () => ((aborted = true), resolve())))
        },
        { timeoutMs: 50 },
      ),
    )
    queue.enqueue('stuck', { n: 1 })
    await queue.drain()
    expect(aborted).toBe(true)
    expect(rows()[0]).toMatchObject({ state: 'pending', attempts: 1, last_error: 'timed out after 0.1 s' })
    now.value += 60_000
    expect(queue.backlog()).toMatchObject({ pending: 1, oldestPendingSeconds: 60, byKind: { stuck: { pending: 1, oldestPendingSeconds: 60 } } })
    await queue.drain()
    expect(rows()).toEqual([])
    expect(queue.backlog()).toMatchObject({ pending: 0, oldestPendingSeconds: 0 })
  })

  test('a stop whose grace runs out says which jobs it cut off; they stay running and run again at the next start', async () => {
    const { queue, rows, logs } = setUp()
    let started = false
    queue.register('deliver', handler(() => ((started = true), new Promise<void>(() => {}))))
    queue.start()
    queue.enqueue('deliver', { n: 1 })
    await until(() => started)
    await queue.stop(50)
    const line = logs.map((text) => JSON.parse(text) as { msg: string; jobs?: { kind: string; job: string }[] }).find((entry) => entry.msg.includes('still running when the stop'))
    expect(line?.msg).toBe("background jobs: 1 still running when the stop's 0.1 s ran out; they run again at the next start")
    expect(line?.jobs).toEqual([{ kind: 'deliver', job: rows()[0]!.id }])
    expect(rows()[0]).toMatchObject({ state: 'running', attempts: 1 })
  })

  test('a job that was running when the process died runs again after a restart', async () => {
    const first = setUp()
    let started = false
    first.queue.register('work', handler(() => ((started = true), new Promise<void>(() => {}))))
    first.queue.start()
    first.queue.enqueue('work', { n: 7 })
    await until(() => started)
    expect(first.rows()[0]).toMatchObject({ state: 'running', attempts: 1 })
    // the process dies: no stop, the database just closes
    first.dataDir.db.$client.close()
    await first.queue.stop(0)

    const second = setUp(first.dir)
    const seen: number[] = []
    second.queue.register('work', handler(async ({ n }) => void seen.push(n)))
    second.queue.start()
    await until(() => seen.length === 1)
    await second.queue.stop(1000)
    expect(seen).toEqual([7])
    expect(second.rows()).toEqual([])
  })

  test('a job whose attempts the process keeps dying in (a poison job) is not run for ever: past its last attempt and one more, a start marks it failed', async () => {
    const first = setUp()
    const runs: number[] = []
    const gaveUp: string[] = []
    const dying = handler(
      (_payload, { attempt }) => {
        runs.push(attempt)
        return new Promise<void>(() => {})
      },
      { maxAttempts: 2, onGiveUp: (_payload, error) => gaveUp.push(error) },
    )
    first.queue.register('poison', dying)
    first.queue.enqueue('poison', { n: 1 })
    let dir = first.dir
    // the process dies during every attempt (no stop), and is started again each time
    let current = first
    for (let life = 0; life < 5; life++) {
      if (life > 0) {
        current = setUp(dir)
        current.queue.register('poison', dying)
      }
      current.queue.start()
      await Bun.sleep(50)
      current.dataDir.db.$client.close()
      await current.queue.stop(0)
    }
    // attempts 1 and 2 (its last), one more after that death, then never again
    expect(runs).toEqual([1, 2, 3])
    const last = setUp(dir)
    expect(last.rows()).toMatchObject([{ state: 'failed', attempts: 3 }])
    expect(last.rows()[0]!.last_error).toContain('stopped during')
    expect(gaveUp).toHaveLength(1)
  })

  test('at start, pending jobs of a kind nobody registered (the mirror turned off) are dropped, with a log line', async () => {
    const { queue, rows, dataDir, now, logs } = setUp()
    enqueueJob(dataDir.db, () => now.value, 'release-mirror', { miniAppId: 'a', channel: 'stable' })
    queue.register('count', handler(async () => {}))
    queue.enqueue('count', { n: 1 }, { delayMs: 60_000 })
    queue.start()
    await queue.stop(1000)
    expect(rows().map((row) => row.kind)).toEqual(['count'])
    expect(logs.some((line) => line.includes('dropped pending jobs') && line.includes('release-mirror'))).toBe(true)
  })

  test('the worker picks up a job enqueued in a transaction by another part of the program', async () => {
    const { queue, dataDir, now } = setUp()
    const seen: number[] = []
    queue.register('count', handler(async ({ n }) => void seen.push(n)))
    queue.start()
    dataDir.db.transaction((tx) => {
      enqueueJob(tx, () => now.value, 'count', { n: 5 })
    })
    await until(() => seen.length === 1)
    await queue.stop(1000)
  })

  test('an outcome that cannot be recorded (another process holds the write lock) is recorded once it can: the job is retried, not stuck running', async () => {
    const { queue, rows, dataDir, now, logs } = setUp()
    const { Database } = await import('bun:sqlite')
    let attempts = 0
    let release: () => void = () => {}
    queue.register(
      'flaky',
      handler(async () => {
        attempts++
        if (attempts === 1) {
          // the receiver answers 500 while another process (a sqlite3 shell, a script) holds the write lock
          await new Promise<void>((resolve) => (release = resolve))
          throw new Error('the receiver answered 500')
        }
      }),
    )
    queue.start()
    queue.enqueue('flaky', { n: 1 })
    await until(() => attempts === 1)
    const other = new Database(dataDir.paths.database)
    other.exec('BEGIN IMMEDIATE')
    release()
    await until(() => logs.some((line) => line.includes('recording the outcome failed')))
    other.exec('COMMIT')
    other.close()
    // once the lock is gone the failure is recorded, and the retry runs after its wait
    await until(() => rows()[0]?.state === 'pending')
    expect(rows()[0]).toMatchObject({ state: 'pending', attempts: 1, last_error: 'the receiver answered 500' })
    now.value += 10_000
    await until(() => rows().length === 0)
    expect(attempts).toBe(2)
    await queue.stop(1000)
  })

  test('a job whose outcome is not recorded yet still holds its dedupe key: the next job of the key waits for that record', async () => {
    const { queue, rows, logs, dataDir } = setUp()
    const runs: number[] = []
    let release: () => void = () => {}
    queue.register(
      'write',
      handler(async ({ n }) => {
        runs.push(n)
        if (n === 1) await new Promise<void>((resolve) => (release = resolve))
      }),
    )
    queue.start()
    queue.enqueue('write', { n: 1 }, { dedupeKey: 'channel:1' })
    await until(() => runs.length === 1)
    queue.enqueue('write', { n: 2 }, { dedupeKey: 'channel:1' })
    // SQLite refuses to delete the first job's row (as a disk error would), so its success is not recorded
    dataDir.db.$client.run("CREATE TRIGGER keep_first BEFORE DELETE ON jobs WHEN json_extract(OLD.payload, '$.n') = 1 BEGIN SELECT RAISE(ABORT, 'refused'); END")
    release()
    await until(() => logs.some((line) => line.includes('recording the outcome failed')))
    await Bun.sleep(200)
    // the first write's row still says running: the second write of the same key has not started
    expect(runs).toEqual([1])
    dataDir.db.$client.run('DROP TRIGGER keep_first')
    await until(() => rows().length === 0)
    expect(runs).toEqual([1, 2])
    await queue.stop(1000)
  })

  test('stop waits for an attempt in flight, bounded by its grace', async () => {
    const { queue } = setUp()
    let finished = false
    queue.register('slow', handler(async () => ((await Bun.sleep(100)), (finished = true)) as unknown as void))
    queue.register('forever', handler(() => new Promise<void>(() => {}), { timeoutMs: 60_000 }))
    queue.start()
    queue.enqueue('slow', { n: 1 })
    await Bun.sleep(20)
    await queue.stop(5000)
    expect(finished).toBe(true)

    const other = setUp()
    other.queue.register('forever', handler(() => new Promise<void>(() => {}), { timeoutMs: 60_000 }))
    other.queue.start()
    other.queue.enqueue('forever', { n: 1 })
    await Bun.sleep(20)
    const before = Date.now()
    await other.queue.stop(100)
    expect(Date.now() - before).toBeLessThan(5000)
  })
})
