import { afterAll, expect, test } from 'bun:test'
import { mkdirSync, readdirSync, rmSync, truncateSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { acquireLock, dataDirPaths, openDataDir } from '../data-dir'
import { closeDatabase } from '../db/open'
import { tempDir } from '../test-support'
import { createLocalBlobStore } from '../storage'
import { diagnose, fixLeftovers } from './doctor'

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

test('background jobs: ones that gave up, and ones waiting for a quarter of an hour or more, are problems; the backlog is described per kind', async () => {
  const root = tempDir('miniship-doctor-')
  made.push(root)
  const { db } = openDataDir(root)
  const now = Date.now()
  const { enqueueJob } = await import('../jobs/queue')
  // a mirror write queued 20 minutes ago that keeps failing, a delivery that gave up, a delivery queued just now
  enqueueJob(db, () => now - 20 * 60_000, 'release-mirror', { miniAppId: 'a', channel: 'stable' }, { dedupeKey: 'release-mirror:a:stable' })
  db.$client.run("UPDATE jobs SET attempts = 4, last_error = 'timed out after 60 s'")
  const failed = enqueueJob(db, () => now, 'webhook-delivery', { deliveryId: 'd1' })
  db.$client.query("UPDATE jobs SET state = 'failed', attempts = 6, last_error = 'the receiver answered 500' WHERE id = ?").run(failed)
  enqueueJob(db, () => now, 'webhook-delivery', { deliveryId: 'd2' })
  closeDatabase(db)
  const problems = await diagnose(root)
  expect(problems).toContainEqual('background jobs: 1 release-mirror job(s) waiting, the oldest for 20 min (last error: timed out after 60 s)')
  expect(problems).toContainEqual('background jobs: 1 webhook-delivery job(s) gave up after their retries (last error: the receiver answered 500); they are kept 30 days')
  expect(problems.filter((problem) => problem.startsWith('background jobs'))).toHaveLength(2)
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
  expect(document.checks.map((check) => check.name)).toEqual(['data directory', 'signing secret', 'database file', 'database integrity', 'foreign keys', 'migrations', 'stored files', 'background jobs', 'signing keys', 'leftovers'])
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
