// HTTP tests of user administration (decisions §7): listing with audit, create, patch, last-admin rule.
import { describe, expect, test, afterAll, beforeAll } from 'bun:test'
import { eq } from 'drizzle-orm'
import { createTestContext, createUser, loginToken, type TestUser } from '../../test-support'
import { auditLogs, users } from '../../db/schema'
import { recordAudit } from '../audit/service'

const context = createTestContext()
afterAll(() => context.close())

let admin: TestUser
let user: TestUser
beforeAll(async () => {
  admin = await createUser(context, { email: 'root@example.com', role: 'ADMIN', displayName: 'Root' })
  user = await createUser(context, { email: 'plain@example.com' })
})

function entriesFor(targetId: string, action: string) {
  return context.dataDir.db.select().from(auditLogs).where(eq(auditLogs.action, action)).all().filter((e) => e.targetId === targetId)
}

describe('the whole admin flow', () => {
  let frank = { id: '', token: '' }

  test('an admin creates a user (201, the bare record, no hash)', async () => {
    const res = await context.call('POST', '/api/admin/users', { token: admin.token, json: { email: ' Frank@Example.com', displayName: 'Frank', password: 'first-pass' } })
    expect(res.status).toBe(201)
    expect(Object.keys(res.body).sort()).toEqual(['createdAt', 'displayName', 'email', 'id', 'role', 'status'])
    expect(res.body).toMatchObject({ email: 'frank@example.com', displayName: 'Frank', role: 'USER', status: 'ACTIVE' })
    expect(res.text).not.toContain('argon2')
    frank.id = res.body.id
    const created = entriesFor(frank.id, 'user.create')
    expect(created.length).toBe(1)
    expect(created[0]!.actorId).toBe(admin.user.id)
    expect(created[0]!.actorEmail).toBe('root@example.com')
    expect(created[0]!.summary).toContain('frank@example.com')
  })

  test('the new user signs in', async () => {
    frank.token = await loginToken(context, 'frank@example.com', 'first-pass')
    expect((await context.call('GET', '/api/auth/me', { token: frank.token })).status).toBe(200)
  })

  test('disabling them stops their token at once and their login', async () => {
    const res = await context.call('PATCH', `/api/admin/users/${frank.id}`, { token: admin.token, json: { status: 'DISABLED' } })
    expect(res.status).toBe(200)
    expect(res.body.status).toBe('DISABLED')
    const me = await context.call('GET', '/api/auth/me', { token: frank.token })
    expect(me.status).toBe(401)
    expect(me.body.code).toBe('TOKEN_REVOKED')
    const login = await context.call('POST', '/api/auth/login', { json: { email: 'frank@example.com', password: 'first-pass' } })
    expect(login.status).toBe(403)
    expect(login.body.code).toBe('ACCOUNT_DISABLED')
    expect(entriesFor(frank.id, 'user.status_change').at(-1)!.summary).toBe('Disabled frank@example.com')
  })

  test('re-enabling lets them sign in again, but the old token stays dead', async () => {
    const res = await context.call('PATCH', `/api/admin/users/${frank.id}`, { token: admin.token, json: { status: 'ACTIVE' } })
    expect(res.status).toBe(200)
    expect(res.body.status).toBe('ACTIVE')
    expect((await context.call('GET', '/api/auth/me', { token: frank.token })).status).toBe(401)
    frank.token = await loginToken(context, 'frank@example.com', 'first-pass')
    expect((await context.call('GET', '/api/auth/me', { token: frank.token })).status).toBe(200)
    expect(entriesFor(frank.id, 'user.status_change').length).toBe(2)
  })

  test('a password reset stops the old token; the new password logs in, the old one does not', async () => {
    const res = await context.call('PATCH', `/api/admin/users/${frank.id}`, { token: admin.token, json: { password: 'second-pass' } })
    expect(res.status).toBe(200)
    expect(res.text).not.toContain('second-pass')
    expect((await context.call('GET', '/api/auth/me', { token: frank.token })).status).toBe(401)
    const old = await context.call('POST', '/api/auth/login', { json: { email: 'frank@example.com', password: 'first-pass' } })
    expect(old.status).toBe(401)
    frank.token = await loginToken(context, 'frank@example.com', 'second-pass')
    expect((await context.call('GET', '/api/auth/me', { token: frank.token })).status).toBe(200)
    const reset = entriesFor(frank.id, 'user.password_reset')
    expect(reset.length).toBe(1)
    expect(JSON.stringify(reset[0])).not.toContain('second-pass')
  })

  test('a role change stops the old token; the new role shows on me', async () => {
    const res = await context.call('PATCH', `/api/admin/users/${frank.id}`, { token: admin.token, json: { role: 'ADMIN' } })
    expect(res.status).toBe(200)
    expect(res.body.role).toBe('ADMIN')
    expect((await context.call('GET', '/api/auth/me', { token: frank.token })).status).toBe(401)
    frank.token = await loginToken(context, 'frank@example.com', 'second-pass')
    expect((await context.call('GET', '/api/auth/me', { token: frank.token })).body.role).toBe('ADMIN')
    expect(entriesFor(frank.id, 'user.role_change')[0]!.summary).toBe('Changed the role of frank@example.com from USER to ADMIN')
    // Back to USER for the tests below.
    expect((await context.call('PATCH', `/api/admin/users/${frank.id}`, { token: admin.token, json: { role: 'USER' } })).status).toBe(200)
  })

  test('a display name change keeps the token working', async () => {
    const before = await loginToken(context, 'frank@example.com', 'second-pass')
    const res = await context.call('PATCH', `/api/admin/users/${frank.id}`, { token: admin.token, json: { displayName: '  Franklin ' } })
    expect(res.status).toBe(200)
    expect(res.body.displayName).toBe('Franklin')
    expect((await context.call('GET', '/api/auth/me', { token: before })).body.displayName).toBe('Franklin')
    expect(entriesFor(frank.id, 'user.update').length).toBe(1)
  })

  test('a PATCH that changes nothing writes no audit entry and keeps tokens', async () => {
    const count = context.dataDir.db.select().from(auditLogs).all().length
    const token = await loginToken(context, 'frank@example.com', 'second-pass')
    const res = await context.call('PATCH', `/api/admin/users/${frank.id}`, { token: admin.token, json: { role: 'USER', status: 'ACTIVE' } })
    expect(res.status).toBe(200)
    expect(context.dataDir.db.select().from(auditLogs).all().length).toBe(count)
    expect((await context.call('GET', '/api/auth/me', { token })).status).toBe(200)
  })

  test('an admin can create another admin', async () => {
    const res = await context.call('POST', '/api/admin/users', { token: admin.token, json: { email: 'second-admin@example.com', displayName: 'Second', password: 'secret1', role: 'ADMIN' } })
    expect(res.status).toBe(201)
    expect(res.body.role).toBe('ADMIN')
  })
})

describe('listing', () => {
  test('answers every user and the audit log newest first, without hashes', async () => {
    const res = await context.call('GET', '/api/admin/users', { token: admin.token })
    expect(res.status).toBe(200)
    expect(res.body.users.map((u: { email: string }) => u.email)).toEqual(
      expect.arrayContaining(['root@example.com', 'plain@example.com', 'frank@example.com', 'second-admin@example.com']),
    )
    for (const u of res.body.users) expect(Object.keys(u).sort()).toEqual(['createdAt', 'displayName', 'email', 'id', 'role', 'status'])
    expect(res.text).not.toContain('argon2')
    const logs = res.body.auditLogs as { createdAt: string; metadata: unknown; action: string }[]
    expect(logs.length).toBeGreaterThan(5)
    for (let i = 1; i < logs.length; i++) expect(logs[i - 1]!.createdAt >= logs[i]!.createdAt).toBe(true)
    expect(typeof logs[0]!.metadata).toBe('object')
    expect(Object.keys(logs[0]!).sort()).toEqual(['action', 'actorEmail', 'actorId', 'actorName', 'createdAt', 'id', 'metadata', 'summary', 'targetId', 'targetName', 'targetType'])
  })

  test('auditLimit and auditBefore page through the log', async () => {
    const own = createTestContext()
    try {
      const root = await createUser(own, { email: 'root@example.com', role: 'ADMIN' })
      for (let i = 0; i < 150; i++) {
        own.advance(1000)
        recordAudit(own.dataDir.db, () => own.now.value, { actor: null, action: 'test.entry', targetType: 'test', targetId: String(i), summary: `entry ${i}` })
      }
      const first = await own.call('GET', '/api/admin/users', { token: root.token })
      expect(first.body.auditLogs.length).toBe(100)
      expect(first.body.auditLogs[0].summary).toBe('entry 149')

      const page = await own.call('GET', '/api/admin/users?auditLimit=10', { token: root.token })
      expect(page.body.auditLogs.map((e: { summary: string }) => e.summary)).toEqual(Array.from({ length: 10 }, (_, i) => `entry ${149 - i}`))
      const next = await own.call('GET', `/api/admin/users?auditLimit=10&auditBefore=${encodeURIComponent(page.body.auditLogs[9].createdAt)}`, { token: root.token })
      expect(next.body.auditLogs[0].summary).toBe('entry 139')
      expect(next.body.auditLogs.length).toBe(10)

      const all = await own.call('GET', '/api/admin/users?auditLimit=1000', { token: root.token })
      expect(all.body.auditLogs.length).toBe(151)
    } finally {
      own.close()
    }
  })

  test('entries sharing one millisecond are neither lost nor repeated across a page boundary (auditBeforeId)', async () => {
    const own = createTestContext()
    try {
      const root = await createUser(own, { email: 'root@example.com', role: 'ADMIN' })
      own.advance(1000)
      // what one PATCH that changes name, role and password writes: three entries, one createdAt
      for (let i = 0; i < 3; i++) recordAudit(own.dataDir.db, () => own.now.value, { actor: null, action: 'test.entry', targetType: 'test', targetId: String(i), summary: `same ms ${i}` })
      const seen: string[] = []
      let page = await own.call('GET', '/api/admin/users?auditLimit=1', { token: root.token })
      while (page.body.auditLogs.length > 0) {
        const last = page.body.auditLogs.at(-1)
        seen.push(...page.body.auditLogs.map((e: { summary: string }) => e.summary))
        page = await own.call('GET', `/api/admin/users?auditLimit=1&auditBefore=${encodeURIComponent(last.createdAt)}&auditBeforeId=${last.id}`, { token: root.token })
      }
      expect(seen.filter((summary) => summary.startsWith('same ms')).sort()).toEqual(['same ms 0', 'same ms 1', 'same ms 2'])
      expect(new Set(seen).size).toBe(seen.length)
    } finally {
      own.close()
    }
  })

  test('auditBeforeId without auditBefore is 400', async () => {
    const res = await context.call('GET', '/api/admin/users?auditBeforeId=abc', { token: admin.token })
    expect({ status: res.status, code: res.body.code, field: res.body.details[0].field }).toEqual({ status: 400, code: 'VALIDATION_ERROR', field: 'auditBeforeId' })
  })

  test.each(['0', '1001', 'ten', '-5', '2.5'])('auditLimit=%p is 400', async (value) => {
    const res = await context.call('GET', `/api/admin/users?auditLimit=${value}`, { token: admin.token })
    expect(res.status).toBe(400)
    expect(res.body.code).toBe('VALIDATION_ERROR')
    expect(res.body.details[0].field).toBe('auditLimit')
  })

  test.each(['yesterday', '2026-13-45T00:00:00Z', '12345'])('auditBefore=%p is 400', async (value) => {
    const res = await context.call('GET', `/api/admin/users?auditBefore=${value}`, { token: admin.token })
    expect(res.status).toBe(400)
    expect(res.body.code).toBe('VALIDATION_ERROR')
    expect(res.body.details[0].field).toBe('auditBefore')
  })
})

describe('bad input', () => {
  test('a USER gets 403 on every admin endpoint, whatever the body', async () => {
    const calls: [string, string, unknown][] = [
      ['GET', '/api/admin/users', undefined],
      ['GET', '/api/admin/users?auditLimit=5000', undefined],
      ['POST', '/api/admin/users', { email: 'new@example.com', displayName: 'New', password: 'secret1' }],
      ['POST', '/api/admin/users', { email: 'bad' }],
      ['PATCH', `/api/admin/users/${user.user.id}`, { role: 'ADMIN' }],
      ['PATCH', `/api/admin/users/${admin.user.id}`, { status: 'DISABLED' }],
      ['PATCH', '/api/admin/users/unknown', { role: 'nonsense' }],
    ]
    for (const [method, path, json] of calls) {
      const res = await context.call(method, path, { token: user.token, json })
      expect(res.status).toBe(403)
      expect(res.body.code).toBe('ADMIN_REQUIRED')
    }
    expect(context.dataDir.db.select().from(users).where(eq(users.email, 'new@example.com')).get()).toBeUndefined()
    expect(context.dataDir.db.select().from(users).where(eq(users.id, user.user.id)).get()!.role).toBe('USER')
  })

  test('without a token every admin endpoint is 401, whatever the body', async () => {
    for (const [method, path, json] of [
      ['GET', '/api/admin/users', undefined],
      ['POST', '/api/admin/users', { email: 'bad' }],
      ['PATCH', `/api/admin/users/${user.user.id}`, { role: 'ADMIN' }],
    ] as const) {
      const res = await context.call(method, path, { json })
      expect(res.status).toBe(401)
      expect(res.body.code).toBe('AUTH_REQUIRED')
    }
  })

  test('PATCH of an unknown user is 404', async () => {
    const res = await context.call('PATCH', '/api/admin/users/0190a0a0-0000-7000-8000-000000000000', { token: admin.token, json: { displayName: 'Ghost' } })
    expect(res.status).toBe(404)
    expect(res.body.code).toBe('USER_NOT_FOUND')
  })

  test('a duplicate email (other case) is 409', async () => {
    const res = await context.call('POST', '/api/admin/users', { token: admin.token, json: { email: 'PLAIN@example.com', displayName: 'Dup', password: 'secret1' } })
    expect(res.status).toBe(409)
    expect(res.body.code).toBe('EMAIL_TAKEN')
  })

  test.each([
    ['a 5-character password', { email: 'x@example.com', displayName: 'X', password: '12345' }, 'password'],
    ['a malformed email', { email: 'not an email', displayName: 'X', password: 'secret1' }, 'email'],
    ['a 10 kB email', { email: `${'a'.repeat(10_000)}@example.com`, displayName: 'X', password: 'secret1' }, 'email'],
    ['no email', { displayName: 'X', password: 'secret1' }, 'email'],
    ['no password', { email: 'x@example.com', displayName: 'X' }, 'password'],
    ['an unknown role', { email: 'x@example.com', displayName: 'X', password: 'secret1', role: 'ROOT' }, 'role'],
    ['a 101-character display name', { email: 'x@example.com', displayName: 'y'.repeat(101), password: 'secret1' }, 'displayName'],
  ])('create with %s is 400 naming the field', async (_label, json, field) => {
    const res = await context.call('POST', '/api/admin/users', { token: admin.token, json })
    expect(res.status).toBe(400)
    expect(res.body.code).toBe('VALIDATION_ERROR')
    expect(res.body.details.map((d: { field: string }) => d.field)).toContain(field)
  })

  test.each([
    ['a 5-character password', { password: '12345' }, 'password'],
    ['an unknown role', { role: 'SUPERUSER' }, 'role'],
    ['an unknown status', { status: 'GONE' }, 'status'],
    ['an empty display name', { displayName: '' }, 'displayName'],
    ['a blank display name', { displayName: '   ' }, 'displayName'],
    ['nothing to change', {}, 'body'],
  ])('PATCH with %s is 400 naming the field', async (_label, json, field) => {
    const res = await context.call('PATCH', `/api/admin/users/${user.user.id}`, { token: admin.token, json })
    expect(res.status).toBe(400)
    expect(res.body.code).toBe('VALIDATION_ERROR')
    expect(res.body.details.map((d: { field: string }) => d.field)).toContain(field)
  })
})

describe('the last active admin', () => {
  test('cannot be demoted or disabled (409), and keeps working', async () => {
    const own = createTestContext()
    try {
      const root = await createUser(own, { email: 'root@example.com', role: 'ADMIN' })
      for (const json of [{ role: 'USER' }, { status: 'DISABLED' }, { role: 'USER', status: 'DISABLED' }]) {
        const res = await own.call('PATCH', `/api/admin/users/${root.user.id}`, { token: root.token, json })
        expect(res.status).toBe(409)
        expect(res.body.code).toBe('LAST_ADMIN')
      }
      expect((await own.call('GET', '/api/auth/me', { token: root.token })).body).toMatchObject({ role: 'ADMIN', status: 'ACTIVE' })

      // A disabled admin does not count as another admin.
      const sleeper = await createUser(own, { email: 'sleeper@example.com', role: 'ADMIN', status: 'DISABLED' })
      expect((await own.call('PATCH', `/api/admin/users/${root.user.id}`, { token: root.token, json: { role: 'USER' } })).status).toBe(409)

      // With a second active admin the first may step down, and then the second is the last.
      expect((await own.call('PATCH', `/api/admin/users/${sleeper.user.id}`, { token: root.token, json: { status: 'ACTIVE' } })).status).toBe(200)
      const down = await own.call('PATCH', `/api/admin/users/${root.user.id}`, { token: root.token, json: { role: 'USER' } })
      expect(down.status).toBe(200)
      expect(down.body.role).toBe('USER')
      const sleeperToken = await loginToken(own, 'sleeper@example.com', sleeper.password)
      const last = await own.call('PATCH', `/api/admin/users/${sleeper.user.id}`, { token: sleeperToken, json: { status: 'DISABLED' } })
      expect(last.status).toBe(409)
      expect(last.body.code).toBe('LAST_ADMIN')
    } finally {
      own.close()
    }
  })
})
