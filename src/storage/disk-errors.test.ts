// A full or read-only disk: 507 INSUFFICIENT_STORAGE or 503 STORAGE_UNAVAILABLE without a path, and nothing half-written left behind.
import { describe, expect, test, afterAll } from 'bun:test'
import { Database } from 'bun:sqlite'
import { accessSync, constants, linkSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { storageError, toAppError } from '../http/errors'
import { createTestContext, tempDir, type TestContext } from '../test-support'
import { createMiniApp, createTestUser, upload, uploadForm } from '../test-fixtures'

/** The error a real call throws, to map errors the file system itself made. */
function thrownBy(action: () => unknown): unknown {
  try {
    action()
  } catch (error) {
    return error
  }
  throw new Error('expected the call to throw')
}

describe('storage errors as clients see them (errors made by the system)', () => {
  const dir = tempDir('miniship-disk-')
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  test('EPERM (a hard link to a folder) → 503 STORAGE_UNAVAILABLE without the path', () => {
    mkdirSync(join(dir, 'folder'))
    const error = thrownBy(() => linkSync(join(dir, 'folder'), join(dir, 'link')))
    expect((error as NodeJS.ErrnoException).code).toBe('EPERM')
    const mapped = toAppError('UNKNOWN', error, () => {})
    expect({ status: mapped.status, code: mapped.code }).toEqual({ status: 503, code: 'STORAGE_UNAVAILABLE' })
    expect(mapped.message).not.toContain(dir)
  })

  test('EACCES (running a file that has no execute bit, which even root may not) → 503', () => {
    writeFileSync(join(dir, 'plain'), 'x', { mode: 0o644 })
    const error = thrownBy(() => accessSync(join(dir, 'plain'), constants.X_OK))
    expect((error as NodeJS.ErrnoException).code).toBe('EACCES')
    expect(storageError(error)?.status).toBe(503)
  })

  test('SQLITE_FULL (a database at its page limit) → 507 INSUFFICIENT_STORAGE', () => {
    const db = new Database(join(dir, 'full.db'))
    db.exec('CREATE TABLE t (x BLOB)')
    db.exec('PRAGMA max_page_count = 3')
    const error = thrownBy(() => db.query('INSERT INTO t VALUES (?)').run(new Uint8Array(64 * 1024)))
    db.close()
    expect((error as { code: string }).code).toStartWith('SQLITE_FULL')
    const mapped = toAppError('UNKNOWN', error, () => {})
    expect({ status: mapped.status, code: mapped.code }).toEqual({ status: 507, code: 'INSUFFICIENT_STORAGE' })
  })

  test('other errors are not storage errors', () => {
    expect(storageError(thrownBy(() => accessSync(join(dir, 'missing'))))).toBeNull()
    expect(storageError(new Error('x'))).toBeNull()
  })
})

// ---- for real, on small tmpfs mounts (root only; skipped where mounting is not allowed)

function mount(args: string[]): boolean {
  return Bun.spawnSync(['mount', ...args], { stdout: 'ignore', stderr: 'ignore' }).exitCode === 0
}
// lazy: SQLite may keep the closed database's file open until its cached statements are collected
const umount = (path: string) => Bun.spawnSync(['umount', '-l', path], { stdout: 'ignore', stderr: 'ignore' })

const probe = tempDir('miniship-mount-probe-')
const canMount = process.getuid?.() === 0 && mount(['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', probe])
if (canMount) umount(probe)
rmSync(probe, { recursive: true, force: true })

/** A test context whose whole data directory lives on a tmpfs of `sizeKb`. */
function contextOnTmpfs(sizeKb: number): { context: TestContext; cleanup(): void } {
  const mountPoint = tempDir('miniship-tmpfs-')
  if (!mount(['-t', 'tmpfs', '-o', `size=${sizeKb}k`, 'tmpfs', mountPoint])) throw new Error('mount failed')
  const context = createTestContext({ dataDir: join(mountPoint, 'data') })
  return {
    context,
    cleanup() {
      context.close()
      umount(mountPoint)
      rmSync(mountPoint, { recursive: true, force: true })
    },
  }
}

describe('a full disk, for real', () => {
  test.skipIf(!canMount)('an upload larger than the free space: 507 without a path, nothing left in tmp/ or blobs/, and a small one works after', async () => {
    const { context, cleanup } = contextOnTmpfs(3 * 1024)
    try {
      const user = await createTestUser(context)
      await createMiniApp(context, user.token, 'com.example.full')
      const res = await upload(context, user.token, 'com.example.full', uploadForm('com.example.full', { bundleIos: new Uint8Array(4 * 1024 * 1024).fill(65) }))
      expect({ status: res.status, code: res.body.code }).toEqual({ status: 507, code: 'INSUFFICIENT_STORAGE' })
      expect(res.text).not.toContain(context.config.dataDir)
      expect(res.text).not.toContain('ENOSPC')
      expect(readdirSync(context.dataDir.paths.tmp)).toEqual([])
      expect(readdirSync(context.dataDir.paths.blobs, { recursive: true }).filter((name) => String(name).length === 64 + 3)).toEqual([])
      const small = await upload(context, user.token, 'com.example.full', uploadForm('com.example.full'))
      expect(small.status).toBe(201)
    } finally {
      cleanup()
    }
  })
})

describe('a read-only disk, for real', () => {
  test.skipIf(!canMount)('tmp/ on a read-only file system: 503 STORAGE_UNAVAILABLE without a path', async () => {
    const { context, cleanup } = contextOnTmpfs(4 * 1024)
    const tmp = context.dataDir.paths.tmp
    try {
      const user = await createTestUser(context)
      await createMiniApp(context, user.token, 'com.example.ro')
      expect(mount(['-t', 'tmpfs', '-o', 'ro,size=64k', 'tmpfs', tmp])).toBe(true)
      const res = await upload(context, user.token, 'com.example.ro', uploadForm('com.example.ro'))
      expect({ status: res.status, code: res.body.code }).toEqual({ status: 503, code: 'STORAGE_UNAVAILABLE' })
      expect(res.text).not.toContain(tmp)
      expect(res.text).not.toContain('EROFS')
    } finally {
      umount(tmp)
      cleanup()
    }
  })
})
