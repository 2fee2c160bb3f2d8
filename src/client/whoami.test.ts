// `miniship whoami` against the real app on a temp data directory: what it prints for an access token and for an API key
// (the role once, or not at all for a key, which never has an admin's powers), and the fields of --json.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { jsonDocument, runCli } from '../cli/test-run'
import { createTestContext, type TestContext } from '../test-support'
import { createTestUser, type TestUser } from '../test-fixtures'

let context: TestContext
let server: ReturnType<typeof Bun.serve>
let admin: TestUser
let key: { key: string; prefix: string }
const env = (token: string) => ({ MINISHIP_TOKEN: token, MINISHIP_SERVER: `http://127.0.0.1:${server.port}` })

beforeAll(async () => {
  context = createTestContext()
  server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: (request) => context.app.handle(request) })
  admin = await createTestUser(context, { role: 'ADMIN' })
  const created = await context.call('POST', '/api/auth/api-keys', { token: admin.token, json: { name: 'ci', scopes: ['read', 'upload'] } })
  expect(created.status).toBe(201)
  key = created.body
})
afterAll(() => {
  server.stop(true)
  context.close()
})

test('an access token: who, where, and the role once', async () => {
  const run = await runCli(['whoami'], { env: env(admin.token) })
  expect(run.exitCode).toBe(0)
  const base = `http://127.0.0.1:${server.port}/api`
  expect(run.stdout).toBe(`${admin.email} (${admin.displayName}) on ${base}\nrole ADMIN, token from MINISHIP_TOKEN\n`)
  expect(run.stdout.match(/ADMIN/g)).toHaveLength(1)
  expect(jsonDocument(await runCli(['whoami', '--json'], { env: env(admin.token) }))).toEqual({
    server: base,
    tokenFrom: 'MINISHIP_TOKEN',
    user: { id: admin.id, email: admin.email, displayName: admin.displayName, role: 'ADMIN', status: 'ACTIVE' },
  })
})

test('an API key: the key and its scopes, and no role line (an admin’s key is no admin)', async () => {
  const run = await runCli(['whoami'], { env: env(key.key) })
  expect(run.exitCode).toBe(0)
  expect(run.stdout).toBe(`${admin.email} (${admin.displayName}) on http://127.0.0.1:${server.port}/api\nusing API key "ci" (${key.prefix}…) with scopes read, upload\n`)
  const document = jsonDocument(await runCli(['whoami', '--json'], { env: env(key.key) })) as { user: Record<string, unknown> }
  expect(Object.keys(document.user)).toEqual(['id', 'email', 'displayName', 'role', 'status', 'apiKey'])
  expect(document.user.apiKey).toMatchObject({ name: 'ci', prefix: key.prefix, scopes: ['read', 'upload'], miniAppIds: null })
})

test('a saved sign-in: --json names the config file the token came from, as the text does', async () => {
  const home = mkdtempSync(join(tmpdir(), 'miniship-whoami-'))
  try {
    const base = `http://127.0.0.1:${server.port}/api`
    mkdirSync(join(home, 'miniship'))
    writeFileSync(join(home, 'miniship', 'config.json'), JSON.stringify({ server: base, token: admin.token }), { mode: 0o600 })
    const saved = { XDG_CONFIG_HOME: home, MINISHIP_SERVER: base }
    const text = await runCli(['whoami'], { env: saved })
    expect(text.stdout).toContain(`token from ${join(home, 'miniship', 'config.json')}`)
    expect(jsonDocument(await runCli(['whoami', '--json'], { env: saved }))).toMatchObject({ server: base, tokenFrom: join(home, 'miniship', 'config.json') })
  } finally {
    rmSync(home, { recursive: true, force: true })
  }
})
