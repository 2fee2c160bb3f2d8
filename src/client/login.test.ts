// `miniship login`'s device sign-in against the real app on a temp data directory: one denied in the
// console and one that expired end with their own code (exit 1), not FAILED, and save no sign-in.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { existsSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { cliSessions } from '../db/schema'
import { jsonDocument, runCli, type CliRun } from '../cli/test-run'
import { createTestContext, tempDir, type TestContext } from '../test-support'
import { createTestUser, type TestUser } from '../test-fixtures'

let context: TestContext
let server: ReturnType<typeof Bun.serve>
let person: TestUser
const root = tempDir('miniship-login-')

beforeAll(async () => {
  // polls every second; the CLI compares the code's expiry with its own clock, so the app's starts at now
  context = createTestContext({ cliIntervalSeconds: 1 })
  context.now.value = Date.now()
  server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: (request) => context.app.handle(request) })
  person = await createTestUser(context)
})
afterAll(() => {
  server.stop(true)
  context.close()
  rmSync(root, { recursive: true, force: true })
})

/** Starts `miniship login --json` with its own config folder, waits for its code to exist, lets `decide` act on it, and returns the run. */
async function login(configHome: string, decide: (code: string) => Promise<void> | void): Promise<CliRun> {
  const known = new Set(context.dataDir.db.select().from(cliSessions).all().map((session) => session.code))
  const run = runCli(['login', '--server', `http://127.0.0.1:${server.port}`, '--json'], { env: { XDG_CONFIG_HOME: configHome } })
  const deadline = Date.now() + 10_000
  for (;;) {
    const started = context.dataDir.db.select().from(cliSessions).all().find((session) => !known.has(session.code))
    if (started) {
      await decide(started.code)
      break
    }
    if (Date.now() > deadline) throw new Error(`login started no sign-in: ${JSON.stringify(await run)}`)
    await Bun.sleep(50)
  }
  return run
}

test('denied in the console: SIGN_IN_DENIED (exit 1), saying so and how to try again; nothing saved', async () => {
  const home = join(root, 'denied')
  const base = `http://127.0.0.1:${server.port}/api`
  let code = ''
  const run = await login(home, async (started) => {
    code = started
    const denied = await context.call('POST', `/api/auth/cli/sessions/${started}/deny`, { token: person.token })
    expect(denied.status).toBe(200)
  })
  expect(run.exitCode).toBe(1)
  const hint = `if that was a mistake, run miniship login --server ${base} again and approve the new code`
  expect(jsonDocument(run)).toEqual({ error: { code: 'SIGN_IN_DENIED', message: `the sign-in with code ${code} was denied in the console`, hint } })
  expect(run.stderr).toEndWith(`miniship: the sign-in with code ${code} was denied in the console; ${hint}\n`)
  expect(existsSync(join(home, 'miniship', 'config.json'))).toBe(false)
}, 20_000)

test('expired before anyone approved it: SIGN_IN_EXPIRED (exit 1), and how to try again; nothing saved', async () => {
  const home = join(root, 'expired')
  let code = ''
  const run = await login(home, (started) => {
    code = started
    // the server's clock passes the code's expiry: its next poll answers expired
    context.advance((context.config.cliSessionTtlSeconds + 1) * 1000)
  })
  expect(run.exitCode).toBe(1)
  expect(jsonDocument(run)).toEqual({
    error: { code: 'SIGN_IN_EXPIRED', message: `the code ${code} expired before it was approved`, hint: `run miniship login --server http://127.0.0.1:${server.port}/api again and approve the new code before it expires` },
  })
  expect(existsSync(join(home, 'miniship', 'config.json'))).toBe(false)
}, 20_000)
