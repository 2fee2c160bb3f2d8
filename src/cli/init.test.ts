// `miniship init` run as a user runs it: what it prints next must work as printed.
import { afterAll, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { tempDir } from '../test-support'
import { jsonDocument, runCli } from './test-run'

const root = tempDir('miniship-init-')
afterAll(() => rmSync(root, { recursive: true, force: true }))

test('the next step it prints names the data directory, quoted when it has to be', async () => {
  const dataDir = join(root, 'my data')
  const run = await runCli(['init', '--data-dir', dataDir])
  expect(run.exitCode).toBe(0)
  expect(run.stdout).toContain(`Next: miniship create-admin --data-dir '${dataDir}' --email you@example.com`)
  // following it creates the administrator in that directory, not in ./data
  const created = await runCli(['create-admin', '--data-dir', dataDir, '--email', 'admin@example.com', '--password-stdin'], { stdin: 'a-password\n', cwd: root })
  expect(created.exitCode).toBe(0)
  expect(created.stdout).toContain(`in ${dataDir}`)
})

test('--json: one document saying what was done and what comes next', async () => {
  const dataDir = join(root, 'json')
  const first = await runCli(['init', '--data-dir', dataDir, '--json'])
  expect(first.exitCode).toBe(0)
  expect(jsonDocument(first)).toEqual({ dataDir, created: true, schemaVersion: expect.any(Number), next: `miniship create-admin --data-dir ${dataDir} --email you@example.com` })
  // run again before anyone made an administrator: that is still the next step
  const again = await runCli(['init', '--data-dir', dataDir, '--json'])
  expect(jsonDocument(again)).toMatchObject({ dataDir, created: false, next: `miniship create-admin --data-dir ${dataDir} --email you@example.com` })
  const text = await runCli(['init', '--data-dir', dataDir])
  expect(text.stdout).toBe(`Data directory ${dataDir} is already initialised (schema version ${jsonDocument(first).schemaVersion}). It has no administrator yet. Next: miniship create-admin --data-dir ${dataDir} --email you@example.com\n`)
  // once there is one, nothing comes next
  expect((await runCli(['create-admin', '--data-dir', dataDir, '--email', 'admin@example.com', '--password-stdin'], { stdin: 'a-password\n' })).exitCode).toBe(0)
  expect(jsonDocument(await runCli(['init', '--data-dir', dataDir, '--json']))).toMatchObject({ dataDir, created: false, next: null })
  expect((await runCli(['init', '--data-dir', dataDir])).stdout).toBe(`Data directory ${dataDir} is already initialised (schema version ${jsonDocument(first).schemaVersion}).\n`)
})
