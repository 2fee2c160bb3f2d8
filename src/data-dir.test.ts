import { afterAll, describe, expect, test } from 'bun:test'
import { mkdirSync, rmSync, writeFileSync, existsSync, truncateSync } from 'node:fs'
import { join } from 'node:path'
import { ConfigError } from './config'
import { dataDirPaths, lockHolder, openDataDir } from './data-dir'
import { tempDir } from './test-support'

const made: string[] = []
afterAll(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true })
})

function initialised(): string {
  const root = tempDir('miniship-datadir-')
  made.push(root)
  openDataDir(root).db.$client.close()
  return root
}

function withStoredFile(root: string): void {
  const folder = join(root, 'blobs', 'sha256', 'ab')
  mkdirSync(folder, { recursive: true })
  writeFileSync(join(folder, 'ab'.padEnd(64, '0')), 'bytes of an upload')
}

describe('a data directory that lost its database is refused, not silently started afresh', () => {
  for (const [name, damage] of [
    ['database deleted', (root: string) => rmSync(join(root, 'miniship.db'))],
    ['database emptied', (root: string) => truncateSync(join(root, 'miniship.db'), 0)],
  ] as const) {
    test(`${name}, stored files present`, () => {
      const root = initialised()
      withStoredFile(root)
      for (const suffix of ['-wal', '-shm']) rmSync(join(root, `miniship.db${suffix}`), { force: true })
      damage(root)
      expect(() => openDataDir(root)).toThrow(ConfigError)
      expect(() => openDataDir(root)).toThrow(/holds stored files but its database is missing or empty; restore a backup/)
      // nothing was deleted or created
      expect(existsSync(join(root, 'blobs', 'sha256', 'ab', 'ab'.padEnd(64, '0')))).toBe(true)
    })
  }

  test('database deleted, only the secret left', () => {
    const root = initialised()
    rmSync(join(root, 'miniship.db'))
    expect(() => openDataDir(root)).toThrow(/holds a signing secret but its database is missing/)
  })

  test('an empty directory is initialised as before', () => {
    const root = tempDir('miniship-datadir-')
    made.push(root)
    const opened = openDataDir(root)
    opened.db.$client.close()
    expect(existsSync(opened.paths.database)).toBe(true)
  })
})

test('a missing secret beside an existing database is replaced with a warning that old tokens stop working', () => {
  const root = initialised()
  rmSync(join(root, 'secret.key'))
  const warnings: string[] = []
  openDataDir(root, { warn: (line) => warnings.push(line) }).db.$client.close()
  expect(warnings).toHaveLength(1)
  expect(warnings[0]).toContain('no longer works')
  expect(existsSync(join(root, 'secret.key'))).toBe(true)
})

test('a database that is not SQLite is a clear ConfigError, not a stack trace', () => {
  const root = initialised()
  for (const suffix of ['-wal', '-shm']) rmSync(join(root, `miniship.db${suffix}`), { force: true })
  writeFileSync(join(root, 'miniship.db'), 'x'.repeat(4096))
  expect(() => openDataDir(root)).toThrow(/cannot be opened: .*; run miniship doctor, or restore a backup/)
})

test('a file where the data directory should be', () => {
  const root = tempDir('miniship-datadir-')
  made.push(root)
  writeFileSync(join(root, 'file'), 'x')
  expect(() => openDataDir(join(root, 'file'))).toThrow(/is not a directory/)
  expect(() => openDataDir(join(root, 'file', 'data'))).toThrow(/cannot be created: a part of the path is a file/)
})

test('a lock naming a live process that is not miniship is stale', async () => {
  const root = initialised()
  const other = Bun.spawn(['sleep', '30'])
  try {
    writeFileSync(dataDirPaths(root).lock, `${other.pid}\n`)
    expect(lockHolder(dataDirPaths(root))).toBeNull()
  } finally {
    other.kill()
    await other.exited
  }
})
