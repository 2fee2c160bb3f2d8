// A Host header that is not a host name, as `serve` receives it: no 500, no 404 for a real route, and 400
// INVALID_HOST where a URL is built on it (decisions §1, docs/api.md). Bun leaves the authority out of
// request.url for some such Hosts ("evil example") and keeps it unparsed for others ("x:y:z"), so only a
// served request shows what happens: the test starts the server in this process.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { loadConfig } from '../config'
import { startServer, type RunningServer } from '../cli/serve'
import { tempDir } from '../test-support'
import { uploadForm } from '../test-fixtures'

let dataDir: string
let running: RunningServer
let port: number
const appId = 'com.example.hosts'

beforeAll(async () => {
  dataDir = tempDir()
  running = await startServer(loadConfig({ dataDir, host: '127.0.0.1', port: '0', rateLimit: 'off' }, {}))
  port = running.server.port!
  // a published release, so that install info gets as far as building its URLs
  const origin = `http://127.0.0.1:${port}`
  const setup = await fetch(`${origin}/setup`, { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ token: running.setupToken!, email: 'admin@example.test', password: 'correct horse battery' }).toString() })
  expect(setup.status).toBeLessThan(400)
  const json = (body: unknown, token?: string) => ({ method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) } })
  const { accessToken } = (await (await fetch(`${origin}/api/auth/login`, json({ email: 'admin@example.test', password: 'correct horse battery' }))).json()) as { accessToken: string }
  const miniApp = (await (await fetch(`${origin}/api/mini-apps`, json({ appId, name: 'Hosts' }, accessToken))).json()) as { id: string }
  const uploaded = await fetch(`${origin}/api/mini-apps/by-app-id/${appId}/versions/upload`, { method: 'POST', body: uploadForm(appId), headers: { authorization: `Bearer ${accessToken}` } })
  expect(uploaded.status).toBe(201)
  const { id } = (await uploaded.json()) as { id: string }
  expect((await fetch(`${origin}/api/mini-apps/${miniApp.id}/versions/${id}/publish`, json({}, accessToken))).status).toBe(200)
})
afterAll(async () => {
  await running?.stop()
  rmSync(dataDir, { recursive: true, force: true })
})

/** One request over a raw socket (fetch will not send such a Host); answers the status and the error code. */
async function send(method: string, path: string, host: string, json?: unknown): Promise<{ status: number; code: string | undefined; body: Record<string, unknown> }> {
  const body = json === undefined ? '' : JSON.stringify(json)
  const head = `${method} ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n${json === undefined ? '' : `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n`}\r\n`
  const text = await new Promise<string>((resolve, reject) => {
    let out = ''
    Bun.connect({
      hostname: '127.0.0.1',
      port,
      socket: {
        open: (socket) => void socket.write(head + body),
        data: (_socket, chunk) => void (out += chunk.toString()),
        close: () => resolve(out),
        error: (_socket, error) => reject(error),
      },
    }).catch(reject)
  })
  const status = Number(text.split(' ')[1])
  const rest = text.slice(text.indexOf('\r\n\r\n') + 4)
  let parsed: Record<string, unknown> = {}
  try {
    parsed = JSON.parse(rest)
  } catch {}
  return { status, code: parsed.code as string | undefined, body: parsed }
}

const badHosts = ['x:y:z', '[zz]', 'h:99999', 'evil example', 'evil.example/phish', 'user@evil.example', 'evil"example', "evil'example"]

describe('a Host header that is not a host name', () => {
  test('a route that builds no URL still answers as itself: login is 401 INVALID_CREDENTIALS, not 500 or 404', async () => {
    for (const host of badHosts) {
      const answer = await send('POST', '/api/auth/login', host, { email: 'nobody@example.com', password: 'wrong password' })
      expect({ host, status: answer.status, code: answer.code }).toEqual({ host, status: 401, code: 'INVALID_CREDENTIALS' })
    }
  })

  test('the device-flow session, whose verificationUrl is built on the Host, is 400 INVALID_HOST', async () => {
    for (const host of badHosts) {
      const answer = await send('POST', '/api/auth/cli/sessions', host)
      expect({ host, status: answer.status, code: answer.code }).toEqual({ host, status: 400, code: 'INVALID_HOST' })
    }
  })

  test('install info, whose URLs are built on the Host, is 400 INVALID_HOST rather than URLs no client can parse', async () => {
    for (const host of badHosts) {
      const answer = await send('GET', `/api/mini-apps/access/apps/${appId}/release/install`, host)
      expect({ host, status: answer.status, code: answer.code }).toEqual({ host, status: 400, code: 'INVALID_HOST' })
    }
  })

  test('good Hosts are unchanged: a name with a port, an IPv6 literal, a short name, a docker-compose service name', async () => {
    for (const host of ['apps.example.com:8443', '[::1]:3001', 'nas', 'miniship_app:3000', 'miniship_app']) {
      const answer = await send('POST', '/api/auth/cli/sessions', host)
      expect({ host, status: answer.status }).toEqual({ host, status: 201 })
      expect(String(answer.body.verificationUrl)).toStartWith(`http://${host}/cli/authorize?code=`)
      const install = await send('GET', `/api/mini-apps/access/apps/${appId}/release/install`, host)
      expect({ host, status: install.status }).toEqual({ host, status: 200 })
      expect(String(install.body.bundleUrl)).toStartWith(`http://${host}/api/mini-apps/access/apps/${appId}/release/`)
    }
  })
})
