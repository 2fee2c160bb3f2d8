// `miniship backup` and `restore` as an operator's script runs them: --json's result documents, and the exit code of a wrong path.
import { afterAll, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { openDataDir } from '../data-dir'
import { closeDatabase } from '../db/open'
import { tempDir } from '../test-support'
import { archiveSize } from './backup'
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
  expect(jsonDocument(run)).toEqual({ error: { code: 'USAGE', message: expect.stringContaining('missing.tar.gz does not exist') } })
  const directory = await runCli(['restore', root, '--data-dir', join(root, 'elsewhere')])
  expect(directory.exitCode).toBe(2)
  expect(directory.stderr).toContain('is not a file')
})

test('backup says how big the archive is in a unit that shows it: a fresh installation is some KB, not 0.0 MB', async () => {
  const dataDir = join(root, 'data-small')
  closeDatabase(openDataDir(dataDir).db)
  const archive = join(root, 'small.tar.gz')
  const backup = await runCli(['backup', '--data-dir', dataDir, '--out', archive])
  expect(backup.exitCode).toBe(0)
  expect(backup.stdout).not.toContain('0.0 MB')
  expect(backup.stdout).toMatch(/, \d+ KB\)\n?$/)
  expect([512, 48_150, 3 * 1024 * 1024, 5 * 1024 * 1024 * 1024].map(archiveSize)).toEqual(['512 B', '47 KB', '3.0 MB', '5.00 GB'])
})
