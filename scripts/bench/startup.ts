// Start-up benchmark: time from exec to the first 200 on /api/health, median of 20 starts on an
// initialised data directory, against a bare Elysia binary (same flags) built in the same run; and
// miniship again with the allocator options already set, so that serve does not re-execute itself.
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { allocatorOptions } from '../../src/allocator-tuning'

const root = join(import.meta.dir, '..', '..')
const work = mkdtempSync(join(tmpdir(), 'miniship-bench-startup-'))
const rounds = Number(process.argv[2] ?? 20)

function build(args: string[]): void {
  const result = Bun.spawnSync([process.execPath, ...args], { cwd: root, stdout: 'pipe', stderr: 'pipe' })
  if (result.exitCode !== 0) throw new Error(`build failed: ${result.stderr.toString()}`)
}

async function freePort(): Promise<number> {
  const probe = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response() })
  const port = probe.port!
  await probe.stop(true)
  return port
}

/** ms from spawn to the first 200 on /api/health */
async function timeStart(command: (port: number) => string[], env: Record<string, string> = {}): Promise<number> {
  const port = await freePort()
  const started = performance.now()
  const child = Bun.spawn(command(port), { stdout: 'ignore', stderr: 'ignore', cwd: work, env: { ...process.env, MIMALLOC_PURGE_HOLES: undefined, MIMALLOC_PURGE_DELAY: undefined, ...env } })
  for (;;) {
    try {
      const response = await fetch(`http://127.0.0.1:${port}/api/health`)
      if (response.status === 200) break
    } catch {
      // not yet listening
    }
    if (performance.now() - started > 10_000) throw new Error('no answer within 10 s')
    await Bun.sleep(1)
  }
  const elapsed = performance.now() - started
  child.kill('SIGTERM')
  await child.exited
  return elapsed
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

const miniship = join(work, 'miniship')
build([join(root, 'scripts', 'build.ts'), miniship])
const bareSource = join(work, 'bare.ts')
writeFileSync(bareSource, `import { Elysia } from '${join(root, 'node_modules', 'elysia')}'\nnew Elysia().get('/api/health', () => ({ status: 'ok' })).listen({ hostname: '127.0.0.1', port: Number(process.argv[2]) })\n`)
const bare = join(work, 'bare')
build(['build', '--compile', '--minify', '--bytecode', '--format=esm', '--outfile', bare, bareSource])

const dataDir = join(work, 'data')
Bun.spawnSync([miniship, 'init', '--data-dir', dataDir])

const ours: number[] = []
const preset: number[] = []
const baseline: number[] = []
const serve = (port: number) => [miniship, 'serve', '--data-dir', dataDir, '--host', '127.0.0.1', '--port', String(port)]
for (let round = 0; round < rounds; round++) {
  // alternate so that machine noise falls on all sides alike
  baseline.push(await timeStart((port) => [bare, String(port)]))
  ours.push(await timeStart(serve))
  // serve re-executes itself once to tune the allocator (src/allocator-tuning.ts) unless the environment already does
  preset.push(await timeStart(serve, { ...allocatorOptions }))
}
const oursMedian = median(ours)
const baselineMedian = median(baseline)
console.log(`startup to first /api/health 200, median of ${rounds} starts`)
console.log(`  miniship binary (initialised data dir): ${oursMedian.toFixed(1)} ms  (min ${Math.min(...ours).toFixed(1)}, max ${Math.max(...ours).toFixed(1)})`)
console.log(`  the same, allocator options already in the environment (no re-exec): ${median(preset).toFixed(1)} ms  (min ${Math.min(...preset).toFixed(1)}, max ${Math.max(...preset).toFixed(1)})`)
console.log(`  bare Elysia binary (--bytecode --minify): ${baselineMedian.toFixed(1)} ms  (min ${Math.min(...baseline).toFixed(1)}, max ${Math.max(...baseline).toFixed(1)})`)
console.log(`  ratio miniship / bare: ${(oursMedian / baselineMedian).toFixed(2)}  (target: miniship under 60 ms)`)
rmSync(work, { recursive: true, force: true })
