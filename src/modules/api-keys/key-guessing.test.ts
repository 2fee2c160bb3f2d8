// decisions §18: failed API key authentication is rate-limited per client address like login (429 RATE_LIMITED with Retry-After).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createTestContext, createUser, type TestUser } from '../../test-support'
import { defaultRateLimits } from '../../config'

// addresses come from X-Forwarded-For (trusted here), so each test plays several clients
const context = createTestContext({ rateLimit: true, trustProxy: true })
afterAll(() => context.close())
const limit = defaultRateLimits.apiKeyFailures

let owner: TestUser
let goodKey: string
let keyId: string
beforeAll(async () => {
  owner = await createUser(context, { email: 'keys@example.test' })
  const res = await context.call('POST', '/api/auth/api-keys', { token: owner.token, json: { name: 'CI', scopes: ['read'] } })
  expect(res.status).toBe(201)
  goodKey = res.body.key
  keyId = res.body.id
})

const guess = (n: number) => `msk_${String(n).padStart(43, 'x')}`
const asKey = (key: string, address: string) => context.call('GET', '/api/auth/me', { headers: { authorization: `Bearer ${key}`, 'x-forwarded-for': address } })

describe('guessing API keys', () => {
  test(`${limit} bad keys from one address answer 401; the next answers 429 RATE_LIMITED with Retry-After, even with a good key`, async () => {
    for (let n = 0; n < limit; n++) {
      const res = await asKey(guess(n), '203.0.113.7')
      expect({ n, status: res.status, code: res.body.code }).toEqual({ n, status: 401, code: 'INVALID_API_KEY' })
    }
    const refused = await asKey(guess(limit), '203.0.113.7')
    expect(refused.status).toBe(429)
    expect(refused.body.code).toBe('RATE_LIMITED')
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0)
    // a good key from there learns nothing either
    expect((await asKey(goodKey, '203.0.113.7')).status).toBe(429)
    // another address is unaffected
    const elsewhere = await asKey(goodKey, '198.51.100.2')
    expect(elsewhere.status).toBe(200)
    expect(elsewhere.body.email).toBe('keys@example.test')
    // a minute later the address may try again
    context.advance(61_000)
    expect((await asKey(goodKey, '203.0.113.7')).status).toBe(200)
  })

  test('good keys are not counted; a missing scope (403) is no failed authentication', async () => {
    for (let n = 0; n < limit * 2; n++) expect((await asKey(goodKey, '198.51.100.3')).status).toBe(200)
    for (let n = 0; n < limit * 2; n++) {
      const res = await context.call('POST', '/api/mini-apps', { json: { appId: 'com.example.nope', name: 'x' }, headers: { authorization: `Bearer ${goodKey}`, 'x-forwarded-for': '198.51.100.3' } })
      expect(res.status).toBe(403)
    }
    expect((await asKey(goodKey, '198.51.100.3')).status).toBe(200)
  })

  test('a revoked key counts as a failure like an unknown one', async () => {
    const res = await context.call('POST', '/api/auth/api-keys', { token: owner.token, json: { name: 'old', scopes: ['read'] } })
    expect((await context.call('DELETE', `/api/auth/api-keys/${res.body.id}`, { token: owner.token })).status).toBe(200)
    for (let n = 0; n < limit; n++) expect((await asKey(res.body.key, '192.0.2.9')).body.code).toBe('API_KEY_REVOKED')
    const refused = await asKey(res.body.key, '192.0.2.9')
    expect({ status: refused.status, code: refused.body.code }).toEqual({ status: 429, code: 'RATE_LIMITED' })
    expect(keyId).not.toBe(res.body.id)
  })
})

describe('guessing API keys as a download token (?token=)', () => {
  const runtime = createTestContext({ rateLimit: true, trustProxy: true })
  afterAll(() => runtime.close())
  let versionId: string
  let key: string
  beforeAll(async () => {
    const member = await createUser(runtime, { email: 'runtime-keys@example.test' })
    const { createMiniApp, upload, uploadForm } = await import('../../test-fixtures')
    await createMiniApp(runtime, member.token, 'com.example.keyguess')
    versionId = (await upload(runtime, member.token, 'com.example.keyguess', uploadForm('com.example.keyguess', { version: '1.0.0' }))).body.id
    key = (await runtime.call('POST', '/api/auth/api-keys', { token: member.token, json: { name: 'runtime', scopes: ['read'] } })).body.key
  })
  const fetchWith = (token: string, address: string, path = 'install') =>
    runtime.call('GET', `/api/mini-apps/access/versions/${versionId}/${path}?token=${token}`, { headers: { 'x-forwarded-for': address } })

  test(`install info and files count failed keys per address too: ${limit} then 429 with Retry-After; other addresses unaffected`, async () => {
    for (let n = 0; n < limit; n++) {
      const res = await fetchWith(guess(n), '203.0.113.50', n % 2 === 0 ? 'install' : 'manifest')
      expect({ n, status: res.status, code: res.body.code }).toEqual({ n, status: 401, code: 'INVALID_API_KEY' })
    }
    for (const path of ['install', 'manifest', 'bundles/ios']) {
      const refused = await fetchWith(key, '203.0.113.50', path)
      expect({ path, status: refused.status, code: refused.body.code }).toEqual({ path, status: 429, code: 'RATE_LIMITED' })
      expect(refused.headers.get('retry-after')).not.toBeNull()
    }
    expect((await fetchWith(key, '198.51.100.50')).status).toBe(200)
    expect((await fetchWith(key, '198.51.100.50', 'manifest')).status).toBe(200)
  })
})
