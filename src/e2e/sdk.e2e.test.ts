// The update client against the compiled binary: a 25 % rollout reaches its share of devices, a CDN that flips
// a byte is refused, a crash loop rolls back, and insights show what the devices reported; then the fleet simulator.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { createHash } from 'node:crypto'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import type { Server } from 'bun'
import { createUpdater, memoryStorage, UpdateError, type Update, type Updater } from '../sdk/index'
import { startPublisher, type Publisher } from './sdk-support'
import { freePort, tempDir } from './support'

const appId = 'com.example.fleet'
let dir: string
let publisher: Publisher
let cdn: Server<undefined>
const cdnState = { upstream: '', tamper: false, bundleRequests: 0 }

/** A CDN in front of the server's /api that, while `tamper` is on, flips the first byte of every JS bundle. */
function startCdn(port: number): Server<undefined> {
  return Bun.serve({
    hostname: '127.0.0.1',
    port,
    async fetch(request) {
      const url = new URL(request.url)
      if (!url.pathname.startsWith('/cdn/')) return new Response('not on this CDN', { status: 404 })
      const answer = await fetch(`${cdnState.upstream}/api/${url.pathname.slice('/cdn/'.length)}${url.search}`)
      if (!/\/bundles\/(ios|android)$/.test(url.pathname) || !answer.ok) return new Response(answer.body, { status: answer.status, headers: answer.headers })
      cdnState.bundleRequests++
      const bytes = new Uint8Array(await answer.arrayBuffer())
      if (cdnState.tamper) bytes[0] = bytes[0]! ^ 1
      return new Response(bytes, { status: 200, headers: { 'content-type': 'application/javascript' } })
    },
  })
}

beforeAll(async () => {
  dir = tempDir('miniship-sdk-e2e-')
  const cdnPort = await freePort()
  cdn = startCdn(cdnPort)
  publisher = await startPublisher(dir, appId, ['--cdn-url', `http://127.0.0.1:${cdnPort}/cdn`, '--insights-flush', '1s'])
  cdnState.upstream = publisher.server.baseUrl
}, 120_000)

afterAll(async () => {
  if (publisher) await publisher.server.stop()
  cdn?.stop(true)
  rmSync(dir, { recursive: true, force: true })
})

const bucket = (versionId: string, deviceId: string) => createHash('sha256').update(`${appId}:${versionId}:${deviceId}`).digest().readUInt32BE(0) % 100

test('a 25 % rollout: its devices update, a tampered CDN is refused, a crash loop rolls back, insights show it all', async () => {
  await publisher.publish(await publisher.upload('1.0.0'))
  const next = await publisher.upload('1.1.0')
  await publisher.publish(next, { rolloutPercent: 25 })

  const devices: Array<{ id: string; updater: Updater }> = Array.from({ length: 200 }, (_, index) => {
    const id = `phone-${index}`
    return { id, updater: createUpdater({ serverUrl: `${publisher.server.baseUrl}/api`, appId, platform: index % 2 ? 'ios' : 'android', deviceId: id, storage: memoryStorage(), embeddedVersion: '1.0.0' }) }
  })
  const offered: Array<{ device: (typeof devices)[number]; update: Update }> = []
  for (const device of devices) {
    await device.updater.start()
    const update = await device.updater.check()
    if (update) offered.push({ device, update })
  }
  // exactly the devices whose bucket is below 25 (decisions §10): about a quarter of them
  const expected = devices.filter((device) => bucket(next, device.id) < 25)
  expect(offered.map((entry) => entry.device.id)).toEqual(expected.map((device) => device.id))
  expect(offered.length).toBeGreaterThan(30)
  expect(offered.length).toBeLessThan(70)
  for (const { update } of offered) expect(update).toMatchObject({ version: '1.1.0', versionId: next, mandatory: false })
  expect(offered[0]!.update.install.bundles.ios).toStartWith(`http://127.0.0.1:${cdn.port}/cdn/`)

  // the CDN flips a byte: the first ten devices refuse the bundle and keep running what they ship with
  cdnState.tamper = true
  const tampered = offered.slice(0, 10)
  for (const { device, update } of tampered) {
    const error = await device.updater.download(update).catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(UpdateError)
    expect((error as UpdateError).code).toBe('SHA256_MISMATCH')
    expect(device.updater.current()).toBeNull()
  }
  cdnState.tamper = false

  // the CDN is fixed: everyone offered installs; the first five crash at every launch (no markReady)
  const crashing = offered.slice(0, 5)
  for (const { device, update } of offered) {
    const current = await device.updater.download(update)
    expect(current.version).toBe('1.1.0')
  }
  for (const { device } of offered) {
    const launched = await device.updater.start()
    expect(launched.current!.version).toBe('1.1.0')
    if (!crashing.some((entry) => entry.device === device)) await device.updater.markReady()
  }
  for (const { device } of crashing) {
    expect((await device.updater.start()).current!.version).toBe('1.1.0')
    const third = await device.updater.start()
    expect(third.rolledBack).toEqual({ versionId: next, version: '1.1.0' })
    expect(third.current).toBeNull()
  }
  for (const { device } of offered) expect(await device.updater.flushEvents()).toMatchObject({ pending: 0 })

  // insights (flushed every second) count the events per version
  const want = { installed: offered.length, rolledBack: crashing.length, failures: tampered.length }
  let row: { installed: number; rolledBack: number; failures: number; launched: number } | undefined
  for (let attempt = 0; attempt < 100; attempt++) {
    const report = await publisher.call('GET', `/api/mini-apps/${publisher.miniAppId}/insights?days=1`)
    expect(report.status).toBe(200)
    row = report.body.days.flatMap((day: { versions: unknown[] }) => day.versions).find((version: { versionId: string }) => version.versionId === next)
    if (row && row.installed === want.installed && row.rolledBack === want.rolledBack && row.failures === want.failures) break
    await Bun.sleep(100)
  }
  expect(row).toMatchObject(want)
  // one launch per device offered, plus the crashing devices' second launch
  expect(row!.launched).toBe(offered.length + crashing.length)
  const report = await publisher.call('GET', `/api/mini-apps/${publisher.miniAppId}/insights?days=1`)
  expect(report.body.recentFailures.some((failure: { versionId: string; message: string }) => failure.versionId === next && failure.message.startsWith('SHA256_MISMATCH'))).toBe(true)
}, 180_000)

test('scripts/simulate-fleet.ts drives devices on the library against the binary and prints a JSON summary', async () => {
  // the rollout completes: every simulated device is offered 1.1.0
  expect((await publisher.call('PATCH', `/api/mini-apps/${publisher.miniAppId}/channels/stable/rollout`, { rolloutPercent: 100 })).status).toBe(200)
  const root = join(import.meta.dir, '..', '..')
  // spawned, not spawnSync: the CDN in this process must keep answering the script's downloads
  const child = Bun.spawn(
    [process.execPath, join(root, 'scripts', 'simulate-fleet.ts'), '--server', publisher.server.baseUrl, '--app', appId, '--devices', '60', '--rounds', '4', '--interval', '0', '--fail-rate', '0.1', '--check-share', '1', '--json'],
    { cwd: root, stdout: 'pipe', stderr: 'pipe' },
  )
  const [stdout, stderr, exitCode] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited])
  expect(exitCode, stderr).toBe(0)
  expect(stderr).toContain('round 4/4: 60 devices ran; fleet runs')
  const summary = JSON.parse(stdout)
  expect(summary).toMatchObject({ devices: 60, failingDevices: 6, updateChecks: 240, refused: 0, eventsPending: 0, errors: {} })
  // the healthy devices run 1.1.0; the failing ones were rolled back once and do not try it again
  expect(summary.versions).toEqual({ '1.0.0': 6, '1.1.0': 54 })
  expect(summary.rolledBack).toBe(6)
  expect(summary.installed).toBe(60)

  const helpRun = Bun.spawnSync([process.execPath, join(root, 'scripts', 'simulate-fleet.ts'), '--help'], { cwd: root, stdout: 'pipe' })
  expect(helpRun.exitCode).toBe(0)
  expect(helpRun.stdout.toString()).toContain('Example:')
}, 180_000)
