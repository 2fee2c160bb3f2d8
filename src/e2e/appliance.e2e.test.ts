// The binary as an operator meets it: alone in an empty directory, every subcommand, clean stops.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, readdirSync, writeFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { binaryCopy, rawHttp, runBinary, startBinary } from './support'

let dir: string
let binary: string

beforeAll(async () => {
  ;({ dir, binary } = await binaryCopy())
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const run = (args: string[], options: { stdin?: string; env?: Record<string, string> } = {}) => runBinary(args, { ...options, cwd: dir, binary })

describe('the binary alone in an empty directory', () => {
  test('nothing but the binary is there', () => {
    expect(readdirSync(dir)).toEqual(['miniship'])
  })

  test('--version and --help with an example for every subcommand', async () => {
    const version = await run(['--version'])
    expect(version.exitCode).toBe(0)
    expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/)
    const help = await run(['--help'])
    expect(help.exitCode).toBe(0)
    for (const command of ['serve', 'init', 'create-admin', 'doctor', 'backup', 'restore']) {
      expect(help.stdout).toContain(command)
      const sub = await run([command, '--help'])
      expect(sub.exitCode).toBe(0)
      expect(sub.stdout).toContain('Example')
      expect(sub.stdout).toContain(`Usage: miniship ${command}`)
    }
  })

  test('init, create-admin, doctor, serve, login, SIGTERM, restart keeps the data', async () => {
    const init = await run(['init', '--data-dir', 'data'])
    expect(init.exitCode).toBe(0)
    expect(existsSync(join(dir, 'data', 'miniship.db'))).toBe(true)
    const again = await run(['init', '--data-dir', 'data'])
    expect(again.exitCode).toBe(0)
    expect(again.stdout).toContain('already initialised')

    const admin = await run(['create-admin', '--data-dir', 'data', '--email', 'Admin@Example.com', '--password-stdin'], { stdin: 'correct horse\n' })
    expect(admin.stderr).toBe('')
    expect(admin.exitCode).toBe(0)

    const doctor = await run(['doctor', '--data-dir', 'data'])
    expect(doctor.stdout).toContain('OK')
    expect(doctor.exitCode).toBe(0)

    const server = await startBinary({ dataDir: join(dir, 'data'), cwd: dir, binary })
    const health = await fetch(`${server.baseUrl}/api/health`)
    expect(health.status).toBe(200)
    expect(health.headers.get('x-request-id')).toBeTruthy()
    expect((await health.json()).status).toBe('ok')
    const page = await fetch(`${server.baseUrl}/`)
    expect(page.status).toBe(200)
    expect(page.headers.get('content-type')).toContain('text/html')
    const login = await fetch(`${server.baseUrl}/api/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'admin@example.com', password: 'correct horse' }),
    })
    expect(login.status).toBe(200)
    const { accessToken } = await login.json()
    expect(await server.stop('SIGTERM')).toBe(0)
    const logLines = server.output().stdout.trim().split('\n').map((line) => JSON.parse(line))
    expect(logLines.some((entry) => entry.path === '/api/health' && entry.status === 200)).toBe(true)
    expect(existsSync(join(dir, 'data', 'miniship.lock'))).toBe(false)

    const restarted = await startBinary({ dataDir: join(dir, 'data'), cwd: dir, binary })
    const me = await fetch(`${restarted.baseUrl}/api/auth/me`, { headers: { authorization: `Bearer ${accessToken}` } })
    expect(me.status).toBe(200)
    expect((await me.json()).email).toBe('admin@example.com')
    expect(await restarted.stop('SIGINT')).toBe(0)
  })

  test('a bad configuration value stops with one line and exit code 2', async () => {
    const badPort = await run(['serve', '--data-dir', 'data', '--port', 'abc'])
    expect(badPort.exitCode).toBe(2)
    expect(badPort.stderr.trim().split('\n')).toHaveLength(1)
    expect(badPort.stderr).toContain('--port')
    const badEnv = await run(['serve', '--data-dir', 'data'], { env: { MINISHIP_PORT: 'abc' } })
    expect(badEnv.exitCode).toBe(2)
    expect(badEnv.stderr).toContain('MINISHIP_PORT')
    for (const args of [['bogus'], ['serve', '--bogus'], ['--verison'], ['restore'], ['create-admin'], ['serve', '--registration', 'maybe'], ['serve', '--data-dir', 'data', '--host', '999.1.1.1', '--port', '0']]) {
      const bad = await run(args)
      expect({ args, exitCode: bad.exitCode, lines: bad.stderr.trim().split('\n').length }).toEqual({ args, exitCode: 2, lines: 1 })
      expect(bad.stderr).toStartWith('miniship: ')
      expect(bad.stderr).not.toContain('.ts:')
    }
    // an address that cannot be one: refused by the configuration check, whatever the resolver would say
    const badHost = await run(['serve', '--data-dir', 'data', '--host', '999.1.1.1', '--port', '0'])
    expect({ exitCode: badHost.exitCode, lines: badHost.stderr.trim().split('\n').length }).toEqual({ exitCode: 2, lines: 1 })
    expect(badHost.stderr).toContain('--host')
    writeFileSync(join(dir, 'not-a-dir'), 'x')
    const unwritable = await run(['serve', '--data-dir', 'not-a-dir/data'])
    expect(unwritable.exitCode).toBe(2)
    expect(unwritable.stderr.trim().split('\n')).toHaveLength(1)
    expect(unwritable.stderr).toContain('data directory')
  })

  test('what a proxy or a hostile client may send: a short Host, a chunked JSON body over the limit', async () => {
    const server = await startBinary({ dataDir: join(dir, 'data'), cwd: dir, binary })
    try {
      const health = await rawHttp(server.port, 'GET /api/health HTTP/1.1\r\nHost: nas\r\nConnection: close\r\n\r\n')
      expect(health.split('\r\n')[0]).toBe('HTTP/1.1 200 OK')
      const chunk = 'a'.repeat(64 * 1024)
      const chunks = Array.from({ length: 40 }, () => `${chunk.length.toString(16)}\r\n${chunk}\r\n`).join('')
      const tooLarge = await rawHttp(
        server.port,
        `POST /api/auth/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n${chunks}0\r\n\r\n`,
      )
      expect(tooLarge.split('\r\n')[0]).toBe('HTTP/1.1 413 Payload Too Large')
      expect(JSON.parse(tooLarge.slice(tooLarge.indexOf('\r\n\r\n') + 4)).code).toBe('PAYLOAD_TOO_LARGE')
    } finally {
      expect(await server.stop()).toBe(0)
    }
  })

  test('rate limits are the operator\'s to set: --rate-limits login=2 answers the third login 429 with Retry-After', async () => {
    const server = await startBinary({ dataDir: join(dir, 'data'), cwd: dir, binary, args: ['--rate-limits', 'login=2'] })
    try {
      const attempt = () =>
        fetch(`${server.baseUrl}/api/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'nobody@example.com', password: 'wrong password' }) })
      expect((await attempt()).status).toBe(401)
      expect((await attempt()).status).toBe(401)
      const limited = await attempt()
      expect(limited.status).toBe(429)
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0)
      expect((await limited.json()).code).toBe('RATE_LIMITED')
    } finally {
      expect(await server.stop()).toBe(0)
    }
  })

  test('a second server on the same data directory refuses to start', async () => {
    const first = await startBinary({ dataDir: join(dir, 'data'), cwd: dir, binary })
    const second = await run(['serve', '--data-dir', 'data', '--host', '127.0.0.1', '--port', '0'])
    expect(second.exitCode).toBe(2)
    expect(second.stderr).toContain('already serving')
    expect(await first.stop()).toBe(0)
  })

  test('doctor reports a database it cannot open or read', async () => {
    const broken = join(dir, 'broken')
    expect((await run(['init', '--data-dir', 'broken'])).exitCode).toBe(0)
    rmSync(join(broken, 'miniship.db-wal'), { force: true })
    rmSync(join(broken, 'miniship.db-shm'), { force: true })
    writeFileSync(join(broken, 'miniship.db'), 'this is not a database, just text that is long enough to look like a header.....')
    const doctor = await run(['doctor', '--data-dir', 'broken'])
    expect(doctor.exitCode).toBe(1)
    expect(doctor.stdout).toContain('cannot be opened or read')
    const missing = await run(['doctor', '--data-dir', 'nowhere'])
    expect(missing.exitCode).toBe(1)
    expect(missing.stdout).toContain('does not exist')
  })
})
