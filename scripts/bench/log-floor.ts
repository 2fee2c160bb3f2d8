// What the request log costs on its own (issues 12 and 14): about the ceiling it puts on runtime.ts's ratios.
//
//   node_modules/.bin/bun scripts/bench/log-floor.ts [--rounds 7] [--seconds 3]
//
// decisions §8 asks for one JSON line per request and an X-Request-Id on every answer. Three
// servers in one child process answer the same constant JSON (an update check's answer, about
// 2.7 KB) to the same update-check URL:
//   raw       a Bun.serve fetch handler answering the constant with its content type, as
//             runtime.ts's raw side does;
//   id        serve's way for the runtime's answers (a `routes` entry for the update check's path,
//             cached headers), plus the X-Request-Id header;
//   logged    the same route through miniship's own request log (withRequestLog and the batched
//             createLogSink serve uses, its lines written to /dev/null), and nothing else of miniship;
//   redirect  a constant 302 to a presigned-length URL (what --s3-downloads redirect answers) on the
//             bundle download's route, through the same request log.
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
  const { createLogSink, withRequestLog } = await import('../../src/http/request-log')
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
  const headers = new Headers({ 'content-type': 'application/json; charset=utf-8', 'content-length': String(Buffer.byteLength(json)), 'cache-control': 'no-cache' })
  const answer = () => new Response(json, { headers })
  let counter = 0
  const devNull = openSync('/dev/null', 'w')
  const sink = createLogSink((chunk) => writeSync(devNull, chunk))
  const route = '/api/mini-apps/access/apps/:appId/update'
  const bundleRoute = '/api/mini-apps/access/versions/:versionId/bundles/:platform'
  // a presigned GET of Bun.S3Client is about this long
  const presigned = `http://127.0.0.1:9000/miniship/blobs/sha256/ab/${'ab'.repeat(32)}?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=${'A'.repeat(20)}%2F20261123%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20261123T170000Z&X-Amz-Expires=300&X-Amz-SignedHeaders=host&X-Amz-Signature=${'f'.repeat(64)}`
  const redirect = new Headers({ location: presigned, 'cache-control': 'no-store' })
  const notFound = () => new Response('not found', { status: 404 })
  const serve = (options: Partial<Parameters<typeof Bun.serve>[0]>) => Bun.serve({ hostname: '127.0.0.1', port: 0, development: false, fetch: notFound, ...options } as Parameters<typeof Bun.serve>[0]).port
  const ports = {
    raw: serve({ fetch: () => new Response(json, { headers: { 'content-type': 'application/json; charset=utf-8' } }) }),
    id: serve({
      routes: {
        [route]: {
          GET: () => {
            const response = answer()
            response.headers.set('x-request-id', `bench-${(++counter).toString(36)}`)
            return response
          },
        },
      },
    }),
    // as serve wraps its native install routes: the caller's X-Request-Id is not read
    logged: serve({ routes: { [route]: { GET: withRequestLog<Server<undefined>, BunRequest>(() => answer(), sink, undefined, undefined, false) } } }),
    redirect: serve({ routes: { [bundleRoute]: { GET: withRequestLog<Server<undefined>, BunRequest>(() => new Response(null, { status: 302, headers: redirect }), sink, undefined, undefined, true) } } }),
  }
  console.log(JSON.stringify({ ports, bytes: Buffer.byteLength(json) }))
  await new Promise(() => {})
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
  const { ports, bytes } = JSON.parse(new TextDecoder().decode((await reader.read()).value)) as { ports: Record<'raw' | 'id' | 'logged' | 'redirect', number>; bytes: number }
  reader.releaseLock()
  const sides = ['raw', 'id', 'logged', 'redirect'] as const
  const urlOf = (side: (typeof sides)[number]) => `http://127.0.0.1:${ports[side]}${side === 'redirect' ? bundlePath : updatePath}`
  const measure = async (side: (typeof sides)[number]) => (await wrkLoad({ wrk, seconds, script }, urlOf(side), 32)).requestsPerSecond
  // warm every side (JIT)
  for (const side of sides) await wrkLoad({ wrk, seconds: 1, script }, urlOf(side), 32)
  const results = { raw: [] as number[], id: [] as number[], logged: [] as number[], redirect: [] as number[] }
  for (let round = 1; round <= rounds; round++) {
    // each round starts with another side
    const order = [...sides.slice(round % sides.length), ...sides.slice(0, round % sides.length)]
    for (const side of order) results[side].push(await measure(side))
    console.error(`round ${round}/${rounds} done`)
  }
  const raw = median(results.raw)
  console.log(`request log floor: ${rounds} alternating rounds of ${seconds} s each, wrk -t1 -c32, a constant ${bytes}-byte JSON answer, medians`)
  console.log(`  ${'raw Bun.serve'.padEnd(38)} ${raw.toFixed(0)} req/s`)
  const labels = { id: 'route + X-Request-Id', logged: "route + miniship's request log", redirect: 'a 302 through the request log' }
  for (const side of ['id', 'logged', 'redirect'] as const) {
    const label = labels[side]
    console.log(`  ${label.padEnd(38)} ${median(results[side]).toFixed(0)} req/s   ratio ${(median(results[side]) / raw).toFixed(2)}`)
  }
  for (const side of sides) console.log(`    per round ${side}: ${results[side].map((value) => value.toFixed(0)).join(', ')}`)
} finally {
  cleanUp()
}
