// `miniship backup` and `restore` as an operator's script runs them: --json's result documents, and the exit code of a wrong path.
import { afterAll, expect, test } from 'bun:test'
import { existsSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { openDataDir } from '../data-dir'
import { closeDatabase } from '../db/open'
import { tempDir } from '../test-support'
import { sizeText } from '../terminal/size'
import { jsonDocument, runCli } from './test-run'

const root = tempDir('miniship-backup-cli-')
afterAll(() => rmSync(root, { recursive: true, force: true }))

test('backup --json, then restore --json: one result document each', async () => {
  const dataDir = join(root, 'data')
  closeDatabase(openDataDir(dataDir).db)
  const archive = join(root, 'nightly.tar.gz')
  const backup = await runCli(['backup', '--data-dir', dataDir, '--out', archive, '--json'])
  expect(backup.exitCode).toBe(0)
  expect(jsonDocument(backup)).toMatchObject({ file: archive, storedFiles: 0, storedFilesInArchive: true, archiveBytes: expect.any(Number), schemaVersion: expect.any(Number) })
  const restored = join(root, 'restored')
  const restore = await runCli(['restore', archive, '--data-dir', restored, '--json'])
  expect(restore.exitCode).toBe(0)
  expect(jsonDocument(restore)).toMatchObject({ file: archive, dataDir: restored, storedFiles: 0, replaced: false, migrations: 0 })
})

test('restore says when the backup was taken as the other commands write a moment (it printed the raw ISO string)', async () => {
  const dataDir = join(root, 'data-taken')
  closeDatabase(openDataDir(dataDir).db)
  const archive = join(root, 'taken.tar.gz')
  expect((await runCli(['backup', '--data-dir', dataDir, '--out', archive])).exitCode).toBe(0)
  const restore = await runCli(['restore', archive, '--data-dir', join(root, 'restored-taken')])
  expect(restore.exitCode).toBe(0)
  expect(restore.stdout).toMatch(/\(taken \d{4}-\d\d-\d\d \d\d:\d\d UTC by miniship /)
})

test('restore of an archive that does not exist is bad input: exit 2 (as any other), not a failed restore', async () => {
  const run = await runCli(['restore', join(root, 'missing.tar.gz'), '--data-dir', join(root, 'elsewhere'), '--json'])
  expect(run.exitCode).toBe(2)
  expect(jsonDocument(run)).toEqual({ error: { code: 'ARCHIVE_NOT_FOUND', message: expect.stringContaining('missing.tar.gz does not exist') } })
  const directory = await runCli(['restore', root, '--data-dir', join(root, 'elsewhere'), '--json'])
  expect(directory.exitCode).toBe(2)
  expect(directory.stderr).toContain('is not a file')
  expect(jsonDocument(directory)).toEqual({ error: { code: 'ARCHIVE_NOT_FOUND', message: expect.stringContaining('is not a file') } })
})

// it was exit 1, RESTORE_FAILED: the directory must change (or --force be given) before the same restore can work
test('restore into a directory that is not empty, without --force, is bad input: exit 2, DATA_DIR_NOT_EMPTY, and the directory untouched', async () => {
  const dataDir = join(root, 'data-full')
  closeDatabase(openDataDir(dataDir).db)
  const archive = join(root, 'full.tar.gz')
  expect((await runCli(['backup', '--data-dir', dataDir, '--out', archive])).exitCode).toBe(0)
  const target = join(root, 'occupied')
  closeDatabase(openDataDir(target).db)
  writeFileSync(join(target, 'keep.txt'), 'mine')
  const run = await runCli(['restore', archive, '--data-dir', target, '--json'])
  expect(run.exitCode).toBe(2)
  expect(jsonDocument(run)).toEqual({ error: { code: 'DATA_DIR_NOT_EMPTY', message: `${target} is not empty; restore into an empty or new directory, or pass --force to replace its contents` } })
  const text = await runCli(['restore', archive, '--data-dir', target])
  expect(text.exitCode).toBe(2)
  expect(text.stderr).toContain('pass --force to replace its contents')
  expect(existsSync(join(target, 'keep.txt'))).toBe(true)
})

// it was exit 1, BACKUP_FAILED, while restore's archive that does not exist was exit 2: both are a wrong path typed
test('backup --out in a directory that does not exist is bad input as well: exit 2, OUT_DIR_NOT_FOUND, and nothing written', async () => {
  const dataDir = join(root, 'data-out')
  closeDatabase(openDataDir(dataDir).db)
  const aFile = join(root, 'a-file')
  writeFileSync(aFile, 'not a directory')
  const table: [string, string][] = [
    [join(root, 'no-such-dir', 'nightly.tar.gz'), `the directory ${join(root, 'no-such-dir')} for nightly.tar.gz does not exist`],
    // a file where a directory goes: stat said ENOTDIR (exit 1, FAILED)
    [join(aFile, 'nightly.tar.gz'), `${aFile}, where nightly.tar.gz would go, is a file, not a directory`],
    [join(aFile, 'deeper', 'nightly.tar.gz'), `the directory ${join(aFile, 'deeper')} for nightly.tar.gz does not exist`],
    [`${aFile}/`, `${aFile} is a file, not a directory to put the archive in`],
    [join(aFile, 'deeper') + '/', `could not create the directory ${join(aFile, 'deeper')}: a directory on its way is a file`],
  ]
  for (const [out, message] of table) {
    for (const json of [false, true]) {
      const run = await runCli(['backup', '--data-dir', dataDir, '--out', out, ...(json ? ['--json'] : [])])
      expect(run.exitCode).toBe(2)
      expect(run.stderr).toStartWith(`miniship: ${message}`)
      expect(run.stderr).not.toContain('backup failed')
      if (json) expect(jsonDocument(run)).toEqual({ error: { code: 'OUT_DIR_NOT_FOUND', message: expect.stringContaining(message) } })
    }
  }
  expect(existsSync(join(root, 'no-such-dir'))).toBe(false)
})

test('backup --out at something that exists and is no regular file (/dev/null) is bad input: exit 2, OUT_NOT_A_FILE', async () => {
  const dataDir = join(root, 'data-devnull')
  closeDatabase(openDataDir(dataDir).db)
  const run = await runCli(['backup', '--data-dir', dataDir, '--out', '/dev/null', '--json'])
  expect(run.exitCode).toBe(2)
  expect(run.stderr).toStartWith('miniship: /dev/null exists and is not a file; choose another --out')
  expect(jsonDocument(run)).toEqual({ error: { code: 'OUT_NOT_A_FILE', message: '/dev/null exists and is not a file; choose another --out' } })
})

// root reads any file, so only a run as another user can see the refusal
test.skipIf(process.getuid?.() === 0)('restore of an archive this user may not read: exit 2, ARCHIVE_UNREADABLE', async () => {
  const archive = join(root, 'unreadable.tar.gz')
  writeFileSync(archive, 'x', { mode: 0o000 })
  const run = await runCli(['restore', archive, '--data-dir', join(root, 'elsewhere-unreadable'), '--json'])
  expect(run.exitCode).toBe(2)
  expect(jsonDocument(run)).toMatchObject({ error: { code: 'ARCHIVE_UNREADABLE' } })
})

test('backup says how big the archive is in a unit that shows it: a fresh installation is some KB, not 0.0 MB', async () => {
  const dataDir = join(root, 'data-small')
  closeDatabase(openDataDir(dataDir).db)
  const archive = join(root, 'small.tar.gz')
  const backup = await runCli(['backup', '--data-dir', dataDir, '--out', archive])
  expect(backup.exitCode).toBe(0)
  expect(backup.stdout).not.toContain('0.0 MB')
  expect(backup.stdout).toMatch(/, \d+ KB\)\n?$/)
  expect([512, 48_150, 3 * 1024 * 1024, 5 * 1024 * 1024 * 1024].map(sizeText)).toEqual(['512 B', '47 KB', '3.0 MB', '5.00 GB'])
})
