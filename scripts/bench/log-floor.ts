// What the request log costs on its own (issues 12 and 14): about the ceiling it puts on runtime.ts's ratios.
//
//   node_modules/.bin/bun scripts/bench/log-floor.ts [--rounds 7] [--seconds 3]
//
// decisions §8 asks for one JSON line per request and an X-Request-Id on every answer. Servers in
// one child process answer the same constant JSON (an update check's answer, about 2.7 KB) to the
// same update-check URL, each adding one part of the log to the one before (issue 30):
//   raw       a Bun.serve fetch handler answering the constant with its content type, as
//             runtime.ts's raw side does;
//   url       the raw answer after reading the request's URL and picking the route by its path, as
//             nativeDispatch does: Bun builds \`request.url\` on its first read (the Host header and
//             the path, checked by the WHATWG URL parser), a cost the raw constant never pays and
//             every routed server does;
//   id        serve's way for the runtime's answers (its fetch handler reads the URL and picks the
//             route by its path, as nativeDispatch does; cached headers), plus the X-Request-Id
//             header (a per-process prefix and a counter) set on those headers before they are
//             copied into the answer, as jsonResponse does;
//   time      and what the line needs besides: the clock (twice: the duration) and the cached ISO time;
//   format    miniship's request log (withRequestLog) formatting every line into its buffer, the
//             full buffers handed to nothing;
//   logged    the same, the buffers written to /dev/null as serve writes them to stdout (fdWriter):
//             miniship's request log, and nothing else of miniship;
//   immediate the same with each line formatted as its request ends (a batch of one), as the log
//             did before it kept lines as fields and formatted them 256 at a time;
//   redirect  a constant 302 to a presigned-length URL (what --s3-downloads redirect answers) on the
//             bundle download's route, through the same request log.
// Before the HTTP rounds, each part is timed alone in this process (ns per request, the best of
// many rounds: steadier than requests per second on a shared machine). Beside the ratios of the
// medians and of the best rounds prints the ratio of CPU time per request (raw's over the side's):
// waiting for a core on a busy machine does not count there.
// A miniship answer that does anything besides logging costs more than `logged` (or `redirect`), so
// these ratios are about the best runtime.ts can print against raw constant JSON. The sides
// alternate over the rounds; medians and ratios print.
import { mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import type { BunRequest, Server } from 'bun'
import { median, wrkLoad, wrkReport } from './support'

const updatePath = '/api/mini-apps/access/apps/com.example.bench/update?platform=ios&currentVersion=1.0.0&deviceId=bench-device-1'
const bundlePath = `/api/mini-apps/access/versions/01a20944-0672-763f-b854-e6bb825ee5b7/bundles/ios?token=${'t'.repeat(160)}`

// ---- mode 2: the three servers, in their own process (one JS thread, like miniship) ----
if (process.argv[2] === '--servers') {
  const { createLogSink, fdWriter, isoTimeOf, nextRequestId, pathStartOf, runningRequestId, toldLength, withRequestLog } = await import('../../src/http/request-log')
  const url = (name: string) => `http://127.0.0.1:3000/api/mini-apps/access/versions/01a20944-0672-763f-b854-e6bb825ee5b7/${name}?scope=stable/bench-device-1&token=${'t'.repeat(160)}`
  const json = JSON.stringify({
    updateAvailable: true,
    mandatory: false,
    rollout: { percent: 25 },
    install: {
      appId: 'com.example.bench',
      appName: 'Bench',
      versionId: '01a20944-0672-763f-b854-e6bb825ee5b7',
      version: '1.1.0',
      releaseType: 'RELEASE',
      routeUrl: 'miniapp://com.example.bench',
      bundleUrls: { ios: url('bundles/ios'), android: url('bundles/android') },
      bundleUrl: url('bundles/ios'),
      assetsUrls: { ios: url('assets/ios'), android: url('assets/android') },
      manifestUrl: url('manifest'),
      files: Object.fromEntries(['bundleIos', 'bundleAndroid', 'manifest', 'assetsIos', 'assetsAndroid'].map((kind) => [kind, { size: 5242880, sha256: 'ab'.repeat(32) }])),
    },
  })
  // no Content-Length: serve's runtime answers leave it to Bun, which writes it from the body (jsonResponse)
  const headers = new Headers({ 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-cache' })
  const bytes = Buffer.byteLength(json)
  // as serve's runtime answers are made (runtime/index.ts jsonResponse): the running request's id set
  // on cached headers before they are copied into the answer, its length told to the log
  const answer = () => {
    headers.set('x-request-id', runningRequestId()!)
    return toldLength(new Response(json, { headers }), bytes, true)
  }
  let counter = 0
  const devNull = openSync('/dev/null', 'w')
  const sink = createLogSink(fdWriter(devNull, { write: (chunk) => writeSync(devNull, chunk) }))
  const unwritten = createLogSink(() => {})
  // lines formatted as they come (a batch of one), as the request log did before issue 30's last change
  const oneByOne = createLogSink(fdWriter(devNull, { write: (chunk) => writeSync(devNull, chunk) }), 100, 1)
  const isoOf = isoTimeOf()
  let kept: unknown = null
  // serve picks the runtime's routes from the URL in its fetch handler (nativeDispatch), handing the URL it read on
  const updatePrefix = '/api/mini-apps/access/apps/'
  const bundlePrefix = '/api/mini-apps/access/versions/'
  const dispatched =
    (prefix: string, handler: (request: Request, server: Server<undefined>, url: string) => Response | Promise<Response>) =>
    (request: Request, server: Server<undefined>) => {
      const url = request.url
      return url.startsWith(prefix, pathStartOf(url)) && request.method === 'GET' ? handler(request, server, url) : notFound()
    }
  // a presigned GET of Bun.S3Client is about this long
  const presigned = `http://127.0.0.1:9000/miniship/blobs/sha256/ab/${'ab'.repeat(32)}?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=${'A'.repeat(20)}%2F20261123%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20261123T170000Z&X-Amz-Expires=300&X-Amz-SignedHeaders=host&X-Amz-Signature=${'f'.repeat(64)}`
  const redirect = new Headers({ location: presigned, 'cache-control': 'no-store' })
  const notFound = () => new Response('not found', { status: 404 })
  const serve = (fetch: (request: Request, server: Server<undefined>) => Response | Promise<Response>) => Bun.serve({ hostname: '127.0.0.1', port: 0, development: false, fetch }).port
  // as serve wraps its native install routes: the caller's X-Request-Id is not read
  const logged = (logSink: typeof sink) => serve(dispatched(updatePrefix, withRequestLog<Server<undefined>>(() => answer(), logSink, { keepIncomingId: false })))
  const ports = {
    raw: serve(() => new Response(json, { headers: { 'content-type': 'application/json; charset=utf-8' } })),
    url: serve(dispatched(updatePrefix, () => new Response(json, { headers: { 'content-type': 'application/json; charset=utf-8' } }))),
    id: serve(
      dispatched(updatePrefix, () => {
        headers.set('x-request-id', `bench-${(++counter).toString(36)}`)
        return new Response(json, { headers })
      }),
    ),
    time: serve(
      dispatched(updatePrefix, (_request, _server, url) => {
        const started = performance.now()
        headers.set('x-request-id', nextRequestId())
        const response = new Response(json, { headers })
        const ended = performance.now()
        kept = [isoOf(Math.floor(performance.timeOrigin + ended)), url, ended - started]
        return response
      }),
    ),
    format: logged(unwritten),
    logged: logged(sink),
    immediate: logged(oneByOne),
    // as the S3 redirect is made (runtime/files.ts): the id in its cached headers, no length
    redirect: serve(
      dispatched(
        bundlePrefix,
        withRequestLog<Server<undefined>>(() => {
          redirect.set('x-request-id', runningRequestId()!)
          return toldLength(new Response(null, { status: 302, headers: redirect }), null, true)
        }, sink),
      ),
    ),
  }
  void kept
  console.log(JSON.stringify({ ports, bytes: Buffer.byteLength(json) }))
  await new Promise(() => {})
}

// ---- mode 3: each part alone, in process ----
if (process.argv[2] === '--parts') {
  const { createLogSink, fdWriter, isoTimeOf, nextRequestId, runningRequestId, toldLength, withRequestLog } = await import('../../src/http/request-log')
  // real requests as Bun hands them to a route (their URL is built on each read, as under load)
  const requests: BunRequest[] = []
  const catcher = Bun.serve({ hostname: '127.0.0.1', port: 0, routes: { '/api/mini-apps/access/apps/:appId/update': (request) => (requests.push(request), new Response('ok')) }, fetch: () => new Response(null, { status: 404 }) })
  for (let index = 0; index < 500; index++) await fetch(`http://127.0.0.1:${catcher.port}${updatePath}${index}`)
  await catcher.stop(true)
  const devNull = openSync('/dev/null', 'w')
  const unwritten = createLogSink(() => {})
  const written = createLogSink(fdWriter(devNull, { write: (chunk) => writeSync(devNull, chunk) }))
  const isoOf = isoTimeOf()
  const json = 'x'.repeat(2680)
  const headers = new Headers({ 'content-type': 'application/json; charset=utf-8' })
  const answer = (id: string) => {
    headers.set('x-request-id', id)
    return new Response(json, { headers })
  }
  // as serve's runtime answers are made: the running request's id, the length told
  const wrapped = withRequestLog<null, BunRequest>(() => toldLength(answer(runningRequestId()!), json.length, true), written, { keepIncomingId: false })
  const urls = requests.map((request) => request.url)
  let sink: unknown = null
  const parts: [string, (index: number) => unknown][] = [
    ['the request id (prefix + counter)', () => nextRequestId()],
    ['the URL string (request.url)', (index) => requests[index]!.url],
    ['the clock and the cached ISO time', () => isoOf(Date.now())],
    ['the line formatted into the buffer', (index) => unwritten.request(1764061200000, 'GET', urls[index]!, 200, 2680, 0.12, 'abcdef012345-1a2b')],
    ['formatted and written to /dev/null', (index) => written.request(1764061200000, 'GET', urls[index]!, 200, 2680, 0.12, 'abcdef012345-1a2b')],
    ['a constant answer + X-Request-Id', () => answer('abcdef012345-1a2b')],
    ['the same through withRequestLog', (index) => wrapped(requests[index]!, null)],
  ]
  const best = parts.map(() => Infinity)
  for (let round = 0; round < 40; round++) {
    for (const [part, [, run]] of parts.entries()) {
      const started = performance.now()
      for (let repeat = 0; repeat < 20; repeat++) for (let index = 0; index < requests.length; index++) sink = run(index)
      if (round >= 5) best[part] = Math.min(best[part]!, ((performance.now() - started) * 1e6) / (20 * requests.length))
    }
  }
  void sink
  console.log('request log parts, in process, ns per request (best of 35 rounds of 10,000):')
  for (const [part, [label]] of parts.entries()) console.log(`  ${label.padEnd(38)} ${best[part]!.toFixed(0).padStart(6)} ns`)
  process.exit(0)
}

// ---- mode 1: the benchmark ----
const { values: options } = parseArgs({ options: { rounds: { type: 'string', default: '7' }, seconds: { type: 'string', default: '3' } } })
const rounds = Number(options.rounds)
const seconds = Number(options.seconds)
const wrk = Bun.which('wrk')
if (!wrk) {
  console.log('log floor benchmark SKIPPED: the load generator wrk is not installed (Debian: apt-get install -y wrk)')
  process.exit(0)
}
const work = mkdtempSync(join(tmpdir(), 'miniship-bench-log-floor-'))
const script = join(work, 'report.lua')
writeFileSync(script, wrkReport)
const partsRun = Bun.spawnSync([process.execPath, import.meta.path, '--parts'], { stdout: 'pipe', stderr: 'inherit' })
process.stdout.write(partsRun.stdout)
const servers = Bun.spawn([process.execPath, import.meta.path, '--servers'], { stdout: 'pipe', stderr: 'inherit' })
const cleanUp = () => {
  servers.kill('SIGTERM')
  rmSync(work, { recursive: true, force: true })
}
process.on('SIGINT', () => {
  cleanUp()
  process.exit(130)
})
try {
  const reader = servers.stdout.getReader()
  const { ports, bytes } = JSON.parse(new TextDecoder().decode((await reader.read()).value)) as { ports: Record<'raw' | 'url' | 'id' | 'time' | 'format' | 'logged' | 'immediate' | 'redirect', number>; bytes: number }
  reader.releaseLock()
  const sides = ['raw', 'url', 'id', 'time', 'format', 'logged', 'immediate', 'redirect'] as const
  const urlOf = (side: (typeof sides)[number]) => `http://127.0.0.1:${ports[side]}${side === 'redirect' ? bundlePath : updatePath}`
  const measure = (side: (typeof sides)[number]) => wrkLoad({ wrk, seconds, script, pid: servers.pid }, urlOf(side), 32)
  // warm every side (JIT)
  for (const side of sides) await wrkLoad({ wrk, seconds: 1, script }, urlOf(side), 32)
  const results = Object.fromEntries(sides.map((side) => [side, [] as number[]])) as Record<(typeof sides)[number], number[]>
  // the servers' CPU time per request (all sides live in one process; only the measured one is busy)
  const cpu = Object.fromEntries(sides.map((side) => [side, [] as number[]])) as Record<(typeof sides)[number], number[]>
  for (let round = 1; round <= rounds; round++) {
    // each round starts with another side
    const order = [...sides.slice(round % sides.length), ...sides.slice(0, round % sides.length)]
    for (const side of order) {
      const load = await measure(side)
      results[side].push(load.requestsPerSecond)
      if (load.cpuNsPerRequest !== null) cpu[side].push(load.cpuNsPerRequest)
    }
    console.error(`round ${round}/${rounds} done`)
  }
  const raw = median(results.raw)
  const rawBest = Math.max(...results.raw)
  // on a shared machine other work only ever slows a round: the best round of each side is its
  // throughput with the least interference, so its ratio is printed beside the medians'
  console.log(`request log floor: ${rounds} alternating rounds of ${seconds} s each, wrk -t1 -c32, a constant ${bytes}-byte JSON answer, medians (best rounds)`)
  console.log(`  ${'raw Bun.serve'.padEnd(38)} ${raw.toFixed(0)} req/s (${rawBest.toFixed(0)})`)
  const labels = { url: 'URL read, route', id: '+ X-Request-Id', time: '+ clock and ISO time', format: '+ lines formatted (not written)', logged: "route + miniship's request log", immediate: 'the same, each line formatted at once', redirect: 'a 302 through the request log' }
  for (const side of ['url', 'id', 'time', 'format', 'logged', 'immediate', 'redirect'] as const) {
    const label = labels[side]
    const best = Math.max(...results[side])
    const cpuRatio = cpu[side].length === rounds && cpu.raw.length === rounds ? ` cpu ${(median(cpu.raw) / median(cpu[side])).toFixed(2)}` : ''
    console.log(`  ${label.padEnd(38)} ${median(results[side]).toFixed(0)} req/s (${best.toFixed(0)})   ratio ${(median(results[side]) / raw).toFixed(2)} (best rounds ${(best / rawBest).toFixed(2)}${cpuRatio})`)
  }
  for (const side of sides) console.log(`    per round ${side}: ${results[side].map((value) => value.toFixed(0)).join(', ')} req/s; ${cpu[side].map((value) => (value / 1000).toFixed(1)).join(', ')} µs cpu per request`)
} finally {
  cleanUp()
}
