// Webhooks on the compiled binary: `miniship webhooks …` against `serve --webhooks-allow-private`, whose worker delivers to a receiver on 127.0.0.1.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { createHmac } from 'node:crypto'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import type { Server } from 'bun'
import { callApi, runBinary, startBinary, tempDir, type RunningBinary, setUpFirstAdmin } from './support'

let dir: string
let server: RunningBinary
let token: string
let receiver: Server<undefined>
const received: { headers: Headers; body: string }[] = []

beforeAll(async () => {
  dir = tempDir('miniship-webhooks-e2e-')
  receiver = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(request) {
      received.push({ headers: request.headers, body: await request.text() })
      return new Response('ok')
    },
  })
  server = await startBinary({ dataDir: join(dir, 'data'), args: ['--webhooks-allow-private'] })
  // register opens once the first administrator exists (decisions §13)
  await setUpFirstAdmin(server)
  const registered = await callApi(server.baseUrl, 'POST', '/api/auth/register', { json: { email: 'owner@example.test', password: 'owner-password', displayName: 'Owner' } })
  token = registered.body.accessToken
  expect((await callApi(server.baseUrl, 'POST', '/api/mini-apps', { token, json: { appId: 'shop', name: 'Shop' } })).status).toBe(201)
}, 120_000)

afterAll(async () => {
  if (server) await server.stop()
  receiver?.stop(true)
  rmSync(dir, { recursive: true, force: true })
})

const cli = (args: string[]) => runBinary(args, { env: { XDG_CONFIG_HOME: join(dir, 'config'), MINISHIP_SERVER: server.baseUrl, MINISHIP_TOKEN: token } })

test('miniship webhooks create, ls, test, deliveries and rm; the server delivers signed', async () => {
  const url = `http://127.0.0.1:${receiver.port}/hook`
  const created = await cli(['webhooks', 'create', '--app', 'shop', '--url', url, '--events', 'release.published,rollout.paused', '--json'])
  expect(created.exitCode).toBe(0)
  const hook = JSON.parse(created.stdout)
  expect(hook).toMatchObject({ url, events: ['release.published', 'rollout.paused'], format: 'json' })
  expect(hook.secret).toStartWith('whsec_')

  const text = await cli(['webhooks', 'ls', '--app', 'shop'])
  expect(text.exitCode).toBe(0)
  expect(text.stdout).toContain(hook.id)
  expect(text.stdout).toContain('release.published,rollout.paused')
  const listed = await cli(['webhooks', 'ls', '--app', 'shop', '--json'])
  expect(JSON.parse(listed.stdout).webhooks).toHaveLength(1)
  expect(listed.stdout).not.toContain(hook.secret)

  const tested = await cli(['webhooks', 'test', hook.id, '--app', 'shop', '--json'])
  expect(tested.exitCode).toBe(0)
  expect(JSON.parse(tested.stdout)).toMatchObject({ event: 'webhook.test', status: 'pending' })
  for (let i = 0; i < 100 && received.length === 0; i++) await Bun.sleep(50)
  expect(received).toHaveLength(1)
  const [delivery] = received
  expect(delivery!.headers.get('x-miniship-event')).toBe('webhook.test')
  expect(delivery!.headers.get('x-miniship-signature')).toBe(`sha256=${createHmac('sha256', hook.secret).update(delivery!.body).digest('hex')}`)

  let deliveries: { status: string }[] = []
  for (let i = 0; i < 50; i++) {
    deliveries = JSON.parse((await cli(['webhooks', 'deliveries', hook.id, '--app', 'shop', '--json'])).stdout).deliveries
    if (deliveries[0]?.status === 'delivered') break
    await Bun.sleep(50)
  }
  expect(deliveries).toMatchObject([{ event: 'webhook.test', status: 'delivered', attempts: 1, responseStatus: 200 }])
  const table = await cli(['webhooks', 'deliveries', hook.id, '--app', 'shop'])
  expect(table.stdout).toContain('HTTP 200')
  // the console's word for it, not the API's value
  expect(table.stdout).toContain('Delivered')

  const removed = await cli(['webhooks', 'rm', hook.id, '--app', 'shop'])
  expect(removed.exitCode).toBe(0)
  expect((await cli(['webhooks', 'ls', '--app', 'shop'])).stdout).toContain('has no webhooks')
}, 60_000)

test('refusals: a URL that is not http(s) exits 1 with the server\'s code, unknown events exit 2, an unknown webhook exits 1; --help has examples', async () => {
  const refused = await cli(['webhooks', 'create', '--app', 'shop', '--url', 'ftp://example.com/hook', '--json'])
  expect(refused.exitCode).toBe(1)
  expect(JSON.parse(refused.stdout).error.code).toBe('WEBHOOK_URL_NOT_ALLOWED')
  const badEvents = await cli(['webhooks', 'create', '--app', 'shop', '--url', 'https://93.184.216.34/hook', '--events', 'release.exploded'])
  expect(badEvents.exitCode).toBe(2)
  expect(badEvents.stderr).toContain('--events must list one or more of')
  const unknown = await cli(['webhooks', 'deliveries', 'nope', '--app', 'shop'])
  expect(unknown.exitCode).toBe(1)
  expect(unknown.stderr).toContain('WEBHOOK_NOT_FOUND')
  for (const command of ['ls', 'create', 'rm', 'test', 'deliveries']) {
    const help = await cli(['webhooks', command, '--help'])
    expect({ command, exitCode: help.exitCode }).toEqual({ command, exitCode: 0 })
    expect(help.stdout).toContain('$ miniship webhooks')
  }
}, 60_000)

test('serve stops only after the delivery in flight has its answer, and the next start does not send it again', async () => {
  const arrivals: number[] = []
  const slow = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch() {
      arrivals.push(Date.now())
      await Bun.sleep(1500)
      return new Response('ok')
    },
  })
  const dataDir = join(dir, 'shutdown')
  let running = await startBinary({ dataDir, args: ['--webhooks-allow-private'] })
  try {
    await setUpFirstAdmin(running)
    const owner = (await callApi(running.baseUrl, 'POST', '/api/auth/register', { json: { email: 'slow@example.test', password: 'slow-password', displayName: 'Slow' } })).body.accessToken
    const app = (await callApi(running.baseUrl, 'POST', '/api/mini-apps', { token: owner, json: { appId: 'slow', name: 'Slow' } })).body
    const hook = (await callApi(running.baseUrl, 'POST', `/api/mini-apps/${app.id}/webhooks`, { token: owner, json: { url: `http://127.0.0.1:${slow.port}/hook` } })).body
    expect((await callApi(running.baseUrl, 'POST', `/api/mini-apps/${app.id}/webhooks/${hook.id}/test`, { token: owner })).status).toBe(200)
    for (let i = 0; i < 100 && arrivals.length === 0; i++) await Bun.sleep(20)
    expect(arrivals).toHaveLength(1)
    // SIGTERM while the receiver is still answering: serve waits for it (bounded), then exits 0
    expect(await running.stop()).toBe(0)
    running = await startBinary({ dataDir, args: ['--webhooks-allow-private'] })
    const deliveries = (await callApi(running.baseUrl, 'GET', `/api/mini-apps/${app.id}/webhooks/${hook.id}/deliveries`, { token: owner })).body.deliveries
    expect(deliveries).toMatchObject([{ event: 'webhook.test', status: 'delivered', attempts: 1, responseStatus: 200 }])
    await Bun.sleep(700)
    expect(arrivals).toHaveLength(1)
  } finally {
    await running.stop()
    slow.stop(true)
  }
}, 60_000)
