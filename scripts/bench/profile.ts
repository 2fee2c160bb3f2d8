// Where a hot path's microseconds go (issue 30): `serve` from source under Bun's CPU profiler, one
// route loaded with wrk, then the functions with the most self time.
//
//   node_modules/.bin/bun scripts/bench/profile.ts [--route install|release|update|s3|download] [--seconds 10] [--top 25]
//
// The profile (Bun's --cpu-prof-md: markdown, one table per view) is kept in the printed directory.
// Samples every 100 µs. A function's self time is the time spent in it, not in what it calls;
// "(program)" and "(garbage collector)" are the engine's own; native code appears under the JS
// function that called it.
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { startTestS3, type TestS3 } from '../../src/storage/test-s3'
import { allocatorOptions } from '../../src/allocator-tuning'
import { createBenchAdmin, freePort, publishBench, waitForHealth, wrkLoad, wrkReport } from './support'

const root = join(import.meta.dir, '..', '..')
const { values: options } = parseArgs({ options: { route: { type: 'string', default: 'install' }, seconds: { type: 'string', default: '10' }, top: { type: 'string', default: '25' } } })
const wrk = Bun.which('wrk')
if (!wrk) {
  console.log('profile SKIPPED: the load generator wrk is not installed (Debian: apt-get install -y wrk)')
  process.exit(0)
}
const routes = ['install', 'release', 'update', 's3', 'download']
if (!routes.includes(options.route!)) throw new Error(`--route: one of ${routes.join(', ')}`)

const work = mkdtempSync(join(tmpdir(), 'miniship-profile-'))
const profiles = join(work, 'profiles')
const dataDir = join(work, 'data')
let s3: TestS3 | null = null
// serve tunes the allocator by re-executing itself, which it skips under Bun's flags (the
// profiler's): the same settings are given here, so the profile is of serve as it runs
const env: Record<string, string> = { ...allocatorOptions }
const args: string[] = []
if (options.route === 's3') {
  s3 = await startTestS3()
  Object.assign(env, s3.env('profile'))
  args.push('--storage', 's3', '--s3-downloads', 'redirect')
}
createBenchAdmin([process.execPath, join(root, 'src', 'main.ts')], dataDir, env)
const port = await freePort()
const server = Bun.spawn(
  [process.execPath, '--cpu-prof', '--cpu-prof-md', `--cpu-prof-dir=${profiles}`, '--cpu-prof-interval=100', join(root, 'src', 'main.ts'), 'serve', '--data-dir', dataDir, '--host', '127.0.0.1', '--port', String(port), ...args],
  { cwd: work, stdout: 'ignore', stderr: 'inherit', env: { ...process.env, ...env } },
)
const base = `http://127.0.0.1:${port}`
try {
  await waitForHealth(base)
  const bundle = new Uint8Array(5 * 1024 * 1024)
  const published = await publishBench(base, bundle)
  const url = { install: published.installUrl, release: published.releaseUrl, update: published.updateUrl, s3: published.bundleUrl, download: published.bundleUrl }[options.route!]!
  const script = join(work, 'script.lua')
  const devices = options.route === 'update' ? 'local counter = 0\nrequest = function()\n  counter = counter + 1\n  return wrk.format("GET", wrk.path .. counter)\nend\n' : ''
  await Bun.write(script, devices + wrkReport)
  const load = await wrkLoad({ wrk, seconds: Number(options.seconds), script, pid: server.pid }, url, options.route === 'download' ? 8 : 32)
  console.log(`${options.route}: ${load.requestsPerSecond.toFixed(0)} req/s, ${((load.cpuNsPerRequest ?? NaN) / 1000).toFixed(1)} µs CPU per request (the profiler's own cost included)`)
} finally {
  server.kill('SIGTERM')
  await server.exited
  await s3?.close()
}
const file = readdirSync(profiles).find((name) => name.endsWith('.md'))
if (!file) throw new Error(`no profile written in ${profiles}`)
const text = readFileSync(join(profiles, file), 'utf8')
// the markdown's self-time table: print its head and the top rows
const lines = text.split('\n')
const selfAt = lines.findIndex((line) => /self/i.test(line) && line.startsWith('#'))
console.log(lines.slice(selfAt === -1 ? 0 : selfAt, (selfAt === -1 ? 0 : selfAt) + Number(options.top) + 4).join('\n'))
console.log(`\nthe whole profile: ${join(profiles, file)}`)
