// A change against a baseline, on a noisy machine (issue 30): `serve` from this tree and from another
// checkout side by side, one hot route loaded in many short runs whose order alternates, compared
// pair by pair; with raw `Bun.serve` answering the same JSON as a constant, as runtime.ts's baseline.
//
//   git worktree add /tmp/before HEAD~1 && cp -a node_modules /tmp/before/
//   node_modules/.bin/bun scripts/bench/ab.ts --before /tmp/before [--route install|release|update] [--pairs 15] [--seconds 1] [--processes 1] [-- serve flags]
//
// Each pair runs both trees back to back (which one goes first alternates), so a slow moment of a
// shared machine falls on both; the figure is the median of the pairs' ratios of CPU time per
// request (all of a server's threads, from /proc, so waiting for a core does not count), and in how
// many pairs this tree was the cheaper. runtime.ts's medians move by several percent between runs
// here; a paired median settles changes of 1-2 %, which is what a change to a hot path is worth.
// With --processes N each tree runs as N servers and a pair measures every one of them once: two
// processes of the same tree differ by a few percent (what the JIT happened to compile), so one
// process per side can mistake that for the change. It also prints each side's CPU per request by thread (the allocator's and the GC's threads show
// up there) and both trees' ratio to the raw constant.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { benchWorkspace, createBenchAdmin, freePort, median, publishBench, startRawConstant, waitForHealth, wrkLoad, wrkReport } from './support'

const root = join(import.meta.dir, '..', '..')


const { values: options, positionals: serveFlags } = parseArgs({
  options: { before: { type: 'string' }, route: { type: 'string', default: 'install' }, pairs: { type: 'string', default: '15' }, seconds: { type: 'string', default: '1' }, processes: { type: 'string', default: '1' } },
  allowPositionals: true,
})
const wrk = Bun.which('wrk')
if (!wrk) {
  console.log('a/b benchmark SKIPPED: the load generator wrk is not installed (Debian: apt-get install -y wrk)')
  process.exit(0)
}
if (!options.before) throw new Error('--before: the checkout to compare with (a git worktree with node_modules)')
const routes = ['install', 'release', 'update'] as const
const route = options.route as (typeof routes)[number]
if (!routes.includes(route)) throw new Error(`--route: one of ${routes.join(', ')}`)
const pairs = Number(options.pairs)
const seconds = Number(options.seconds)
const processes = Number(options.processes)
if (!Number.isInteger(processes) || processes < 1) throw new Error('--processes: a whole number of servers per tree, 1 or more')

const { work, children, cleanUp } = benchWorkspace('ab')

/** `serve` of the tree at `tree` on a data directory of its own, with 1.0.0 published and 1.1.0 at 25 %; answers its pid and the route's URL. */
async function startTree(tree: string, name: string): Promise<{ pid: number; url: string }> {
  const dataDir = join(work, name)
  createBenchAdmin([process.execPath, join(tree, 'src', 'main.ts')], dataDir)
  const port = await freePort()
  const child = Bun.spawn([process.execPath, join(tree, 'src', 'main.ts'), 'serve', '--data-dir', dataDir, '--host', '127.0.0.1', '--port', String(port), ...serveFlags], { cwd: work, stdout: 'ignore', stderr: 'pipe' })
  children.push(child)
  const base = `http://127.0.0.1:${port}`
  await waitForHealth(base)
  const published = await publishBench(base, new Uint8Array(1024))
  return { pid: child.pid, url: route === 'install' ? published.installUrl : route === 'release' ? published.releaseUrl : published.updateUrl }
}

/** CPU time so far per thread name (ns), from /proc */
function threadTimes(pid: number): Map<string, number> {
  const times = new Map<string, number>()
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    try {
      const name = readFileSync(`/proc/${pid}/task/${task}/comm`, 'utf8').trim()
      times.set(name, (times.get(name) ?? 0) + Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[0]))
    } catch {
      // a thread that ended between the listing and the read
    }
  }
  return times
}

interface Side {
  label: string
  /** the side's servers (one raw server; --processes of each tree) */
  servers: { pid: number; url: string }[]
  /** CPU ns per request of each pair, all threads, over all of the side's servers */
  totals: number[]
  byThread: Map<string, number[]>
}

try {
  writeFileSync(join(work, 'report.lua'), wrkReport)
  // the update check asks with another deviceId each time, as runtime.ts does
  writeFileSync(join(work, 'devices.lua'), `local counter = 0\nrequest = function()\n  counter = counter + 1\n  return wrk.format("GET", wrk.path .. counter)\nend\n${wrkReport}`)
  const script = join(work, route === 'update' ? 'devices.lua' : 'report.lua')
  const after: { pid: number; url: string }[] = []
  const before: { pid: number; url: string }[] = []
  for (let index = 0; index < processes; index++) {
    after.push(await startTree(root, `after-${index}`))
    before.push(await startTree(options.before, `before-${index}`))
  }
  writeFileSync(join(work, 'answer.json'), await (await fetch(after[0]!.url)).text())
  const raw = await startRawConstant(join(work, 'answer.json'), children)
  const sides: Side[] = [
    { label: 'this tree', servers: after, totals: [], byThread: new Map() },
    { label: 'before', servers: before, totals: [], byThread: new Map() },
    { label: 'raw constant', servers: [raw], totals: [], byThread: new Map() },
  ]
  // warm every server (JIT)
  for (const side of sides) for (const server of side.servers) await wrkLoad({ wrk, seconds: 1, script }, server.url, 32)
  for (let pair = 0; pair < pairs; pair++) {
    const order = pair % 2 === 0 ? sides : [...sides].reverse()
    const cpu = new Map<Side, Map<string, number>>(sides.map((side) => [side, new Map()]))
    const requests = new Map<Side, number>(sides.map((side) => [side, 0]))
    // server k of each side in turn, so the sides' runs interleave
    for (let index = 0; index < processes; index++) {
      for (const side of order) {
        const server = side.servers[index % side.servers.length]!
        const threadsBefore = threadTimes(server.pid)
        const load = await wrkLoad({ wrk, seconds, script }, server.url, 32)
        const threadsAfter = threadTimes(server.pid)
        requests.set(side, requests.get(side)! + load.requestsPerSecond * seconds)
        const byName = cpu.get(side)!
        for (const [name, ns] of threadsAfter) byName.set(name, (byName.get(name) ?? 0) + ns - (threadsBefore.get(name) ?? 0))
      }
    }
    for (const side of sides) {
      let total = 0
      for (const [name, ns] of cpu.get(side)!) {
        const perRequest = ns / requests.get(side)!
        total += perRequest
        if (!side.byThread.has(name)) side.byThread.set(name, [])
        side.byThread.get(name)!.push(perRequest)
      }
      side.totals.push(total)
    }
    console.error(`pair ${pair + 1}/${pairs} done`)
  }
  const [ours, theirs, rawSide] = sides as [Side, Side, Side]
  const ratios = ours.totals.map((value, index) => value / theirs.totals[index]!)
  console.log(`a/b, ${route}: ${pairs} pairs of ${seconds} s runs${processes > 1 ? ` on each of ${processes} servers per tree` : ''}, wrk -t1 -c32, CPU time per request (all threads)`)
  console.log(`  this tree / before: median of the pairs ${median(ratios).toFixed(3)}; this tree cheaper in ${ratios.filter((ratio) => ratio < 1).length} of ${pairs}`)
  for (const side of sides) {
    const threads = [...side.byThread].map(([name, values]) => [name, median(values)] as const).filter(([, value]) => value >= 30)
    console.log(`  ${side.label.padEnd(13)} ${(median(side.totals) / 1000).toFixed(2)} µs  (${threads.map(([name, value]) => `${name} ${(value / 1000).toFixed(2)}`).join(', ')})`)
  }
  console.log(`  raw / this tree ${(median(rawSide.totals) / median(ours.totals)).toFixed(3)}, raw / before ${(median(rawSide.totals) / median(theirs.totals)).toFixed(3)} (runtime.ts's cpu column)`)
} finally {
  cleanUp()
}
