// Peak server memory while four 100 MB uploads are in flight: miniship's streamed upload against request.formData().
//
//   bun scripts/bench/upload-memory.ts                 # both servers, prints the figures
//   bun scripts/bench/upload-memory.ts --storage s3    # miniship storing into a bucket (s3rver on 127.0.0.1)
//
// Each server runs in a process of its own and the uploads come from a third process, so the
// figures are the server's alone: VmRSS when idle, then VmHWM (the kernel's peak resident set)
// after the load, with the peak reset just before the load starts (/proc/<pid>/clear_refs).
import { createBenchAdmin } from './support'
import { mkdtempSync, rmSync, readFileSync, writeFileSync, openSync, writeSync, closeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import { startTestS3, type TestS3 } from '../../src/storage/test-s3'

const root = join(import.meta.dir, '..', '..')
const uploads = 4
const uploadMb = 100
const mb = 1024 * 1024

// ---------------------------------------------------------------------------------------------
// Modes: the script is also the baseline server and the load client, each in its own process.

if (process.argv[2] === '--formdata-server') {
  // The baseline: what a straightforward handler does, holding every part in memory.
  const dir = mkdtempSync(join(tmpdir(), 'bench-formdata-'))
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: Number(process.argv[3]),
    maxRequestBodySize: Number.MAX_SAFE_INTEGER,
    async fetch(request) {
      if (request.method === 'GET') return new Response('ok')
      const form = await request.formData()
      for (const [name, value] of form) {
        if (typeof value !== 'string') await Bun.write(join(dir, `${name}-${Bun.randomUUIDv7()}`), value)
      }
      return Response.json({ ok: true }, { status: 201 })
    },
  })
  process.on('SIGTERM', () => {
    server.stop(true)
    rmSync(dir, { recursive: true, force: true })
    process.exit(0)
  })
} else if (process.argv[2] === '--client') {
  // Sends the prepared uploads concurrently; prints one JSON line with the statuses.
  const [baseUrl, token, appId, filesDir] = process.argv.slice(3) as [string, string, string, string]
  const started = performance.now()
  const statuses = await Promise.all(
    Array.from({ length: uploads }, async (_, index) => {
      const form = new FormData()
      form.append('version', `1.0.${index + 1}`)
      form.append('bundleIos', Bun.file(join(filesDir, `ios-${index}.bundle`)), 'main.ios.jsbundle')
      form.append('bundleAndroid', Bun.file(join(filesDir, `android-${index}.bundle`)), 'main.android.bundle')
      form.append('manifest', new Blob([JSON.stringify({ appId, name: 'Bench' })]), 'app.json')
      form.append('assetsIos', Bun.file(join(filesDir, `assets-ios-${index}.zip`)), 'assets-ios.zip')
      form.append('assetsAndroid', Bun.file(join(filesDir, `assets-android-${index}.zip`)), 'assets-android.zip')
      const response = await fetch(`${baseUrl}/api/mini-apps/by-app-id/${appId}/versions/upload`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}` },
        body: form,
      })
      const text = await response.text()
      return response.status === 201 ? 201 : `${response.status} ${text.slice(0, 200)}`
    }),
  )
  console.log(JSON.stringify({ statuses, seconds: (performance.now() - started) / 1000 }))
  process.exit(0)
} else {
  await main()
}

// ---------------------------------------------------------------------------------------------

/** A stored zip with one entry of `size` random bytes under `folder`, written without buffering it whole. */
function writeZip(path: string, folder: string, size: number): void {
  const name = new TextEncoder().encode(`${folder}/blob.bin`)
  const data = crypto.getRandomValues(new Uint8Array(size))
  const crc = Bun.hash.crc32(data)
  const local = Buffer.alloc(30 + name.length)
  local.writeUInt32LE(0x04034b50, 0)
  local.writeUInt16LE(20, 4)
  local.writeUInt32LE(crc, 14)
  local.writeUInt32LE(size, 18)
  local.writeUInt32LE(size, 22)
  local.writeUInt16LE(name.length, 26)
  local.set(name, 30)
  const central = Buffer.alloc(46 + name.length)
  central.writeUInt32LE(0x02014b50, 0)
  central.writeUInt16LE((3 << 8) | 20, 4)
  central.writeUInt16LE(20, 6)
  central.writeUInt32LE(crc, 16)
  central.writeUInt32LE(size, 20)
  central.writeUInt32LE(size, 24)
  central.writeUInt16LE(name.length, 28)
  central.writeUInt32LE((0o100644 << 16) >>> 0, 38)
  central.set(name, 46)
  const end = Buffer.alloc(22)
  end.writeUInt32LE(0x06054b50, 0)
  end.writeUInt16LE(1, 8)
  end.writeUInt16LE(1, 10)
  end.writeUInt32LE(central.length, 12)
  end.writeUInt32LE(local.length + size, 16)
  const fd = openSync(path, 'w')
  for (const part of [local, data, central, end]) writeSync(fd, part)
  closeSync(fd)
}

function writeRandom(path: string, size: number): void {
  const fd = openSync(path, 'w')
  const chunk = 4 * mb
  for (let written = 0; written < size; written += chunk) writeSync(fd, crypto.getRandomValues(new Uint8Array(Math.min(chunk, size - written))))
  closeSync(fd)
}

/** Four uploads of 100 MB each: two 46 MB bundles and two 4 MB asset archives, all different. */
function prepareFiles(dir: string): void {
  for (let index = 0; index < uploads; index++) {
    writeRandom(join(dir, `ios-${index}.bundle`), 46 * mb)
    writeRandom(join(dir, `android-${index}.bundle`), 46 * mb)
    writeZip(join(dir, `assets-ios-${index}.zip`), 'assets', 4 * mb)
    writeZip(join(dir, `assets-android-${index}.zip`), 'drawable-mdpi', 4 * mb)
  }
}

function memoryOf(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)![1]) * 1024
  return { rss: kb('VmRSS'), hwm: kb('VmHWM') }
}

/** Resets VmHWM to the current RSS, so the peak is the load's and not start-up's. */
function resetPeak(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5')
    return true
  } catch {
    return false
  }
}

async function freePort(): Promise<number> {
  const probe = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response() })
  const port = probe.port!
  await probe.stop(true)
  return port
}

async function waitFor(url: string, child: Subprocess): Promise<void> {
  const deadline = Date.now() + 30_000
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the server exited with ${child.exitCode} before answering ${url}`)
    try {
      if ((await fetch(url)).ok) return
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`no answer from ${url} within 30 s`)
    await Bun.sleep(50)
  }
}

async function json(response: Response): Promise<Record<string, unknown>> {
  const body = (await response.json()) as Record<string, unknown>
  if (!response.ok) throw new Error(`${response.url}: ${response.status} ${JSON.stringify(body)}`)
  return body
}

interface Measurement {
  idle: number
  peak: number
  after: number
  seconds: number
  peakReset: boolean
}

async function measure(pid: number, baseUrl: string, token: string, appId: string, filesDir: string): Promise<Measurement> {
  // Settle: let start-up garbage go before the idle reading.
  await Bun.sleep(1500)
  const idle = memoryOf(pid).rss
  const peakReset = resetPeak(pid)
  const client = Bun.spawn([process.execPath, import.meta.path, '--client', baseUrl, token, appId, filesDir], { stdout: 'pipe', stderr: 'inherit' })
  const output = await new Response(client.stdout).text()
  await client.exited
  const result = JSON.parse(output.trim().split('\n').pop()!) as { statuses: (number | string)[]; seconds: number }
  const failed = result.statuses.filter((status) => status !== 201)
  if (failed.length > 0) throw new Error(`uploads failed: ${failed.join('; ')}`)
  const { rss, hwm } = memoryOf(pid)
  return { idle, peak: hwm, after: rss, seconds: result.seconds, peakReset }
}

async function benchMiniship(filesDir: string, s3: TestS3 | null): Promise<Measurement> {
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-miniship-'))
  const port = await freePort()
  const server = Bun.spawn(
    [process.execPath, join(root, 'src', 'main.ts'), 'serve', '--data-dir', dataDir, '--host', '127.0.0.1', '--port', String(port), '--rate-limit', 'off'],
    { cwd: root, stdout: 'ignore', stderr: 'inherit', env: { ...process.env, MINISHIP_DATA_DIR: '', ...(s3 ? s3.env('bench') : {}) } },
  )
  const baseUrl = `http://127.0.0.1:${port}`
  try {
    await waitFor(`${baseUrl}/api/health`, server)
    createBenchAdmin([process.execPath, join(root, 'src', 'main.ts')], dataDir)
    const registered = await json(
      await fetch(`${baseUrl}/api/auth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'bench@example.test', password: 'bench-password' }) }),
    )
    const token = String(registered.accessToken)
    await json(
      await fetch(`${baseUrl}/api/mini-apps`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({ appId: 'bench.app', name: 'Bench' }),
      }),
    )
    return await measure(server.pid, baseUrl, token, 'bench.app', filesDir)
  } finally {
    server.kill('SIGTERM')
    await server.exited
    rmSync(dataDir, { recursive: true, force: true })
  }
}

async function benchFormData(filesDir: string): Promise<Measurement> {
  const port = await freePort()
  const server = Bun.spawn([process.execPath, import.meta.path, '--formdata-server', String(port)], { stdout: 'ignore', stderr: 'inherit' })
  const baseUrl = `http://127.0.0.1:${port}`
  try {
    await waitFor(`${baseUrl}/`, server)
    return await measure(server.pid, baseUrl, 'none', 'bench.app', filesDir)
  } finally {
    server.kill('SIGTERM')
    await server.exited
  }
}

async function main(): Promise<void> {
  const filesDir = mkdtempSync(join(tmpdir(), 'bench-files-'))
  const show = (bytes: number) => `${(bytes / mb).toFixed(1)} MB`
  const storage = process.argv.includes('--storage') ? process.argv[process.argv.indexOf('--storage') + 1] : 'local'
  // with --storage s3 the uploads go on from tmp/ into a bucket (multipart for the 46 MB bundles)
  const s3 = storage === 's3' ? await startTestS3() : null
  try {
    process.stderr.write(`preparing ${uploads} uploads of ${uploadMb} MB…\n`)
    prepareFiles(filesDir)
    process.stderr.write(`miniship (streamed upload, ${storage} storage)…\n`)
    const streamed = await benchMiniship(filesDir, s3)
    process.stderr.write('baseline (request.formData())…\n')
    const buffered = await benchFormData(filesDir)
    const above = (m: Measurement) => m.peak - m.idle
    console.log(`${uploads} concurrent uploads of ${uploadMb} MB, Bun ${Bun.version}, miniship with ${storage} storage`)
    for (const [label, m] of [[`miniship streamed (${storage})`, streamed], ['baseline request.formData()', buffered]] as const) {
      console.log(`${label.padEnd(30)} idle RSS ${show(m.idle).padStart(9)}  peak (VmHWM) ${show(m.peak).padStart(9)}  peak above idle ${show(above(m)).padStart(9)}  RSS after ${show(m.after).padStart(9)}  ${m.seconds.toFixed(1)} s${m.peakReset ? '' : '  (peak not reset: includes start-up)'}`)
    }
    console.log(`ratio (baseline / miniship, peak above idle): ${(above(buffered) / Math.max(above(streamed), 1)).toFixed(1)}×`)
    const budget = 100 * mb
    console.log(above(streamed) < budget ? `OK: miniship stays under 100 MB above idle` : `OVER BUDGET: miniship went ${show(above(streamed))} above idle (budget 100 MB)`)
    if (above(streamed) >= budget) process.exitCode = 1
  } finally {
    rmSync(filesDir, { recursive: true, force: true })
    await s3?.close()
  }
}
