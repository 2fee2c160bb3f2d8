// The request log on the compiled binary (issue 30): SIGTERM loses no line, --access-log writes/off, the metrics still count every request.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { binaryCopy, runBinary, startBinary } from './support'

const metricsToken = 'e2e-metrics-token-0123456789'
let dir: string
let binary: string

beforeAll(async () => {
  ;({ dir, binary } = await binaryCopy())
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** The request lines a server wrote, parsed. */
const requestLines = (stdout: string) =>
  stdout
    .split('\n')
    .filter((line) => line.startsWith('{"time"'))
    .map((line) => JSON.parse(line) as { method: string; path: string; status: number; requestId: string })

/** `miniship_http_requests_total` of a route group, over its status classes. */
async function requestsCounted(baseUrl: string, group: string): Promise<number> {
  const text = await (await fetch(`${baseUrl}/api/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } })).text()
  let total = 0
  for (const match of text.matchAll(new RegExp(`^miniship_http_requests_total\\{group="${group}",status_class="[^"]+"\\} (\\d+)$`, 'gm'))) total += Number(match[1])
  return total
}

describe('the request log', () => {
  test('SIGTERM right after a burst of requests: every answered request has its line on stdout', async () => {
    const server = await startBinary({ dataDir: join(dir, 'all'), cwd: dir, binary })
    const ids: string[] = []
    // more than one 64 KiB batch, and a last batch still waiting for its 100 ms when SIGTERM comes
    const paths = ['/api/health', '/api/mini-apps/access/apps/com.example.none/update?platform=ios&currentVersion=1.0.0&deviceId=d1', '/api/mini-apps/access/apps/com.example.none/release/install', '/api/nothing-here?token=secret']
    for (let round = 0; round < 40; round++) {
      const answers = await Promise.all(Array.from({ length: 25 }, (_, index) => fetch(`${server.baseUrl}${paths[index % paths.length]}`)))
      for (const answer of answers) {
        await answer.arrayBuffer()
        ids.push(answer.headers.get('x-request-id')!)
      }
    }
    expect(await server.stop('SIGTERM')).toBe(0)
    const lines = requestLines(server.output().stdout)
    const logged = new Set(lines.map((line) => line.requestId))
    expect(ids.filter((id) => !logged.has(id))).toEqual([])
    expect(ids).toHaveLength(1000)
    expect(server.output().stdout).not.toContain('secret')
  })

  test('--access-log writes (from the environment): no line for GET or HEAD, one for others; /api/metrics counts every request', async () => {
    const server = await startBinary({ dataDir: join(dir, 'writes'), cwd: dir, binary, env: { MINISHIP_ACCESS_LOG: 'writes' }, args: ['--metrics-token', metricsToken] })
    for (let index = 0; index < 5; index++) await (await fetch(`${server.baseUrl}/api/health`)).arrayBuffer()
    await (await fetch(`${server.baseUrl}/api/health`, { method: 'HEAD' })).arrayBuffer()
    for (let index = 0; index < 3; index++) await (await fetch(`${server.baseUrl}/api/mini-apps/access/apps/com.example.none/update?platform=ios&currentVersion=1.0.0`)).arrayBuffer()
    const login = await fetch(`${server.baseUrl}/api/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': 'write-probe-1' }, body: JSON.stringify({ email: 'nobody@example.com', password: 'wrong password' }) })
    expect(login.status).toBe(401)
    // the start-up probe of /api/health and the six above
    expect(await requestsCounted(server.baseUrl, 'health')).toBeGreaterThanOrEqual(7)
    expect(await requestsCounted(server.baseUrl, 'update_check')).toBe(3)
    expect(await requestsCounted(server.baseUrl, 'auth')).toBe(1)
    expect(await server.stop()).toBe(0)
    const lines = requestLines(server.output().stdout)
    expect(lines.map(({ method, path, status, requestId }) => ({ method, path, status, requestId }))).toEqual([{ method: 'POST', path: '/api/auth/login', status: 401, requestId: 'write-probe-1' }])
  })

  test('--access-log off: no request line at all, the metrics still count; behind a trusted proxy the update check keeps its X-Request-Id', async () => {
    const server = await startBinary({ dataDir: join(dir, 'off'), cwd: dir, binary, args: ['--access-log', 'off', '--metrics-token', metricsToken, '--trust-proxy', 'on'] })
    const update = await fetch(`${server.baseUrl}/api/mini-apps/access/apps/com.example.none/update?platform=ios&currentVersion=1.0.0`, { headers: { 'x-request-id': 'proxy-id-1' } })
    expect(update.headers.get('x-request-id')).toBe('proxy-id-1')
    await fetch(`${server.baseUrl}/api/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
    expect(await requestsCounted(server.baseUrl, 'update_check')).toBe(1)
    expect(await requestsCounted(server.baseUrl, 'auth')).toBe(1)
    expect(await server.stop()).toBe(0)
    expect(requestLines(server.output().stdout)).toEqual([])
  })

  test('a bad --access-log or MINISHIP_ACCESS_LOG is refused naming the setting', async () => {
    const flag = await runBinary(['serve', '--data-dir', join(dir, 'bad'), '--access-log', 'sometimes'], { cwd: dir, binary })
    expect(flag.exitCode).not.toBe(0)
    expect(flag.stderr).toContain('--access-log')
    expect(flag.stderr).toContain('sometimes')
    const env = await runBinary(['serve', '--data-dir', join(dir, 'bad')], { cwd: dir, binary, env: { MINISHIP_ACCESS_LOG: 'sometimes' } })
    expect(env.exitCode).toBe(2)
    expect(env.stderr).toContain('MINISHIP_ACCESS_LOG must be "all", "writes" (only requests other than GET and HEAD) or "off", got "sometimes"')
  })
})
