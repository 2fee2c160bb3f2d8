// One exit code and one --json error code per situation, whichever operator command meets it: a bucket
// that cannot be reached, a data directory a running server holds, a database of a newer schema.
// (A data directory this user may not read: src/e2e/permissions.e2e.test.ts, which runs as another user.)
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Database } from 'bun:sqlite'
import type { Subprocess } from 'bun'
import { openDataDir } from '../data-dir'
import { closeDatabase } from '../db/open'
import { tempDir } from '../test-support'
import { startTestS3, testCredentials, type TestS3 } from '../storage/test-s3'
import { jsonDocument, runCli, type CliRun } from './test-run'

const root = tempDir('miniship-exit-codes-')
afterAll(() => rmSync(root, { recursive: true, force: true }))

let count = 0
function freshDataDir(): string {
  const dataDir = join(root, `data-${++count}`)
  closeDatabase(openDataDir(dataDir).db)
  return dataDir
}

/** A port on 127.0.0.1 nothing listens on: taken, then given back. */
function closedPort(): number {
  const listener = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const port = listener.port
  listener.stop(true)
  return port
}

/** S3 storage at an endpoint on 127.0.0.1 where nothing answers. */
function unreachableBucket(): Record<string, string> {
  return { ...testCredentials, MINISHIP_STORAGE: 's3', MINISHIP_S3_BUCKET: 'miniship-test', MINISHIP_S3_ENDPOINT: `http://127.0.0.1:${closedPort()}`, MINISHIP_S3_REGION: 'us-east-1', MINISHIP_S3_TIMEOUT: '3s' }
}

function expectRefusal(run: CliRun, exitCode: number, code: string, message: string | RegExp): void {
  const shown = `exit ${run.exitCode}\nstdout: ${run.stdout}\nstderr: ${run.stderr}`
  expect({ exitCode: run.exitCode, shown }).toEqual({ exitCode, shown })
  const document = jsonDocument(run) as { error: { code: string; message: string } }
  expect(Object.keys(document)).toEqual(['error'])
  expect(document.error.code).toBe(code)
  if (typeof message === 'string') expect(document.error.message).toContain(message)
  else expect(document.error.message).toMatch(message)
  // the same line on stderr as in the document
  expect(run.stderr).toContain(`miniship: ${document.error.message}`)
}

/** An archive `restore` accepts (taken of a fresh data directory). */
async function archiveOf(dataDir: string, name: string): Promise<string> {
  const archive = join(root, name)
  const backup = await runCli(['backup', '--data-dir', dataDir, '--out', archive])
  expect(backup.exitCode).toBe(0)
  return archive
}

/**
 * serve, backup, restore, migrate-storage and doctor --fix with the bucket `env()` names: each one
 * refused alike. `name` keeps each command's data directory and archive apart.
 */
function everyStorageCommand(name: string, env: () => Record<string, string>, archive: () => string, exitCode: number, code: string, message: RegExp): void {
  const refused = async (args: string[]) => expectRefusal(await runCli([...args, '--json'], { env: env() }), exitCode, code, message)
  test('serve', () => refused(['serve', '--data-dir', join(root, `serve-${name}`), '--port', '0', '--host', '127.0.0.1']))
  test('backup', () => refused(['backup', '--data-dir', freshDataDir(), '--out', join(root, `${name}.tar.gz`)]))
  test('restore', () => refused(['restore', archive(), '--data-dir', join(root, `restore-${name}`)]))
  test('migrate-storage', () => refused(['migrate-storage', '--to', 's3', '--data-dir', freshDataDir()]))
  test('doctor --fix', () => refused(['doctor', '--fix', '--data-dir', freshDataDir()]))
}

describe('a bucket that cannot be reached: exit 1, STORAGE_UNREACHABLE (it may answer later; nothing to change)', () => {
  const message = /^S3 storage: --s3-endpoint: bucket "miniship-test" at http:\/\/127\.0\.0\.1:\d+ cannot be reached \(ConnectionRefused\)/
  let archive: string
  beforeAll(async () => {
    archive = await archiveOf(freshDataDir(), 'for-unreachable.tar.gz')
  })

  everyStorageCommand('unreachable', unreachableBucket, () => archive, 1, 'STORAGE_UNREACHABLE', message)
  test('doctor (without --fix) reports it as a problem found: exit 1 as well, the rest still checked', async () => {
    const run = await runCli(['doctor', '--data-dir', freshDataDir(), '--json'], { env: unreachableBucket() })
    expect(run.exitCode).toBe(1)
    const report = jsonDocument(run) as { healthy: boolean; problems: string[] }
    expect(report.healthy).toBe(false)
    expect(report.problems[0]).toMatch(message)
  })
})

describe('a bucket that refuses a setting (no such bucket): exit 2, STORAGE_REFUSED (change the setting first)', () => {
  const message = /^S3 storage: --s3-bucket: there is no bucket "no-such-bucket" at http:\/\/127\.0\.0\.1:\d+/
  let s3: TestS3
  let archive: string
  const refusingBucket = () => ({ ...s3.env(), MINISHIP_S3_BUCKET: 'no-such-bucket' })
  beforeAll(async () => {
    s3 = await startTestS3()
    archive = await archiveOf(freshDataDir(), 'for-refused.tar.gz')
  })
  afterAll(() => s3?.close())

  everyStorageCommand('refused', refusingBucket, () => archive, 2, 'STORAGE_REFUSED', message)
  test('doctor (without --fix) as well: a setting to change, not a problem of the data', async () => {
    expectRefusal(await runCli(['doctor', '--data-dir', freshDataDir(), '--json'], { env: refusingBucket() }), 2, 'STORAGE_REFUSED', message)
  })
})

/** `miniship serve` from the sources on a free port, running until stopped. */
async function startServe(dataDir: string): Promise<{ child: Subprocess; pid: number }> {
  const child = Bun.spawn([process.execPath, join(import.meta.dir, '..', 'main.ts'), 'serve', '--data-dir', dataDir, '--port', '0', '--host', '127.0.0.1', '--json'], {
    env: Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('MINISHIP_'))),
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'ignore',
  })
  const reader = child.stdout.getReader()
  let text = ''
  while (!text.includes('\n')) {
    const { done, value } = await reader.read()
    if (done) throw new Error(`serve did not start: ${text}`)
    text += new TextDecoder().decode(value)
  }
  reader.releaseLock()
  expect(JSON.parse(text.split('\n')[0]!)).toMatchObject({ listening: expect.any(String) })
  return { child, pid: child.pid }
}

describe('a data directory a running server holds: exit 2, DATA_DIR_IN_USE (stop it first)', () => {
  let dataDir: string
  let server: Awaited<ReturnType<typeof startServe>>
  let archive: string
  let message: string
  beforeAll(async () => {
    archive = await archiveOf(freshDataDir(), 'for-in-use.tar.gz')
    dataDir = freshDataDir()
    server = await startServe(dataDir)
    message = `another miniship (pid ${server.pid}) is already serving ${dataDir}; stop it first`
  })
  afterAll(async () => {
    server?.child.kill('SIGTERM')
    await server?.child.exited
  })

  test('serve', async () => {
    expectRefusal(await runCli(['serve', '--data-dir', dataDir, '--port', '0', '--host', '127.0.0.1', '--json']), 2, 'DATA_DIR_IN_USE', message)
  })
  test('restore --force', async () => {
    expectRefusal(await runCli(['restore', archive, '--data-dir', dataDir, '--force', '--json']), 2, 'DATA_DIR_IN_USE', message)
  })
  test('migrate-storage (before it looks at the bucket)', async () => {
    expectRefusal(await runCli(['migrate-storage', '--to', 's3', '--data-dir', dataDir, '--json'], { env: unreachableBucket() }), 2, 'DATA_DIR_IN_USE', message)
  })
  test('doctor --fix, with nothing of a killed backup to remove', async () => {
    expectRefusal(await runCli(['doctor', '--fix', '--data-dir', dataDir, '--json']), 2, 'DATA_DIR_IN_USE', message)
  })
  test('backup, doctor, init and create-admin work beside a running server', async () => {
    expect((await runCli(['backup', '--data-dir', dataDir, '--out', join(root, 'beside.tar.gz')])).exitCode).toBe(0)
    expect((await runCli(['doctor', '--data-dir', dataDir])).exitCode).toBe(0)
    expect((await runCli(['init', '--data-dir', dataDir])).exitCode).toBe(0)
    expect((await runCli(['create-admin', '--data-dir', dataDir, '--email', 'beside@example.test', '--password-stdin'], { stdin: 'beside-password\n' })).exitCode).toBe(0)
  })
})

describe('a data directory another subcommand holds (restore, migrate-storage, doctor --fix): the message names it, not "serving"', () => {
  for (const [command, said] of [
    ['restore', 'restore'],
    ['migrate-storage', 'migrate-storage'],
    ['doctor', 'doctor --fix'],
  ] as const) {
    test(command, async () => {
      const dataDir = freshDataDir()
      // a live process whose command line names the subcommand, as /proc shows one of ours, holding the lock
      const holder = Bun.spawn([process.execPath, '-e', 'setTimeout(() => {}, 60_000)', command], { stdout: 'ignore', stderr: 'ignore' })
      try {
        writeFileSync(join(dataDir, 'miniship.lock'), `${holder.pid}\n`)
        expectRefusal(
          await runCli(['serve', '--data-dir', dataDir, '--port', '0', '--host', '127.0.0.1', '--json']),
          2,
          'DATA_DIR_IN_USE',
          `another miniship (pid ${holder.pid}) is running ${said} on ${dataDir}; let it finish first (if none runs, remove ${join(dataDir, 'miniship.lock')})`,
        )
      } finally {
        holder.kill()
        await holder.exited
      }
    })
  }
})

/** Records one migration more than this miniship knows, as a newer miniship would have applied. */
function makeSchemaNewer(dataDir: string): void {
  const database = new Database(join(dataDir, 'miniship.db'))
  database.run('INSERT INTO __drizzle_migrations (hash, created_at) VALUES (?, ?)', ['from-a-newer-miniship', Date.now() + 1e12])
  database.close()
}

/** A copy of `archive` whose database (and backup.json) is of a newer schema, packed with the system's tar. */
async function newerArchive(archive: string): Promise<string> {
  const unpacked = join(root, `unpacked-${++count}`)
  mkdirSync(unpacked)
  expect(Bun.spawnSync(['tar', '-xzf', archive, '-C', unpacked]).exitCode).toBe(0)
  makeSchemaNewer(unpacked)
  const manifest = JSON.parse(readFileSync(join(unpacked, 'backup.json'), 'utf8'))
  const database = readFileSync(join(unpacked, 'miniship.db'))
  manifest.schemaVersion += 1
  manifest.productVersion = '9.0.0'
  for (const file of manifest.files) if (file.path === 'miniship.db') Object.assign(file, { size: database.byteLength, sha256: new Bun.CryptoHasher('sha256').update(database).digest('hex') })
  writeFileSync(join(unpacked, 'backup.json'), JSON.stringify(manifest))
  const newer = join(root, `newer-${count}.tar.gz`)
  expect(Bun.spawnSync(['tar', '-czf', newer, '-C', unpacked, 'backup.json', ...manifest.files.map((file: { path: string }) => file.path)]).exitCode).toBe(0)
  return newer
}

describe('a database of a newer schema: exit 2, NEWER_SCHEMA (use a newer miniship)', () => {
  const message = /has database schema version \d+, newer than this miniship [^ ]+ knows \(\d+\); /
  let dataDir: string
  beforeAll(() => {
    dataDir = freshDataDir()
    makeSchemaNewer(dataDir)
  })

  test('serve', async () => {
    expectRefusal(await runCli(['serve', '--data-dir', dataDir, '--port', '0', '--host', '127.0.0.1', '--json']), 2, 'NEWER_SCHEMA', message)
  })
  test('init', async () => {
    expectRefusal(await runCli(['init', '--data-dir', dataDir, '--json']), 2, 'NEWER_SCHEMA', message)
  })
  test('create-admin', async () => {
    expectRefusal(await runCli(['create-admin', '--data-dir', dataDir, '--email', 'newer@example.test', '--password-stdin', '--json'], { stdin: 'newer-password\n' }), 2, 'NEWER_SCHEMA', message)
  })
  test('doctor', async () => {
    expectRefusal(await runCli(['doctor', '--data-dir', dataDir, '--json']), 2, 'NEWER_SCHEMA', message)
  })
  test('backup (an older miniship may not know every table that refers to a stored file)', async () => {
    expectRefusal(await runCli(['backup', '--data-dir', dataDir, '--out', join(root, 'newer-backup.tar.gz'), '--json']), 2, 'NEWER_SCHEMA', message)
  })
  test('migrate-storage (likewise), before it looks at the bucket', async () => {
    expectRefusal(await runCli(['migrate-storage', '--to', 's3', '--data-dir', dataDir, '--json'], { env: unreachableBucket() }), 2, 'NEWER_SCHEMA', message)
  })
  test('restore of a backup of a newer schema', async () => {
    const newer = await newerArchive(await archiveOf(freshDataDir(), 'for-newer.tar.gz'))
    expectRefusal(await runCli(['restore', newer, '--data-dir', join(root, 'restore-newer'), '--json']), 2, 'NEWER_SCHEMA', /^the backup has database schema version \d+, newer than this miniship [^ ]+ knows \(\d+\); restore it with miniship 9\.0\.0 or newer/)
  })
})
