// HTTP tests of the CLI device flow (decisions §4): create, poll, approve, one-time hand-out, expiry.
import { describe, expect, test, afterAll, beforeAll } from 'bun:test'
import { eq } from 'drizzle-orm'
import { createTestContext, createUser, type TestUser } from '../../test-support'
import { auditLogs, users } from '../../db/schema'
import { codeLetters, codePattern, generateCode, normaliseCode, verificationUrl } from './service'
import { defaultRateLimits } from '../../config'

const context = createTestContext()
afterAll(() => context.close())

let alice: TestUser
let bob: TestUser
beforeAll(async () => {
  alice = await createUser(context, { email: 'alice@example.com', displayName: 'Alice' })
  bob = await createUser(context, { email: 'bob@example.com' })
})

async function newSession(ctx = context, headers?: Record<string, string>) {
  const res = await ctx.call('POST', '/api/auth/cli/sessions', { headers })
  expect(res.status).toBe(201)
  return res.body as { code: string; verificationUrl: string; expiresAt: string; intervalSeconds: number }
}

describe('codes', () => {
  test('have the shape ABCD-1234 with no I or O, and vary', () => {
    const codes = new Set<string>()
    for (let i = 0; i < 2000; i++) {
      const code = generateCode()
      expect(code).toMatch(codePattern)
      expect(code).not.toMatch(/[IO]/)
      codes.add(code)
    }
    expect(codes.size).toBeGreaterThan(1990)
    expect(codeLetters).toHaveLength(24)
  })

  test('every letter of the alphabet turns up (no bias towards the start)', () => {
    const seen = new Set<string>()
    for (let i = 0; i < 500; i++) for (const char of generateCode().slice(0, 4)) seen.add(char)
    expect([...seen].sort().join('')).toBe(codeLetters)
  })

  test.each([
    [' abcd-1234 ', 'ABCD-1234'],
    ['ABCD-1234', 'ABCD-1234'],
    ['ABCD1234', null],
    ['ABC-1234', null],
    ['ABCD-12345', null],
    ['../etc', null],
  ])('normaliseCode(%p) → %p', (raw, expected) => {
    expect(normaliseCode(raw)).toBe(expected)
  })

  test('the verification URL carries the code as a query parameter', () => {
    expect(verificationUrl('https://apps.example.com', 'ABCD-1234')).toBe('https://apps.example.com/cli/authorize?code=ABCD-1234')
  })
})

describe('the whole flow', () => {
  test('create → pending → approve → approved with a working token → expired', async () => {
    const session = await newSession()
    expect(session.code).toMatch(/^[A-Z]{4}-[0-9]{4}$/)
    expect(session.verificationUrl).toBe(`http://localhost/cli/authorize?code=${session.code}`)
    expect(session.intervalSeconds).toBe(5)
    expect(Date.parse(session.expiresAt) - context.now.value).toBe(600_000)
    expect(session.expiresAt).toBe(new Date(Date.parse(session.expiresAt)).toISOString())

    const pending = await context.call('GET', `/api/auth/cli/sessions/${session.code}`)
    expect(pending.status).toBe(200)
    expect(pending.body).toEqual({ status: 'pending' })

    const approve = await context.call('POST', `/api/auth/cli/sessions/${session.code}/approve`, { token: alice.token })
    expect(approve.status).toBe(200)
    expect(approve.body).toEqual({ code: session.code, status: 'approved' })

    const approved = await context.call('GET', `/api/auth/cli/sessions/${session.code}`)
    expect(approved.status).toBe(200)
    expect(approved.body.status).toBe('approved')
    expect(approved.body.user).toEqual({ id: alice.user.id, email: 'alice@example.com', displayName: 'Alice' })
    const me = await context.call('GET', '/api/auth/me', { token: approved.body.accessToken })
    expect(me.status).toBe(200)
    expect(me.body.id).toBe(alice.user.id)

    const after = await context.call('GET', `/api/auth/cli/sessions/${session.code}`)
    expect(after.status).toBe(200)
    expect(after.body).toEqual({ status: 'expired' })
  })

  test('the approval is audited without the full code', () => {
    const entry = context.dataDir.db.select().from(auditLogs).where(eq(auditLogs.action, 'cli_session.approve')).get()!
    expect(entry.actorId).toBe(alice.user.id)
    expect(entry.actorEmail).toBe('alice@example.com')
    expect(entry.summary).toContain('alice@example.com')
    expect(entry.summary).toMatch(/[A-Z]{4}-\*{4}/)
  })

  test('codes are accepted in lower case when polled and approved', async () => {
    const session = await newSession()
    const lower = session.code.toLowerCase()
    expect((await context.call('POST', `/api/auth/cli/sessions/${lower}/approve`, { token: bob.token })).status).toBe(200)
    const poll = await context.call('GET', `/api/auth/cli/sessions/${lower}`)
    expect(poll.body.status).toBe('approved')
    expect(poll.body.user.email).toBe('bob@example.com')
  })

  test('the verification URL follows --public-url', async () => {
    const own = createTestContext({ publicUrl: 'https://apps.example.com/api' })
    try {
      const session = await newSession(own)
      expect(session.verificationUrl).toBe(`https://apps.example.com/cli/authorize?code=${session.code}`)
    } finally {
      own.close()
    }
  })

  test('the verification URL uses forwarded headers only when trusted', async () => {
    const headers = { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'proxy.example.com' }
    const untrusted = await newSession(context, headers)
    expect(untrusted.verificationUrl.startsWith('http://localhost/')).toBe(true)
    const own = createTestContext({ trustProxy: true })
    try {
      const trusted = await newSession(own, headers)
      expect(trusted.verificationUrl.startsWith('https://proxy.example.com/cli/authorize?code=')).toBe(true)
    } finally {
      own.close()
    }
  })
})

describe('expiry (injectable clock)', () => {
  test('a session past expiresAt polls as expired and cannot be approved (410)', async () => {
    const own = createTestContext()
    try {
      const carol = await createUser(own, { email: 'carol@example.com' })
      const session = await newSession(own)
      own.advance(599_000)
      expect((await own.call('GET', `/api/auth/cli/sessions/${session.code}`)).body).toEqual({ status: 'pending' })
      own.advance(1_000)
      const poll = await own.call('GET', `/api/auth/cli/sessions/${session.code}`)
      expect(poll.status).toBe(200)
      expect(poll.body).toEqual({ status: 'expired' })
      const approve = await own.call('POST', `/api/auth/cli/sessions/${session.code}/approve`, { token: carol.token })
      expect(approve.status).toBe(410)
      expect(approve.body.code).toBe('CLI_SESSION_EXPIRED')
    } finally {
      own.close()
    }
  })

  test('an approved session whose token was not collected in time polls as expired', async () => {
    const own = createTestContext()
    try {
      const carol = await createUser(own, { email: 'carol@example.com' })
      const session = await newSession(own)
      expect((await own.call('POST', `/api/auth/cli/sessions/${session.code}/approve`, { token: carol.token })).status).toBe(200)
      own.advance(600_000)
      expect((await own.call('GET', `/api/auth/cli/sessions/${session.code}`)).body).toEqual({ status: 'expired' })
    } finally {
      own.close()
    }
  })

  test('the session lifetime and interval are configurable', async () => {
    const own = createTestContext({ cliSessionTtlSeconds: 60, cliIntervalSeconds: 2 })
    try {
      const session = await newSession(own)
      expect(session.intervalSeconds).toBe(2)
      expect(Date.parse(session.expiresAt) - own.now.value).toBe(60_000)
    } finally {
      own.close()
    }
  })
})

describe('bad input', () => {
  test('polling an unknown or malformed code is 404', async () => {
    for (const code of ['ZZZZ-0000', 'nonsense', 'A'.repeat(60)]) {
      const res = await context.call('GET', `/api/auth/cli/sessions/${code}`)
      expect(res.status).toBe(404)
      expect(res.body.code).toBe('CLI_SESSION_NOT_FOUND')
    }
  })

  test('approving an unknown, a malformed and an expired code answer alike: 410 CLI_SESSION_EXPIRED, the same message shape', async () => {
    const own = createTestContext()
    try {
      const carol = await createUser(own, { email: 'carol@example.com' })
      const expired = await newSession(own)
      own.advance(600_000)
      const answers = []
      for (const code of [expired.code, 'ZZZZ-0000', 'nonsense']) {
        const res = await own.call('POST', `/api/auth/cli/sessions/${code}/approve`, { token: carol.token })
        answers.push({ status: res.status, code: res.body.code, message: res.body.message.replace(code.toUpperCase(), '<code>').replace(code, '<code>') })
      }
      expect(answers[0]).toEqual({ status: 410, code: 'CLI_SESSION_EXPIRED', message: 'The code <code> is unknown or has expired; run the login again for a new code' })
      expect(answers[1]).toEqual(answers[0]!)
      expect(answers[2]).toEqual(answers[0]!)
    } finally {
      own.close()
    }
  })

  test('approving an already approved code is 409, before and after its token was collected', async () => {
    const session = await newSession()
    expect((await context.call('POST', `/api/auth/cli/sessions/${session.code}/approve`, { token: alice.token })).status).toBe(200)
    const again = await context.call('POST', `/api/auth/cli/sessions/${session.code}/approve`, { token: bob.token })
    expect(again.status).toBe(409)
    expect(again.body.code).toBe('CLI_SESSION_ALREADY_APPROVED')
    // Bob's refused approval did not take the session over.
    const poll = await context.call('GET', `/api/auth/cli/sessions/${session.code}`)
    expect(poll.body.user.id).toBe(alice.user.id)
    const consumed = await context.call('POST', `/api/auth/cli/sessions/${session.code}/approve`, { token: alice.token })
    expect(consumed.status).toBe(409)
    expect(consumed.body.code).toBe('CLI_SESSION_ALREADY_APPROVED')
  })

  test('approving without a token is 401, with a garbage token 401', async () => {
    const session = await newSession()
    const anonymous = await context.call('POST', `/api/auth/cli/sessions/${session.code}/approve`)
    expect(anonymous.status).toBe(401)
    expect(anonymous.body.code).toBe('AUTH_REQUIRED')
    const garbage = await context.call('POST', `/api/auth/cli/sessions/${session.code}/approve`, { token: 'garbage' })
    expect(garbage.status).toBe(401)
    expect(garbage.body.code).toBe('INVALID_TOKEN')
    expect((await context.call('GET', `/api/auth/cli/sessions/${session.code}`)).body).toEqual({ status: 'pending' })
  })

  test('a disabled user cannot approve', async () => {
    const dave = await createUser(context, { email: 'dave@example.com' })
    context.dataDir.db.update(users).set({ status: 'DISABLED', tokenVersion: 2 }).where(eq(users.id, dave.user.id)).run()
    const session = await newSession()
    const res = await context.call('POST', `/api/auth/cli/sessions/${session.code}/approve`, { token: dave.token })
    expect(res.status).toBe(401)
    expect(res.body.code).toBe('TOKEN_REVOKED')
    expect((await context.call('GET', `/api/auth/cli/sessions/${session.code}`)).body).toEqual({ status: 'pending' })
  })

  test('a user disabled between approval and poll gets no token', async () => {
    const erin = await createUser(context, { email: 'erin@example.com' })
    const session = await newSession()
    expect((await context.call('POST', `/api/auth/cli/sessions/${session.code}/approve`, { token: erin.token })).status).toBe(200)
    context.dataDir.db.update(users).set({ status: 'DISABLED', tokenVersion: 2 }).where(eq(users.id, erin.user.id)).run()
    const poll = await context.call('GET', `/api/auth/cli/sessions/${session.code}`)
    expect(poll.body).toEqual({ status: 'expired' })
  })
})

describe('rate limits', () => {
  const limited = createTestContext({ rateLimit: true, trustProxy: true, rateLimits: { ...defaultRateLimits, login: 10, register: 10, cliSessionCreate: 2, cliSessionPoll: 3 } })
  afterAll(() => limited.close())

  test('session creation past the limit is 429 with Retry-After, per address', async () => {
    const from = { 'x-forwarded-for': '203.0.113.9' }
    await newSession(limited, from)
    await newSession(limited, from)
    const blocked = await limited.call('POST', '/api/auth/cli/sessions', { headers: from })
    expect(blocked.status).toBe(429)
    expect(blocked.body.code).toBe('RATE_LIMITED')
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0)
    await newSession(limited, { 'x-forwarded-for': '203.0.113.10' })
  })

  test('approving past the limit is 429, per user and per address', async () => {
    const own = createTestContext({ rateLimit: true, trustProxy: true, rateLimits: { ...defaultRateLimits, cliSessionApprove: 3 } })
    try {
      const dave = await createUser(own, { email: 'dave@example.com' })
      const frank = await createUser(own, { email: 'frank@example.com' })
      const approve = (token: string, address: string, code = 'ZZZZ-0000') =>
        own.call('POST', `/api/auth/cli/sessions/${code}/approve`, { token, headers: { 'x-forwarded-for': address } })
      // one user trying codes from ever new addresses
      for (let i = 0; i < 3; i++) expect((await approve(dave.token, `198.51.100.${i}`)).status).toBe(410)
      const byUser = await approve(dave.token, '198.51.100.50')
      expect({ status: byUser.status, code: byUser.body.code }).toEqual({ status: 429, code: 'RATE_LIMITED' })
      expect(byUser.headers.get('retry-after')).not.toBeNull()
      // one address trying codes: another user's budget does not help once the address's is used up
      for (let i = 0; i < 3; i++) expect((await approve(frank.token, '192.0.2.77')).status).toBe(410)
      const george = await createUser(own, { email: 'george@example.com' })
      const byAddress = await approve(george.token, '192.0.2.77')
      expect({ status: byAddress.status, code: byAddress.body.code }).toEqual({ status: 429, code: 'RATE_LIMITED' })
      // a real code from a fresh user and address still works, and the window passes
      const session = await newSession(own, { 'x-forwarded-for': '192.0.2.200' })
      expect((await approve(george.token, '192.0.2.201', session.code)).status).toBe(200)
      own.advance(60_000)
      expect((await approve(dave.token, '198.51.100.60')).status).toBe(410)
    } finally {
      own.close()
    }
  })

  test('polling past the limit is 429 with Retry-After', async () => {
    const session = await newSession(limited, { 'x-forwarded-for': '203.0.113.11' })
    const from = { 'x-forwarded-for': '203.0.113.12' }
    for (let i = 0; i < 3; i++) expect((await limited.call('GET', `/api/auth/cli/sessions/${session.code}`, { headers: from })).status).toBe(200)
    const blocked = await limited.call('GET', `/api/auth/cli/sessions/${session.code}`, { headers: from })
    expect(blocked.status).toBe(429)
    expect(blocked.body.code).toBe('RATE_LIMITED')
    expect(blocked.headers.get('retry-after')).not.toBeNull()
    limited.advance(60_000)
    expect((await limited.call('GET', `/api/auth/cli/sessions/${session.code}`, { headers: from })).status).toBe(200)
  })
})
