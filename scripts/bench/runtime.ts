// Runtime benchmark (issues 5, 13, 14, 30): every row of issue 30's table in one run, each against its baseline, same machine, same run.
//
//   node_modules/.bin/bun scripts/bench/runtime.ts [--rounds 5] [--seconds 3]
//
// Rows, with the default settings (request log on, insights counting), and their baselines:
//   install info of a published version        raw Bun.serve answering the same JSON as a constant  (goal ≥ 0.85)
//   release install, stable mid-rollout (25 %)  the same raw constant                                (goal ≥ 0.80)
//   update check, a new deviceId per request    the same raw constant (the deviceId from a wrk Lua script)  (goal ≥ 0.75)
//   S3 redirect: the bundle URL's 302            the same raw constant (files in s3rver on 127.0.0.1)  (goal ≥ 0.75)
//   5 MB bundle download (bytes/s)               raw Bun.file of the very same blob                    (goal ≥ 0.95)
//   counting on vs off, update check             the same data directory served with --insights off    (goal ≥ 0.95)
//   raw constant reading its URL                 the raw constant (no goal): what reading request.url costs, paid by
//                                                any server that routes or logs a path; the JSON rows print their
//                                                ratio to it too
// `serve` runs from source on temp data directories (a version with a 5 MB iOS bundle uploaded and
// published through the API, then 1.1.0 at 25 %); the raw servers run in another process. Each
// round runs every row's two sides, the side that goes first alternating, so machine noise falls
// on both; medians and their ratios print, and beside them the ratio of each side's best round
// (on a shared machine other work only slows a round down: the best rounds are the least disturbed)
// and the ratio of the CPU time each server spent per request (per byte for the download; all of
// its threads, from /proc), which waiting for a core on a busy machine does not inflate.
//
// The load generator is Debian's wrk (`apt-get install -y wrk`), one thread. autocannon was tried
// first: its node client receives large bodies at about 30 MB/s here while wrk takes 790 MB/s from
// the same raw server, so with autocannon both sides of the bundle comparison measure the client.
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { Database } from 'bun:sqlite'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { startTestS3, type TestS3 } from '../../src/storage/test-s3'
import { benchSigning } from './runtime-signing'
import { createBenchAdmin, freePort, median, publishBench, waitForHealth, wrkLoad, wrkReport, type Load } from './support'

const root = join(import.meta.dir, '..', '..')

// ---- mode 2: the raw servers, in their own process (like miniship, one JS thread each side) ----
if (process.argv[2] === '--raw-servers') {
  const [filePath, jsonPath] = process.argv.slice(3) as [string, string]
  const json = await Bun.file(jsonPath).text()
  const file = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response(Bun.file(filePath), { headers: { 'content-type': 'application/javascript' } }) })
  const constant = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response(json, { headers: { 'content-type': 'application/json; charset=utf-8' } }) })
  // the same constant after reading the request's URL and checking its path, as any server that routes
  // or logs a path must: Bun builds request.url on its first read (Host header + path, through the
  // WHATWG URL parser), a cost the raw constant never pays
  const routed = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch: (request) => {
      const url = request.url
      return url.startsWith('/api/', url.indexOf('/', 8)) ? new Response(json, { headers: { 'content-type': 'application/json; charset=utf-8' } }) : new Response(null, { status: 404 })
    },
  })
  console.log(JSON.stringify({ file: file.port, json: constant.port, routed: routed.port }))
  await new Promise(() => {})
}

// ---- mode 1: the benchmark ----
const { values: options } = parseArgs({ options: { rounds: { type: 'string', default: '5' }, seconds: { type: 'string', default: '3' }, signing: { type: 'string', default: 'on' } } })
const rounds = Number(options.rounds)
const seconds = Number(options.seconds)
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

/** Each request asks with another deviceId (appended to the URL's path and query), so no answer is reused. */
const distinctDevices = `local counter = 0
request = function()
  counter = counter + 1
  return wrk.format("GET", wrk.path .. counter)
end
`

/** One wrk run against `url` (one thread, `connections` connections, this run's --seconds); refuses a run with errors or non-2xx answers. */
const load = (url: string, connections: number, script = 'report.lua', pid?: number): Promise<Load> => wrkLoad({ wrk: wrk!, seconds, script: join(work, script), pid }, url, connections)

/** `serve` from source on a data directory (its request log to nowhere, as under a quiet journal); answers the base URL once /api/health does. */
async function startMiniship(dataDir: string, args: string[] = [], env: Record<string, string> = {}): Promise<{ base: string; pid: number }> {
  // register opens once an administrator exists (decisions §13)
  createBenchAdmin([process.execPath, join(root, 'src', 'main.ts')], dataDir, env)
  const port = await freePort()
  const child = Bun.spawn([process.execPath, join(root, 'src', 'main.ts'), 'serve', '--data-dir', dataDir, '--host', '127.0.0.1', '--port', String(port), ...args], {
    cwd: work,
    stdout: 'ignore',
    stderr: 'pipe',
    env: { ...process.env, ...env },
  })
  children.push(child)
  const base = `http://127.0.0.1:${port}`
  await waitForHealth(base, 20_000)
  return { base, pid: child.pid }
}

interface Row {
  label: string
  baseline: string
  /** null: no goal, a figure that explains the others */
  goal: number | null
  unit: 'req/s' | 'MB/s'
  ours: () => Promise<Load>
  theirs: () => Promise<Load>
  results: { ours: Load[]; theirs: Load[] }
}

try {
  writeFileSync(join(work, 'report.lua'), wrkReport)
  writeFileSync(join(work, 'devices.lua'), distinctDevices + wrkReport)
  const bundle = new Uint8Array(5 * 1024 * 1024)
  for (let offset = 0; offset < bundle.length; offset += 65536) crypto.getRandomValues(bundle.subarray(offset, offset + 65536))

  // miniship on local storage, the default settings
  const dataDir = join(work, 'data')
  const { base, pid } = await startMiniship(dataDir)
  const local = await publishBench(base, bundle)
  if ((await (await fetch(local.releaseUrl)).json()).version !== '1.0.0') throw new Error('release install should answer 1.0.0 during the rollout')
  const installJson = await (await fetch(local.installUrl)).text()

  // miniship on S3 storage (s3rver), downloads answered with a 302 to a presigned URL
  s3 = await startTestS3()
  const { base: s3Base, pid: s3Pid } = await startMiniship(join(work, 'data-s3'), ['--storage', 's3', '--s3-downloads', 'redirect'], s3.env('bench'))
  const onS3 = await publishBench(s3Base, bundle)
  const first = await fetch(onS3.bundleUrl, { redirect: 'manual' })
  await first.arrayBuffer()
  if (first.status !== 302) throw new Error(`the S3 bundle URL answered ${first.status}, not 302`)

  // counting on and off: copies of the local data directory (VACUUM INTO while it runs, then the files)
  const copies = { on: join(work, 'data-insights-on'), off: join(work, 'data-insights-off') }
  for (const copy of Object.values(copies)) {
    mkdirSync(copy, { recursive: true })
    const source = new Database(join(dataDir, 'miniship.db'))
    source.run('VACUUM INTO ?', [join(copy, 'miniship.db')])
    source.close()
    for (const name of ['secret.key', 'insights.key', 'blobs']) cpSync(join(dataDir, name), join(copy, name), { recursive: true })
  }
  const on = await startMiniship(copies.on)
  const off = await startMiniship(copies.off, ['--insights', 'off'])

  // the raw side: the same blob file, and the same JSON as a constant
  const blob = join(dataDir, 'blobs', 'sha256', local.info.files.bundleIos.sha256.slice(0, 2), local.info.files.bundleIos.sha256)
  const jsonPath = join(work, 'install.json')
  writeFileSync(jsonPath, installJson)
  const raw = Bun.spawn([process.execPath, import.meta.path, '--raw-servers', blob, jsonPath], { stdout: 'pipe', stderr: 'inherit' })
  children.push(raw)
  const reader = raw.stdout.getReader()
  const rawPorts = JSON.parse(new TextDecoder().decode((await reader.read()).value)) as { file: number; json: number; routed: number }
  reader.releaseLock()
  const rawFileUrl = `http://127.0.0.1:${rawPorts.file}/main.ios.jsbundle`
  const rawJsonUrl = `http://127.0.0.1:${rawPorts.json}/install`
  // asked with install info's own path and query (its download token), so its URL is as long to parse
  const routedJsonUrl = local.installUrl.replace(base, `http://127.0.0.1:${rawPorts.routed}`)

  const requests = (url: string, serverPid: number, script?: string) => () => load(url, 32, script, serverPid)
  const rawJson = requests(rawJsonUrl, raw.pid)
  const row = (label: string, baseline: string, goal: number | null, ours: () => Promise<Load>, theirs: () => Promise<Load>, unit: Row['unit'] = 'req/s'): Row => ({ label, baseline, goal, unit, ours, theirs, results: { ours: [], theirs: [] } })
  const rows: Row[] = [
    row('install info, published version', 'raw constant JSON', 0.85, requests(local.installUrl, pid), rawJson),
    row('release install, mid-rollout', 'raw constant JSON', 0.8, requests(local.releaseUrl, pid), rawJson),
    row('update check, a new deviceId per request', 'raw constant JSON', 0.75, requests(local.updateUrl, pid, 'devices.lua'), rawJson),
    row('S3 redirect (302 to a presigned URL)', 'raw constant JSON', 0.75, requests(onS3.bundleUrl, s3Pid), rawJson),
    row('5 MB bundle download', 'raw Bun.file', 0.95, () => load(local.bundleUrl, 8, undefined, pid), () => load(rawFileUrl, 8, undefined, raw.pid), 'MB/s'),
    row('raw constant reading its URL', 'raw constant JSON', null, requests(routedJsonUrl, raw.pid), rawJson),
    row('update check, counting on vs off', '--insights off', 0.95, requests(local.updateUrl.replace(base, on.base), on.pid, 'devices.lua'), requests(local.updateUrl.replace(base, off.base), off.pid, 'devices.lua')),
  ]
  // warm every side (JIT, page cache, token and install caches)
  for (const { ours, theirs } of rows) {
    await ours()
    await theirs()
  }
  for (let round = 1; round <= rounds; round++) {
    for (const { ours, theirs, results } of rows) {
      if (round % 2) {
        results.ours.push(await ours())
        results.theirs.push(await theirs())
      } else {
        results.theirs.push(await theirs())
        results.ours.push(await ours())
      }
    }
    console.error(`round ${round}/${rounds} done`)
  }

  const shown = (unit: Row['unit'], value: number) => (unit === 'MB/s' ? (value / 1024 / 1024).toFixed(0) : value.toFixed(0))
  const rate = (unit: Row['unit']) => (load: Load) => (unit === 'MB/s' ? load.bytesPerSecond : load.requestsPerSecond)
  const cpu = (unit: Row['unit']) => (load: Load) => (unit === 'MB/s' ? load.cpuNsPerByte : load.cpuNsPerRequest)
  console.log(`runtime benchmark: ${rounds} alternating rounds of ${seconds} s each, wrk -t1 (-c32; -c8 for the download), medians`)
  console.log(`  ratio: of the medians; best: of each side's best round; cpu: the baseline's CPU time per request (per byte for the download) over miniship's, medians;`)
  console.log(`  paired: the median of each round's own ratio (the two sides ran back to back, so a slow spell of the machine that spans a round falls on both)`)
  console.log(`  ${'row'.padEnd(42)} ${'miniship'.padStart(10)} ${'baseline'.padStart(10)}  ${'ratio'.padStart(5)}  ${'best'.padStart(5)}  ${'cpu'.padStart(5)}  ${'paired'.padStart(6)}  goal`)
  for (const { label, baseline, goal, unit, results } of rows) {
    const ours = results.ours.map(rate(unit))
    const theirs = results.theirs.map(rate(unit))
    const ratio = median(ours) / median(theirs)
    const best = Math.max(...ours) / Math.max(...theirs)
    const oursCpu = results.ours.map(cpu(unit))
    const theirsCpu = results.theirs.map(cpu(unit))
    const cpuRatio = oursCpu.includes(null) || theirsCpu.includes(null) ? null : median(theirsCpu as number[]) / median(oursCpu as number[])
    const paired = median(ours.map((value, round) => value / theirs[round]!))
    const verdicts = goal === null ? [] : [ratio >= goal && 'medians', best >= goal && 'best rounds', cpuRatio !== null && cpuRatio >= goal && 'cpu', paired >= goal && 'paired'].filter(Boolean)
    const verdict = goal === null ? 'no goal (what reading request.url costs in Bun)' : verdicts.length === 0 ? 'MISSED' : `met by ${verdicts.join(', ')}`
    console.log(
      `  ${label.padEnd(42)} ${shown(unit, median(ours)).padStart(10)} ${shown(unit, median(theirs)).padStart(10)}  ${ratio.toFixed(2).padStart(5)}  ${best.toFixed(2).padStart(5)}  ${(cpuRatio?.toFixed(2) ?? '-').padStart(5)}  ${paired.toFixed(2).padStart(6)}  ${goal === null ? '' : `≥ ${goal.toFixed(2)} `}${unit} vs ${baseline}: ${verdict}`,
    )
  }
  // the JSON rows against the raw constant that reads its URL: what is left once the cost every routed server pays is out
  const routedRow = rows.find((row) => row.goal === null)!
  const routedRates = routedRow.results.ours.map(rate('req/s'))
  const routedCpu = routedRow.results.ours.map(cpu('req/s'))
  console.log(`  against the raw constant that reads its URL (${median(routedRates).toFixed(0)} req/s), no goal: ratio of the medians / cpu / the median of the rounds' ratios (same round)`)
  for (const { label, baseline, goal, results } of rows) {
    if (goal === null || baseline !== 'raw constant JSON') continue
    const ours = results.ours.map(rate('req/s'))
    const oursCpu = results.ours.map(cpu('req/s'))
    const cpuRatio = oursCpu.includes(null) || routedCpu.includes(null) ? null : median(routedCpu as number[]) / median(oursCpu as number[])
    const paired = median(ours.map((value, round) => value / routedRates[round]!))
    console.log(`    ${label.padEnd(42)} ${(median(ours) / median(routedRates)).toFixed(2)} / ${cpuRatio?.toFixed(2) ?? '-'} / ${paired.toFixed(2)}`)
  }
  for (const { label, unit, results } of rows) {
    const perUnit = (load: Load) => ((unit === 'MB/s' ? (load.cpuNsPerByte ?? NaN) * 1024 * 1024 / 1e6 : (load.cpuNsPerRequest ?? NaN) / 1000).toFixed(unit === 'MB/s' ? 2 : 1))
    console.log(`    ${label}: miniship ${results.ours.map((load) => shown(unit, rate(unit)(load))).join(', ')}; baseline ${results.theirs.map((load) => shown(unit, rate(unit)(load))).join(', ')} ${unit}`)
    console.log(`      cpu ${unit === 'MB/s' ? 'ms per MB' : 'µs per request'}: miniship ${results.ours.map(perUnit).join(', ')}; baseline ${results.theirs.map(perUnit).join(', ')}`)
  }
  // Signing (issue 27): the same releases of another miniapp, signed, against these unsigned ones (--signing off skips it)
  if (options.signing !== 'off') {
    await benchSigning({ base, accessToken: local.accessToken, form: local.form, rounds, seconds, load: (url, connections, script) => load(url, connections, script, pid), unsigned: { install: local.installUrl, release: local.releaseUrl, update: local.updateUrl }, serverPid: pid, dataDir })
  }
} finally {
  cleanUp()
  await s3?.close()
}
