import { afterAll, describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { drizzle } from 'drizzle-orm/bun-sqlite'
import { readMigrationFiles } from 'drizzle-orm/migrator'
import { mkdirSync, rmSync, writeFileSync, existsSync, truncateSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { ConfigError } from './config'
import { dataDirPaths, lockHolder, lockingCommandIn, openDataDir } from './data-dir'
import { appliedMigrationCount, schemaVersion } from './db/open'
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

test('an older server still serving the directory: its database is not migrated under it (an upgrade started before the old serve stopped)', async () => {
  const root = tempDir('miniship-datadir-')
  made.push(root)
  // the database a previous release left: its first 7 migrations
  const client = new Database(join(root, 'miniship.db'), { create: true, strict: true })
  const migrations = readMigrationFiles({ migrationsFolder: join(import.meta.dir, '..', 'migrations') })
  const internals = drizzle(client) as unknown as { dialect: { migrate(list: typeof migrations, session: unknown, config: object): void }; session: unknown }
  internals.dialect.migrate(migrations.slice(0, 7), internals.session, { migrationsFolder: '' })
  client.close()
  const applied = () => {
    const db = new Database(join(root, 'miniship.db'), { readonly: true })
    try {
      return appliedMigrationCount(db)
    } finally {
      db.close()
    }
  }
  // a live miniship holding the lock, as the old `serve` does
  const older = Bun.spawn(['bash', '-c', 'exec -a miniship sleep 30'])
  try {
    await Bun.sleep(50)
    writeFileSync(dataDirPaths(root).lock, `${older.pid}\n`)
    expect(lockHolder(dataDirPaths(root))).toBe(older.pid)
    expect(() => openDataDir(root)).toThrow(ConfigError)
    expect(() => openDataDir(root)).toThrow(
      new RegExp(`another miniship \\(pid ${older.pid}\\) is already serving .* on database schema version 7; stop it first: this miniship would apply ${schemaVersion - 7} migrations`),
    )
    expect(applied()).toBe(7)
  } finally {
    older.kill()
    await older.exited
  }
  // once it has stopped (its lock is stale), the directory opens and is migrated
  const { db } = openDataDir(root)
  db.$client.close()
  expect(applied()).toBe(schemaVersion)
})

describe('a directory that is not miniship\'s is refused', () => {
  const fresh = () => {
    const root = tempDir('miniship-datadir-')
    made.push(root)
    return root
  }

  test('a non-empty directory of someone else\'s files (say $HOME): ConfigError naming what it holds; nothing is created there', () => {
    const root = fresh()
    writeFileSync(join(root, 'notes.txt'), 'mine')
    mkdirSync(join(root, 'tmp'))
    writeFileSync(join(root, 'tmp', 'draft.txt'), 'also mine')
    expect(() => openDataDir(root)).toThrow(ConfigError)
    expect(() => openDataDir(root)).toThrow(/is not empty and is not a miniship data directory \(it holds notes\.txt\)/)
    expect(existsSync(join(root, 'tmp', 'draft.txt'))).toBe(true)
    expect(existsSync(join(root, 'miniship.db'))).toBe(false)
    expect(existsSync(join(root, 'blobs'))).toBe(false)
  })

  test('an empty directory, a new one, one with only lost+found, and an initialised one are taken', () => {
    const empty = fresh()
    openDataDir(empty).db.$client.close()
    openDataDir(join(fresh(), 'new')).db.$client.close()
    const volume = fresh()
    mkdirSync(join(volume, 'lost+found'))
    openDataDir(volume).db.$client.close()
    const used = initialised()
    writeFileSync(join(used, 'README.operator'), 'notes beside the data are fine once it is miniship\'s')
    openDataDir(used).db.$client.close()
  })
})

describe('modes', () => {
  test('blobs/, blobs/sha256, tmp/ and the blob prefix folders are created 0700', async () => {
    const root = initialised()
    const mode = (path: string) => statSync(path).mode & 0o777
    expect(mode(join(root, 'blobs'))).toBe(0o700)
    expect(mode(join(root, 'blobs', 'sha256'))).toBe(0o700)
    expect(mode(join(root, 'tmp'))).toBe(0o700)
    const { createLocalBlobStore, writeTempBytes } = await import('./storage')
    const store = createLocalBlobStore(dataDirPaths(root))
    const temp = await writeTempBytes(dataDirPaths(root), new TextEncoder().encode('a blob'))
    await store.commit(temp)
    expect(mode(join(root, 'blobs', 'sha256', temp.sha256.slice(0, 2)))).toBe(0o700)
  })
})

test('the command holding the lock is the first subcommand of its command line, not a word of its arguments', () => {
  const line = (...words: string[]) => `${words.join('\u0000')}\u0000`
  const table: [string, string | null][] = [
    [line('/usr/local/bin/miniship', 'serve', '--data-dir', '/var/lib/miniship'), null],
    [line('/usr/local/bin/miniship', 'restore', 'backup.tar.gz', '--force'), 'restore'],
    [line('bun', 'src/main.ts', 'migrate-storage', '--to', 's3'), 'migrate-storage'],
    [line('miniship', 'doctor', '--fix'), 'doctor --fix'],
    // a data directory (or any argument) named like a subcommand does not make serve another command
    [line('/usr/local/bin/miniship', 'serve', '--data-dir', 'doctor'), null],
    [line('miniship', 'serve', '--data-dir', 'restore'), null],
    [line('miniship', 'doctor', '--data-dir', 'restore'), 'doctor --fix'],
  ]
  for (const [commandLine, expected] of table) expect([commandLine, lockingCommandIn(commandLine)]).toEqual([commandLine, expected])
})
