// A simulated fleet for insights (issue 13): devices send update checks and runtime events to a miniship on this machine.
//
//   node_modules/.bin/bun scripts/simulate-fleet.ts --server http://127.0.0.1:3001 --app com.example.shop \
//     [--devices 2000] [--rounds 10] [--interval 3] [--start-version 1.0.0] [--channel stable] [--failure-rate 0.02]
//
// Each round every device asks the update check
// (GET /api/mini-apps/access/apps/{appId}/update?platform=&currentVersion=&deviceId=&channel=) with a
// probability of 0.5; a device offered an update fetches the bundle of its platform, then reports
// `installed` and `launched` (or `failed` and `rolled_back`, at --failure-rate), and runs the new
// version from then on. Devices that did not check report `launched` now and then. Events go in
// batches of 100 to POST /api/mini-apps/access/events. Driving a staged rollout: publish with
// rolloutPercent 10, run this, raise the rollout, run it again (or in another terminal) and watch
// the insights page. The server must be 127.0.0.1/localhost; the run stops after --rounds and
// prints what it did. Device ids are `sim-<n>`, so every run is the same fleet.
import { parseArgs } from 'node:util'

const { values } = parseArgs({
  options: {
    server: { type: 'string', default: 'http://127.0.0.1:3001' },
    app: { type: 'string' },
    devices: { type: 'string', default: '2000' },
    rounds: { type: 'string', default: '10' },
    interval: { type: 'string', default: '3' },
    'start-version': { type: 'string', default: '1.0.0' },
    channel: { type: 'string', default: 'stable' },
    'failure-rate': { type: 'string', default: '0.02' },
    concurrency: { type: 'string', default: '32' },
  },
})

function fail(message: string): never {
  console.error(`simulate-fleet: ${message}`)
  process.exit(2)
}

const server = new URL(values.server!.replace(/\/+$/, '').replace(/\/api$/, ''))
if (!['127.0.0.1', 'localhost', '[::1]'].includes(server.hostname)) fail(`--server must be on this machine (127.0.0.1), got ${server.hostname}`)
if (!values.app) fail('--app is required (the appId of a miniapp with a published release)')
const bounded = (name: string, text: string, min: number, max: number): number => {
  const value = Number(text)
  if (!Number.isFinite(value) || value < min || value > max) fail(`--${name} must be a number from ${min} to ${max}`)
  return value
}
const deviceCount = bounded('devices', values.devices!, 1, 20_000)
const rounds = bounded('rounds', values.rounds!, 1, 1000)
const intervalMs = bounded('interval', values.interval!, 0, 600) * 1000
const failureRate = bounded('failure-rate', values['failure-rate']!, 0, 1)
const concurrency = bounded('concurrency', values.concurrency!, 1, 256)
const appId = values.app
const api = `${server.origin}/api`

interface Device {
  id: string
  platform: 'ios' | 'android'
  version: string
  versionId: string | null
}

interface DeviceEvent {
  appId: string
  versionId: string
  platform: 'ios' | 'android'
  event: 'installed' | 'launched' | 'failed' | 'rolled_back'
  deviceId: string
  channel: string
  message?: string
  at: string
}

const devices: Device[] = Array.from({ length: deviceCount }, (_, index) => ({
  id: `sim-${index}`,
  platform: index % 3 === 0 ? 'android' : 'ios',
  version: values['start-version']!,
  versionId: null,
}))
const stats = { checks: 0, offered: 0, installed: 0, failed: 0, downloadBytes: 0, eventsAccepted: 0, eventsRejected: 0, errors: new Map<string, number>() }
const noteError = (what: string) => stats.errors.set(what, (stats.errors.get(what) ?? 0) + 1)

/** Runs `work` over `items` with at most `concurrency` at a time. */
async function pool<T>(items: T[], work: (item: T) => Promise<void>): Promise<void> {
  let next = 0
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) await work(items[next++]!)
    }),
  )
}

async function sendEvents(events: DeviceEvent[]): Promise<void> {
  for (let start = 0; start < events.length; start += 100) {
    const response = await fetch(`${api}/mini-apps/access/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ events: events.slice(start, start + 100) }),
    })
    if (response.status === 429) {
      // the per-address budget: wait as told, then try this batch again
      const seconds = Number(response.headers.get('retry-after') ?? '5')
      console.error(`events rate-limited; waiting ${seconds} s (raise it with --rate-limits events=N)`)
      await Bun.sleep(seconds * 1000)
      start -= 100
      continue
    }
    if (response.status !== 202) {
      noteError(`events ${response.status}`)
      continue
    }
    const answer = (await response.json()) as { accepted: number; rejected: number }
    stats.eventsAccepted += answer.accepted
    stats.eventsRejected += answer.rejected
  }
}

async function checkForUpdate(device: Device, events: DeviceEvent[]): Promise<void> {
  const query = new URLSearchParams({ platform: device.platform, currentVersion: device.version, deviceId: device.id, channel: values.channel! })
  const response = await fetch(`${api}/mini-apps/access/apps/${encodeURIComponent(appId)}/update?${query}`)
  stats.checks++
  if (response.status !== 200) {
    noteError(`update check ${response.status}`)
    await response.arrayBuffer()
    return
  }
  const answer = (await response.json()) as { updateAvailable: boolean; install?: { versionId: string; version: string; bundles: Record<string, string> } }
  if (!answer.updateAvailable || !answer.install) {
    if (device.versionId && Math.random() < 0.3) events.push(event(device, device.versionId, 'launched'))
    return
  }
  stats.offered++
  const bundle = await fetch(answer.install.bundles[device.platform]!)
  const bytes = await bundle.arrayBuffer()
  if (!bundle.ok) {
    noteError(`bundle ${bundle.status}`)
    return
  }
  stats.downloadBytes += bytes.byteLength
  if (Math.random() < failureRate) {
    stats.failed++
    events.push(event(device, answer.install.versionId, 'failed', `simulated crash on start of ${answer.install.version} (${device.platform})`))
    if (device.versionId) events.push(event(device, device.versionId, 'rolled_back'))
    return
  }
  stats.installed++
  device.version = answer.install.version
  device.versionId = answer.install.versionId
  events.push(event(device, device.versionId, 'installed'), event(device, device.versionId, 'launched'))
}

function event(device: Device, versionId: string, name: DeviceEvent['event'], message?: string): DeviceEvent {
  return { appId, versionId, platform: device.platform, event: name, deviceId: device.id, channel: values.channel!, ...(message ? { message } : {}), at: new Date().toISOString() }
}

const started = Date.now()
for (let round = 1; round <= rounds; round++) {
  const events: DeviceEvent[] = []
  const checking = devices.filter(() => Math.random() < 0.5)
  await pool(checking, async (device) => {
    try {
      await checkForUpdate(device, events)
    } catch (error) {
      noteError((error as Error).message.slice(0, 80))
    }
  })
  await sendEvents(events)
  const versions = new Map<string, number>()
  for (const device of devices) versions.set(device.version, (versions.get(device.version) ?? 0) + 1)
  const spread = [...versions].sort(([a], [b]) => Bun.semver.order(a, b)).map(([version, count]) => `${version}: ${((count / devices.length) * 100).toFixed(1)}%`)
  console.log(`round ${round}/${rounds}: ${checking.length} checks, ${events.length} events; fleet runs ${spread.join(', ')}`)
  if (round < rounds) await Bun.sleep(intervalMs)
}
console.log(
  JSON.stringify({
    seconds: Math.round((Date.now() - started) / 1000),
    devices: deviceCount,
    updateChecks: stats.checks,
    updatesOffered: stats.offered,
    installed: stats.installed,
    failed: stats.failed,
    downloadBytes: stats.downloadBytes,
    eventsAccepted: stats.eventsAccepted,
    eventsRejected: stats.eventsRejected,
    errors: Object.fromEntries(stats.errors),
  }),
)
