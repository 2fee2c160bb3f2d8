// A simulated fleet on the update client (miniship/sdk): N devices, each its own storage dir, run rounds of
// launch → markReady → update check → verified download against a miniship on this machine; a share of them
// crash-loops on purpose, so rollouts, pauses, the release guard and insights can be watched end to end.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { createUpdater, UpdateError, type FetchLike, type Platform, type Updater } from '../src/sdk/index'
import { fileStorage, nodeCrypto } from '../src/sdk/node'

const help = `Usage: bun scripts/simulate-fleet.ts --app <appId> [options]

Runs a fleet of simulated devices on miniship/sdk against a running miniship (on this machine). Each round
every device, with probability --check-share: launches (start(): counts the launch, rolls back a crash
loop), confirms a healthy version (markReady()), asks the update check and downloads what it is offered,
verifying size, sha256 and, with --trusted-key, the signature. A share of the devices (--fail-rate) never
confirms a new version: it is rolled back after --crash-loop-limit launches and reported as rolled_back.
Events go to the server with each check. Adoption per version is printed after every round.

Options:
  --server URL            the server (default http://127.0.0.1:3001; must be this machine)
  --app ID                appId of a miniapp with a published release (required)
  --devices N             devices (default 1000)
  --rounds N              rounds (default 10)
  --interval SECONDS      pause between rounds (default 3)
  --start-version V       the version the host app ships with (default 1.0.0)
  --channel NAME          channel (default stable)
  --host-version V        the host app's version sent with each check (default: none)
  --fail-rate R           share of devices that crash-loop every new version, 0–1 (default 0.02;
                          --failure-rate is the same)
  --crash-loop-limit N    launches without markReady() before a rollback (default 2)
  --check-share R         chance that a device runs in a round, 0–1 (default 0.5)
  --trusted-key BASE64    pin an Ed25519 public key: unsigned or badly signed versions are refused
  --concurrency N         devices working at once (default 32)
  --storage-dir DIR       where the devices keep their files (default: a temp dir, removed at the end)
  --json                  print one JSON summary on stdout (progress goes to stderr)
  --help                  this text

Example:
  bun scripts/simulate-fleet.ts --app com.example.shop --devices 1000 --rounds 5 --fail-rate 0.1
`

const options = {
  server: { type: 'string', default: 'http://127.0.0.1:3001' },
  app: { type: 'string' },
  devices: { type: 'string', default: '1000' },
  rounds: { type: 'string', default: '10' },
  interval: { type: 'string', default: '3' },
  'start-version': { type: 'string', default: '1.0.0' },
  channel: { type: 'string', default: 'stable' },
  'host-version': { type: 'string' },
  'fail-rate': { type: 'string' },
  'failure-rate': { type: 'string' },
  'crash-loop-limit': { type: 'string', default: '2' },
  'check-share': { type: 'string', default: '0.5' },
  'trusted-key': { type: 'string', multiple: true },
  concurrency: { type: 'string', default: '32' },
  'storage-dir': { type: 'string' },
  json: { type: 'boolean', default: false },
  help: { type: 'boolean', default: false },
} as const

const usage = help.split('\n')[0]!

/** An unknown option, a missing value or a stray argument: one line and the usage, exit 2 (not a stack trace). */
function parseCommandLine() {
  try {
    return parseArgs({ options })
  } catch (error) {
    process.stderr.write(`simulate-fleet: ${(error as Error).message.split('\n')[0]}\n${usage}\n(--help lists the options)\n`)
    process.exit(2)
  }
}

const { values } = parseCommandLine()

if (values.help) {
  process.stdout.write(help)
  process.exit(0)
}

function fail(message: string): never {
  console.error(`simulate-fleet: ${message} (see --help)`)
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
const deviceCount = Math.floor(bounded('devices', values.devices!, 1, 20_000))
const rounds = Math.floor(bounded('rounds', values.rounds!, 1, 1000))
const intervalMs = bounded('interval', values.interval!, 0, 600) * 1000
const failRate = bounded('fail-rate', values['fail-rate'] ?? values['failure-rate'] ?? '0.02', 0, 1)
const crashLoopLimit = Math.floor(bounded('crash-loop-limit', values['crash-loop-limit']!, 1, 100))
const checkShare = bounded('check-share', values['check-share']!, 0, 1)
const concurrency = Math.floor(bounded('concurrency', values.concurrency!, 1, 256))
const appId = values.app
const startVersion = values['start-version']!
const json = values.json!
/** progress: stdout, or stderr when stdout carries the JSON summary */
const say = (line: string) => (json ? console.error(line) : console.log(line))

const storageRoot = values['storage-dir'] ?? mkdtempSync(join(tmpdir(), 'miniship-fleet-'))
const removeStorage = values['storage-dir'] === undefined

interface Device {
  id: string
  platform: Platform
  /** crash-loops every version it downloads */
  failing: boolean
  updater: Updater
}

/**
 * Update checks answered "no such app or release" (404 RELEASE_NOT_FOUND or MINI_APP_NOT_FOUND), and
 * the others: the library takes the first for "no update", so a mistyped --app looked like a healthy
 * fleet that was offered nothing.
 */
const checkAnswers = { notFound: 0, other: 0 }
const notFoundCodes = ['RELEASE_NOT_FOUND', 'MINI_APP_NOT_FOUND']
const watchedFetch: FetchLike = async (url, init) => {
  const response = await fetch(url, init as RequestInit)
  if (!/\/update\?/.test(url)) return response
  if (response.status !== 404) {
    checkAnswers.other++
    return response
  }
  const text = await response.text()
  let code: unknown
  try {
    code = (JSON.parse(text) as { code?: unknown }).code
  } catch {
    // not the server's JSON
  }
  if (typeof code === 'string' && notFoundCodes.includes(code)) checkAnswers.notFound++
  else checkAnswers.other++
  return new Response(text, { status: response.status, headers: response.headers })
}

const crypto = nodeCrypto()
const devices: Device[] = Array.from({ length: deviceCount }, (_, index) => {
  const id = `sim-${index}`
  const platform: Platform = index % 3 === 0 ? 'android' : 'ios'
  return {
    id,
    platform,
    // a fixed share, spread evenly over the fleet: the same devices fail in every run
    failing: Math.floor((index + 1) * failRate) > Math.floor(index * failRate),
    updater: createUpdater({
      serverUrl: `${server.origin}/api`,
      appId,
      platform,
      deviceId: id,
      channel: values.channel,
      hostVersion: values['host-version'],
      embeddedVersion: startVersion,
      trustedKeys: values['trusted-key'],
      storage: fileStorage(join(storageRoot, id)),
      crashLoopLimit,
      crypto,
      fetch: watchedFetch,
    }),
  }
})

const stats = {
  checks: 0,
  offered: 0,
  installed: 0,
  rolledBack: 0,
  refused: 0,
  downloadBytes: 0,
  errors: new Map<string, number>(),
  checkMs: [] as number[],
}
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

async function round(device: Device): Promise<void> {
  const started = await device.updater.start()
  if (started.rolledBack) stats.rolledBack++
  // a healthy device confirms what it runs; a failing one never does, so a new version crash-loops
  if (started.current?.pending && !device.failing) await device.updater.markReady()
  const before = performance.now()
  let update
  try {
    update = await device.updater.check()
  } finally {
    stats.checks++
    stats.checkMs.push(performance.now() - before)
  }
  if (!update) return
  stats.offered++
  try {
    await device.updater.download(update, { onProgress: (received, total) => void (received === total && (stats.downloadBytes += total)) })
    stats.installed++
  } catch (error) {
    if (error instanceof UpdateError && error.code !== 'NETWORK' && error.code !== 'SERVER' && error.code !== 'STORAGE') stats.refused++
    throw error
  }
}

function adoption(): string {
  const versions = new Map<string, number>()
  for (const device of devices) {
    const version = device.updater.current()?.version ?? `${startVersion} (embedded)`
    versions.set(version, (versions.get(version) ?? 0) + 1)
  }
  return [...versions]
    .sort(([a], [b]) => Bun.semver.order(a.split(' ')[0]!, b.split(' ')[0]!))
    .map(([version, count]) => `${version}: ${((count / devices.length) * 100).toFixed(1)}%`)
    .join(', ')
}

const percentile = (sorted: number[], p: number) => (sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!)

const startedAt = Date.now()
let eventsPending = 0
let unknownApp = false
try {
  for (let index = 1; index <= rounds; index++) {
    const active = devices.filter(() => Math.random() < checkShare)
    await pool(active, async (device) => {
      try {
        await round(device)
      } catch (error) {
        noteError(error instanceof UpdateError ? `${error.code}${error.status ? ` ${error.status}` : ''}` : (error as Error).message.slice(0, 80))
      }
    })
    say(`round ${index}/${rounds}: ${active.length} devices ran; fleet runs ${adoption()}`)
    if (checkAnswers.notFound > 0 && checkAnswers.other === 0) {
      unknownApp = true
      break
    }
    if (index < rounds) await Bun.sleep(intervalMs)
  }
  // what the devices still hold goes out now
  await pool(devices, async (device) => {
    try {
      eventsPending += (await device.updater.flushEvents()).pending
    } catch (error) {
      noteError(error instanceof UpdateError ? `events ${error.code}${error.status ? ` ${error.status}` : ''}` : 'events')
      eventsPending++
    }
  })
} finally {
  if (removeStorage) rmSync(storageRoot, { recursive: true, force: true })
}
if (unknownApp) {
  console.error(
    `simulate-fleet: ${server.origin} has no release of ${appId} on channel ${values.channel}: all ${checkAnswers.notFound} update checks answered 404 (${notFoundCodes.join(' or ')}). Is --app the appId of a miniapp with a published release (miniship apps lists them)?`,
  )
  process.exit(1)
}

const sorted = stats.checkMs.sort((a, b) => a - b)
const versions: Record<string, number> = {}
for (const device of devices) {
  const version = device.updater.current()?.version ?? startVersion
  versions[version] = (versions[version] ?? 0) + 1
}
const summary = {
  seconds: Math.round((Date.now() - startedAt) / 1000),
  devices: deviceCount,
  failingDevices: devices.filter((device) => device.failing).length,
  updateChecks: stats.checks,
  updatesOffered: stats.offered,
  installed: stats.installed,
  rolledBack: stats.rolledBack,
  refused: stats.refused,
  downloadBytes: stats.downloadBytes,
  checkMs: { p50: Number(percentile(sorted, 0.5).toFixed(2)), p95: Number(percentile(sorted, 0.95).toFixed(2)), p99: Number(percentile(sorted, 0.99).toFixed(2)) },
  versions,
  eventsPending,
  errors: Object.fromEntries(stats.errors),
}
if (json) console.log(JSON.stringify(summary))
else {
  console.log(
    `${summary.devices} devices (${summary.failingDevices} crash-looping) in ${summary.seconds} s: ${summary.updateChecks} checks (p50 ${summary.checkMs.p50} ms, p95 ${summary.checkMs.p95} ms), ` +
      `${summary.installed} installs, ${summary.rolledBack} rollbacks, ${summary.refused} refused downloads, ${summary.eventsPending} events not delivered`,
  )
  if (stats.errors.size > 0) console.log(`errors: ${[...stats.errors].map(([what, count]) => `${what} × ${count}`).join(', ')}`)
  if ([...stats.errors.keys()].some((what) => what.includes('429'))) console.log('the server rate-limited: run it with --rate-limit off (or raise --rate-limits events=N)')
}
