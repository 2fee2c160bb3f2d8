// The binary run as a user who may not read (part of) the data directory: an operator who ran `doctor`
// or `serve` as the wrong user, or chowned the data directory half-way. The answer names what cannot
// be read and why, instead of a file that does not exist or a stored file "missing" to restore.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { chmodSync, chownSync, copyFileSync, mkdirSync, readdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { binaryPath, callApi, cleanEnv, runBinary, setUpFirstAdmin, startBinary, tempDir, type RunResult } from './support'
import { uploadForm } from '../test-fixtures'

const isRoot = process.getuid?.() === 0
const setpriv = Bun.which('setpriv')
/** As root, the commands run as nobody (root reads everything); otherwise as this user, with modes taken away. */
const runnable = !isRoot || setpriv !== null
const nobody = 65534

let dir: string
let binary: string

async function runAsOther(args: string[]): Promise<RunResult> {
  const command = isRoot ? [setpriv!, `--reuid=${nobody}`, `--regid=${nobody}`, '--clear-groups', binary, ...args] : [binary, ...args]
  const child = Bun.spawn(command, { cwd: dir, env: cleanEnv(), stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
  const [stdout, stderr, exitCode] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited])
  return { exitCode, stdout, stderr }
}

/** Gives every entry under `path` to nobody (as root), so that only what a test takes away is unreadable. */
function giveAway(path: string): void {
  if (!isRoot) return
  chownSync(path, nobody, nobody)
  for (const entry of readdirSync(path, { withFileTypes: true, recursive: true })) chownSync(join(entry.parentPath, entry.name), nobody, nobody)
}

/** Makes `path` unreadable to the user the commands run as. */
function takeAway(path: string): void {
  if (isRoot) chownSync(path, 0, 0)
  chmodSync(path, 0o700)
  if (!isRoot) chmodSync(path, 0o000)
}

beforeAll(async () => {
  dir = tempDir('miniship-permissions-e2e-')
  // the binary and the directories on the way to the data directories must be reachable by nobody
  chmodSync(dir, 0o755)
  binary = join(dir, 'miniship')
  copyFileSync(await binaryPath(), binary)
  chmodSync(binary, 0o755)
}, 120_000)

afterAll(() => {
  if (!dir) return
  // give back what was taken away, so that the directory can be removed without root
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) if (entry.isDirectory()) chmodSync(join(entry.parentPath, entry.name), 0o700)
  rmSync(dir, { recursive: true, force: true })
})

describe.skipIf(!runnable)('a data directory this user may not read', () => {
  // exit 2 and DATA_DIR_UNREADABLE from every command (restore and migrate-storage were not tried before)
  test('every command names the data directory and the permission, not a storage.json it never had: exit 2, DATA_DIR_UNREADABLE', async () => {
    const dataDir = join(dir, 'other-users')
    mkdirSync(dataDir, { mode: 0o700 })
    takeAway(dataDir)
    // an archive nobody may read, so that restore gets as far as the data directory
    const source = join(dir, 'archive-source')
    expect((await runBinary(['init', '--data-dir', source], { binary })).exitCode).toBe(0)
    const archive = join(dir, 'readable.tar.gz')
    expect((await runBinary(['backup', '--data-dir', source, '--out', archive], { binary })).exitCode).toBe(0)
    chmodSync(archive, 0o644)
    const s3 = ['--storage', 's3', '--s3-bucket', 'b', '--s3-endpoint', 'http://127.0.0.1:9']
    const commands = [
      ['doctor'],
      ['doctor', '--json'],
      ['doctor', '--fix', '--json'],
      ['serve', '--port', '0', '--host', '127.0.0.1', '--json'],
      ['backup', '--json', '--out', join(dir, 'b.tar.gz')],
      ['init', '--json'],
      ['create-admin', '--email', 'a@example.test', '--password-stdin', '--json'],
      ['restore', archive, '--force', '--json'],
      ['migrate-storage', '--to', 's3', ...s3, '--json'],
    ]
    for (const args of commands) {
      const result = await runAsOther([...args, '--data-dir', dataDir])
      expect({ args, exitCode: result.exitCode }).toEqual({ args, exitCode: 2 })
      const text = args.includes('--json') ? JSON.parse(result.stdout).error.message : result.stderr
      expect(text).toContain(`data directory ${dataDir} cannot be read by this user (permission denied): run miniship as the user that owns it`)
      expect(text).not.toContain('storage.json')
      expect(text).not.toContain('EACCES')
      if (args.includes('--json')) expect({ args, code: JSON.parse(result.stdout).error.code }).toEqual({ args, code: 'DATA_DIR_UNREADABLE' })
    }
  }, 60_000)

  test('doctor reports a stored file it may not read as unreadable, not as missing to put back from a backup', async () => {
    const dataDir = join(dir, 'half-chowned')
    const server = await startBinary({ dataDir })
    try {
      await setUpFirstAdmin(server)
      const token = (await callApi(server.baseUrl, 'POST', '/api/auth/login', { json: { email: 'first-admin@example.test', password: 'first-admin-password' } })).body.accessToken
      expect((await callApi(server.baseUrl, 'POST', '/api/mini-apps', { token, json: { appId: 'com.example.perm', name: 'Perm' } })).status).toBe(201)
      expect((await callApi(server.baseUrl, 'POST', '/api/mini-apps/by-app-id/com.example.perm/versions/upload', { token, body: uploadForm('com.example.perm') })).status).toBe(201)
    } finally {
      expect(await server.stop()).toBe(0)
    }
    giveAway(dataDir)
    const healthy = await runAsOther(['doctor', '--data-dir', dataDir])
    expect(healthy.stderr + healthy.stdout).not.toContain('PROBLEM')
    expect(healthy.exitCode).toBe(0)

    const shard = readdirSync(join(dataDir, 'blobs', 'sha256'))[0]!
    takeAway(join(dataDir, 'blobs', 'sha256', shard))
    const result = await runAsOther(['doctor', '--data-dir', dataDir, '--json'])
    expect(result.exitCode).toBe(1)
    const report = JSON.parse(result.stdout)
    const stored = report.problems.filter((problem: string) => problem.startsWith('stored file '))
    expect(stored.length).toBeGreaterThan(0)
    for (const problem of stored) {
      expect(problem).toContain(`blobs/sha256/${shard}/`)
      expect(problem).toContain('cannot be read by this user (permission denied)')
      expect(problem).not.toContain('is missing')
      expect(problem).not.toContain('to put back')
    }
  }, 120_000)
})
