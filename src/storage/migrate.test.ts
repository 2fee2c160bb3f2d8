// Backups across stores (S3 → local, local → S3, --skip-blobs) and migrate-storage, against s3rver; every file's sha256 checked.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { createTestContext, tempDir, type TestContext } from '../test-support'
import { loadConfig } from '../config'
import { createApp } from '../app'
import { dataDirPaths, openDataDir } from '../data-dir'
import { createBackup } from '../backup/create'
import { restoreBackup } from '../backup/restore'
import { createMiniApp, createTestUser, upload, uploadForm } from '../modules/versions/test-fixtures'
import { sha256Hex } from '../modules/runtime/test-runtime'
import { blobPath, createLocalBlobStore } from '.'
import { createS3BlobStore } from './s3'
import { migrateToS3, MigrateError } from './migrate'
import { startTestS3, testCredentials, type TestS3 } from './test-s3'

let s3: TestS3
beforeAll(async () => {
  s3 = await startTestS3()
})
afterAll(() => s3.close())

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
    const context = createTestContext({ storage: s3.config('backup-source') })
    const hashes = await populate(context, 'com.example.froms3')
    const out = join(tempDir(), 'backup.tar.gz')
    const store = createS3BlobStore(s3.config('backup-source'), context.dataDir.paths)
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
    const bucket = createS3BlobStore(s3.config('restored'), dataDirPaths(target))
    expect((await bucket.list()).map((blob) => blob.sha256)).toEqual(hashes)
    expect(await createLocalBlobStore(dataDirPaths(target)).list()).toEqual([])
    expect(JSON.parse(readFileSync(join(target, 'storage.json'), 'utf8'))).toEqual({ storage: 's3', s3: { bucket: 'miniship-test', endpoint: s3.endpoint, region: 'us-east-1', prefix: 'restored' } })
    expect(await serveEveryFile(target, testCredentials)).toBe(10)
    context.close()
  })

  test('--skip-blobs: backup.json says so, the archive holds no blobs, and only an S3 restore that finds them succeeds', async () => {
    const context = createTestContext({ storage: s3.config('skipped') })
    await populate(context, 'com.example.skip')
    const out = join(tempDir(), 'backup.tar.gz')
    const result = await createBackup({ dataDir: context.config.dataDir, out, store: createS3BlobStore(s3.config('skipped'), context.dataDir.paths), skipBlobs: true })
    expect(result.manifest.blobs?.included).toBe(false)
    expect(result.manifest.files.map((file) => file.path).sort()).toEqual(['insights.key', 'miniship.db', 'secret.key'])
    await expect(restoreBackup({ archive: out, dataDir: join(tempDir(), 'local') })).rejects.toThrow('--skip-blobs')
    await expect(restoreBackup({ archive: out, dataDir: join(tempDir(), 'elsewhere'), storage: s3.config('empty-prefix') })).rejects.toThrow('neither in the archive nor in the bucket')
    const target = join(tempDir(), 'restored')
    await restoreBackup({ archive: out, dataDir: target, storage: s3.config('skipped') })
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
    await expect(migrateToS3(dataDir, { ...s3.config('migrated'), bucket: 'no-such-bucket' })).rejects.toThrow(MigrateError)
    expect(existsSync(join(dataDir, 'storage.json'))).toBe(false)
    const result = await migrateToS3(dataDir, s3.config('migrated'))
    expect(result.copied).toBe(hashes.length)
    expect((await createS3BlobStore(s3.config('migrated'), dataDirPaths(dataDir)).list()).map((blob) => blob.sha256)).toEqual(hashes)
    const config = loadConfig({ dataDir }, testCredentials)
    expect(config.storage.kind).toBe('s3')
    // the local copies are not read any more: remove them and everything still answers
    rmSync(join(dataDir, 'blobs'), { recursive: true, force: true })
    expect(await serveEveryFile(dataDir, testCredentials)).toBe(10)
    await expect(migrateToS3(dataDir, s3.config('migrated'))).rejects.toThrow('already keeps its stored files in S3')
    expect(() => loadConfig({ dataDir, storage: 'local' }, testCredentials)).toThrow('keeps its stored files in S3')
    rmSync(dataDir, { recursive: true, force: true })
  })
})
