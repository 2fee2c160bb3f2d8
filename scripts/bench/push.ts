// `miniship push` benchmark (issue 11): the compiled binary uploading a 200 MB bundle to a local server, against `curl -F` sending the same form.
//
//   node_modules/.bin/bun scripts/bench/push.ts [--rounds 5] [--mb 200]
//
// Builds the binary (or takes MINISHIP_BINARY), starts it as the server on a temp data directory,
// creates a user, a mini app and an API key, and writes a build folder with a 200 MB iOS bundle.
// Each round runs both sides in alternating order so machine noise falls on both alike: `miniship
// push` (the client's peak RSS, its wall time) and `curl -F` with the same five
// files and fields (wall time). Every upload is a new version number; the server keeps one copy of
// the identical bundle (content-addressed), so disk use stays flat. Targets: client peak RSS ≤ 60 MB,
// throughput ≥ 0.7× curl's.
import { call, createBenchAdmin, freePort } from './support'
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { buildZip } from '../../src/test-fixtures'

const root = join(import.meta.dir, '..', '..')
const { values: options } = parseArgs({ options: { rounds: { type: 'string', default: '5' }, mb: { type: 'string', default: '200' } } })
const rounds = Number(options.rounds)
const bundleBytes = Number(options.mb) * 1024 * 1024
const curl = Bun.which('curl')
if (!curl) {
  console.log('push benchmark SKIPPED: curl is not installed')
  process.exit(0)
}

const work = mkdtempSync(join(tmpdir(), 'miniship-bench-push-'))
let server: ReturnType<typeof Bun.spawn> | null = null
const cleanUp = () => {
  server?.kill('SIGTERM')
  rmSync(work, { recursive: true, force: true })
}
process.on('SIGINT', () => {
  cleanUp()
  process.exit(130)
})

async function binary(): Promise<string> {
  if (Bun.env.MINISHIP_BINARY) return Bun.env.MINISHIP_BINARY
  const out = join(work, 'miniship')
  const build = Bun.spawn([process.execPath, join(root, 'scripts', 'build.ts'), out], { cwd: root, stdout: 'ignore', stderr: 'inherit' })
  if ((await build.exited) !== 0) throw new Error('build failed')
  return out
}

/**
 * The child's own peak RSS, read from VmHWM while it runs. getrusage's maxRSS of a child (Bun's
 * resourceUsage()) also counts the parent's RSS at fork time, which here holds the benchmark.
 */
function watchPeakRss(pid: number): () => number {
  let peakKb = 0
  const read = () => {
    try {
      const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
      if (match) peakKb = Math.max(peakKb, Number(match[1]))
    } catch {
      // gone already
    }
  }
  const timer = setInterval(read, 5)
  return () => {
    clearInterval(timer)
    return peakKb / 1024
  }
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

try {
  const miniship = await binary()
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  server = Bun.spawn([miniship, 'serve', '--data-dir', join(work, 'data'), '--host', '127.0.0.1', '--port', String(port), '--rate-limit', 'off'], { stdout: 'ignore', stderr: 'ignore' })
  for (let tries = 0; ; tries++) {
    try {
      if ((await fetch(`${base}/api/health`)).ok) break
    } catch {
      // not listening yet
    }
    if (tries > 200) throw new Error('the server did not start')
    await Bun.sleep(50)
  }
  createBenchAdmin([miniship], join(work, 'data'))
  const { accessToken } = (await call(base, 'POST', '/api/auth/register', { json: { email: 'bench@example.test', password: 'bench-password' } })) as { accessToken: string }
  await call(base, 'POST', '/api/mini-apps', { token: accessToken, json: { appId: 'bench', name: 'Bench' } })
  const { key } = (await call(base, 'POST', '/api/auth/api-keys', { token: accessToken, json: { name: 'bench', scopes: ['upload'] } })) as { key: string }

  const build = join(work, 'build')
  mkdirSync(build)
  const chunk = new Uint8Array(1024 * 1024)
  const file = Bun.file(join(build, 'main.ios.jsbundle')).writer()
  for (let written = 0; written < bundleBytes; written += chunk.length) {
    crypto.getRandomValues(chunk.subarray(0, 65536))
    file.write(chunk.subarray(0, Math.min(chunk.length, bundleBytes - written)))
  }
  await file.end()
  writeFileSync(join(build, 'main.android.bundle'), 'console.log("android")')
  writeFileSync(join(build, 'app.json'), JSON.stringify({ appId: 'bench', name: 'Bench', pages: { home: 'Home' } }))
  writeFileSync(join(build, 'assets-ios.zip'), buildZip([{ name: 'assets/logo.png', content: 'png' }]))
  writeFileSync(join(build, 'assets-android.zip'), buildZip([{ name: 'drawable-mdpi/logo.png', content: 'png' }]))
  const totalBytes = bundleBytes + 4096

  let next = 0
  const nextVersion = () => `1.0.${next++}`

  async function runPush(): Promise<{ seconds: number; rssMb: number }> {
    const started = performance.now()
    const child = Bun.spawn([miniship, 'push', build, '--app', 'bench', '--version', nextVersion()], {
      env: { ...process.env, MINISHIP_SERVER: base, MINISHIP_TOKEN: key, XDG_CONFIG_HOME: join(work, 'config') },
      stdout: 'ignore',
      stderr: 'pipe',
    })
    const peakRss = watchPeakRss(child.pid)
    const [code, stderr] = await Promise.all([child.exited, new Response(child.stderr).text()])
    const seconds = (performance.now() - started) / 1000
    const rssMb = peakRss()
    if (code !== 0) throw new Error(`miniship push exited ${code}: ${stderr}`)
    return { seconds, rssMb }
  }

  async function runCurl(): Promise<{ seconds: number }> {
    const args = [curl!, '-sS', '-o', '/dev/null', '-w', '%{http_code}', '-H', `authorization: Bearer ${key}`, '-F', `version=${nextVersion()}`]
    for (const [field, name] of [['bundleIos', 'main.ios.jsbundle'], ['bundleAndroid', 'main.android.bundle'], ['manifest', 'app.json'], ['assetsIos', 'assets-ios.zip'], ['assetsAndroid', 'assets-android.zip']]) {
      args.push('-F', `${field}=@${join(build, name!)};filename=${name}`)
    }
    args.push(`${base}/api/mini-apps/by-app-id/bench/versions/upload`)
    const started = performance.now()
    const child = Bun.spawn(args, { stdout: 'pipe', stderr: 'pipe' })
    const [code, status] = await Promise.all([child.exited, new Response(child.stdout).text()])
    const seconds = (performance.now() - started) / 1000
    if (code !== 0 || status !== '201') throw new Error(`curl exited ${code} with HTTP ${status}`)
    return { seconds }
  }

  const push: { seconds: number; rssMb: number }[] = []
  const curled: { seconds: number }[] = []
  // one of each first, not counted: page cache, the server's first-upload imports
  await runPush()
  await runCurl()
  for (let round = 0; round < rounds; round++) {
    if (round % 2 === 0) {
      push.push(await runPush())
      curled.push(await runCurl())
    } else {
      curled.push(await runCurl())
      push.push(await runPush())
    }
    const p = push.at(-1)!
    const c = curled.at(-1)!
    console.log(`round ${round + 1}: push ${p.seconds.toFixed(2)} s (peak RSS ${p.rssMb.toFixed(1)} MB), curl ${c.seconds.toFixed(2)} s`)
  }
  const mbOf = (bytes: number) => bytes / 1024 / 1024
  const pushRate = mbOf(totalBytes) / median(push.map((r) => r.seconds))
  const curlRate = mbOf(totalBytes) / median(curled.map((r) => r.seconds))
  const rss = median(push.map((r) => r.rssMb))
  const maxRss = Math.max(...push.map((r) => r.rssMb))
  console.log(`\n${(bundleBytes / 1024 / 1024).toFixed(0)} MB bundle, ${rounds} rounds, medians:`)
  console.log(`  miniship push  ${pushRate.toFixed(1)} MB/s, client peak RSS median ${rss.toFixed(1)} MB (max ${maxRss.toFixed(1)} MB; target ≤ 60 MB)`)
  console.log(`  curl -F        ${curlRate.toFixed(1)} MB/s`)
  console.log(`  ratio push/curl ${(pushRate / curlRate).toFixed(2)} (target ≥ 0.70)`)
} finally {
  cleanUp()
}
