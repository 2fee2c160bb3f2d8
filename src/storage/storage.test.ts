import { describe, expect, test, afterAll } from 'bun:test'
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { eq } from 'drizzle-orm'
import { Readable } from 'node:stream'
import { tempDir } from '../test-support'
import { dataDirPaths, openDataDir } from '../data-dir'
import { versions, versionFiles, miniApps } from '../db/schema'
import { blobPath, checkStoredFiles, createLocalBlobStore, writeTemp } from '.'

const root = tempDir('miniship-storage-')
const { paths, db } = openDataDir(root)
afterAll(() => {
  db.$client.close()
  rmSync(root, { recursive: true, force: true })
})
const sha256 = (data: string | Uint8Array) => new Bun.CryptoHasher('sha256').update(data).digest('hex')

describe('the blob store', () => {
  const store = createLocalBlobStore(paths)

  test('writeTemp streams into tmp/ and hashes while writing', async () => {
    const chunks = ['hello ', 'blob ', 'store']
    const file = await writeTemp(paths, Readable.from(chunks.map((c) => Buffer.from(c))))
    expect(file).toMatchObject({ size: 16, sha256: sha256('hello blob store') })
    expect(file.path.startsWith(paths.tmp)).toBe(true)
    expect(readFileSync(file.path, 'utf8')).toBe('hello blob store')
    rmSync(file.path)
  })

  test('a failing source leaves no temp file', async () => {
    async function* failing() {
      yield new Uint8Array([1, 2, 3])
      throw new Error('connection reset')
    }
    await expect(writeTemp(paths, failing())).rejects.toThrow('connection reset')
    expect(readdirSync(paths.tmp).filter((name) => name.startsWith('upload-'))).toEqual([])
  })

  test('commit renames into blobs/sha256/<ab>/<hash>; identical content is stored once', async () => {
    const first = await store.commit(await writeTemp(paths, [new TextEncoder().encode('same')]))
    const second = await store.commit(await writeTemp(paths, [new TextEncoder().encode('same')]))
    expect(first).toEqual({ sha256: sha256('same'), created: true })
    expect(second).toEqual({ sha256: sha256('same'), created: false })
    const path = blobPath(paths, sha256('same'))
    expect(path).toBe(join(paths.blobs, 'sha256', sha256('same').slice(0, 2), sha256('same')))
    expect(readFileSync(path, 'utf8')).toBe('same')
    expect(readdirSync(paths.tmp).filter((name) => name.startsWith('upload-'))).toEqual([])
    expect(await store.list()).toContainEqual({ sha256: sha256('same'), size: 4 })
  })

  test('removeUnreferenced keeps blobs an upload in flight holds and blobs a row refers to', async () => {
    const held = sha256('same')
    // held twice by the two commits above
    expect(await store.removeUnreferenced([held], () => false)).toEqual([])
    store.release([held])
    expect(await store.removeUnreferenced([held], () => false)).toEqual([])
    store.release([held])
    expect(await store.removeUnreferenced([held], () => true)).toEqual([])
    expect(await store.removeUnreferenced([held], () => false)).toEqual([held])
    expect(existsSync(blobPath(paths, held))).toBe(false)
  })

  test('blobPath refuses anything but a sha256 hex digest', () => {
    expect(() => blobPath(paths, '../../etc/passwd')).toThrow()
    expect(() => blobPath(paths, 'A'.repeat(64))).toThrow()
  })
})

describe('checkStoredFiles (doctor)', () => {
  const files = {
    bundleIos: 'ios bundle',
    bundleAndroid: 'android bundle',
    manifest: '{"version":"1.0.0"}',
    assetsIos: 'ios zip',
    assetsAndroid: 'android zip',
  }
  const fileRows = (Object.entries(files) as [keyof typeof files, string][]).map(([kind, content]) => ({ versionId: 'v1', kind, sha256: sha256(content), size: content.length }))
  const store = (content: string) => {
    const path = blobPath(paths, sha256(content))
    mkdirSync(join(path, '..'), { recursive: true })
    writeFileSync(path, content)
    return path
  }

  test('clean when every referenced file is present and intact', async () => {
    for (const content of Object.values(files)) store(content)
    const at = '2026-11-22T10:00:00.000Z'
    db.insert(miniApps).values({ id: 'm1', appId: 'doctor.app', name: 'Doctor', createdAt: at, updatedAt: at }).run()
    db.insert(versions)
      .values({ id: 'v1', miniAppId: 'm1', version: '1.0.0', buildNumber: 1, releaseType: 'RELEASE', status: 'DRAFT', createdAt: at, updatedAt: at })
      .run()
    db.insert(versionFiles).values(fileRows).run()
    expect(await checkStoredFiles(db.$client, createLocalBlobStore(paths))).toEqual([])
  })

  test('names a missing file, a truncated one and a damaged one', async () => {
    rmSync(blobPath(paths, sha256(files.bundleIos)))
    writeFileSync(blobPath(paths, sha256(files.bundleAndroid)), 'android')
    writeFileSync(blobPath(paths, sha256(files.manifest)), '{"version":"6.6.6"}')
    const problems = await checkStoredFiles(db.$client, createLocalBlobStore(paths))
    expect(problems).toHaveLength(3)
    // which version and which of its files, and where a backup holds it
    expect(problems[0]).toEndWith(`is missing (used by doctor.app 1.0.0: iOS bundle; a backup archive (unless it was made with --skip-blobs) holds it as blobs/sha256/${sha256(files.bundleIos).slice(0, 2)}/${sha256(files.bundleIos)}, to put back)`)
    expect(problems[1]).toContain('has 7 bytes, 14 expected')
    expect(problems[2]).toContain('is damaged')
  })

  test('one stored file used twice by a version (both assets zips the same) names the version once, with both files', async () => {
    const same = 'same zip'
    store(same)
    const at = '2026-11-22T10:00:00.000Z'
    db.insert(versions).values({ id: 'v3', miniAppId: 'm1', version: '1.0.2', buildNumber: 3, releaseType: 'RELEASE', status: 'DRAFT', createdAt: at, updatedAt: at }).run()
    db.insert(versionFiles)
      .values(fileRows.map((row) => (row.kind === 'assetsIos' || row.kind === 'assetsAndroid' ? { ...row, versionId: 'v3', sha256: sha256(same), size: same.length } : { ...row, versionId: 'v3' })))
      .run()
    rmSync(blobPath(paths, sha256(same)))
    const problems = await checkStoredFiles(db.$client, createLocalBlobStore(paths))
    expect(problems.find((problem) => problem.includes(sha256(same)) && problem.includes('is missing'))).toContain('(used by doctor.app 1.0.2: iOS assets, Android assets; a backup archive')
    db.delete(versionFiles).where(eq(versionFiles.versionId, 'v3')).run()
    db.delete(versions).where(eq(versions.id, 'v3')).run()
  })

  test('names a version that lost one of its five file rows', async () => {
    db.insert(versions).values({ id: 'v2', miniAppId: 'm1', version: '1.0.1', buildNumber: 2, releaseType: 'RELEASE', status: 'DRAFT', createdAt: '2026-11-22T10:00:00.000Z', updatedAt: '2026-11-22T10:00:00.000Z' }).run()
    db.insert(versionFiles).values(fileRows.slice(1).map((row) => ({ ...row, versionId: 'v2' }))).run()
    const problems = await checkStoredFiles(db.$client, createLocalBlobStore(paths))
    expect(problems[0]).toBe('version doctor.app 1.0.1 (v2) records 4 of its 5 files')
    db.delete(versions).where(eq(versions.id, 'v2')).run()
  })

  test('works on a database opened read-only, as doctor opens it', async () => {
    const { Database } = await import('bun:sqlite')
    const readonly = new Database(dataDirPaths(root).database, { readonly: true, strict: true })
    try {
      expect(await checkStoredFiles(readonly, createLocalBlobStore(paths))).toHaveLength(3)
    } finally {
      readonly.close()
    }
  })
})
