// Shared by the benchmarks: a free port, a JSON API call, waiting for a server's health, a wrk run with the server's CPU time, a median.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildZip } from '../../src/test-fixtures'

export async function freePort(): Promise<number> {
  const probe = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response() })
  const port = probe.port!
  await probe.stop(true)
  return port
}

/** One API call; a non-2xx answer throws with its status and (the start of) its body. */
export async function call(base: string, method: string, path: string, init: { token?: string; json?: unknown; body?: FormData } = {}) {
  const headers: Record<string, string> = {}
  if (init.token) headers.authorization = `Bearer ${init.token}`
  if (init.json !== undefined) headers['content-type'] = 'application/json'
  const response = await fetch(base + path, { method, headers, body: init.json !== undefined ? JSON.stringify(init.json) : init.body })
  const text = await response.text()
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text.slice(0, 300)}`)
  return JSON.parse(text)
}

/** Waits until `base`/api/health answers 200, or throws after `timeoutMs`. */
export async function waitForHealth(base: string, timeoutMs = 20_000): Promise<void> {
  for (let waited = 0; ; waited += 50) {
    try {
      if ((await fetch(`${base}/api/health`)).ok) return
    } catch {
      // not listening yet
    }
    if (waited > timeoutMs) throw new Error(`miniship did not start within ${timeoutMs / 1000} s`)
    await Bun.sleep(50)
  }
}

export interface Load {
  requestsPerSecond: number
  bytesPerSecond: number
  /** CPU time the server process spent per request (all its threads), when its pid was given and /proc has it */
  cpuNsPerRequest: number | null
  /** the same per byte answered */
  cpuNsPerByte: number | null
}

/**
 * The CPU time a process has run so far, all its threads, in ns (Linux: /proc/<pid>/task/<tid>/schedstat);
 * null where there is no /proc. On a shared machine this is steadier than requests per second: time
 * spent waiting for a core is not counted.
 */
export function cpuTimeOf(pid: number): number | null {
  try {
    let total = 0
    for (const task of readdirSync(`/proc/${pid}/task`)) {
      try {
        total += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[0])
      } catch {
        // a thread that ended between the listing and the read
      }
    }
    return total
  } catch {
    return null
  }
}

/** wrk's own end-of-run hook, printing the summary as one JSON line (write it to the script wrkLoad runs). */
export const wrkReport = `done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('{"requests":%d,"bytes":%d,"micros":%d,"errors":%d,"non2xx":%d,"timeouts":%d}\\n',
    summary.requests, summary.bytes, summary.duration, e.connect + e.read + e.write, e.status, e.timeout))
end
`

/** One wrk run against `url` (one thread, `connections` connections, a script ending in wrkReport); refuses a run with errors or non-2xx answers. */
export async function wrkLoad(options: { wrk: string; seconds: number; script: string; pid?: number }, url: string, connections: number): Promise<Load> {
  const cpuBefore = options.pid === undefined ? null : cpuTimeOf(options.pid)
  const child = Bun.spawn([options.wrk, '-t1', `-c${connections}`, `-d${options.seconds}s`, '-s', options.script, url], { stdout: 'pipe', stderr: 'pipe' })
  const [output, errors] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text()])
  await child.exited
  const line = output.split('\n').find((text) => text.startsWith('{"requests"'))
  if (!line) throw new Error(`wrk printed no summary: ${output} ${errors}`)
  const result = JSON.parse(line) as { requests: number; bytes: number; micros: number; errors: number; non2xx: number; timeouts: number }
  if (result.errors > 0 || result.non2xx > 0) {
    throw new Error(`${url.replace(/token=[^&]+/, 'token=…')}: ${result.errors} socket errors, ${result.non2xx} non-2xx answers`)
  }
  const cpuAfter = options.pid === undefined ? null : cpuTimeOf(options.pid)
  const cpu = cpuBefore === null || cpuAfter === null ? null : cpuAfter - cpuBefore
  const elapsed = result.micros / 1e6
  return {
    requestsPerSecond: result.requests / elapsed,
    bytesPerSecond: result.bytes / elapsed,
    cpuNsPerRequest: cpu === null ? null : cpu / result.requests,
    cpuNsPerByte: cpu === null ? null : cpu / result.bytes,
  }
}

export const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

/**
 * Decisions §13: nobody registers before an administrator exists. A bench makes one with
 * `create-admin` (`command`: how to run miniship, e.g. [bun, src/main.ts] or [the binary]) on the
 * data directory, which a running server does not prevent.
 */
export function createBenchAdmin(command: string[], dataDir: string, env: Record<string, string> = {}): void {
  const made = Bun.spawnSync([...command, 'create-admin', '--data-dir', dataDir, '--email', 'bench-admin@example.test', '--password-stdin'], {
    stdin: new TextEncoder().encode('bench-admin-password\n'),
    stdout: 'ignore',
    stderr: 'pipe',
    env: { ...process.env, MINISHIP_DATA_DIR: '', ...env },
  })
  if (made.exitCode !== 0 && !made.stderr.toString().includes('already exists')) throw new Error(`create-admin failed: ${made.stderr.toString()}`)
}

/** A zip with one entry, enough to pass upload's archive checks. */
const zipWith = (name: string, content: string): Uint8Array => buildZip([{ name, content }])

/** A user, a miniapp, version 1.0.0 with `bundle` as its iOS bundle published, then 1.1.0 published at 25 %; through the API. */
export async function publishBench(base: string, bundle: Uint8Array) {
  const { accessToken } = await call(base, 'POST', '/api/auth/register', { json: { email: 'bench@example.com', password: 'bench-password' } })
  const miniApp = await call(base, 'POST', '/api/mini-apps', { token: accessToken, json: { appId: 'com.example.bench', name: 'Bench' } })
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
  form.set('version', '1.1.0')
  form.set('manifest', new Blob([JSON.stringify({ appId: 'com.example.bench', name: 'Bench', version: '1.1.0', pages: { index: 'index' } })], { type: 'application/json' }), 'app.json')
  const next = await call(base, 'POST', '/api/mini-apps/by-app-id/com.example.bench/versions/upload', { token: accessToken, body: form })
  await call(base, 'POST', `/api/mini-apps/${miniApp.id}/versions/${next.id}/publish`, { token: accessToken, json: { rolloutPercent: 25 } })
  return {
    info,
    accessToken,
    form,
    installUrl: `${base}/api/mini-apps/access/versions/${version.id}/install?token=${downloadToken}`,
    bundleUrl: new URL(info.bundleUrl, base).toString(),
    releaseUrl: `${base}/api/mini-apps/access/apps/com.example.bench/release/install`,
    updateUrl: `${base}/api/mini-apps/access/apps/com.example.bench/update?platform=ios&currentVersion=1.0.0&deviceId=bench-device-`,
  }
}


/**
 * A benchmark's temp directory and the servers it starts: `cleanUp` stops them (SIGTERM) and removes
 * the directory, and runs on Ctrl-C too.
 */
export function benchWorkspace(name: string): { work: string; children: ReturnType<typeof Bun.spawn>[]; cleanUp: () => void } {
  const work = mkdtempSync(join(tmpdir(), `miniship-bench-${name}-`))
  const children: ReturnType<typeof Bun.spawn>[] = []
  const cleanUp = () => {
    for (const child of children) child.kill('SIGTERM')
    rmSync(work, { recursive: true, force: true })
  }
  process.on('SIGINT', () => {
    cleanUp()
    process.exit(130)
  })
  return { work, children, cleanUp }
}

/** raw-server.ts answering `jsonPath`'s JSON as a constant, in a process of its own (added to `children`); its pid and base URL. */
export async function startRawConstant(jsonPath: string, children: ReturnType<typeof Bun.spawn>[]): Promise<{ pid: number; url: string }> {
  const raw = Bun.spawn([process.execPath, join(import.meta.dir, 'raw-server.ts'), jsonPath], { stdout: 'pipe', stderr: 'inherit' })
  children.push(raw)
  const reader = raw.stdout.getReader()
  const port = Number(new TextDecoder().decode((await reader.read()).value).trim())
  reader.releaseLock()
  return { pid: raw.pid, url: `http://127.0.0.1:${port}/` }
}
