// The one-time setup link: creates the first administrator once, refused once one exists; plain HTML with the console's headers.
import { afterAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { createApp } from '../../app'
import { auditLogs, users } from '../../db/schema'
import { createTestContext, createUser, loginToken } from '../../test-support'
import { createSetupGate } from './service'

const context = createTestContext()
afterAll(() => context.close())
const gate = createSetupGate(context.dataDir.db)
const app = createApp({ config: context.config, db: context.dataDir.db, paths: context.dataDir.paths, secret: context.dataDir.secret, clock: () => context.now.value, log: () => {}, setup: gate })
const token = gate.token!

async function call(method: 'GET' | 'POST', path: string, form?: Record<string, string>) {
  const response = await app.handle(
    new Request(`http://localhost${path}`, form ? { method, headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(form).toString() } : { method }),
  )
  return { status: response.status, headers: response.headers, html: await response.text() }
}

describe('first administrator through the setup link', () => {
  test('a fresh instance has a random token; one with an active admin has none', async () => {
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/)
    const other = createTestContext()
    try {
      await createUser(other, { email: 'root@example.test', role: 'ADMIN' })
      expect(createSetupGate(other.dataDir.db).token).toBeNull()
    } finally {
      other.close()
    }
  })

  test('GET without the token or with a wrong one: 403; with it: the form, as HTML with the console headers and no script', async () => {
    expect((await call('GET', '/setup')).status).toBe(403)
    const wrong = await call('GET', `/setup?token=${token.slice(0, -1)}x`)
    expect(wrong.status).toBe(403)
    // the other way in names the data directory: create-admin without it, run elsewhere, makes the admin in a new ./data
    expect(wrong.html).toContain('<code>miniship create-admin --data-dir DIR --email you@example.com</code> on the server, DIR being the data directory the server uses')
    const ok = await call('GET', `/setup?token=${token}`)
    expect(ok.status).toBe(200)
    expect(ok.headers.get('content-type')).toStartWith('text/html')
    expect(ok.headers.get('content-security-policy')).toContain("frame-ancestors 'none'")
    expect(ok.headers.get('x-frame-options')).toBe('DENY')
    expect(ok.headers.get('cache-control')).toBe('no-store')
    expect(ok.html).toContain(`name="token" value="${token}"`)
    expect(ok.html).not.toContain('<script')
  })

  test('a form with a bad password: 400 and the form again, the link still usable', async () => {
    const res = await call('POST', '/setup', { token, email: 'first@example.test', password: '123' })
    expect(res.status).toBe(400)
    expect(res.html).toContain('at least 6 characters')
    expect(res.html).toContain('value="first@example.test"')
    expect((await call('GET', `/setup?token=${token}`)).status).toBe(200)
  })

  test('a wrong token on POST: 403, nobody created', async () => {
    expect((await call('POST', '/setup', { token: 'nope', email: 'x@example.test', password: 'long enough' })).status).toBe(403)
    expect(context.dataDir.db.select().from(users).all()).toEqual([])
  })

  test('the right form: 201, an active ADMIN who can sign in, an audit entry; then the link is spent and refused', async () => {
    const res = await call('POST', '/setup', { token, email: 'First@Example.test', displayName: 'First', password: 'correct horse' })
    expect(res.status).toBe(201)
    const row = context.dataDir.db.select().from(users).where(eq(users.email, 'first@example.test')).get()!
    expect({ role: row.role, status: row.status, displayName: row.displayName }).toEqual({ role: 'ADMIN', status: 'ACTIVE', displayName: 'First' })
    const access = await loginToken(context, 'first@example.test', 'correct horse')
    expect((await context.call('GET', '/api/admin/users', { token: access })).status).toBe(200)
    const audit = context.dataDir.db.select().from(auditLogs).where(eq(auditLogs.targetId, row.id)).get()!
    expect(audit.summary).toContain('one-time setup link')
    expect(gate.token).toBeNull()
    // once an admin exists, the page says so; a second admin cannot be made this way
    expect((await call('GET', `/setup?token=${token}`)).status).toBe(409)
    expect((await call('POST', '/setup', { token, email: 'second@example.test', password: 'correct horse' })).status).toBe(409)
    // and with the admin disabled the spent token still does not work
    context.dataDir.db.update(users).set({ status: 'DISABLED' }).where(eq(users.id, row.id)).run()
    expect((await call('POST', '/setup', { token, email: 'second@example.test', password: 'correct horse' })).status).toBe(403)
    expect(context.dataDir.db.select().from(users).all()).toHaveLength(1)
  })

  test('a JSON body elsewhere is still required: the form exception is only /setup', async () => {
    const res = await app.handle(new Request('http://localhost/api/auth/login', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'email=a&password=b' }))
    expect(res.status).toBe(415)
  })
})

describe('the setup form takes what the API takes', () => {
  test('a display name with a bidi override: 400, the form again', async () => {
    const own = createTestContext()
    try {
      const ownGate = createSetupGate(own.dataDir.db)
      const ownApp = createApp({ config: own.config, db: own.dataDir.db, paths: own.dataDir.paths, secret: own.dataDir.secret, clock: () => own.now.value, log: () => {}, setup: ownGate })
      const body = new URLSearchParams({ token: ownGate.token!, email: 'a@example.test', displayName: 'Admin\u202Etxt.exe', password: 'correct horse' }).toString()
      const res = await ownApp.handle(new Request('http://localhost/setup', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body }))
      expect(res.status).toBe(400)
      expect(await res.text()).toContain('without control characters')
      expect(ownGate.token).not.toBeNull()
    } finally {
      own.close()
    }
  })
})
