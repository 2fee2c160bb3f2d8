// Runtime download benchmark (issue 5): miniship against raw Bun.serve on the same files, same machine, same run.
//
//   node_modules/.bin/bun scripts/bench/runtime.ts [--rounds 5] [--seconds 5]
//   node_modules/.bin/bun scripts/bench/runtime.ts --storage s3 [--s3-downloads redirect|proxy]
//
// With --storage s3 (issue 14) the files are in a bucket (s3rver on 127.0.0.1, started here):
// `redirect` compares the 302 answer's requests per second with raw Bun.serve's constant
// response (target ≥ 0.7×); `proxy` compares bundle throughput streamed from the bucket with raw
// Bun.file of a local copy (no target: that measures s3rver as much as miniship).
//
// Starts `bun src/main.ts serve` on a temp data directory, uploads and publishes a version with a
// 5 MB iOS bundle, and starts two raw Bun.serve servers in another process: one answering
// `Bun.file` of the very same blob, one answering the same install-info JSON as a constant. The
// two sides of each comparison alternate over several rounds so machine noise falls on both
// alike; medians and ratios are printed. Targets: bundle throughput ≥ 0.8× raw Bun.file; install
// info of a published version ≥ 0.8× the requests per second of raw constant JSON; release install
// ≥ 0.8×; the update check of a device during a 25 % rollout, a distinct deviceId per request (a wrk
// Lua script), ≥ 0.7×.
//
// Insights (issue 13): two more servers on copies of the same data directory, one counting (the
// default) and one with `--insights off`, alternate on release install info and on the update check
// (a new deviceId per request, as above); target: counting on ≥ 0.95× off. `--part insights` runs
// only this comparison.
//
// Signing (issue 27): the same two releases of another miniapp, signed, against these unsigned ones,
// on install info, release install and the update check (scripts/bench/runtime-signing.ts); target:
// a ratio of about 1.00. `--part signing` runs only this comparison.
//
// The load generator is Debian's wrk (`apt-get install -y wrk`), one thread. autocannon was tried
// first: its node client receives large bodies at about 30 MB/s here while wrk takes 790 MB/s from
// the same raw server, so with autocannon both sides of the bundle comparison measure the client.
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { Database } from 'bun:sqlite'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { buildZip } from '../../src/test-fixtures'
import { benchSigning } from './runtime-signing'
import { startTestS3, type TestS3 } from '../../src/storage/test-s3'
import { call, freePort, median, waitForHealth, wrkLoad, wrkReport, type Load } from './support'

const root = join(import.meta.dir, '..', '..')

// ---- mode 2: the raw servers, in their own process (like miniship, one JS thread each side) ----
if (process.argv[2] === '--raw-servers') {
  const [filePath, jsonPath] = process.argv.slice(3) as [string, string]
  const json = await Bun.file(jsonPath).text()
  const file = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response(Bun.file(filePath), { headers: { 'content-type': 'application/javascript' } }) })
  const constant = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response(json, { headers: { 'content-type': 'application/json; charset=utf-8' } }) })
  console.log(JSON.stringify({ file: file.port, json: constant.port }))
  await new Promise(() => {})
}

// ---- mode 3: diagnosis only — the Elysia app on the same data directory, without the request log and without serve's native install routes ----
if (process.argv[2] === '--app-without-log') {
  const { loadConfig } = await import('../../src/config')
  const { openDataDir } = await import('../../src/data-dir')
  const { createApp } = await import('../../src/app')
  const dataDir = process.argv[3]!
  const config = loadConfig({ dataDir, host: '127.0.0.1' }, {})
  // WAL lets this second connection read beside the server's; nothing here writes
  const { db, paths, secret } = openDataDir(dataDir, { sweepTmp: false })
  const app = createApp({ config, db, paths, secret, log: () => {} })
  const server = Bun.serve({ hostname: '127.0.0.1', port: 0, development: false, fetch: (request) => app.handle(request) })
  app.server = server as unknown as typeof app.server
  console.log(JSON.stringify({ port: server.port }))
  await new Promise(() => {})
}

// ---- mode 1: the benchmark ----
const { values: options } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    seconds: { type: 'string', default: '5' },
    part: { type: 'string', default: 'all' },
    storage: { type: 'string', default: 'local' },
    's3-downloads': { type: 'string', default: 'redirect' },
  },
})
if (options.part !== 'all' && options.part !== 'insights' && options.part !== 'signing') throw new Error('--part is all, insights or signing')
const rounds = Number(options.rounds)
const seconds = Number(options.seconds)
const storage = options.storage === 's3' ? 's3' : 'local'
const s3Downloads = options['s3-downloads'] === 'proxy' ? 'proxy' : 'redirect'
const wrk = Bun.which('wrk')
if (!wrk) {
  console.log('runtime benchmark SKIPPED: the load generator wrk is not installed (Debian: apt-get install -y wrk)')
  process.exit(0)
}

const work = mkdtempSync(join(tmpdir(), 'miniship-bench-runtime-'))
const children: ReturnType<typeof Bun.spawn>[] = []
let s3: TestS3 | null = null
const cleanUp = () => {
  for (const child of children) child.kill('SIGTERM')
  void s3?.close()
  rmSync(work, { recursive: true, force: true })
}
process.on('SIGINT', () => {
  cleanUp()
  process.exit(130)
})



/** A zip with one entry, enough to pass upload's archive checks. */
const zipWith = (name: string, content: string): Uint8Array => buildZip([{ name, content }])

/** Each request asks with another deviceId (appended to the URL's path and query), so no answer is reused. */
const distinctDevices = `local counter = 0
request = function()
  counter = counter + 1
  return wrk.format("GET", wrk.path .. counter)
end
`

/** One wrk run against `url` (one thread, `connections` connections, this run's --seconds); refuses a run with errors or non-2xx answers. */
const load = (url: string, connections: number, script = 'report.lua'): Promise<Load> => wrkLoad({ wrk: wrk!, seconds, script: join(work, script) }, url, connections)

/** `serve` from source on a data directory (its request log to nowhere); answers the base URL once /api/health does. */
async function startMiniship(dataDir: string, args: string[]): Promise<string> {
  const port = await freePort()
  const child = Bun.spawn([process.execPath, join(root, 'src', 'main.ts'), 'serve', '--data-dir', dataDir, '--host', '127.0.0.1', '--port', String(port), ...args], { cwd: work, stdout: 'ignore', stderr: 'pipe' })
  children.push(child)
  const base = `http://127.0.0.1:${port}`
  await waitForHealth(base, 20_000)
  return base
}

/** With S3 storage: the redirect answer against raw constant responses, or proxied bytes against raw Bun.file. */
async function benchS3(bundleUrl: string, rawFileUrl: string, rawJsonUrl: string): Promise<void> {
  const first = await fetch(bundleUrl, { redirect: 'manual' })
  await first.arrayBuffer()
  const expected = s3Downloads === 'redirect' ? 302 : 200
  if (first.status !== expected) throw new Error(`the bundle URL answered ${first.status}, not ${expected}`)
  const measureOurs = s3Downloads === 'redirect' ? () => load(bundleUrl, 32).then((result) => result.requestsPerSecond) : () => load(bundleUrl, 8).then((result) => result.bytesPerSecond)
  const measureRaw = s3Downloads === 'redirect' ? () => load(rawJsonUrl, 32).then((result) => result.requestsPerSecond) : () => load(rawFileUrl, 8).then((result) => result.bytesPerSecond)
  await measureOurs()
  await measureRaw()
  const ours: number[] = []
  const raw: number[] = []
  for (let round = 1; round <= rounds; round++) {
    if (round % 2) {
      ours.push(await measureOurs())
      raw.push(await measureRaw())
    } else {
      raw.push(await measureRaw())
      ours.push(await measureOurs())
    }
    console.error(`round ${round}/${rounds} done`)
  }
  const ratio = median(ours) / median(raw)
  console.log(`runtime benchmark, S3 storage (s3rver), --s3-downloads ${s3Downloads}: ${rounds} alternating rounds of ${seconds} s each, wrk -t1, medians`)
  if (s3Downloads === 'redirect') {
    console.log(`  bundle URL → 302 to a presigned URL  miniship ${median(ours).toFixed(0)} req/s   raw Bun.serve constant response ${median(raw).toFixed(0)} req/s   ratio ${ratio.toFixed(2)} (target ≥ 0.70)`)
    console.log(`    per round: miniship ${ours.map((value) => value.toFixed(0)).join(', ')}; raw ${raw.map((value) => value.toFixed(0)).join(', ')} req/s`)
  } else {
    const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(0)
    console.log(`  5 MB bundle streamed from the bucket  miniship ${mb(median(ours))} MB/s   raw Bun.file of a local copy ${mb(median(raw))} MB/s   ratio ${ratio.toFixed(2)} (no target)`)
  }
}

try {
  writeFileSync(join(work, 'report.lua'), wrkReport)
  writeFileSync(join(work, 'devices.lua'), distinctDevices + wrkReport)
  // miniship from source, as `npm start` runs it; its request log goes nowhere, as under a quiet journal
  const port = await freePort()
  const dataDir = join(work, 'data')
  if (storage === 's3') s3 = await startTestS3()
  const storageArgs = storage === 's3' ? ['--s3-downloads', s3Downloads] : []
  const server = Bun.spawn([process.execPath, join(root, 'src', 'main.ts'), 'serve', '--data-dir', dataDir, '--host', '127.0.0.1', '--port', String(port), ...storageArgs], {
    cwd: work,
    stdout: 'ignore',
    stderr: 'pipe',
    env: { ...process.env, ...(s3 ? s3.env('bench') : {}) },
  })
  children.push(server)
  const base = `http://127.0.0.1:${port}`
  await waitForHealth(base, 20_000)

  // a user, a miniapp, a published version with a 5 MB bundle, through the API
  const { accessToken } = await call(base, 'POST', '/api/auth/register', { json: { email: 'bench@example.com', password: 'bench-password' } })
  const miniApp = await call(base, 'POST', '/api/mini-apps', { token: accessToken, json: { appId: 'com.example.bench', name: 'Bench' } })
  const bundle = new Uint8Array(5 * 1024 * 1024)
  for (let offset = 0; offset < bundle.length; offset += 65536) crypto.getRandomValues(bundle.subarray(offset, offset + 65536))
  const form = new FormData()
  form.append('version', '1.0.0')
  form.append('bundleIos', new Blob([bundle as BlobPart], { type: 'application/javascript' }), 'main.ios.jsbundle')
  form.append('bundleAndroid', new Blob(['console.log("android")'], { type: 'application/javascript' }), 'main.android.bundle')
  form.append('manifest', new Blob([JSON.stringify({ appId: 'com.example.bench', name: 'Bench', version: '1.0.0', pages: { index: 'index' } })], { type: 'application/json' }), 'app.json')
  form.append('assetsIos', new Blob([zipWith('assets/logo.png', 'png') as BlobPart], { type: 'application/zip' }), 'assets-ios.zip')
  form.append('assetsAndroid', new Blob([zipWith('drawable-mdpi/logo.png', 'png') as BlobPart], { type: 'application/zip' }), 'assets-android.zip')
  const version = await call(base, 'POST', '/api/mini-apps/by-app-id/com.example.bench/versions/upload', { token: accessToken, body: form })
  await call(base, 'POST', `/api/mini-apps/${miniApp.id}/versions/${version.id}/publish`, { token: accessToken, json: {} })
  const info = await call(base, 'GET', `/api/mini-apps/access/versions/${version.id}/install?token=${accessToken}`)
  const downloadToken = new URL(info.bundleUrl, base).searchParams.get('token')!
  const installUrl = `${base}/api/mini-apps/access/versions/${version.id}/install?token=${downloadToken}`
  const bundleUrl = new URL(info.bundleUrl, base).toString()
  const installJson = await (await fetch(installUrl)).text()
  // a second release on stable at 25 %: release install (no deviceId) answers 1.0.0, the update check decides per device
  form.set('version', '1.1.0')
  form.set('manifest', new Blob([JSON.stringify({ appId: 'com.example.bench', name: 'Bench', version: '1.1.0', pages: { index: 'index' } })], { type: 'application/json' }), 'app.json')
  const next = await call(base, 'POST', '/api/mini-apps/by-app-id/com.example.bench/versions/upload', { token: accessToken, body: form })
  await call(base, 'POST', `/api/mini-apps/${miniApp.id}/versions/${next.id}/publish`, { token: accessToken, json: { rolloutPercent: 25 } })
  const releaseUrl = `${base}/api/mini-apps/access/apps/com.example.bench/release/install`
  const updateUrl = `${base}/api/mini-apps/access/apps/com.example.bench/update?platform=ios&currentVersion=1.0.0&deviceId=bench-device-`
  if ((await (await fetch(releaseUrl)).json()).version !== '1.0.0') throw new Error('release install should answer 1.0.0 during the rollout')

  if (options.part === 'all') {
    // the raw side: the same blob file, and the same JSON as a constant
    let blob = join(dataDir, 'blobs', 'sha256', info.files.bundleIos.sha256.slice(0, 2), info.files.bundleIos.sha256)
    if (storage === 's3') {
      // the blob is in the bucket: raw Bun.file serves a local copy of the same bytes
      blob = join(work, 'bundle-copy')
      writeFileSync(blob, bundle)
    }
    const jsonPath = join(work, 'install.json')
    writeFileSync(jsonPath, installJson)
    const raw = Bun.spawn([process.execPath, import.meta.path, '--raw-servers', blob, jsonPath], { stdout: 'pipe', stderr: 'inherit' })
    children.push(raw)
    const reader = raw.stdout.getReader()
    const rawPorts = JSON.parse(new TextDecoder().decode((await reader.read()).value)) as { file: number; json: number }
    reader.releaseLock()
    const rawFileUrl = `http://127.0.0.1:${rawPorts.file}/main.ios.jsbundle`
    const rawJsonUrl = `http://127.0.0.1:${rawPorts.json}/install`

    if (storage === 's3') {
      await benchS3(bundleUrl, rawFileUrl, rawJsonUrl)
      cleanUp()
      // s3rver and its data directory go before the process does
      await s3?.close()
      process.exit(0)
    }

    // the same app without the request log, to show what the log costs (not a target)
    const bare = Bun.spawn([process.execPath, import.meta.path, '--app-without-log', dataDir], { stdout: 'pipe', stderr: 'inherit' })
    children.push(bare)
    const bareReader = bare.stdout.getReader()
    const barePort = (JSON.parse(new TextDecoder().decode((await bareReader.read()).value)) as { port: number }).port
    bareReader.releaseLock()
    const bareInstallUrl = installUrl.replace(base, `http://127.0.0.1:${barePort}`)

    // warm both sides (JIT, page cache, token and install caches)
    await load(bundleUrl, 4)
    await load(rawFileUrl, 4)
    await load(installUrl, 16)
    await load(rawJsonUrl, 16)
    await load(bareInstallUrl, 16)
    await load(releaseUrl, 16)
    await load(updateUrl, 16, 'devices.lua')

    const results = {
      bundle: [] as number[],
      rawFile: [] as number[],
      install: [] as number[],
      rawJson: [] as number[],
      release: [] as number[],
      rawJson2: [] as number[],
      update: [] as number[],
      rawJson3: [] as number[],
      bareInstall: [] as number[],
    }
    for (let round = 1; round <= rounds; round++) {
      // alternate which side goes first in each round
      const pairs: [() => Promise<void>, () => Promise<void>][] = [
        [async () => void results.bundle.push((await load(bundleUrl, 8)).bytesPerSecond), async () => void results.rawFile.push((await load(rawFileUrl, 8)).bytesPerSecond)],
        [async () => void results.install.push((await load(installUrl, 32)).requestsPerSecond), async () => void results.rawJson.push((await load(rawJsonUrl, 32)).requestsPerSecond)],
        [async () => void results.release.push((await load(releaseUrl, 32)).requestsPerSecond), async () => void results.rawJson2.push((await load(rawJsonUrl, 32)).requestsPerSecond)],
        [async () => void results.update.push((await load(updateUrl, 32, 'devices.lua')).requestsPerSecond), async () => void results.rawJson3.push((await load(rawJsonUrl, 32)).requestsPerSecond)],
      ]
      for (const [ours, theirs] of pairs) {
        if (round % 2) {
          await ours()
          await theirs()
        } else {
          await theirs()
          await ours()
        }
      }
      results.bareInstall.push((await load(bareInstallUrl, 32)).requestsPerSecond)
      console.error(`round ${round}/${rounds} done`)
    }

    const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(0)
    const bundleRatio = median(results.bundle) / median(results.rawFile)
    const installRatio = median(results.install) / median(results.rawJson)
    console.log(`runtime benchmark: ${rounds} alternating rounds of ${seconds} s each, wrk -t1, medians`)
    console.log(`  5 MB bundle download  miniship ${mb(median(results.bundle))} MB/s   raw Bun.file ${mb(median(results.rawFile))} MB/s   ratio ${bundleRatio.toFixed(2)} (target ≥ 0.80)`)
    console.log(`    per round: miniship ${results.bundle.map(mb).join(', ')}; raw ${results.rawFile.map(mb).join(', ')} MB/s`)
    const rps = (values: number[]) => values.map((value) => value.toFixed(0)).join(', ')
    console.log(`  install info (published)  miniship ${median(results.install).toFixed(0)} req/s   raw constant JSON ${median(results.rawJson).toFixed(0)} req/s   ratio ${installRatio.toFixed(2)} (target ≥ 0.80)`)
    console.log(`    per round: miniship ${rps(results.install)}; raw ${rps(results.rawJson)} req/s`)
    const releaseRatio = median(results.release) / median(results.rawJson2)
    console.log(`  release install (stable, mid-rollout, no deviceId)  miniship ${median(results.release).toFixed(0)} req/s   raw ${median(results.rawJson2).toFixed(0)} req/s   ratio ${releaseRatio.toFixed(2)} (target ≥ 0.80)`)
    console.log(`    per round: miniship ${rps(results.release)}; raw ${rps(results.rawJson2)} req/s`)
    const updateRatio = median(results.update) / median(results.rawJson3)
    console.log(`  update check (25 % rollout, a new deviceId per request)  miniship ${median(results.update).toFixed(0)} req/s   raw ${median(results.rawJson3).toFixed(0)} req/s   ratio ${updateRatio.toFixed(2)} (target ≥ 0.70)`)
    console.log(`    per round: miniship ${rps(results.update)}; raw ${rps(results.rawJson3)} req/s`)
    const bareRatio = median(results.bareInstall) / median(results.rawJson)
    console.log(`  diagnosis: install info through Elysia's router without the request log (what serve's native route avoids) ${median(results.bareInstall).toFixed(0)} req/s, ratio ${bareRatio.toFixed(2)}`)
  }

  if (options.part === 'all' || options.part === 'signing') {
    const unsignedInstall = `${base}/api/mini-apps/access/versions/${version.id}/install?token=${downloadToken}`
    await benchSigning({ base, accessToken, form, rounds, seconds, load, unsigned: { install: unsignedInstall, release: releaseUrl, update: updateUrl }, serverPid: server.pid, dataDir })
    if (options.part === 'signing') {
      cleanUp()
      process.exit(0)
    }
  }

  // ---- insights: counting on against --insights off, on copies of the same data directory ----
  // a consistent copy of the database while the server runs (VACUUM INTO), then the files beside it
  const copies = { on: join(work, 'data-insights-on'), off: join(work, 'data-insights-off') }
  for (const copy of Object.values(copies)) {
    mkdirSync(copy, { recursive: true })
    const source = new Database(join(dataDir, 'miniship.db'))
    source.run('VACUUM INTO ?', [join(copy, 'miniship.db')])
    source.close()
    for (const name of ['secret.key', 'insights.key', 'blobs']) cpSync(join(dataDir, name), join(copy, name), { recursive: true })
  }
  const on = await startMiniship(copies.on, [])
  const off = await startMiniship(copies.off, ['--insights', 'off'])
  const sideUrls = (side: string) => ({ release: releaseUrl.replace(base, side), update: updateUrl.replace(base, side) })
  for (const side of [on, off]) {
    await load(sideUrls(side).release, 16)
    await load(sideUrls(side).update, 16, 'devices.lua')
  }
  const counting = { releaseOn: [] as number[], releaseOff: [] as number[], updateOn: [] as number[], updateOff: [] as number[] }
  for (let round = 1; round <= rounds; round++) {
    const pairs: [() => Promise<void>, () => Promise<void>][] = [
      [async () => void counting.releaseOn.push((await load(sideUrls(on).release, 32)).requestsPerSecond), async () => void counting.releaseOff.push((await load(sideUrls(off).release, 32)).requestsPerSecond)],
      [
        async () => void counting.updateOn.push((await load(sideUrls(on).update, 32, 'devices.lua')).requestsPerSecond),
        async () => void counting.updateOff.push((await load(sideUrls(off).update, 32, 'devices.lua')).requestsPerSecond),
      ],
    ]
    for (const [first, second] of pairs) {
      if (round % 2) {
        await first()
        await second()
      } else {
        await second()
        await first()
      }
    }
    console.error(`insights round ${round}/${rounds} done`)
  }
  const perRound = (values: number[]) => values.map((value) => value.toFixed(0)).join(', ')
  console.log(`insights benchmark: ${rounds} alternating rounds of ${seconds} s each, wrk -t1 -c32, medians; counting on vs --insights off`)
  console.log(`  release install (no deviceId)  on ${median(counting.releaseOn).toFixed(0)} req/s   off ${median(counting.releaseOff).toFixed(0)} req/s   ratio ${(median(counting.releaseOn) / median(counting.releaseOff)).toFixed(2)} (target ≥ 0.95)`)
  console.log(`    per round: on ${perRound(counting.releaseOn)}; off ${perRound(counting.releaseOff)} req/s`)
  console.log(`  update check (25 % rollout, a new deviceId per request)  on ${median(counting.updateOn).toFixed(0)} req/s   off ${median(counting.updateOff).toFixed(0)} req/s   ratio ${(median(counting.updateOn) / median(counting.updateOff)).toFixed(2)} (target ≥ 0.95)`)
  console.log(`    per round: on ${perRound(counting.updateOn)}; off ${perRound(counting.updateOff)} req/s`)
} finally {
  cleanUp()
}
