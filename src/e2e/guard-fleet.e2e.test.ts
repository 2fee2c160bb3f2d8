// Issue 28's done-when on the compiled binary: the fleet simulator (its devices run miniship/sdk) against a release
// rolling out with the guard on. 20 % of devices failing: the guard pauses it and a receiver on 127.0.0.1 gets the
// signed rollout.paused delivery naming F, T and the rate; 2 % failing: no pause, no rollout.paused.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createHmac } from 'node:crypto'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import type { Server } from 'bun'
import { uploadForm } from '../test-fixtures'
import { callApi, runBinary, startBinary, tempDir, type RunningBinary } from './support'

const simulator = join(import.meta.dir, '..', '..', 'scripts', 'simulate-fleet.ts')

let dir: string
let server: RunningBinary
let token: string
let receiver: Server<undefined>
/** every delivery the receiver got: its path, headers and the raw body as sent */
const received: { path: string; headers: Headers; body: string }[] = []

beforeAll(async () => {
  dir = tempDir('miniship-guard-fleet-e2e-')
  receiver = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(request) {
      received.push({ path: new URL(request.url).pathname, headers: request.headers, body: await request.text() })
      return new Response('ok')
    },
  })
  // an administrator made as an operator does (a fresh server takes no self-registration before one exists)
  const dataDir = join(dir, 'data')
  const created = await runBinary(['create-admin', '--data-dir', dataDir, '--email', 'owner@example.test', '--password-stdin'], { stdin: 'owner-password\n' })
  expect(created.exitCode).toBe(0)
  // insights flush every second so the guard checks quickly; webhooks may go to 127.0.0.1; 600 devices from one address
  server = await startBinary({ dataDir, args: ['--insights-flush', '1s', '--webhooks-allow-private', '--rate-limit', 'off'] })
  const login = await callApi(server.baseUrl, 'POST', '/api/auth/login', { json: { email: 'owner@example.test', password: 'owner-password' } })
  expect(login.status).toBe(200)
  token = login.body.accessToken
}, 120_000)

afterAll(async () => {
  if (server) expect(await server.stop()).toBe(0)
  receiver?.stop(true)
  rmSync(dir, { recursive: true, force: true })
})

const call = (method: string, path: string, json?: unknown) => callApi(server.baseUrl, method, path, { token, json })

/**
 * A miniapp with 1.0.0 complete, the guard on for stable (its defaults: 5 %, 20 devices), a webhook
 * for rollout.paused to the receiver at /`appId`, and 1.1.0 rolling out to 50 %.
 */
async function rollingOut(appId: string): Promise<{ miniAppId: string; secret: string }> {
  const miniApp = await call('POST', '/api/mini-apps', { appId, name: `Fleet ${appId}` })
  expect(miniApp.status).toBe(201)
  const miniAppId = miniApp.body.id as string
  const ids: string[] = []
  for (const version of ['1.0.0', '1.1.0']) {
    const uploaded = await callApi(server.baseUrl, 'POST', `/api/mini-apps/by-app-id/${appId}/versions/upload`, { token, body: uploadForm(appId, { version }) })
    expect(uploaded.status).toBe(201)
    ids.push(uploaded.body.id)
  }
  expect((await call('POST', `/api/mini-apps/${miniAppId}/versions/${ids[0]}/publish`, {})).status).toBe(200)
  const guarded = await call('PATCH', `/api/mini-apps/${miniAppId}/channels/stable`, { guard: { enabled: true } })
  expect(guarded.status).toBe(200)
  expect(guarded.body.guard).toMatchObject({ enabled: true, maxFailureRate: 0.05, minDevices: 20 })
  const hook = await call('POST', `/api/mini-apps/${miniAppId}/webhooks`, { url: `http://127.0.0.1:${receiver.port}/${appId}`, events: ['rollout.paused'] })
  expect(hook.status).toBe(201)
  expect((await call('POST', `/api/mini-apps/${miniAppId}/versions/${ids[1]}/publish`, { rolloutPercent: 50 })).status).toBe(200)
  return { miniAppId, secret: hook.body.secret }
}

/** scripts/simulate-fleet.ts against the binary: 600 devices, four rounds, every device checking every round. */
async function simulate(appId: string, failRate: number): Promise<{ installed: number; rolledBack: number; eventsPending: number }> {
  const child = Bun.spawn(
    [process.execPath, simulator, '--server', server.baseUrl, '--app', appId, '--devices', '600', '--rounds', '4', '--interval', '0', '--check-share', '1', '--fail-rate', String(failRate), '--json'],
    { cwd: dir, stdout: 'pipe', stderr: 'pipe' },
  )
  const [out, err, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited])
  if (code !== 0) throw new Error(`simulate-fleet exited ${code}: ${err}`)
  return JSON.parse(out.trim().split('\n').at(-1)!)
}

async function stable(miniAppId: string) {
  const res = await call('GET', `/api/mini-apps/${miniAppId}/channels`)
  expect(res.status).toBe(200)
  return res.body.channels.find((channel: { name: string }) => channel.name === 'stable')
}

/** Polls `read` until `done` holds (the guard checks after each insights flush, the webhook worker delivers after that), up to `seconds`. */
async function waitFor<T>(read: () => Promise<T> | T, done: (value: T) => boolean, seconds = 30): Promise<T> {
  const deadline = Date.now() + seconds * 1000
  for (;;) {
    const value = await read()
    if (done(value) || Date.now() > deadline) return value
    await Bun.sleep(200)
  }
}

const deliveriesTo = (appId: string) => received.filter((delivery) => delivery.path === `/${appId}`)

describe('the fleet simulator against the guard on the binary', () => {
  test('20 % of devices failing: paused by the release guard, and the receiver gets the signed rollout.paused with F, T and the rate', async () => {
    const appId = 'com.example.fleet.bad'
    const { miniAppId, secret } = await rollingOut(appId)
    const run = await simulate(appId, 0.2)
    expect(run.rolledBack).toBeGreaterThan(20)
    expect(run.eventsPending).toBe(0)

    const channel = await waitFor(() => stable(miniAppId), (found) => found.state === 'paused')
    expect(channel).toMatchObject({ state: 'paused', release: { version: '1.1.0', rolloutPercent: 50, paused: true, pausedBy: 'release-guard' } })
    const trip = channel.guard.trip
    expect(trip.failureRate).toBeGreaterThan(0.05)
    expect(trip.totalDevices).toBeGreaterThanOrEqual(20)

    const deliveries = await waitFor(() => deliveriesTo(appId), (list) => list.length > 0)
    expect(deliveries).toHaveLength(1)
    const [delivery] = deliveries
    expect(delivery!.headers.get('x-miniship-event')).toBe('rollout.paused')
    // the signature is the HMAC-SHA256 of the raw body with the webhook's secret, as GitHub's
    expect(delivery!.headers.get('x-miniship-signature')).toBe(`sha256=${createHmac('sha256', secret).update(delivery!.body).digest('hex')}`)
    const body = JSON.parse(delivery!.body)
    expect(body).toMatchObject({
      event: 'rollout.paused',
      miniApp: { id: miniAppId, appId },
      data: {
        channel: 'stable',
        version: { version: '1.1.0' },
        rolloutPercent: 50,
        by: { type: 'system', name: 'release-guard' },
        failedDevices: trip.failedDevices,
        devices: trip.totalDevices,
        failureRate: trip.failureRate,
        maxFailureRate: 0.05,
      },
    })
    expect(body.data.failedDevices / body.data.devices).toBeCloseTo(body.data.failureRate, 10)

    // the server's own record of the delivery
    const hooks = (await call('GET', `/api/mini-apps/${miniAppId}/webhooks`)).body.webhooks
    const recorded = await waitFor(
      async () => (await call('GET', `/api/mini-apps/${miniAppId}/webhooks/${hooks[0].id}/deliveries`)).body.deliveries,
      (list: { status: string }[]) => list[0]?.status === 'delivered',
    )
    expect(recorded).toMatchObject([{ event: 'rollout.paused', status: 'delivered', attempts: 1, responseStatus: 200 }])
  }, 240_000)

  test('2 % of devices failing: still rolling out, and no rollout.paused arrives', async () => {
    const appId = 'com.example.fleet.good'
    const { miniAppId } = await rollingOut(appId)
    const run = await simulate(appId, 0.02)
    expect(run.installed).toBeGreaterThan(200)
    expect(run.eventsPending).toBe(0)
    // the guard has checked every device's events (flushes run each second)
    const channel = await waitFor(() => stable(miniAppId), (found) => (found.guard.lastCheck?.totalDevices ?? 0) >= run.installed)
    expect(channel).toMatchObject({ state: 'rolling-out', release: { version: '1.1.0', paused: false }, guard: { trip: null } })
    expect(channel.guard.lastCheck.totalDevices).toBeGreaterThan(200)
    expect(channel.guard.lastCheck.failureRate).toBeLessThan(0.05)
    // a few more flushes and worker rounds: still nothing
    await Bun.sleep(3000)
    expect((await stable(miniAppId)).state).toBe('rolling-out')
    expect(deliveriesTo(appId)).toEqual([])
  }, 240_000)
})
