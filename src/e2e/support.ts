// Runs the compiled binary as an operator would: free port, temp data directory, HTTP, SIGTERM.
import { chmodSync, copyFileSync, existsSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Subprocess } from 'bun'

const root = join(import.meta.dir, '..', '..')
let built: Promise<string> | null = null

/**
 * The binary under test: `MINISHIP_BINARY` when CI built it already, otherwise one fresh build per
 * test run (so a stale dist/ never passes for the current sources).
 */
export function binaryPath(): Promise<string> {
  const given = Bun.env.MINISHIP_BINARY
  if (given) {
    if (!existsSync(given)) throw new Error(`MINISHIP_BINARY=${given} does not exist; run npm run build`)
    return Promise.resolve(given)
  }
  built ??= (async () => {
    const outfile = join(mkdtempSync(join(tmpdir(), 'miniship-bin-')), 'miniship')
    const build = Bun.spawn([process.execPath, join(root, 'scripts', 'build.ts'), outfile], { cwd: root, stdout: 'pipe', stderr: 'pipe' })
    const [stdout, stderr, exitCode] = await Promise.all([new Response(build.stdout).text(), new Response(build.stderr).text(), build.exited])
    if (exitCode !== 0) throw new Error(`building the binary failed:\n${stdout}\n${stderr}`)
    return outfile
  })()
  return built
}

export function tempDir(prefix = 'miniship-e2e-'): string {
  return mkdtempSync(join(tmpdir(), prefix))
}

/** A copy of the binary in a temp directory of its own, for tests that put data directories (or check files) beside it. */
export async function binaryCopy(prefix?: string): Promise<{ dir: string; binary: string }> {
  const dir = tempDir(prefix)
  const binary = join(dir, 'miniship')
  copyFileSync(await binaryPath(), binary)
  chmodSync(binary, 0o755)
  return { dir, binary }
}

export async function freePort(): Promise<number> {
  const probe = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response() })
  const port = probe.port!
  await probe.stop(true)
  return port
}

/** The environment of a user's shell without any MINISHIP_* setting leaking in from ours. */
export function cleanEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {}
  for (const [key, value] of Object.entries(process.env)) {
    if (!key.startsWith('MINISHIP_') && value !== undefined) env[key] = value
  }
  return { ...env, ...extra }
}

export interface RunResult {
  exitCode: number
  stdout: string
  stderr: string
}

export async function runBinary(args: string[], options: { stdin?: string; cwd?: string; env?: Record<string, string>; binary?: string } = {}): Promise<RunResult> {
  const binary = options.binary ?? (await binaryPath())
  const child = Bun.spawn([binary, ...args], {
    cwd: options.cwd ?? tmpdir(),
    env: cleanEnv(options.env),
    stdin: options.stdin === undefined ? 'ignore' : new TextEncoder().encode(options.stdin),
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [stdout, stderr, exitCode] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited])
  return { exitCode, stdout, stderr }
}

export interface RunningBinary {
  port: number
  baseUrl: string
  child: Subprocess<'ignore', 'pipe', 'pipe'>
  /** what the server printed so far */
  output(): { stdout: string; stderr: string }
  /** SIGTERM (or `signal`) and the exit code */
  stop(signal?: NodeJS.Signals): Promise<number>
}

async function collect(stream: ReadableStream<Uint8Array>, into: { text: string }): Promise<void> {
  const decoder = new TextDecoder()
  for await (const chunk of stream) into.text += decoder.decode(chunk, { stream: true })
}

/** Starts `serve` on a free port and waits until /api/health answers 200. */
export async function startBinary(options: { dataDir: string; args?: string[]; env?: Record<string, string>; cwd?: string; binary?: string }): Promise<RunningBinary> {
  const binary = options.binary ?? (await binaryPath())
  const port = await freePort()
  const child = Bun.spawn([binary, 'serve', '--data-dir', options.dataDir, '--host', '127.0.0.1', '--port', String(port), ...(options.args ?? [])], {
    cwd: options.cwd ?? tmpdir(),
    env: cleanEnv(options.env),
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const stdout = { text: '' }
  const stderr = { text: '' }
  const reading = Promise.all([collect(child.stdout, stdout), collect(child.stderr, stderr)])
  const baseUrl = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 20_000
  for (;;) {
    if (child.exitCode !== null) throw new Error(`miniship exited with ${child.exitCode} before answering:\n${stdout.text}\n${stderr.text}`)
    try {
      const response = await fetch(`${baseUrl}/api/health`)
      if (response.status === 200) break
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL')
      throw new Error(`miniship did not answer /api/health within 20 s:\n${stdout.text}\n${stderr.text}`)
    }
    await Bun.sleep(20)
  }
  return {
    port,
    baseUrl,
    child,
    output: () => ({ stdout: stdout.text, stderr: stderr.text }),
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null) child.kill(signal)
      const code = await child.exited
      await reading
      return code
    },
  }
}

export interface ApiCallOptions {
  json?: unknown
  body?: BodyInit
  token?: string
}

/** One HTTP call to a running server as a client would make it; the body parsed when it is JSON. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function callApi(baseUrl: string, method: string, path: string, options: ApiCallOptions = {}): Promise<{ status: number; body: any }> {
  const headers: Record<string, string> = {}
  if (options.token) headers.authorization = `Bearer ${options.token}`
  if (options.json !== undefined) headers['content-type'] = 'application/json'
  const response = await fetch(`${baseUrl}${path}`, { method, headers, body: options.json !== undefined ? JSON.stringify(options.json) : options.body })
  const text = await response.text()
  let body: unknown = text
  try {
    body = JSON.parse(text)
  } catch {
    // not JSON: keep the text
  }
  return { status: response.status, body }
}

/** One request written byte for byte on a socket (a Host no client library would send, say); the whole answer as text. */
export async function rawHttp(port: number, request: string): Promise<string> {
  const { promise, resolve, reject } = Promise.withResolvers<string>()
  let answer = ''
  await Bun.connect({
    hostname: '127.0.0.1',
    port,
    socket: {
      open: (socket) => void socket.write(request),
      data: (_socket, data) => void (answer += data.toString()),
      close: () => resolve(answer),
      error: (_socket, error) => reject(error),
    },
  })
  return promise
}

/**
 * Decisions §13: nobody registers before an administrator exists. Creates one through the setup
 * link the server printed at start (when it printed one: a server with an admin prints none), so
 * a test can then register developers as a user would.
 */
export async function setUpFirstAdmin(server: RunningBinary, admin: { email: string; password: string } = { email: 'first-admin@example.test', password: 'first-admin-password' }): Promise<void> {
  const info = (await (await fetch(`${server.baseUrl}/api/info`)).json()) as { setupRequired?: boolean }
  if (!info.setupRequired) return
  for (let tries = 0; tries < 300; tries++) {
    const { stderr } = server.output()
    const link = /\/setup\?token=([A-Za-z0-9_-]+)/.exec(stderr)
    if (link) {
      const response = await fetch(`${server.baseUrl}/setup`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ token: link[1]!, email: admin.email, password: admin.password }) })
      if (response.status !== 201 && response.status !== 409) throw new Error(`the setup link answered ${response.status}: ${await response.text()}`)
      return
    }
    await Bun.sleep(10)
  }
  throw new Error(`the server printed no setup link:\n${server.output().stderr}`)
}
