import { afterAll, expect, test } from 'bun:test'
import { existsSync, mkdirSync, readdirSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { acquireLock, dataDirPaths, openDataDir } from '../data-dir'
import { closeDatabase, type Db } from '../db/open'
import { tempDir } from '../test-support'
import { createLocalBlobStore } from '../storage'
import { createTestContext } from '../test-support'
import { createMiniApp, createTestUser } from '../test-fixtures'
import { createJobQueue } from '../jobs/queue'
import { mirrorJobKind } from '../modules/mirror/service'
import { timeText } from '../terminal/time'
import { diagnose, fixLeftovers, runChecks } from './doctor'
import { jsonDocument, runCli } from './test-run'

const made: string[] = []
afterAll(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true })
})

function initialised(): string {
  const root = tempDir('miniship-doctor-')
  made.push(root)
  closeDatabase(openDataDir(root).db)
  // a copied data directory: the database file without its -wal and -shm
  for (const suffix of ['-wal', '-shm']) rmSync(join(root, `miniship.db${suffix}`), { force: true })
  return root
}

test('a healthy directory has no problems', async () => {
  expect(await diagnose(initialised())).toEqual([])
})

test('an emptied database is named as such, without SQL error text', async () => {
  const root = initialised()
  truncateSync(join(root, 'miniship.db'), 0)
  const problems = await diagnose(root)
  expect(problems).toHaveLength(1)
  expect(problems[0]).toContain('is missing or empty while the directory holds stored files or a secret; restore a backup')
  expect(problems.join('\n')).not.toContain('no such table')
})

test('a database without our tables: the missing migrations are named and table checks skipped', async () => {
  const root = initialised()
  rmSync(join(root, 'miniship.db'))
  const { Database } = await import('bun:sqlite')
  const bare = new Database(join(root, 'miniship.db'), { create: true })
  bare.exec('CREATE TABLE other (x)')
  bare.close()
  const problems = await diagnose(root)
  expect(problems).toEqual([expect.stringContaining('migrations not applied')])
})

test('a deleted database beside stored files says to restore, not to init', async () => {
  const root = initialised()
  mkdirSync(join(root, 'blobs', 'sha256', 'ab'), { recursive: true })
  writeFileSync(join(root, 'blobs', 'sha256', 'ab', 'ab'.padEnd(64, '0')), 'x')
  rmSync(join(root, 'miniship.db'))
  const problems = await diagnose(root)
  expect(problems).toEqual([expect.stringContaining('restore a backup')])
})

test('background jobs: ones that gave up, and ones waiting for a quarter of an hour or more, are problems (webhook deliveries only warnings); the backlog is described per kind', async () => {
  const root = tempDir('miniship-doctor-')
  made.push(root)
  const { db } = openDataDir(root)
  const now = Date.now()
  const { enqueueJob } = await import('../jobs/queue')
  // a mirror write queued 20 minutes ago that keeps failing, a delivery that gave up, a delivery queued just now
  enqueueJob(db, () => now - 20 * 60_000, 'release-mirror', { miniAppId: 'a', channel: 'stable' }, { dedupeKey: 'release-mirror:a:stable' })
  db.$client.run("UPDATE jobs SET attempts = 4, last_error = 'timed out after 60 s'")
  const failed = enqueueJob(db, () => now, 'webhook-delivery', { deliveryId: 'd1' })
  // an error that names a receiver's URL (as one stored before paths were cut might): doctor prints its origin only
  db.$client.query("UPDATE jobs SET state = 'failed', attempts = 6, last_error = 'the receiver at https://hooks.example.com/services/T0/B0/path-secret answered 500' WHERE id = ?").run(failed)
  enqueueJob(db, () => now, 'webhook-delivery', { deliveryId: 'd2' })
  closeDatabase(db)
  const problems = await diagnose(root)
  expect(problems).toContainEqual('background jobs: 1 release-mirror job(s) waiting, the oldest for 20 min (last error: timed out after 60 s)')
  expect(problems.filter((problem) => problem.startsWith('background jobs'))).toHaveLength(1)
  // d1 has no delivery row (as one pruned after 200 newer ones): its webhook is unknown, it is still said
  const checked = (await runChecks(root)).find((check) => check.name === 'background jobs')!
  expect(checked.warnings).toEqual([
    // d2, queued a moment ago, is no trouble yet
    `webhook deliveries: for a webhook whose delivery records were pruned (200 are kept per webhook): 1 delivery gave up after its retries at ${timeText(new Date(now).toISOString())} (last error: the receiver at https://hooks.example.com answered 500); nothing to do; given-up deliveries are not sent again and are reported for 30 days`,
  ])
  const { describeBacklog } = await import('./doctor')
  const { jobBacklog } = await import('../jobs/queue')
  const { Database } = await import('bun:sqlite')
  const database = new Database(join(root, 'miniship.db'))
  expect(describeBacklog(jobBacklog(database, now))).toBe('release-mirror: 1 pending, the oldest 20 min, 0 failed; webhook-delivery: 1 pending, the oldest 0 s, 1 failed')
  database.close()
})

test('--json: one document with each check and its result, and the release mirror writes waiting with the oldest age', async () => {
  const root = initialised()
  const { db } = openDataDir(root)
  const { enqueueJob } = await import('../jobs/queue')
  enqueueJob(db, () => Date.now() - 20 * 60_000, 'release-mirror', { miniAppId: 'a', channel: 'stable' }, { dedupeKey: 'release-mirror:a:stable' })
  closeDatabase(db)
  const { jsonDocument, runCli } = await import('./test-run')
  const run = await runCli(['doctor', '--data-dir', root, '--json'])
  expect(run.exitCode).toBe(1)
  const document = jsonDocument(run) as { healthy: boolean; checks: { name: string; ok: boolean; problems: string[] }[]; problems: string[]; backgroundJobs: { pendingMirrorWrites: number; oldestMirrorWriteSeconds: number } }
  expect(document.healthy).toBe(false)
  expect(document.checks.map((check) => check.name)).toEqual(['data directory', 'signing secret', 'database file', 'database integrity', 'foreign keys', 'migrations', 'stored files', 'background jobs', 'signing keys', 'leftovers', 'free space'])
  expect(document.checks.find((check) => check.name === 'background jobs')).toMatchObject({ ok: false, problems: [expect.stringContaining('1 release-mirror job(s) waiting')] })
  expect(document.checks.find((check) => check.name === 'database integrity')).toMatchObject({ ok: true, problems: [] })
  expect(document.problems).toHaveLength(1)
  expect(document.backgroundJobs.pendingMirrorWrites).toBe(1)
  expect(document.backgroundJobs.oldestMirrorWriteSeconds).toBeGreaterThanOrEqual(20 * 60)
})

test('--json: a bad setting is the error document, exit 2', async () => {
  const { jsonDocument, runCli } = await import('./test-run')
  const run = await runCli(['doctor', '--data-dir', initialised(), '--s3-timeout', 'soon', '--storage', 's3', '--s3-bucket', 'some-bucket', '--json'], { env: { MINISHIP_S3_ACCESS_KEY_ID: 'x', MINISHIP_S3_SECRET_ACCESS_KEY: 'y' } })
  expect(run.exitCode).toBe(2)
  expect(jsonDocument(run)).toEqual({ error: { code: 'USAGE', message: expect.stringContaining('--s3-timeout') } })
})

test('--json: a bucket that cannot be reached (refused, or its service down: 503) is a problem found (exit 1), the rest still checked; schemaVersion is the database\'s', async () => {
  const { jsonDocument, runCli } = await import('./test-run')
  const closed = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response() })
  const refused = `http://127.0.0.1:${closed.port}`
  closed.stop(true)
  const down = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response('<Error><Code>ServiceUnavailable</Code><Message>down</Message></Error>', { status: 503, headers: { 'content-type': 'application/xml' } }) })
  try {
    for (const endpoint of [refused, `http://127.0.0.1:${down.port}`]) {
      const run = await runCli(['doctor', '--data-dir', initialised(), '--storage', 's3', '--s3-bucket', 'some-bucket', '--s3-endpoint', endpoint, '--s3-timeout', '2s', '--json'], { env: { MINISHIP_S3_ACCESS_KEY_ID: 'x', MINISHIP_S3_SECRET_ACCESS_KEY: 'y' } })
      expect({ endpoint, exitCode: run.exitCode }).toEqual({ endpoint, exitCode: 1 })
      const document = jsonDocument(run) as { healthy: boolean; schemaVersion: number; supportedSchemaVersion: number; checks: { name: string; ok: boolean; problems: string[]; skipped?: string }[]; backgroundJobs: unknown }
      expect(document.healthy).toBe(false)
      expect(document.checks[0]).toMatchObject({ name: 'storage', ok: false, problems: [expect.stringContaining('cannot be reached')] })
      expect(document.checks.find((check) => check.name === 'database integrity')).toMatchObject({ ok: true })
      expect(document.checks.find((check) => check.name === 'stored files')).toMatchObject({ skipped: 'the bucket cannot be reached' })
      expect(document.backgroundJobs).not.toBeNull()
      expect(document.schemaVersion).toBe(document.supportedSchemaVersion)
    }
  } finally {
    down.stop(true)
  }
})

test("while a server runs, a killed backup's staging in tmp/ is a problem, and doctor --fix removes it (and only it) without waiting for the server to stop", async () => {
  const root = initialised()
  const paths = dataDirPaths(root)
  // the lock held by a live process: this one, as a server's would be
  const releaseLock = acquireLock(paths)
  const ended = Bun.spawn([process.execPath, '-e', '0', 'src/main.ts', 'backup'], { stdout: 'ignore', stderr: 'ignore' })
  await ended.exited
  try {
    const dead = join(paths.tmp, `backup-${ended.pid}-0192f0aa-0000-7000-8000-000000000002`)
    mkdirSync(join(dead, 'blobs'), { recursive: true })
    writeFileSync(join(dead, 'blobs', 'a-file'), 'staged')
    writeFileSync(join(paths.tmp, 'upload-1'), 'an upload in flight')
    expect(await diagnose(root)).toEqual([`1 staging directory of a killed backup in ${paths.tmp} (its hard links keep stored files on disk); miniship doctor --fix removes it, also while the server runs`])
    const fixed = await fixLeftovers(root, createLocalBlobStore(paths))
    expect(fixed).toBe(`removed 1 staging directory of a killed backup from ${paths.tmp}; the server (pid ${process.pid}) collects the rest when it next starts`)
    expect(readdirSync(paths.tmp)).toEqual(['upload-1'])
    expect(await diagnose(root)).toEqual([])
  } finally {
    releaseLock()
  }
})

test('a trusted signing key under which anyone can sign (stored before such keys were refused) is a problem; a revoked one and a sound one are not', async () => {
  const root = tempDir('miniship-doctor-')
  made.push(root)
  const { db } = openDataDir(root)
  const now = new Date().toISOString()
  db.$client.run("INSERT INTO users (id, email, password_hash, display_name, role, status, created_at, updated_at) VALUES ('u1', 'owner@example.test', 'x', 'Owner', 'USER', 'ACTIVE', ?, ?)", [now, now])
  db.$client.run("INSERT INTO mini_apps (id, app_id, name, created_by, created_at, updated_at) VALUES ('m1', 'com.example.keys', 'Keys', 'u1', ?, ?)", [now, now])
  const identity = new Uint8Array(32)
  identity[0] = 1
  const { generateKeyPairSync } = await import('node:crypto')
  const sound = Buffer.from(generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }).x!, 'base64url').toString('base64')
  const insert = (keyId: string, publicKey: string, revokedAt: string | null) =>
    db.$client.run('INSERT INTO signing_keys (mini_app_id, key_id, name, public_key, created_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?)', ['m1', keyId, keyId, publicKey, now, revokedAt])
  insert('weak0000weak0000', Buffer.from(identity).toString('base64'), null)
  insert('revoked000000000', Buffer.from(new Uint8Array(32)).toString('base64'), now)
  insert('sound00000000000', sound, null)
  closeDatabase(db)
  const problems = (await diagnose(root)).filter((problem) => problem.startsWith('signing key'))
  expect(problems).toEqual([
    'signing key weak0000weak0000 ("weak0000weak0000") of com.example.keys is a weak Ed25519 key (a point of small or mixed order) that no key generator makes: signatures under it can be forged; revoke it (miniship keys revoke --app com.example.keys weak0000weak0000) and sign with a key miniship keys generate made',
  ])
})

// ---- webhook deliveries: a receiver's trouble is a warning, not a problem of this data directory

/** The credential part of a Slack-like webhook URL: doctor must never print it. */
const secretPath = '/services/T0/B0/path-credential'
const secretQuery = '?token=query-credential'

/**
 * A real data directory with a miniapp and a webhook made through the API, whose receiver (on 127.0.0.1)
 * answers every delivery with 500; the clock starts `ago` ms before now and is moved by the test.
 */
async function webhookSetUp(ago: number) {
  const receiver = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('no', { status: 500 }) })
  const context = createTestContext({ webhooksAllowPrivate: true })
  context.now.value = Date.now() - ago
  const owner = await createTestUser(context)
  const appId = 'com.example.doctor'
  const miniApp = await createMiniApp(context, owner.token, appId)
  const created = await context.call('POST', `/api/mini-apps/${miniApp.id}/webhooks`, { token: owner.token, json: { url: `http://127.0.0.1:${receiver.port}${secretPath}${secretQuery}`, events: ['version.uploaded'] } })
  expect(created.status).toBe(201)
  const webhook = created.body as { id: string; secret: string }
  return {
    context,
    appId,
    webhook,
    origin: `http://127.0.0.1:${receiver.port}`,
    /** queues a webhook.test delivery through the API, as `miniship webhooks test` does */
    async sendTest() {
      const res = await context.call('POST', `/api/mini-apps/${miniApp.id}/webhooks/${webhook.id}/test`, { token: owner.token })
      expect(res.status).toBe(200)
    },
    /** runs the due deliveries through the server's queue */
    drain: () => context.app.store.jobs.drain(),
    close() {
      context.close()
      receiver.stop(true)
    },
  }
}

/** Runs the delivery's six attempts (the retry waits moved on the clock): it gives up; answers when. */
async function giveUp(setUp: Awaited<ReturnType<typeof webhookSetUp>>): Promise<string> {
  await setUp.sendTest()
  await setUp.drain()
  for (const wait of [10_000, 30_000, 120_000, 600_000, 3_600_000]) {
    setUp.context.advance(wait)
    await setUp.drain()
  }
  expect(setUp.context.app.store.jobs.backlog().byKind['webhook-delivery']).toMatchObject({ pending: 0, running: 0, failed: 1 })
  return timeText(new Date(setUp.context.now.value).toISOString())
}

/** A release-mirror write that gave up, through the queue (a handler that fails as an unreachable bucket does, one attempt). */
async function mirrorGivenUp(db: Db): Promise<void> {
  const queue = createJobQueue({ db, clock: Date.now, log: () => {} })
  queue.register(mirrorJobKind, { run: () => Promise.reject(new Error('the bucket answered 503')), timeoutMs: 5_000, retryDelaysMs: [], maxAttempts: 1 })
  queue.enqueue(mirrorJobKind, { miniAppId: 'a', channel: 'stable' }, { dedupeKey: `${mirrorJobKind}:a:stable` })
  await queue.drain()
}

const mirrorProblem = 'background jobs: 1 release-mirror job(s) gave up after their retries (last error: the bucket answered 503); the next serve start writes the mirror again'

type DoctorDocument = { healthy: boolean; checks: { name: string; ok: boolean; problems: string[]; warnings: string[] }[]; problems: string[]; warnings: string[]; backgroundJobs: { byKind: Record<string, { failed: number }> } }

test('a webhook delivery that gave up is a warning naming the webhook (id, app, origin, never the path or query), how many, since when, the last error and the commands: exit 0, healthy', async () => {
  const setUp = await webhookSetUp(3 * 3_600_000)
  try {
    const gaveUpAt = await giveUp(setUp)
    const { id } = setUp.webhook
    const warning =
      `webhook deliveries: webhook ${id} of ${setUp.appId} (${setUp.origin}): 1 delivery gave up after its retries at ${gaveUpAt} (last error: the receiver answered 500); ` +
      `check the receiver (or this server's outbound network and DNS), see the deliveries with miniship webhooks deliveries ${id} --app ${setUp.appId}, ` +
      `once it answers send a test with miniship webhooks test ${id} --app ${setUp.appId}, or remove the webhook and its deliveries with miniship webhooks rm ${id} --app ${setUp.appId}; given-up deliveries are not sent again and are reported for 30 days`
    const root = setUp.context.config.dataDir
    const text = await runCli(['doctor', '--data-dir', root])
    expect({ exitCode: text.exitCode, stderr: text.stderr }).toEqual({ exitCode: 0, stderr: '' })
    expect(text.stdout.split('\n').filter((line) => line !== '')).toEqual([
      'INFO: background jobs: webhook-delivery: 0 pending, 1 failed',
      expect.stringMatching(/^INFO: free space: .* GB free on the file system of the data directory /),
      `WARNING: ${warning}`,
      `OK: ${root} is healthy (schema version ${(await import('../db/open')).schemaVersion}); 1 warning above, not counted as problems`,
    ])
    for (const secret of ['path-credential', 'query-credential', setUp.webhook.secret]) expect(text.stdout).not.toContain(secret)
    const json = await runCli(['doctor', '--data-dir', root, '--json'])
    expect(json.exitCode).toBe(0)
    const document = jsonDocument(json) as DoctorDocument
    expect(document).toMatchObject({ healthy: true, problems: [], warnings: [warning] })
    expect(document.checks.find((check) => check.name === 'background jobs')).toEqual({ name: 'background jobs', ok: true, problems: [], warnings: [warning] })
    expect(document.checks.filter((check) => check.name !== 'background jobs').every((check) => check.ok && check.warnings.length === 0)).toBe(true)
    expect(document.backgroundJobs.byKind['webhook-delivery']).toMatchObject({ failed: 1 })
  } finally {
    setUp.close()
  }
})

test('a webhook delivery waiting for a quarter of an hour is a warning with its age and the last error; never tried in that time, a problem of this server (its queue does not send); one waiting a moment is neither', async () => {
  const setUp = await webhookSetUp(20 * 60_000)
  try {
    const queuedAt = timeText(new Date(setUp.context.now.value).toISOString())
    await setUp.sendTest()
    const root = setUp.context.config.dataDir
    // not tried in a quarter of an hour: no receiver is at fault, this server's queue did not send (exit 1)
    expect((await runChecks(root)).find((check) => check.name === 'background jobs')).toEqual({
      name: 'background jobs',
      problems: ['background jobs: 1 webhook delivery waiting for 20 min with no attempt yet: they are sent while miniship serve runs; if it is running, its job queue is not (restart it)'],
      warnings: [],
    })
    expect((await runCli(['doctor', '--data-dir', root])).exitCode).toBe(1)
    // the first attempt gets 500: the delivery waits 10 s for its retry, which this clock never reaches
    await setUp.drain()
    expect(setUp.context.app.store.jobs.backlog().byKind['webhook-delivery']).toMatchObject({ pending: 1, failed: 0 })
    const checked = (await runChecks(root)).find((check) => check.name === 'background jobs')!
    expect(checked.problems).toEqual([])
    expect(checked.warnings).toEqual([expect.stringContaining(`webhook deliveries: webhook ${setUp.webhook.id} of ${setUp.appId} (${setUp.origin}): 1 delivery waiting for 20 min, since ${queuedAt} (last error: the receiver answered 500); check the receiver (or this server's outbound network and DNS)`)])
    expect(checked.warnings![0]).not.toContain('reported for 30 days')
    const run = await runCli(['doctor', '--data-dir', root])
    expect(run.exitCode).toBe(0)
    expect(run.stdout).toContain(`WARNING: webhook deliveries: webhook ${setUp.webhook.id}`)
    // a delivery queued now, not tried yet: a quarter of an hour has not passed, nothing to say about it
    const fresh = await webhookSetUp(0)
    try {
      await fresh.sendTest()
      expect((await runChecks(fresh.context.config.dataDir)).find((check) => check.name === 'background jobs')).toEqual({ name: 'background jobs', problems: [], warnings: [] })
    } finally {
      fresh.close()
    }
  } finally {
    setUp.close()
  }
})

test('a release-mirror write that gave up is still a problem (exit 1), worded as before', async () => {
  const root = initialised()
  const { db } = openDataDir(root)
  await mirrorGivenUp(db)
  closeDatabase(db)
  expect(await diagnose(root)).toEqual([mirrorProblem])
  const run = await runCli(['doctor', '--data-dir', root])
  expect(run.exitCode).toBe(1)
  expect(run.stdout).toContain(`PROBLEM: ${mirrorProblem}\n1 problem found in ${root}\n`)
  expect(run.stdout).not.toContain('WARNING')
})

test('a given-up mirror write and a given-up webhook delivery: exit 1 with the problem and the warning, in text and in --json', async () => {
  const setUp = await webhookSetUp(3 * 3_600_000)
  try {
    await giveUp(setUp)
    await mirrorGivenUp(setUp.context.dataDir.db)
    const root = setUp.context.config.dataDir
    const text = await runCli(['doctor', '--data-dir', root])
    expect(text.exitCode).toBe(1)
    const lines = text.stdout.split('\n').filter((line) => line !== '')
    expect(lines.slice(2).map((line) => line.slice(0, 60))).toEqual([`PROBLEM: ${mirrorProblem}`.slice(0, 60), `WARNING: webhook deliveries: webhook ${setUp.webhook.id}`.slice(0, 60), `1 problem found in ${root}, and 1 warning`.slice(0, 60)])
    expect(lines.at(-1)).toBe(`1 problem found in ${root}, and 1 warning`)
    const json = await runCli(['doctor', '--data-dir', root, '--json'])
    expect(json.exitCode).toBe(1)
    const document = jsonDocument(json) as DoctorDocument
    expect(document.healthy).toBe(false)
    expect(document.problems).toEqual([mirrorProblem])
    expect(document.warnings).toEqual([expect.stringContaining(`webhook deliveries: webhook ${setUp.webhook.id} of ${setUp.appId}`)])
    expect(document.checks.find((check) => check.name === 'background jobs')).toEqual({ name: 'background jobs', ok: false, problems: [mirrorProblem], warnings: document.warnings })
    // the fields that were there before stay
    expect(Object.keys(document)).toEqual(['dataDir', 'healthy', 'schemaVersion', 'supportedSchemaVersion', 'fixed', 'checks', 'problems', 'warnings', 'backgroundJobs', 'freeSpace'])
    expect(document.backgroundJobs.byKind).toMatchObject({ 'release-mirror': { failed: 1 }, 'webhook-delivery': { failed: 1 } })
  } finally {
    setUp.close()
  }
})

test('free space: an INFO line and --json freeSpace from the real file system; a problem (exit 1) when the upload limit serve uses does not fit on it', async () => {
  const root = initialised()
  const run = await runCli(['doctor', '--data-dir', root])
  expect(run.exitCode).toBe(0)
  expect(run.stdout).toMatch(new RegExp(`^INFO: free space: [\\d.]+ GB free on the file system of the data directory ${root}, 1\\.00 GB needed \\(two uploads at the upload limit and a copy of the database\\)$`, 'm'))
  const json = jsonDocument(await runCli(['doctor', '--data-dir', root, '--json'])) as { freeSpace: { path: string; freeBytes: number; neededBytes: number; verdict: string }[]; checks: { name: string; ok: boolean }[] }
  expect(json.freeSpace).toEqual([{ path: root, freeBytes: expect.any(Number), neededBytes: expect.any(Number), lowBytes: expect.any(Number), verdict: 'ok' } as never])
  // two uploads at the default limit (512 MB) and the database's real size
  expect(json.freeSpace[0]!.neededBytes).toBe(2 * 512 * 1024 * 1024 + statSync(join(root, 'miniship.db')).size + (existsSync(join(root, 'miniship.db-wal')) ? statSync(join(root, 'miniship.db-wal')).size : 0))
  expect(json.checks.find((check) => check.name === 'free space')).toMatchObject({ ok: true, problems: [], warnings: [] })
  // a 1 TB upload limit (the largest serve takes): two such uploads fit on no test machine's disk
  const short = await runCli(['doctor', '--data-dir', root, '--json'], { env: { MINISHIP_UPLOAD_LIMIT_MB: '1048576' } })
  expect(short.exitCode).toBe(1)
  const report = jsonDocument(short) as { healthy: boolean; problems: string[]; freeSpace: { verdict: string }[] }
  expect(report.healthy).toBe(false)
  expect(report.freeSpace[0]!.verdict).toBe('short')
  expect(report.problems).toEqual([expect.stringMatching(/^free space: [\d.]+ GB free on the file system of the data directory .*, 2048\.00 GB needed .*: uploads and backups can fail with "disk full"/)])
})
