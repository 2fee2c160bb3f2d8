// Memory under mixed load (issue 29): does the compiled binary's RSS level off, or grow without bound?
//
//   node_modules/.bin/bun scripts/bench/soak.ts [--minutes 10] [--workers 6] [--logins on|off] [--binary dist/miniship]
//
// Starts the binary (MINISHIP_BINARY or --binary; built with scripts/build.ts when missing) on
// 127.0.0.1 with a fresh data directory and insights on, sets up a miniapp with a release mid-rollout,
// then runs mixed traffic for --minutes: update checks and release installs from ever new deviceIds,
// install info, file downloads, device events (new deviceIds too), a channel flood (new channels,
// update checks on them, rollout PATCHes) and logins. Every minute it prints the server's RSS
// (VmRSS from /proc/<pid>/status) and what was sent; at the end, a verdict: RSS levelled off when
// over the last half of the run it grew less than 1 MB a minute (least squares over 10 s samples)
// and its peak there is within 10 % of the first half's. Each login hashes with argon2id at 64 MiB, so
// logins alone lift the peaks by tens of MB (and Bun returns that memory to the system only in time):
// --logins off shows what the rest of the traffic holds on its own.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { buildZip } from '../../src/test-fixtures'
import { call, freePort, waitForHealth } from './support'

const root = join(import.meta.dir, '..', '..')
const { values: options } = parseArgs({
  options: {
    minutes: { type: 'string', default: '10' },
    workers: { type: 'string', default: '6' },
    binary: { type: 'string' },
    logins: { type: 'string', default: 'on' },
    help: { type: 'boolean', default: false },
  },
})
if (options.help) {
  console.log('usage: bun scripts/bench/soak.ts [--minutes 10] [--workers 6] [--logins on|off] [--binary dist/miniship]\nexample: bun scripts/bench/soak.ts --minutes 4')
  process.exit(0)
}
const minutes = Number(options.minutes)
const workerCount = Number(options.workers)
if (!(minutes > 0) || !(workerCount > 0)) throw new Error('--minutes and --workers must be positive numbers')

async function binaryPath(): Promise<string> {
  const given = options.binary ?? Bun.env.MINISHIP_BINARY
  if (given) {
    if (!existsSync(given)) throw new Error(`${given} does not exist; run bun scripts/build.ts`)
    return resolve(given)
  }
  const built = join(root, 'dist', 'miniship')
  if (!existsSync(built)) {
    process.stderr.write('building dist/miniship …\n')
    const build = Bun.spawn([process.execPath, join(root, 'scripts', 'build.ts')], { cwd: root, stdout: 'inherit', stderr: 'inherit' })
    if ((await build.exited) !== 0) throw new Error('the build failed')
  }
  return built
}

const work = mkdtempSync(join(tmpdir(), 'miniship-soak-'))
let server: ReturnType<typeof Bun.spawn> | null = null
const cleanUp = () => {
  server?.kill('SIGTERM')
  rmSync(work, { recursive: true, force: true })
}
process.on('SIGINT', () => {
  cleanUp()
  process.exit(130)
})

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const match = /VmRSS:\s+(\d+) kB/.exec(status)
  if (!match) throw new Error(`no VmRSS in /proc/${pid}/status`)
  return Number(match[1]) / 1024
}

function form(appId: string, version: string): FormData {
  const data = new FormData()
  const bytes = (text: string) => new Blob([text.repeat(2000)])
  data.append('version', version)
  data.append('bundleIos', bytes(`console.log("ios ${version}");`), 'main.ios.jsbundle')
  data.append('bundleAndroid', bytes(`console.log("android ${version}");`), 'main.android.bundle')
  data.append('manifest', new Blob([JSON.stringify({ appId, name: 'Soak', version, pages: { index: 'pages/index' } })]), 'app.json')
  data.append('assetsIos', new Blob([buildZip([{ name: 'assets/logo.png', content: 'png' }]) as BlobPart]), 'assets-ios.zip')
  data.append('assetsAndroid', new Blob([buildZip([{ name: 'drawable-mdpi/logo.png', content: 'png' }]) as BlobPart]), 'assets-android.zip')
  return data
}

const sent: Record<string, number> = { update: 0, releaseInstall: 0, installInfo: 0, download: 0, events: 0, channelCreate: 0, channelCheck: 0, rolloutPatch: 0, login: 0 }
const failures: Record<string, number> = {}
let counter = 0

async function main(): Promise<number> {
  const binary = await binaryPath()
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  server = Bun.spawn([binary, 'serve', '--data-dir', join(work, 'data'), '--host', '127.0.0.1', '--port', String(port), '--rate-limit', 'off'], { cwd: work, stdout: 'ignore', stderr: 'inherit' })
  await waitForHealth(base, 60_000)
  const pid = server.pid

  const appId = 'com.example.soak'
  const email = 'soak@example.test'
  const password = 'soak-password-1'
  const { accessToken: token } = await call(base, 'POST', '/api/auth/register', { json: { email, password } })
  const miniApp = await call(base, 'POST', '/api/mini-apps', { token, json: { appId, name: 'Soak' } })
  const first = await call(base, 'POST', `/api/mini-apps/by-app-id/${appId}/versions/upload`, { token, body: form(appId, '1.0.0') })
  await call(base, 'POST', `/api/mini-apps/${miniApp.id}/versions/${first.id}/publish`, { token, json: {} })
  const second = await call(base, 'POST', `/api/mini-apps/by-app-id/${appId}/versions/upload`, { token, body: form(appId, '1.1.0') })
  await call(base, 'POST', `/api/mini-apps/${miniApp.id}/versions/${second.id}/publish`, { token, json: { rolloutPercent: 50 } })
  const install = await call(base, 'GET', `/api/mini-apps/access/versions/${second.id}/install?token=${token}`)
  const channels: string[] = []

  const api = `${base}/api/mini-apps/access`
  const get = (path: string) => fetch(path).then(async (response) => {
    await response.arrayBuffer()
    return response.status
  })
  const json = (method: string, path: string, body: unknown, bearer?: string) =>
    fetch(`${base}${path}`, { method, headers: { 'content-type': 'application/json', ...(bearer ? { authorization: `Bearer ${bearer}` } : {}) }, body: JSON.stringify(body) }).then(async (response) => {
      await response.arrayBuffer()
      return response.status
    })
  const createChannel = async (name: string) => {
    const status = await json('POST', `/api/mini-apps/${miniApp.id}/channels`, { name }, token)
    if (status === 201) channels.push(name)
    return status
  }
  const platform = () => (counter % 2 === 0 ? 'ios' : 'android')
  const device = () => `soak-${++counter}`

  // one step of mixed traffic; weights roughly as a fleet sends them, plus the flood
  const steps: [string, number, () => Promise<number>, (status: number) => boolean][] = [
    ['update', 30, () => get(`${api}/apps/${appId}/update?platform=${platform()}&currentVersion=1.0.0&deviceId=${device()}`), (s) => s === 200],
    ['releaseInstall', 10, () => get(`${api}/apps/${appId}/release/install?deviceId=${device()}`), (s) => s === 200],
    ['installInfo', 8, () => get(`${api}/versions/${second.id}/install?token=${token}`), (s) => s === 200],
    ['download', 12, () => get(counter % 3 === 0 ? install.manifestUrl : install.bundles[platform()]), (s) => s === 200],
    ['events', 8, () => json('POST', '/api/mini-apps/access/events', { events: Array.from({ length: 20 }, () => ({ appId, versionId: second.id, platform: platform(), event: 'launched', deviceId: device() })) }), (s) => s === 202],
    ['channelCreate', 4, () => createChannel(`c${(++counter).toString(36)}`), (s) => s === 201],
    ['channelCheck', 10, () => get(`${api}/apps/${appId}/update?platform=ios&currentVersion=1.0.0&channel=${channels[counter++ % Math.max(1, channels.length)] ?? 'stable'}&deviceId=${device()}`), (s) => s === 200 || s === 404],
    ['rolloutPatch', 4, () => json('PATCH', `/api/mini-apps/${miniApp.id}/channels/stable/rollout`, { rolloutPercent: 1 + (counter++ % 99) }, token), (s) => s === 200],
    ['login', options.logins === 'off' ? 0 : 1, () => json('POST', '/api/auth/login', { email, password }), (s) => s === 200],
  ]
  const total = steps.reduce((sum, [, weight]) => sum + weight, 0)
  const pick = () => {
    let at = Math.random() * total
    for (const step of steps) if ((at -= step[1]) < 0) return step
    return steps[0]!
  }

  const startedAt = performance.now()
  const endAt = startedAt + minutes * 60_000
  const samples: { minute: number; rss: number }[] = [{ minute: 0, rss: rssMb(pid) }]
  console.log(`soak: ${minutes} min, ${workerCount} workers, logins ${options.logins}, pid ${pid}, RSS at start ${samples[0]!.rss.toFixed(1)} MB (after setup)`)
  let lastPrinted = 0
  const sampler = setInterval(() => {
    const minute = (performance.now() - startedAt) / 60_000
    samples.push({ minute, rss: rssMb(pid) })
    if (Math.floor(minute) > lastPrinted) {
      lastPrinted = Math.floor(minute)
      const requests = Object.values(sent).reduce((a, b) => a + b, 0)
      const failed = Object.values(failures).reduce((a, b) => a + b, 0)
      console.log(`minute ${String(lastPrinted).padStart(2)}: RSS ${samples.at(-1)!.rss.toFixed(1)} MB, ${requests} requests (${failed} unexpected answers), ${channels.length} channels, ${counter} ids used`)
    }
  }, 10_000)

  async function worker(): Promise<void> {
    while (performance.now() < endAt) {
      const [name, , run, ok] = pick()
      try {
        const status = await run()
        sent[name]!++
        if (!ok(status)) failures[`${name} ${status}`] = (failures[`${name} ${status}`] ?? 0) + 1
      } catch (error) {
        failures[`${name} ${(error as Error).name}`] = (failures[`${name} ${(error as Error).name}`] ?? 0) + 1
      }
    }
  }
  await Promise.all(Array.from({ length: workerCount }, worker))
  clearInterval(sampler)
  samples.push({ minute: (performance.now() - startedAt) / 60_000, rss: rssMb(pid) })

  const seconds = (performance.now() - startedAt) / 1000
  const requests = Object.values(sent).reduce((a, b) => a + b, 0)
  console.log(`\nsent ${requests} requests in ${seconds.toFixed(0)} s (${(requests / seconds).toFixed(0)}/s): ${Object.entries(sent).map(([name, n]) => `${name} ${n}`).join(', ')}`)
  if (Object.keys(failures).length > 0) console.log(`unexpected answers: ${Object.entries(failures).map(([what, n]) => `${what} ×${n}`).join(', ')}`)

  const half = samples.filter((sample) => sample.minute >= minutes / 2)
  const early = samples.filter((sample) => sample.minute < minutes / 2)
  const slope = leastSquaresSlope(half)
  const earlyPeak = Math.max(...early.map((sample) => sample.rss))
  const latePeak = Math.max(...half.map((sample) => sample.rss))
  const levelled = slope < 1 && latePeak <= earlyPeak * 1.1
  console.log(`RSS: start ${samples[0]!.rss.toFixed(1)} MB, peak first half ${earlyPeak.toFixed(1)} MB, peak second half ${latePeak.toFixed(1)} MB, end ${samples.at(-1)!.rss.toFixed(1)} MB; second half slope ${slope.toFixed(2)} MB/min`)
  console.log(levelled ? 'verdict: RSS levelled off' : 'verdict: RSS is still growing: look for caches or maps without bounds (keyed by deviceId, channel, token)')
  return levelled ? 0 : 1
}

function leastSquaresSlope(points: { minute: number; rss: number }[]): number {
  if (points.length < 2) return 0
  const n = points.length
  const meanX = points.reduce((sum, p) => sum + p.minute, 0) / n
  const meanY = points.reduce((sum, p) => sum + p.rss, 0) / n
  const covariance = points.reduce((sum, p) => sum + (p.minute - meanX) * (p.rss - meanY), 0)
  const variance = points.reduce((sum, p) => sum + (p.minute - meanX) ** 2, 0)
  return variance === 0 ? 0 : covariance / variance
}

try {
  process.exitCode = await main()
} finally {
  cleanUp()
}
