// Decisions §13: no open door before the first administrator, and --password-min-length applied wherever a password is set.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { createTestContext, createUser, tempDir, type TestContext } from '../../test-support'
import { users } from '../../db/schema'
import { ConfigError, loadConfig } from '../../config'
import { createAdminCommand } from '../../cli/create-admin'
import { createApp } from '../../app'
import { createSetupGate } from '../setup/service'

const outcome = (res: { status: number; body: { code?: string } }) => ({ status: res.status, code: res.body?.code })

describe('register before any administrator exists', () => {
  let context: TestContext
  beforeAll(() => {
    context = createTestContext()
  })
  afterAll(() => context.close())

  test('is 403 SETUP_REQUIRED naming the setup link and create-admin, and creates nobody', async () => {
    const res = await context.call('POST', '/api/auth/register', { json: { email: 'first@example.com', password: 'secret1' } })
    expect(outcome(res)).toEqual({ status: 403, code: 'SETUP_REQUIRED' })
    expect(res.body.message).toContain('/setup?token=')
    // with --data-dir: without it, create-admin run from another directory makes the admin in a new ./data no server reads
    expect(res.body.message).toContain('miniship create-admin --data-dir DIR --email you@example.com on the server (DIR: the data directory the server uses')
    expect(context.dataDir.db.select().from(users).all()).toEqual([])
    expect((await context.call('GET', '/api/info')).body).toMatchObject({ setupRequired: true, passwordMinLength: 6, registration: 'open' })
  })

  test('a disabled administrator does not count; an active one opens registration', async () => {
    await createUser(context, { email: 'gone-admin@example.com', role: 'ADMIN', status: 'DISABLED' })
    expect(outcome(await context.call('POST', '/api/auth/register', { json: { email: 'first@example.com', password: 'secret1' } }))).toEqual({ status: 403, code: 'SETUP_REQUIRED' })
    await createUser(context, { email: 'admin@example.com', role: 'ADMIN' })
    expect((await context.call('GET', '/api/info')).body.setupRequired).toBe(false)
    expect((await context.call('POST', '/api/auth/register', { json: { email: 'first@example.com', password: 'secret1' } })).status).toBe(201)
  })

  test('the setup page is styled like the console: its stylesheet is served by the server', async () => {
    const css = await context.app.handle(new Request('http://localhost/setup.css'))
    expect(css.status).toBe(200)
    expect(css.headers.get('content-type')).toStartWith('text/css')
    expect(await css.text()).toContain('--primary:#1f4fd1')
  })
})

describe('--password-min-length 10', () => {
  let context: TestContext
  let admin: Awaited<ReturnType<typeof createUser>>
  let old: Awaited<ReturnType<typeof createUser>>
  beforeAll(async () => {
    context = createTestContext({ passwordMinLength: 10 })
    admin = await createUser(context, { email: 'admin@example.com', role: 'ADMIN', password: 'long-enough-1' })
    // set before the operator raised the minimum: keeps working
    old = await createUser(context, { email: 'old@example.com', password: 'short6' })
  })
  afterAll(() => context.close())

  const refusedPassword = (res: { status: number; body: { code?: string; details?: { field: string }[] } }) => ({ ...outcome(res), field: res.body.details?.[0]?.field })

  test('register: 9 characters is 400 naming password, 10 is 201', async () => {
    const short = await context.call('POST', '/api/auth/register', { json: { email: 'new@example.com', password: '123456789' } })
    expect(refusedPassword(short)).toEqual({ status: 400, code: 'VALIDATION_ERROR', field: 'password' })
    expect(short.body.message).toContain('at least 10 characters')
    expect((await context.call('POST', '/api/auth/register', { json: { email: 'new@example.com', password: '1234567890' } })).status).toBe(201)
    expect((await context.call('GET', '/api/info')).body.passwordMinLength).toBe(10)
  })

  test('users an administrator creates, and password changes, take the same minimum', async () => {
    const created = await context.call('POST', '/api/admin/users', { token: admin.token, json: { email: 'made@example.com', displayName: 'Made', password: 'short-9ch' } })
    expect(refusedPassword(created)).toEqual({ status: 400, code: 'VALIDATION_ERROR', field: 'password' })
    const changed = await context.call('PATCH', `/api/admin/users/${old.user.id}`, { token: admin.token, json: { password: 'short-9ch' } })
    expect(refusedPassword(changed)).toEqual({ status: 400, code: 'VALIDATION_ERROR', field: 'password' })
    expect((await context.call('PATCH', `/api/admin/users/${old.user.id}`, { token: admin.token, json: { password: 'long-enough-2' } })).status).toBe(200)
  })

  test('the minimum counts characters (code points): 9 emoji (18 UTF-16 units) are refused in register, admin create and reset; 10 are accepted', async () => {
    const nine = '🚀'.repeat(9)
    const ten = '🚀'.repeat(10)
    const refusals = [
      await context.call('POST', '/api/auth/register', { json: { email: 'emoji@example.com', password: nine } }),
      await context.call('POST', '/api/admin/users', { token: admin.token, json: { email: 'emoji-made@example.com', displayName: 'Emoji', password: nine } }),
      await context.call('PATCH', `/api/admin/users/${old.user.id}`, { token: admin.token, json: { password: nine } }),
    ]
    for (const refused of refusals) {
      expect(refusedPassword(refused)).toEqual({ status: 400, code: 'VALIDATION_ERROR', field: 'password' })
      expect(refused.body.details[0].message).toBe('must be at least 10 characters')
    }
    expect((await context.call('POST', '/api/auth/register', { json: { email: 'emoji@example.com', password: ten } })).status).toBe(201)
    expect((await context.call('POST', '/api/admin/users', { token: admin.token, json: { email: 'emoji-made@example.com', displayName: 'Emoji', password: ten } })).status).toBe(201)
    expect((await context.call('PATCH', `/api/admin/users/${old.user.id}`, { token: admin.token, json: { password: ten } })).status).toBe(200)
    expect((await context.call('POST', '/api/auth/login', { json: { email: 'old@example.com', password: ten } })).status).toBe(200)
  })

  test('an existing password shorter than the minimum still signs in', async () => {
    const other = await createUser(context, { email: 'older@example.com', password: 'short6' })
    const login = await context.call('POST', '/api/auth/login', { json: { email: 'older@example.com', password: other.password } })
    expect(login.status).toBe(200)
  })

  test('the setup link refuses a short password and says the minimum', async () => {
    const fresh = createTestContext({ passwordMinLength: 12 })
    try {
      const gate = createSetupGate(fresh.dataDir.db)
      const app = createApp({ config: fresh.config, db: fresh.dataDir.db, paths: fresh.dataDir.paths, secret: fresh.dataDir.secret, clock: () => fresh.now.value, log: () => {}, setup: gate })
      const token = gate.token!
      const page = await app.handle(new Request(`http://localhost/setup?token=${token}`))
      const html = await page.text()
      expect(html).toContain('at least 12 characters')
      expect(html).toContain('<link rel="stylesheet" href="/setup.css">')
      const post = await app.handle(new Request('http://localhost/setup', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ token, email: 'ops@example.com', password: 'eleven-char' }).toString() }))
      expect(post.status).toBe(400)
      expect(await post.text()).toContain('at least 12 characters')
      // 11 emoji are 22 UTF-16 units, 11 characters
      const emoji = await app.handle(new Request('http://localhost/setup', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ token, email: 'ops@example.com', password: '🚀'.repeat(11) }).toString() }))
      expect(emoji.status).toBe(400)
      expect(await emoji.text()).toContain('at least 12 characters')
    } finally {
      fresh.close()
    }
  })

  test('create-admin applies it (flag and env)', async () => {
    const dir = tempDir('miniship-min-length-')
    try {
      const result = { err: [] as string[], out: [] as string[], exitCode: null as number | null }
      const io = { readStdin: async () => 'nine-char\n', stdinIsTTY: () => false, promptHidden: async () => '', out: (line: string) => result.out.push(line), err: (line: string) => result.err.push(line), exit: (code: number) => void (result.exitCode = code) }
      await createAdminCommand(io).parseAsync(['--email', 'a@example.com', '--password-stdin', '--password-min-length', '10', '--data-dir', join(dir, 'data')], { from: 'user' })
      expect(result.exitCode).toBe(1)
      expect(result.err.join('\n')).toContain('at least 10 characters')
      await createAdminCommand(io).parseAsync(['--email', 'a@example.com', '--password-stdin', '--password-min-length', '200', '--data-dir', join(dir, 'data')], { from: 'user' })
      expect(result.exitCode).toBe(2)
      expect(result.err.at(-1)).toContain('--password-min-length must be a whole number of characters from 6 to 128')
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('--password-min-length values', () => {
  test.each(['5', '129', 'eight', '8.5', '', '-8'])('%p is a clear configuration error', (value) => {
    expect(() => loadConfig({ passwordMinLength: value }, {})).toThrow(ConfigError)
    expect(() => loadConfig({ passwordMinLength: value }, {})).toThrow(/--password-min-length must be a whole number of characters from 6 to 128/)
  })
  test('the environment sets it, the flag wins, 6 is the default', () => {
    expect(loadConfig({}, {}).passwordMinLength).toBe(6)
    expect(loadConfig({}, { MINISHIP_PASSWORD_MIN_LENGTH: '8' }).passwordMinLength).toBe(8)
    expect(() => loadConfig({}, { MINISHIP_PASSWORD_MIN_LENGTH: '4' })).toThrow(/MINISHIP_PASSWORD_MIN_LENGTH must be/)
    expect(loadConfig({ passwordMinLength: '12' }, { MINISHIP_PASSWORD_MIN_LENGTH: '8' }).passwordMinLength).toBe(12)
  })
})
