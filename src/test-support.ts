// Shared by the HTTP tests: a real data directory in a temp folder, a movable clock, and a caller.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createApp, type App, type AppInput } from './app'
import { loadConfig, type Config } from './config'
import { openDataDir, type OpenedDataDir } from './data-dir'

export interface TestContext {
  app: App
  config: Config
  dataDir: OpenedDataDir
  /** milliseconds; move it with `advance` */
  now: { value: number }
  advance(ms: number): void
  logs: string[]
  call(method: string, path: string, options?: CallOptions): Promise<CallResult>
  close(): void
}

export interface CallOptions {
  json?: unknown
  body?: BodyInit
  token?: string
  headers?: Record<string, string>
}

export interface CallResult {
  status: number
  headers: Headers
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any
  text: string
}

/** the temp directories made by tempDir in this test process: removed when it exits */
const madeDirs: string[] = []

/** A new directory under the system's temp folder, removed when the test process exits (a run left hundreds behind). */
export function tempDir(prefix = 'miniship-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  if (madeDirs.length === 0) process.once('exit', removeMadeDirs)
  madeDirs.push(dir)
  return dir
}

function removeMadeDirs(): void {
  for (const dir of madeDirs.splice(0)) {
    try {
      rmSync(dir, { recursive: true, force: true })
    } catch {
      // a directory still in use is the system's to clean up
    }
  }
}

/** A fresh app on its own temp data directory; rate limits off unless `overrides.rateLimit`. */
export function createTestContext(overrides: Partial<Config> = {}, input: Pick<AppInput, 'jobs'> = {}): TestContext {
  const root = tempDir()
  const config: Config = { ...loadConfig({ dataDir: root, rateLimit: 'off' }, {}), ...overrides }
  const dataDir = openDataDir(config.dataDir)
  const now = { value: Date.parse('2026-11-22T10:00:00.000Z') }
  const logs: string[] = []
  const app = createApp({ config, db: dataDir.db, paths: dataDir.paths, secret: dataDir.secret, clock: () => now.value, log: (line) => logs.push(line), ...input })
  return {
    app,
    config,
    dataDir,
    now,
    logs,
    advance(ms) {
      now.value += ms
    },
    async call(method, path, options = {}) {
      const headers = new Headers(options.headers)
      let body: BodyInit | undefined = options.body
      if (options.json !== undefined) {
        body = JSON.stringify(options.json)
        if (!headers.has('content-type')) headers.set('content-type', 'application/json')
      }
      if (options.token) headers.set('authorization', `Bearer ${options.token}`)
      const response = await app.handle(new Request(`http://localhost${path}`, { method, headers, body }))
      const text = await response.text()
      let parsed: unknown = text
      try {
        parsed = JSON.parse(text)
      } catch {
        // not JSON: keep the text
      }
      return { status: response.status, headers: response.headers, body: parsed, text }
    },
    close() {
      // a test that started the background worker leaves nothing running on a closed database
      void app.store.jobs.stop(0)
      dataDir.db.$client.close()
      rmSync(root, { recursive: true, force: true })
    },
  }
}

// ---- accounts: users made through the real account service, tokens signed with the instance's secret

export interface TestUser {
  user: import('./modules/auth/service').UserRecord
  /** an access token of this user, as login would issue it */
  token: string
  password: string
}

/** Creates a user through the account service (one argon2 hash, about 0.25 s) and signs a token for it. */
export async function createUser(
  context: TestContext,
  options: { email: string; password?: string; role?: 'ADMIN' | 'USER'; displayName?: string; status?: 'ACTIVE' | 'DISABLED' },
): Promise<TestUser> {
  const { createUser: createAccount } = await import('./modules/auth/service')
  const { createTokenService } = await import('./modules/auth/tokens')
  const password = options.password ?? 'correct horse'
  const clock = () => context.now.value
  const user = await createAccount(context.dataDir.db, clock, { email: options.email, password, role: options.role ?? 'USER', displayName: options.displayName, status: options.status }, null, 'cli')
  const tokens = createTokenService(context.dataDir.secret, clock, context.config.tokenTtlSeconds)
  const token = await tokens.signAccess({ id: user.id, role: user.role, tokenVersion: 1 })
  return { user, token, password }
}

/** Signs in over HTTP and answers the access token; throws with the response when it fails. */
export async function loginToken(context: TestContext, email: string, password: string): Promise<string> {
  const res = await context.call('POST', '/api/auth/login', { json: { email, password } })
  if (res.status !== 200) throw new Error(`login of ${email} answered ${res.status}: ${res.text}`)
  return res.body.accessToken as string
}
