// `serve --json` on the compiled binary: the start-up lines as one JSON object, the first line of
// stdout, before the request log's lines (which stay as they are); nothing of it on stderr.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { binaryCopy, callApi, runBinary, startBinary } from './support'

let dir: string
let binary: string

beforeAll(async () => {
  ;({ dir, binary } = await binaryCopy())
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** stdout's lines once the server has stopped (everything flushed). */
const linesOf = (stdout: string) => stdout.split('\n').filter((line) => line !== '')

describe('serve --json', () => {
  test('first start: one object with the listening address, data directory, version, the setup link and every note; then the request lines', async () => {
    const dataDir = join(dir, 'fresh')
    const init = await runBinary(['init', '--data-dir', dataDir], { cwd: dir, binary })
    expect(init.exitCode).toBe(0)
    // a stored file no version refers to (a crash between the file and its row): the start removes it and says so
    const orphan = 'half a bundle'
    const sha256 = new Bun.CryptoHasher('sha256').update(orphan).digest('hex')
    mkdirSync(join(dataDir, 'blobs', 'sha256', sha256.slice(0, 2)), { recursive: true })
    writeFileSync(join(dataDir, 'blobs', 'sha256', sha256.slice(0, 2), sha256), orphan)
    const version = (await runBinary(['--version'], { binary })).stdout.trim()

    const server = await startBinary({ dataDir, cwd: dir, binary, args: ['--json', '--public-url', 'http://127.0.0.1:1/miniship'] })
    expect((await callApi(server.baseUrl, 'GET', '/api/info')).status).toBe(200)
    expect(await server.stop()).toBe(0)
    const { stdout, stderr } = server.output()

    const [first, ...rest] = linesOf(stdout)
    const document = JSON.parse(first!)
    expect(Object.keys(document)).toEqual(['version', 'listening', 'port', 'dataDir', 'setup', 'notes'])
    expect(document).toMatchObject({ version, listening: `http://127.0.0.1:${server.port}`, port: server.port, dataDir })
    expect(document.setup).toEqual({ url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:1\/setup\?token=[A-Za-z0-9_-]+$/), createAdmin: `miniship create-admin --data-dir ${dataDir} --email you@example.com` })
    expect(document.notes).toEqual([
      `startup: removed 1 stored file(s) no version refers to (${orphan.length} bytes)`,
      expect.stringContaining('warning: --public-url http://127.0.0.1:1/miniship does not end in /api'),
      `no administrator exists yet. Create one with: miniship create-admin --data-dir ${dataDir} --email you@example.com or open this one-time link to create it in the browser (it works once, until the next restart): ${document.setup.url}`,
    ])
    // every later line is a request line, as without --json: the health polls and /api/info
    expect(rest.length).toBeGreaterThan(0)
    for (const line of rest) expect(Object.keys(JSON.parse(line))).toEqual(['time', 'method', 'path', 'status', 'bytes', 'durationMs', 'requestId'])
    expect(rest.map((line) => JSON.parse(line).path)).toContain('/api/info')
    // none of the start-up lines on stderr; the stop is still said there
    expect(stderr).not.toContain('listening on')
    expect(stderr).not.toContain('setup?token=')
    expect(stderr).not.toContain('no version refers to')
    expect(stderr).toContain('SIGTERM received')
  }, 60_000)

  test('with an administrator: setup null, no notes', async () => {
    const dataDir = join(dir, 'with-admin')
    const created = await runBinary(['create-admin', '--data-dir', dataDir, '--email', 'admin@example.com', '--password-stdin'], { stdin: 'correct horse\n', cwd: dir, binary })
    expect(created.exitCode).toBe(0)
    const server = await startBinary({ dataDir, cwd: dir, binary, args: ['--json'] })
    expect(await server.stop()).toBe(0)
    const document = JSON.parse(linesOf(server.output().stdout)[0]!)
    expect(document).toMatchObject({ listening: `http://127.0.0.1:${server.port}`, dataDir, setup: null, notes: [] })
  }, 60_000)

  test('a start that fails: the error document on stdout, the line on stderr, exit 2', async () => {
    const home = join(dir, 'home')
    mkdirSync(home)
    writeFileSync(join(home, '.bashrc'), 'alias ll="ls -l"')
    const result = await runBinary(['serve', '--data-dir', home, '--port', '0', '--host', '127.0.0.1', '--json'], { cwd: dir, binary })
    expect(result.exitCode).toBe(2)
    expect(JSON.parse(result.stdout)).toEqual({ error: { code: 'USAGE', message: expect.stringContaining('is not empty and is not a miniship data directory') } })
    expect(result.stderr).toContain('is not empty and is not a miniship data directory')
    const bad = await runBinary(['serve', '--data-dir', join(dir, 'never'), '--port', 'http', '--json'], { cwd: dir, binary })
    expect(bad.exitCode).toBe(2)
    expect(JSON.parse(bad.stdout).error.code).toBe('USAGE')
  }, 60_000)
})
