// HTTP tests of register, login and me: the rules of decisions §3 and every bad input of issue 3.
import { describe, expect, test, afterAll, beforeAll } from 'bun:test'
import { eq } from 'drizzle-orm'
import { createTestContext, createUser, loginToken, type TestContext } from '../../test-support'
import { auditLogs, users } from '../../db/schema'
import { createTokenService } from './tokens'
import { displayNameFromEmail, normaliseEmail } from './service'
import { defaultRateLimits, type Config } from '../../config'
import { createTestUser } from '../../test-fixtures'

/** A server that is set up: an administrator exists, so registration is open (decisions §13). */
function setUpContext(overrides: Partial<Config> = {}) {
  const made = createTestContext(overrides)
  const ready = createTestUser(made, { role: 'ADMIN', email: 'first-admin@example.test' })
  return Object.assign(made, { ready })
}

const context = setUpContext()
beforeAll(() => context.ready)
afterAll(() => context.close())

function auditActions(ctx: TestContext = context): string[] {
  return ctx.dataDir.db.select().from(auditLogs).all().map((entry) => entry.action)
}

describe('normaliseEmail', () => {
  test.each([
    ['  Alice@Example.COM ', 'alice@example.com'],
    ['admin@localhost', 'admin@localhost'],
    ['a.b+tag@sub.example.org', 'a.b+tag@sub.example.org'],
    ['not-an-email', null],
    ['a@', null],
    ['@example.com', null],
    ['a b@example.com', null],
    ['a@b@example.com', null],
    ['a@-example.com', null],
    ['', null],
    [`${'a'.repeat(65)}@example.com`, null],
    [`a@${Array.from({ length: 5 }, () => 'b'.repeat(60)).join('.')}.com`, null],
  ])('%p → %p', (input, expected) => {
    expect(normaliseEmail(input)).toBe(expected)
  })

  test('the default display name is the part before @', () => {
    expect(displayNameFromEmail('carol.smith@example.com')).toBe('carol.smith')
  })
})

describe('register → login → me', () => {
  let token = ''
  let id = ''

  test("register answers 201 in both shapes (decisions §9): { id, email, accessToken, displayName } and login's { accessToken, user }", async () => {
    const res = await context.call('POST', '/api/auth/register', { json: { email: '  Alice@Example.com ', password: 'secret1' } })
    expect(res.status).toBe(201)
    expect(Object.keys(res.body).sort()).toEqual(['accessToken', 'displayName', 'email', 'id', 'user'])
    expect(res.body.email).toBe('alice@example.com')
    expect(res.body.displayName).toBe('alice')
    expect(res.body.user).toEqual({ id: res.body.id, email: 'alice@example.com', displayName: 'alice', role: 'USER' })
    id = res.body.id
    token = res.body.accessToken
  })

  test('the registration token works, and the first account is not an admin', async () => {
    const me = await context.call('GET', '/api/auth/me', { token })
    expect(me.status).toBe(200)
    expect(me.body).toEqual({ id, email: 'alice@example.com', displayName: 'alice', role: 'USER', status: 'ACTIVE' })
  })

  test('the password is stored as an argon2id hash and never answered', async () => {
    const row = context.dataDir.db.select().from(users).where(eq(users.id, id)).get()!
    expect(row.passwordHash.startsWith('$argon2id$')).toBe(true)
    expect(row.passwordHash).not.toContain('secret1')
    const text = context.logs.join('\n')
    expect(text).not.toContain('$argon2')
  })

  test('login answers a token and the user', async () => {
    const res = await context.call('POST', '/api/auth/login', { json: { email: 'ALICE@example.com ', password: 'secret1' } })
    expect(res.status).toBe(200)
    expect(res.body.user).toEqual({ id, email: 'alice@example.com', displayName: 'alice' })
    expect(res.text).not.toContain('$argon2')
    const me = await context.call('GET', '/api/auth/me', { token: res.body.accessToken })
    expect(me.status).toBe(200)
    expect(me.body.email).toBe('alice@example.com')
  })

  test('register keeps a given display name, trimmed', async () => {
    const res = await context.call('POST', '/api/auth/register', { json: { email: 'bob@example.com', password: 'secret1', displayName: '  Bob B.  ' } })
    expect(res.status).toBe(201)
    expect(res.body.displayName).toBe('Bob B.')
  })

  test('each registration is an audit entry with the new user as actor', () => {
    const entries = context.dataDir.db.select().from(auditLogs).where(eq(auditLogs.action, 'user.register')).all()
    expect(entries.length).toBe(2)
    const alice = entries.find((entry) => entry.targetId === id)!
    expect(alice.actorId).toBe(id)
    expect(alice.actorEmail).toBe('alice@example.com')
    expect(alice.summary).toContain('alice@example.com')
  })
})

describe('bad input to register and login', () => {
  test('a password of 5 characters is 400 naming the field', async () => {
    const res = await context.call('POST', '/api/auth/register', { json: { email: 'short@example.com', password: '12345' } })
    expect(res.status).toBe(400)
    expect(res.body.code).toBe('VALIDATION_ERROR')
    expect(res.body.details).toContainEqual({ field: 'password', message: 'must be 6 to 1024 characters' })
  })

  test('a password over 1024 characters is 400', async () => {
    const res = await context.call('POST', '/api/auth/register', { json: { email: 'long@example.com', password: 'x'.repeat(1025) } })
    expect(res.status).toBe(400)
    expect(res.body.code).toBe('VALIDATION_ERROR')
  })

  test('password limits count characters (code points): 5 emoji are 400 though 10 UTF-16 units, 1024 emoji register and sign in, 1025 are 400', async () => {
    const rocket = '🚀'
    const short = await context.call('POST', '/api/auth/register', { json: { email: 'emoji-short@example.com', password: rocket.repeat(5) } })
    expect({ status: short.status, code: short.body.code }).toEqual({ status: 400, code: 'VALIDATION_ERROR' })
    expect(short.body.details).toContainEqual({ field: 'password', message: 'must be 6 to 1024 characters' })
    const long = await context.call('POST', '/api/auth/register', { json: { email: 'emoji-long@example.com', password: rocket.repeat(1025) } })
    expect({ status: long.status, code: long.body.code, field: long.body.details?.[0]?.field }).toEqual({ status: 400, code: 'VALIDATION_ERROR', field: 'password' })
    const accepted = await context.call('POST', '/api/auth/register', { json: { email: 'emoji-max@example.com', password: rocket.repeat(1024) } })
    expect(accepted.status).toBe(201)
    // what could be set can sign in: login's limit counts the same way
    expect((await context.call('POST', '/api/auth/login', { json: { email: 'emoji-max@example.com', password: rocket.repeat(1024) } })).status).toBe(200)
    const loginTooLong = await context.call('POST', '/api/auth/login', { json: { email: 'emoji-max@example.com', password: rocket.repeat(1025) } })
    expect({ status: loginTooLong.status, code: loginTooLong.body.code }).toEqual({ status: 400, code: 'VALIDATION_ERROR' })
  })

  test.each(['not-an-email', 'a@', 'two words@example.com', '@example.com'])('malformed email %p is 400', async (email) => {
    const res = await context.call('POST', '/api/auth/register', { json: { email, password: 'secret1' } })
    expect(res.status).toBe(400)
    expect(res.body.code).toBe('VALIDATION_ERROR')
    expect(res.body.details[0].field).toBe('email')
  })

  test('a duplicate email in another case is 409', async () => {
    const res = await context.call('POST', '/api/auth/register', { json: { email: 'ALICE@EXAMPLE.COM', password: 'another1' } })
    expect(res.status).toBe(409)
    expect(res.body.code).toBe('EMAIL_TAKEN')
  })

  test.each([
    [{ password: 'secret1' }, 'email'],
    [{ email: 'x@example.com' }, 'password'],
    [{}, 'email'],
  ])('missing fields %p are 400 naming %p', async (json, field) => {
    const res = await context.call('POST', '/api/auth/register', { json })
    expect(res.status).toBe(400)
    expect(res.body.code).toBe('VALIDATION_ERROR')
    expect(res.body.details.map((d: { field: string }) => d.field)).toContain(field)
  })

  test('missing fields at login are 400', async () => {
    const res = await context.call('POST', '/api/auth/login', { json: { email: 'alice@example.com' } })
    expect(res.status).toBe(400)
    expect(res.body.code).toBe('VALIDATION_ERROR')
  })

  test('a body that is not JSON is 400', async () => {
    const res = await context.call('POST', '/api/auth/login', { body: '{"email":', headers: { 'content-type': 'application/json' } })
    expect(res.status).toBe(400)
    expect(res.body.code).toBe('INVALID_JSON')
  })

  test('a 10 kB email is 400 on register and on login', async () => {
    const email = `${'a'.repeat(10_000)}@example.com`
    for (const path of ['/api/auth/register', '/api/auth/login']) {
      const res = await context.call('POST', path, { json: { email, password: 'secret1' } })
      expect(res.status).toBe(400)
      expect(res.body.code).toBe('VALIDATION_ERROR')
      expect(res.text.length).toBeLessThan(1000)
    }
  })

  test('a display name of 101 characters, or only blanks, is 400', async () => {
    for (const displayName of ['x'.repeat(101), '   ', '']) {
      const res = await context.call('POST', '/api/auth/register', { json: { email: 'named@example.com', password: 'secret1', displayName } })
      expect(res.status).toBe(400)
      expect(res.body.code).toBe('VALIDATION_ERROR')
      expect(res.body.details[0].field).toBe('displayName')
    }
  })

  test('a wrong password and an unknown email answer the same 401', async () => {
    const wrong = await context.call('POST', '/api/auth/login', { json: { email: 'alice@example.com', password: 'wrong-password' } })
    const unknown = await context.call('POST', '/api/auth/login', { json: { email: 'nobody@example.com', password: 'secret1' } })
    for (const res of [wrong, unknown]) {
      expect(res.status).toBe(401)
      expect(res.body.code).toBe('INVALID_CREDENTIALS')
    }
    expect(wrong.body.message).toBe(unknown.body.message)
    expect(wrong.body.message.toLowerCase()).toContain('invalid email or password')
  })

  test('a malformed email at login is the same 401, not a hint', async () => {
    const res = await context.call('POST', '/api/auth/login', { json: { email: 'not-an-email', password: 'secret1' } })
    expect(res.status).toBe(401)
    expect(res.body.code).toBe('INVALID_CREDENTIALS')
  })

  test('a body sent as text/plain is 415', async () => {
    const res = await context.call('POST', '/api/auth/login', { body: '{}', headers: { 'content-type': 'text/plain' } })
    expect(res.status).toBe(415)
    expect(res.body.code).toBe('UNSUPPORTED_MEDIA_TYPE')
  })
})

describe('bearer tokens', () => {
  test('no Authorization header is 401 AUTH_REQUIRED', async () => {
    const res = await context.call('GET', '/api/auth/me')
    expect(res.status).toBe(401)
    expect(res.body.code).toBe('AUTH_REQUIRED')
  })

  test('an Authorization header without Bearer is 401', async () => {
    const token = await loginToken(context, 'alice@example.com', 'secret1')
    for (const header of [token, `Basic ${btoa('alice@example.com:secret1')}`, `Token ${token}`]) {
      const res = await context.call('GET', '/api/auth/me', { headers: { authorization: header } })
      expect(res.status).toBe(401)
      expect(res.body.code).toBe('INVALID_AUTH_HEADER')
    }
  })

  test('a garbage token is 401 INVALID_TOKEN', async () => {
    for (const token of ['garbage', 'a.b.c', 'x'.repeat(5000)]) {
      const res = await context.call('GET', '/api/auth/me', { token })
      expect(res.status).toBe(401)
      expect(res.body.code).toBe('INVALID_TOKEN')
    }
  })

  test('a token signed with another secret is 401 INVALID_TOKEN', async () => {
    const alice = context.dataDir.db.select().from(users).where(eq(users.email, 'alice@example.com')).get()!
    const foreign = createTokenService(new TextEncoder().encode('another-secret-another-secret-another-secret'), () => context.now.value, 3600)
    const token = await foreign.signAccess({ id: alice.id, role: 'ADMIN', tokenVersion: alice.tokenVersion })
    const res = await context.call('GET', '/api/auth/me', { token })
    expect(res.status).toBe(401)
    expect(res.body.code).toBe('INVALID_TOKEN')
  })

  test('a download token (signed by this server, for downloads only) is 401 INVALID_TOKEN on the API', async () => {
    const tokens = createTokenService(context.dataDir.secret, () => context.now.value, 3600)
    for (const token of [await tokens.signDownload('0192f0aa-0000-7000-8000-000000000000', null), await tokens.signDownload('v1', context.now.value + 60_000)]) {
      for (const [method, path] of [['GET', '/api/auth/me'], ['GET', '/api/mini-apps'], ['GET', '/api/admin/users']] as const) {
        const res = await context.call(method, path, { token })
        expect({ path, status: res.status, code: res.body.code }).toEqual({ path, status: 401, code: 'INVALID_TOKEN' })
      }
    }
  })

  test('an expired token is 401 TOKEN_EXPIRED', async () => {
    const own = createTestContext()
    try {
      const { token } = await createUser(own, { email: 'expiring@example.com' })
      expect((await own.call('GET', '/api/auth/me', { token })).status).toBe(200)
      own.advance(own.config.tokenTtlSeconds * 1000 + 1000)
      const res = await own.call('GET', '/api/auth/me', { token })
      expect(res.status).toBe(401)
      expect(res.body.code).toBe('TOKEN_EXPIRED')
    } finally {
      own.close()
    }
  })

  test('the token of a disabled user is 401, and that user cannot log in (403)', async () => {
    const { token, user, password } = await createUser(context, { email: 'dora@example.com' })
    context.dataDir.db.update(users).set({ status: 'DISABLED' }).where(eq(users.id, user.id)).run()
    const me = await context.call('GET', '/api/auth/me', { token })
    expect(me.status).toBe(401)
    expect(me.body.code).toBe('TOKEN_REVOKED')
    const login = await context.call('POST', '/api/auth/login', { json: { email: 'dora@example.com', password } })
    expect(login.status).toBe(403)
    expect(login.body.code).toBe('ACCOUNT_DISABLED')
    // A wrong password for a disabled account says nothing about the account.
    const guess = await context.call('POST', '/api/auth/login', { json: { email: 'dora@example.com', password: 'guess123' } })
    expect(guess.status).toBe(401)
    expect(guess.body.code).toBe('INVALID_CREDENTIALS')
  })
})

describe('registration closed', () => {
  test('register answers 403 REGISTRATION_CLOSED and creates nothing', async () => {
    const closed = setUpContext({ registration: 'closed' })
    try {
      await closed.ready
      const res = await closed.call('POST', '/api/auth/register', { json: { email: 'eve@example.com', password: 'secret1' } })
      expect(res.status).toBe(403)
      expect(res.body.code).toBe('REGISTRATION_CLOSED')
      expect(closed.dataDir.db.select().from(users).all().map((user) => user.email)).toEqual(['first-admin@example.test'])
    } finally {
      closed.close()
    }
  })
})

describe('rate limits (decisions §3)', () => {
  const limited = setUpContext({ rateLimit: true, trustProxy: true, rateLimits: { ...defaultRateLimits, login: 3, register: 2, cliSessionCreate: 10, cliSessionPoll: 60 } })
  beforeAll(() => limited.ready)
  afterAll(() => limited.close())
  const from = (address: string) => ({ 'x-forwarded-for': address })

  test('login: the 4th attempt in a minute from one address is 429 with Retry-After; others are unaffected', async () => {
    for (let i = 0; i < 3; i++) {
      const res = await limited.call('POST', '/api/auth/login', { json: { email: 'x@example.com', password: 'wrong-1' }, headers: from('203.0.113.1') })
      expect(res.status).toBe(401)
    }
    const blocked = await limited.call('POST', '/api/auth/login', { json: { email: 'x@example.com', password: 'wrong-1' }, headers: from('203.0.113.1') })
    expect(blocked.status).toBe(429)
    expect(blocked.body.code).toBe('RATE_LIMITED')
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
    expect(Number(blocked.headers.get('retry-after'))).toBeLessThanOrEqual(60)

    const other = await limited.call('POST', '/api/auth/login', { json: { email: 'x@example.com', password: 'wrong-1' }, headers: from('203.0.113.2') })
    expect(other.status).toBe(401)

    limited.advance(61_000)
    const later = await limited.call('POST', '/api/auth/login', { json: { email: 'x@example.com', password: 'wrong-1' }, headers: from('203.0.113.1') })
    expect(later.status).toBe(401)
  })

  test('login: an IPv6 client has one budget per /64, not one per address of its /64; an IPv4-mapped address shares its IPv4 budget', async () => {
    // a host on IPv6 is routinely handed a whole /64: one budget per address would be 2^64 budgets
    for (let i = 1; i <= 3; i++) {
      const res = await limited.call('POST', '/api/auth/login', { json: { email: 'x@example.com', password: 'wrong-1' }, headers: from(`2001:db8:1:2::${i}`) })
      expect(res.status).toBe(401)
    }
    const sameSubnet = await limited.call('POST', '/api/auth/login', { json: { email: 'x@example.com', password: 'wrong-1' }, headers: from('2001:db8:1:2:ffff:abcd:1234:9') })
    expect({ status: sameSubnet.status, code: sameSubnet.body.code }).toEqual({ status: 429, code: 'RATE_LIMITED' })
    const otherSubnet = await limited.call('POST', '/api/auth/login', { json: { email: 'x@example.com', password: 'wrong-1' }, headers: from('2001:db8:1:3::1') })
    expect(otherSubnet.status).toBe(401)
    for (let i = 0; i < 3; i++) expect((await limited.call('POST', '/api/auth/login', { json: { email: 'x@example.com', password: 'wrong-1' }, headers: from('203.0.113.77') })).status).toBe(401)
    const mapped = await limited.call('POST', '/api/auth/login', { json: { email: 'x@example.com', password: 'wrong-1' }, headers: from('::ffff:203.0.113.77') })
    expect({ status: mapped.status, code: mapped.body.code }).toEqual({ status: 429, code: 'RATE_LIMITED' })
    limited.advance(61_000)
  })

  test('register: past the limit is 429 before any account is made', async () => {
    // A refused attempt (here a duplicate) counts as much as a success.
    const first = await limited.call('POST', '/api/auth/register', { json: { email: 'r1@example.com', password: 'secret1' }, headers: from('198.51.100.7') })
    expect(first.status).toBe(201)
    const duplicate = await limited.call('POST', '/api/auth/register', { json: { email: 'r1@example.com', password: 'secret1' }, headers: from('198.51.100.7') })
    expect(duplicate.status).toBe(409)
    const blocked = await limited.call('POST', '/api/auth/register', { json: { email: 'r9@example.com', password: 'secret1' }, headers: from('198.51.100.7') })
    expect(blocked.status).toBe(429)
    expect(blocked.body.code).toBe('RATE_LIMITED')
    expect(blocked.headers.get('retry-after')).not.toBeNull()
    expect(limited.dataDir.db.select().from(users).where(eq(users.email, 'r9@example.com')).get()).toBeUndefined()
  })
})

describe('login failure bursts in the audit log', () => {
  test('the 5th failure from one address, and against one email, writes one entry each; more failures write nothing more', async () => {
    const own = createTestContext({ trustProxy: true })
    try {
      const { user } = await createUser(own, { email: 'target@example.com' })
      const fail = (address: string) => own.call('POST', '/api/auth/login', { json: { email: 'target@example.com', password: 'not-it' }, headers: { 'x-forwarded-for': address } })
      for (let i = 0; i < 4; i++) expect((await fail('192.0.2.1')).status).toBe(401)
      expect(auditActions(own).filter((a) => a === 'auth.login_failures')).toEqual([])
      await fail('192.0.2.1')
      const entries = own.dataDir.db.select().from(auditLogs).where(eq(auditLogs.action, 'auth.login_failures')).all()
      expect(entries.length).toBe(2)
      const byAddress = entries.find((e) => e.targetType === 'address')!
      expect(byAddress.targetId).toBe('192.0.2.1')
      expect(byAddress.actorId).toBeNull()
      expect(byAddress.summary).toContain('192.0.2.1')
      const byEmail = entries.find((e) => e.targetType === 'user')!
      expect(byEmail.targetId).toBe(user.id)
      expect(byEmail.summary).toContain('target@example.com')
      expect(JSON.parse(byEmail.metadata)).toMatchObject({ email: 'target@example.com', failures: 5 })

      await fail('192.0.2.1')
      expect(auditActions(own).filter((a) => a === 'auth.login_failures').length).toBe(2)

      // A new window starts a new count.
      own.advance(15 * 60_000)
      for (let i = 0; i < 5; i++) await fail('192.0.2.1')
      expect(auditActions(own).filter((a) => a === 'auth.login_failures').length).toBe(4)
    } finally {
      own.close()
    }
  })
})
