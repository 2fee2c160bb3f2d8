// Backups across stores (S3 → local, local → S3, --skip-blobs) and migrate-storage, against s3rver; every file's sha256 checked.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createTestContext, tempDir, type TestContext } from '../test-support'
import { ConfigError, loadConfig, type S3StorageConfig } from '../config'
import { createApp } from '../app'
import { dataDirPaths, openDataDir } from '../data-dir'
import { createBackup } from '../backup/create'
import { restoreBackup } from '../backup/restore'
import { createMiniApp, createTestUser, upload, uploadForm } from '../test-fixtures'
import { sha256Hex } from '../modules/runtime/test-runtime'
import { blobPath, createLocalBlobStore } from '.'
import { createS3BlobStore, createS3Client } from './s3'
import { migrateToS3, MigrateError } from './migrate'
import { configRefusal, startTestS3, testCredentials, type TestS3 } from './test-s3'

let s3: TestS3
/** The settings of a data directory whose storage.json records `prefix` with `owner` (as serve leaves it). */
const ownedConfig = (prefix: string, owner = `test-${prefix}`) => ({ ...s3.config(prefix), recorded: { owner } })
beforeAll(async () => {
  s3 = await startTestS3()
})
afterAll(() => s3.close())

/** The installation id the prefix's owner marker names, or null without one (read as a public bucket is). */
async function markerOwner(prefix: string): Promise<string | null> {
  const response = await fetch(s3.publicUrl(`${prefix}/miniship-owner.json`))
  return response.status === 404 ? null : ((await response.json()) as { owner: string }).owner
}

/** A data directory with two uploaded versions; answers the hashes of every stored file. */
async function populate(context: TestContext, appId: string): Promise<string[]> {
  const owner = await createTestUser(context)
  await createMiniApp(context, owner.token, appId)
  const hashes: string[] = []
  for (const version of ['1.0.0', '1.1.0']) {
    const res = await upload(context, owner.token, appId, uploadForm(appId, { version }))
    expect(res.status).toBe(201)
    hashes.push(...Object.values(res.body.files as Record<string, { sha256: string }>).map((file) => file.sha256))
  }
  return [...new Set(hashes)].sort()
}

/** Every version's files answered by an app on `dataDir` (its storage as configured there), hashes checked. */
async function serveEveryFile(dataDir: string, env: Record<string, string>): Promise<number> {
  const config = { ...loadConfig({ dataDir, rateLimit: 'off' }, env), s3Downloads: 'proxy' as const }
  const opened = openDataDir(dataDir)
  try {
    const app = createApp({ config, db: opened.db, paths: opened.paths, secret: opened.secret, log: () => {} })
    const rows = opened.db.$client.query('SELECT id FROM versions').all() as { id: string }[]
    const { createTokenService } = await import('../modules/auth/tokens')
    const tokens = createTokenService(opened.secret, Date.now, 3600)
    let checked = 0
    for (const { id } of rows) {
      const token = await tokens.signDownload(id, Date.now() + 60_000)
      const info = await (await app.handle(new Request(`http://localhost/api/mini-apps/access/versions/${id}/install?token=${token}`))).json()
      for (const [kind, file] of Object.entries(info.files as Record<string, { sha256: string }>)) {
        const path = { bundleIos: 'bundles/ios', bundleAndroid: 'bundles/android', manifest: 'manifest', assetsIos: 'assets/ios', assetsAndroid: 'assets/android' }[kind]
        const response = await app.handle(new Request(`http://localhost/api/mini-apps/access/versions/${id}/${path}?token=${token}`))
        expect(response.status).toBe(200)
        expect(sha256Hex(await response.arrayBuffer())).toBe(file.sha256)
        checked++
      }
    }
    return checked
  } finally {
    opened.db.$client.close()
  }
}

describe('backup and restore across stores', () => {
  test('a backup of S3 storage holds the bucket\'s files and restores into local storage', async () => {
    const context = createTestContext({ storage: ownedConfig('backup-source') })
    const hashes = await populate(context, 'com.example.froms3')
    const out = join(tempDir(), 'backup.tar.gz')
    const store = createS3BlobStore(ownedConfig('backup-source'), context.dataDir.paths)
    const result = await createBackup({ dataDir: context.config.dataDir, out, store })
    expect(result.manifest.blobs).toEqual({ included: true, storage: 's3', bucket: 'miniship-test', prefix: 'backup-source/' })
    expect(result.manifest.files.filter((file) => file.path.startsWith('blobs/')).map((file) => file.sha256).sort()).toEqual(hashes)
    const target = join(tempDir(), 'restored')
    await restoreBackup({ archive: out, dataDir: target })
    for (const sha256 of hashes) expect(sha256Hex(readFileSync(blobPath(dataDirPaths(target), sha256)))).toBe(sha256)
    expect(existsSync(join(target, 'storage.json'))).toBe(false)
    expect(await serveEveryFile(target, {})).toBe(10)
    context.close()
  })

  test('a backup of local storage restores into S3 storage: blobs uploaded, storage.json written, none left on disk', async () => {
    const context = createTestContext()
    const hashes = await populate(context, 'com.example.tos3')
    const out = join(tempDir(), 'backup.tar.gz')
    await createBackup({ dataDir: context.config.dataDir, out })
    const target = join(tempDir(), 'restored')
    await restoreBackup({ archive: out, dataDir: target, storage: s3.config('restored') })
    const storageFile = JSON.parse(readFileSync(join(target, 'storage.json'), 'utf8'))
    expect(storageFile).toEqual({ storage: 's3', s3: { bucket: 'miniship-test', endpoint: s3.endpoint, region: 'us-east-1', prefix: 'restored' }, owner: expect.any(String) })
    // a backup of local storage has no owner id: the restored directory gets a new one, and the prefix's marker names it
    expect(await markerOwner('restored')).toBe(storageFile.owner)
    const bucket = createS3BlobStore(ownedConfig('restored', storageFile.owner), dataDirPaths(target))
    expect((await bucket.list()).map((blob) => blob.sha256)).toEqual(hashes)
    expect(await createLocalBlobStore(dataDirPaths(target)).list()).toEqual([])
    expect(await serveEveryFile(target, testCredentials)).toBe(10)
    context.close()
  })

  test('--skip-blobs: backup.json says so, the archive holds no blobs, and only an S3 restore that finds them succeeds', async () => {
    const context = createTestContext({ storage: ownedConfig('skipped') })
    await populate(context, 'com.example.skip')
    const out = join(tempDir(), 'backup.tar.gz')
    const result = await createBackup({ dataDir: context.config.dataDir, out, store: createS3BlobStore(ownedConfig('skipped'), context.dataDir.paths), skipBlobs: true })
    expect(result.manifest.owner).toBe('test-skipped')
    expect(result.manifest.blobs?.included).toBe(false)
    expect(result.manifest.files.map((file) => file.path).sort()).toEqual(['insights.key', 'miniship.db', 'secret.key'])
    await expect(restoreBackup({ archive: out, dataDir: join(tempDir(), 'local') })).rejects.toThrow('--skip-blobs')
    await expect(restoreBackup({ archive: out, dataDir: join(tempDir(), 'elsewhere'), storage: s3.config('empty-prefix') })).rejects.toThrow('neither in the archive nor in the bucket')
    const target = join(tempDir(), 'restored')
    await restoreBackup({ archive: out, dataDir: target, storage: s3.config('skipped') })
    // the same installation moved: it keeps the backup's owner id, which the prefix's marker names
    expect(JSON.parse(readFileSync(join(target, 'storage.json'), 'utf8')).owner).toBe('test-skipped')
    expect(await markerOwner('skipped')).toBe('test-skipped')
    expect(await serveEveryFile(target, testCredentials)).toBe(10)
    context.close()
  })
})

describe('migrate-storage --to s3', () => {
  test('copies and verifies every blob, switches storage.json, and the directory keeps serving every version', async () => {
    const context = createTestContext()
    const hashes = await populate(context, 'com.example.migrate')
    const dataDir = context.config.dataDir
    context.dataDir.db.$client.close()
    // a bucket that does not exist is a setting to change, refused as serve and backup refuse it
    await expect(migrateToS3(dataDir, { ...s3.config('migrated'), bucket: 'no-such-bucket' })).rejects.toThrow(ConfigError)
    expect(existsSync(join(dataDir, 'storage.json'))).toBe(false)
    const result = await migrateToS3(dataDir, s3.config('migrated'))
    expect(result.copied).toBe(hashes.length)
    const config = loadConfig({ dataDir }, testCredentials)
    expect(config.storage.kind).toBe('s3')
    // storage.json records a new installation id and the prefix's marker names it
    const owner = JSON.parse(readFileSync(join(dataDir, 'storage.json'), 'utf8')).owner
    expect(owner).toEqual(expect.any(String))
    expect(await markerOwner('migrated')).toBe(owner)
    expect(config.storage).toMatchObject({ recorded: { owner } })
    expect((await createS3BlobStore(config.storage as S3StorageConfig, dataDirPaths(dataDir)).list()).map((blob) => blob.sha256)).toEqual(hashes)
    // the local copies are not read any more: remove them and everything still answers
    rmSync(join(dataDir, 'blobs'), { recursive: true, force: true })
    expect(await serveEveryFile(dataDir, testCredentials)).toBe(10)
    await expect(migrateToS3(dataDir, s3.config('migrated'))).rejects.toThrow('already keeps its stored files in S3')
    expect(() => loadConfig({ dataDir, storage: 'local' }, testCredentials)).toThrow('keeps its stored files in S3')
    rmSync(dataDir, { recursive: true, force: true })
  })
})

describe('migrate-storage --json', () => {
  test('prints one JSON document, the result or the error (it had no --json: "unknown option", nothing on stdout)', async () => {
    const { jsonDocument, runCli } = await import('../cli/test-run')
    const context = createTestContext()
    const hashes = await populate(context, 'com.example.migratejson')
    const dataDir = context.config.dataDir
    context.dataDir.db.$client.close()
    const args = ['migrate-storage', '--to', 's3', '--data-dir', dataDir, '--s3-endpoint', s3.endpoint, '--s3-prefix', 'migrated-json', '--json']
    const refused = await runCli([...args, '--s3-bucket', 'no-such-bucket'], { env: testCredentials })
    // exit 2, as serve and backup refuse a bucket that does not exist (it was 1, MIGRATE_FAILED)
    expect(refused.exitCode).toBe(2)
    expect(jsonDocument(refused)).toMatchObject({ error: { code: 'STORAGE_REFUSED', message: expect.stringContaining('there is no bucket "no-such-bucket"') } })
    const run = await runCli([...args, '--s3-bucket', s3.config().bucket], { env: testCredentials })
    expect(run.exitCode).toBe(0)
    expect(jsonDocument(run)).toMatchObject({ dataDir, bucket: s3.config().bucket, prefix: 'migrated-json', copied: hashes.length, alreadyThere: 0 })
    rmSync(dataDir, { recursive: true, force: true })
  })
})

describe('migrate-storage stopped midway (SIGTERM)', () => {
  test('frees the data directory (no lock left), says nothing was switched, exits 143; storage.json unwritten', async () => {
    const context = createTestContext()
    await populate(context, 'com.example.stopped')
    const dataDir = context.config.dataDir
    context.dataDir.db.$client.close()
    // a bucket that takes the connection and never answers: the command waits on it, holding the lock
    const frozen = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Promise<Response>(() => {}) })
    try {
      const child = Bun.spawn([process.execPath, join(import.meta.dir, '..', 'main.ts'), 'migrate-storage', '--to', 's3', '--data-dir', dataDir, '--s3-bucket', 'frozen', '--s3-endpoint', `http://127.0.0.1:${frozen.port}`, '--s3-timeout', '60s'], {
        env: { ...process.env, ...testCredentials },
        stdout: 'pipe',
        stderr: 'pipe',
      })
      const lock = dataDirPaths(dataDir).lock
      for (let waited = 0; !existsSync(lock) && waited < 10_000; waited += 50) await Bun.sleep(50)
      expect(existsSync(lock)).toBe(true)
      child.kill('SIGTERM')
      expect(await child.exited).toBe(143)
      expect(await new Response(child.stderr).text()).toContain('interrupted by SIGTERM; nothing was switched')
      expect(existsSync(lock)).toBe(false)
      expect(existsSync(join(dataDir, 'storage.json'))).toBe(false)
    } finally {
      frozen.stop(true)
      rmSync(dataDir, { recursive: true, force: true })
    }
  }, 30_000)
})

describe('doctor and backup told --storage s3 for a directory whose files are still local (a migrate-storage killed before the switch)', () => {
  test('are refused as serve refuses it, naming migrate-storage: doctor does not report every stored file missing', async () => {
    const context = createTestContext()
    await populate(context, 'com.example.notmoved')
    const dataDir = context.config.dataDir
    context.dataDir.db.$client.close()
    const { runCli } = await import('../cli/test-run')
    const env = s3.env('not-moved-yet')
    try {
      for (const args of [['doctor'], ['backup', '--out', join(tempDir(), 'b.tar.gz')]]) {
        const run = await runCli([...args, '--data-dir', dataDir], { env })
        expect({ args, exitCode: run.exitCode }).toEqual({ args, exitCode: 2 })
        expect(run.stderr).toContain('migrate-storage')
        expect(run.stdout).not.toContain('missing')
      }
      // the same directory checked as it is stored: healthy
      const local = await runCli(['doctor', '--data-dir', dataDir])
      expect(local.exitCode).toBe(0)
    } finally {
      rmSync(dataDir, { recursive: true, force: true })
    }
  }, 30_000)
})

describe('restore and migrate-storage fill only a prefix that is no other installation\'s (owner marker)', () => {
  /** A prefix filled and marked by installation `owner`: its two versions' files, and the marker. */
  async function takenPrefix(prefix: string, owner: string): Promise<string[]> {
    const context = createTestContext({ storage: ownedConfig(prefix, owner) })
    const hashes = await populate(context, `com.example.${prefix.replace(/[^a-z]/g, '')}`)
    await createS3BlobStore(ownedConfig(prefix, owner), context.dataDir.paths).claim(owner)
    context.close()
    return hashes
  }
  const listed = async (prefix: string, owner: string) => (await createS3BlobStore(ownedConfig(prefix, owner), dataDirPaths(tempDir())).list()).map((blob) => blob.sha256)
  const refusal = configRefusal

  test('restore into another installation\'s prefix is refused before anything is written; its files and marker stay', async () => {
    const hashes = await takenPrefix('taken-restore', 'inst-owner')
    // a backup of local storage (no owner id), and one of another installation with S3 storage
    const local = createTestContext()
    await populate(local, 'com.example.localbackup')
    const localBackup = join(tempDir(), 'local.tar.gz')
    await createBackup({ dataDir: local.config.dataDir, out: localBackup })
    local.close()
    const other = createTestContext({ storage: ownedConfig('other-source', 'inst-other') })
    await populate(other, 'com.example.otherbackup')
    const otherBackup = join(tempDir(), 'other.tar.gz')
    const made = await createBackup({ dataDir: other.config.dataDir, out: otherBackup, store: createS3BlobStore(ownedConfig('other-source', 'inst-other'), other.dataDir.paths) })
    expect(made.manifest.owner).toBe('inst-other')
    other.close()

    for (const archive of [localBackup, otherBackup]) {
      const target = join(tempDir(), 'restored')
      const message = await refusal(restoreBackup({ archive, dataDir: target, storage: s3.config('taken-restore') }))
      expect(message).toContain('bucket "miniship-test" prefix "taken-restore" belongs to another miniship data directory (installation inst-owner')
      expect(message).not.toContain('S3RVER')
      expect(existsSync(target)).toBe(false)
    }
    expect(await listed('taken-restore', 'inst-owner')).toEqual(hashes)
    expect(await markerOwner('taken-restore')).toBe('inst-owner')
  })

  test('a backup from before owner ids, restored into the prefix it was taken of (since marked by its upgraded installation), takes the marker\'s id', async () => {
    // the previous release: storage.json records the prefix without an owner id, and the bucket has no marker
    const before = { ...s3.config('upgraded'), recorded: { owner: null } }
    const old = createTestContext({ storage: before })
    const hashes = await populate(old, 'com.example.upgraded')
    const archive = join(tempDir(), 'old.tar.gz')
    const made = await createBackup({ dataDir: old.config.dataDir, out: archive, store: createS3BlobStore(before, old.dataDir.paths) })
    expect(made.manifest.owner).toBeUndefined()
    old.close()
    // since then the installation was upgraded and its first serve marked the prefix
    await createS3BlobStore(ownedConfig('upgraded', 'inst-upgraded'), dataDirPaths(tempDir())).claim('inst-upgraded')

    const target = join(tempDir(), 'restored')
    await restoreBackup({ archive, dataDir: target, storage: s3.config('upgraded') })
    expect(JSON.parse(readFileSync(join(target, 'storage.json'), 'utf8')).owner).toBe('inst-upgraded')
    expect(await markerOwner('upgraded')).toBe('inst-upgraded')
    expect(await listed('upgraded', 'inst-upgraded')).toEqual(hashes)
    expect(await serveEveryFile(target, testCredentials)).toBe(10)

    // the same archive restored into a prefix another installation marked is refused
    await takenPrefix('upgraded-other', 'inst-elsewhere')
    const elsewhere = join(tempDir(), 'elsewhere')
    const message = await refusal(restoreBackup({ archive, dataDir: elsewhere, storage: s3.config('upgraded-other') }))
    expect(message).toContain('prefix "upgraded-other" belongs to another miniship data directory (installation inst-elsewhere')
    expect(existsSync(elsewhere)).toBe(false)
  })

  test('a damaged local file is named as such and never copied; nothing is switched', async () => {
    const context = createTestContext()
    const hashes = await populate(context, 'com.example.damaged')
    const dataDir = context.config.dataDir
    context.dataDir.db.$client.close()
    const damaged = hashes[0]!
    const path = blobPath(dataDirPaths(dataDir), damaged)
    writeFileSync(path, Buffer.from(readFileSync(path)).fill(120, 0, 8))
    const error = await migrateToS3(dataDir, s3.config('damaged')).then(() => null, (failure: unknown) => failure)
    expect(error).toBeInstanceOf(MigrateError)
    const message = (error as Error).message
    expect(message).toContain(`stored file ${path} is damaged`)
    expect(message).toContain('run miniship doctor')
    expect(existsSync(join(dataDir, 'storage.json'))).toBe(false)
    expect((await fetch(s3.publicUrl(`damaged/blobs/sha256/${damaged.slice(0, 2)}/${damaged}`))).status).toBe(404)
    rmSync(dataDir, { recursive: true, force: true })
  })

  test('a copy that does not read back intact is removed from the bucket and nothing is switched; the next run copies it again', async () => {
    const context = createTestContext()
    const hashes = await populate(context, 'com.example.readback')
    const dataDir = context.config.dataDir
    context.dataDir.db.$client.close()
    const spoiled = hashes[0]!
    const key = `readback/blobs/sha256/${spoiled.slice(0, 2)}/${spoiled}`
    // the bucket's copy goes bad after it was written, before it is verified: s3rver keeps it as a file
    let spoiledOnce = false
    const progress = (line: string) => {
      if (spoiledOnce || !line.startsWith('verifying stored files in the bucket 1/')) return
      spoiledOnce = true
      const object = join(s3.directory, 'miniship-test', `${key}._S3rver_object`)
      writeFileSync(object, Buffer.from(readFileSync(object)).fill(120, 0, 8))
    }
    const error = await migrateToS3(dataDir, s3.config('readback'), progress).then(() => null, (failure: unknown) => failure)
    expect(spoiledOnce).toBe(true)
    expect(error).toBeInstanceOf(MigrateError)
    expect((error as Error).message).toMatch(new RegExp(`${spoiled} does not read back intact \\(([0-9a-f]{64})\\); nothing was switched, run migrate-storage again$`))
    expect(existsSync(join(dataDir, 'storage.json'))).toBe(false)
    // no bad copy stays under the good name
    expect((await fetch(s3.publicUrl(key))).status).toBe(404)

    const result = await migrateToS3(dataDir, s3.config('readback'))
    expect(result.copied).toBe(1)
    expect(result.alreadyThere).toBe(hashes.length - 1)
    const response = await fetch(s3.publicUrl(key))
    expect(sha256Hex(await response.arrayBuffer())).toBe(spoiled)
    rmSync(dataDir, { recursive: true, force: true })
  })

  test('migrate-storage into another installation\'s prefix is refused, storage.json untouched; an unmarked prefix is filled and marked', async () => {
    const hashes = await takenPrefix('taken-migrate', 'inst-owner')
    const context = createTestContext()
    const own = await populate(context, 'com.example.migrateinto')
    const dataDir = context.config.dataDir
    context.dataDir.db.$client.close()
    const message = await refusal(migrateToS3(dataDir, s3.config('taken-migrate')))
    expect(message).toContain('prefix "taken-migrate" belongs to another miniship data directory')
    expect(existsSync(join(dataDir, 'storage.json'))).toBe(false)
    expect(await listed('taken-migrate', 'inst-owner')).toEqual(hashes)
    expect(await markerOwner('taken-migrate')).toBe('inst-owner')

    // blobs and no marker: migrate-storage is one of the two ways to fill a prefix, and it marks it
    await takenPrefix('unmarked', 'inst-gone')
    await createS3Client(s3.config()).delete('unmarked/miniship-owner.json')
    await migrateToS3(dataDir, s3.config('unmarked'))
    const owner = JSON.parse(readFileSync(join(dataDir, 'storage.json'), 'utf8')).owner
    expect(await markerOwner('unmarked')).toBe(owner)
    expect(await listed('unmarked', owner)).toEqual(expect.arrayContaining(own))
    rmSync(dataDir, { recursive: true, force: true })
  })
})
