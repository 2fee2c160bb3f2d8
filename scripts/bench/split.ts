// Where a hot path's microseconds go below JavaScript (issue 30): Linux `perf` samples `serve` and the
// raw `Bun.serve` constant of runtime.ts under the same wrk load, and the CPU time per request of
// each is split by where the samples fell: the kernel (TCP, syscalls), Bun's own native code (the
// JS engine's runtime and GC, the HTTP server, Response and Headers), JavaScript the JIT compiled
// (ours), libc, the clock (vdso).
//
//   node_modules/.bin/bun scripts/bench/split.ts [--rounds 3] [--seconds 4] [--routes install,release,update]
//
// `bun --cpu-prof` (profile.ts) names JS functions but puts native work under whichever function
// called it; this shows how much of a request is native work at all, and how much of it the raw
// constant does too. Each round samples every side once, in alternating order; medians print.
// Needs perf (Debian: apt-get install -y linux-perf) allowed to sample a process of this user, and wrk.
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { benchWorkspace, cpuTimeOf, createBenchAdmin, freePort, median, publishBench, startRawConstant, waitForHealth, wrkReport } from './support'

const root = join(import.meta.dir, '..', '..')


const { values: options } = parseArgs({ options: { rounds: { type: 'string', default: '3' }, seconds: { type: 'string', default: '4' }, routes: { type: 'string', default: 'install,release,update' } } })
const wrk = Bun.which('wrk')
const perf = Bun.which('perf')
if (!wrk || !perf) {
  console.log(`split SKIPPED: ${!wrk ? 'wrk' : 'perf'} is not installed (Debian: apt-get install -y ${!wrk ? 'wrk' : 'linux-perf'})`)
  process.exit(0)
}
const probe = Bun.spawnSync([perf, 'record', '-e', 'cpu-clock', '-o', '/dev/null', '--', 'true'], { stdout: 'ignore', stderr: 'pipe' })
if (probe.exitCode !== 0) {
  console.log(`split SKIPPED: perf cannot sample here (${probe.stderr.toString().trim().split('\n')[0]}); see /proc/sys/kernel/perf_event_paranoid`)
  process.exit(0)
}
const routes = options.routes!.split(',')
for (const route of routes) if (!['install', 'release', 'update'].includes(route)) throw new Error(`--routes: install, release, update (not ${route})`)
const rounds = Number(options.rounds)
const seconds = Number(options.seconds)

/** The parts a sample falls in, by the code it hit. */
const parts = ['kernel', 'Bun native', 'JIT (our JS)', 'libc', 'clock (vdso)', 'other'] as const
type Part = (typeof parts)[number]
const partOf = (dso: string): Part => (dso === '[kernel.kallsyms]' ? 'kernel' : dso.startsWith('bun') ? 'Bun native' : dso.startsWith('[JIT]') ? 'JIT (our JS)' : dso.startsWith('libc') ? 'libc' : dso === '[vdso]' ? 'clock (vdso)' : 'other')

const { work, children, cleanUp } = benchWorkspace('split')
try {
  writeFileSync(join(work, 'report.lua'), wrkReport)
  writeFileSync(join(work, 'devices.lua'), `local counter = 0\nrequest = function()\n  counter = counter + 1\n  return wrk.format("GET", wrk.path .. counter)\nend\n${wrkReport}`)
  const dataDir = join(work, 'data')
  createBenchAdmin([process.execPath, join(root, 'src', 'main.ts')], dataDir)
  const port = await freePort()
  const server = Bun.spawn([process.execPath, join(root, 'src', 'main.ts'), 'serve', '--data-dir', dataDir, '--host', '127.0.0.1', '--port', String(port)], { cwd: work, stdout: 'ignore', stderr: 'inherit' })
  children.push(server)
  const base = `http://127.0.0.1:${port}`
  await waitForHealth(base)
  const published = await publishBench(base, new Uint8Array(1024))
  writeFileSync(join(work, 'install.json'), await (await fetch(published.installUrl)).text())
  const raw = await startRawConstant(join(work, 'install.json'), children)

  const urls: Record<string, string> = { install: published.installUrl, release: published.releaseUrl, update: published.updateUrl }
  const sides = [
    { label: 'raw constant', pid: raw.pid, url: `${raw.url}install`, script: 'report.lua' },
    ...routes.map((route) => ({ label: route, pid: server.pid, url: urls[route]!, script: route === 'update' ? 'devices.lua' : 'report.lua' })),
  ].map((side) => ({ ...side, perRequest: [] as Record<Part | 'total' | 'other threads', number>[] }))

  /** One sampled run: wrk loads the side while perf samples its process; µs per request by part. */
  async function sample(side: (typeof sides)[number], record: boolean): Promise<void> {
    const data = join(work, 'perf.data')
    const load = Bun.spawn([wrk!, '-t1', '-c32', `-d${seconds + 1}s`, '-s', join(work, side.script), side.url], { stdout: 'pipe', stderr: 'pipe' })
    await Bun.sleep(500)
    const cpuBefore = cpuTimeOf(side.pid)
    const sampler = Bun.spawn([perf!, 'record', '-q', '-e', 'cpu-clock', '-F', '2000', '-p', String(side.pid), '-o', data, '--', 'sleep', String(seconds)], { stdout: 'ignore', stderr: 'pipe' })
    await sampler.exited
    const cpuAfter = cpuTimeOf(side.pid)
    const output = await new Response(load.stdout).text()
    await load.exited
    const summary = JSON.parse(output.split('\n').find((line) => line.startsWith('{"requests"'))!) as { requests: number; micros: number; errors: number; non2xx: number }
    if (summary.errors > 0 || summary.non2xx > 0) throw new Error(`${side.label}: ${summary.errors} socket errors, ${summary.non2xx} non-2xx answers`)
    if (!record) return
    // requests in the sampled window, at the run's rate; CPU from /proc over the same window
    const requests = (summary.requests / summary.micros) * 1e6 * seconds
    const cpuUs = (cpuAfter! - cpuBefore!) / 1000 / requests
    const report = Bun.spawnSync([perf!, 'report', '-i', data, '--no-children', '--sort', 'comm,dso', '--stdio', '-g', 'none'], { stdout: 'pipe', stderr: 'ignore' })
    const shares = Object.fromEntries([...parts, 'other threads'].map((part) => [part, 0])) as Record<Part | 'other threads', number>
    for (const line of report.stdout.toString().split('\n')) {
      const match = /^\s*([\d.]+)%\s+(\S+)\s+(.+?)\s*$/.exec(line)
      if (!match) continue
      const [, percent, comm, dso] = match as unknown as [string, string, string, string]
      const share = Number(percent) / 100
      // the process's main thread is named after the executable; the GC's helpers, the allocator's, the JIT's are threads of their own
      if (comm.startsWith('bun')) shares[partOf(dso)] += share
      else shares['other threads'] += share
    }
    const perRequest = { total: cpuUs } as Record<Part | 'total' | 'other threads', number>
    for (const [part, share] of Object.entries(shares)) perRequest[part as Part] = share * cpuUs
    side.perRequest.push(perRequest)
  }

  for (const side of sides) await sample(side, false)
  for (let round = 0; round < rounds; round++) {
    for (const side of round % 2 ? [...sides].reverse() : sides) await sample(side, true)
    console.error(`round ${round + 1}/${rounds} done`)
  }

  const rows = ['total', ...parts, 'other threads'] as const
  const medianOf = (side: (typeof sides)[number], row: (typeof rows)[number]) => median(side.perRequest.map((values) => values[row]))
  const rawSide = sides[0]!
  console.log(`split: CPU µs per request by where perf's samples fell (cpu-clock, 2 kHz), medians of ${rounds} alternating rounds of ${seconds} s, wrk -t1 -c32`)
  console.log(`  ${'part'.padEnd(16)}${sides.map((side) => side.label.padStart(14)).join('')}${sides.slice(1).map((side) => `${side.label} - raw`.padStart(18)).join('')}`)
  for (const row of rows) {
    const values = sides.map((side) => medianOf(side, row))
    console.log(`  ${row.padEnd(16)}${values.map((value) => value.toFixed(2).padStart(14)).join('')}${values.slice(1).map((value) => (value - values[0]!).toFixed(2).padStart(18)).join('')}`)
  }
  console.log(`  ratio raw / route (runtime.ts's cpu column): ${sides.slice(1).map((side) => `${side.label} ${(medianOf(rawSide, 'total') / medianOf(side, 'total')).toFixed(3)}`).join(', ')}`)
} finally {
  cleanUp()
}
