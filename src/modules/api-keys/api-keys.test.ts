import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { apiKeys, auditLogs, miniAppMembers, users } from '../../db/schema'
import { createTestContext } from '../../test-support'
import { createMiniApp, createTestUser, upload, uploadForm, type TestUser } from '../../test-fixtures'
import { createApiKeyAuthenticator, hashApiKey } from './service'

const context = createTestContext()
afterAll(() => context.close())

let owner: TestUser
let other: TestUser
let admin: TestUser
let shop: { id: string; appId: string }
let blog: { id: string; appId: string }
let versionId: string

const outcome = (res: { status: number; body: { code?: string } }) => ({ status: res.status, code: res.body.code })

async function createKey(user: TestUser, body: Record<string, unknown>): Promise<{ id: string; key: string; prefix: string }> {
  const res = await context.call('POST', '/api/auth/api-keys', { token: user.token, json: body })
  if (res.status !== 201) throw new Error(`creating a key answered ${res.status} ${res.text}`)
  return res.body
}

beforeAll(async () => {
  owner = await createTestUser(context, { email: 'owner@example.test' })
  other = await createTestUser(context, { email: 'other@example.test' })
  admin = await createTestUser(context, { email: 'admin@example.test', role: 'ADMIN' })
  shop = await createMiniApp(context, owner.token, 'shop')
  blog = await createMiniApp(context, owner.token, 'blog')
  const uploaded = await upload(context, owner.token, 'shop', uploadForm('shop', { version: '1.0.0' }))
  versionId = uploaded.body.id
})

describe('creating keys', () => {
  test('answers the key once, stores only its sha256, and audits it', async () => {
    const res = await context.call('POST', '/api/auth/api-keys', { token: owner.token, json: { name: 'CI', scopes: ['upload', 'read'] } })
    expect(res.status).toBe(201)
    expect(res.body.key).toMatch(/^msk_[A-Za-z0-9_-]{43}$/)
    expect(res.body.prefix).toBe(res.body.key.slice(0, 12))
    expect(res.body.scopes).toEqual(['read', 'upload'])
    expect(res.body.miniAppIds).toBeNull()
    const row = context.dataDir.db.select().from(apiKeys).where(eq(apiKeys.id, res.body.id)).get()!
    expect(row.keyHash).toBe(hashApiKey(res.body.key))
    expect(JSON.stringify(row)).not.toContain(res.body.key)
    const audit = context.dataDir.db.select().from(auditLogs).where(eq(auditLogs.targetId, res.body.id)).all()
    expect(audit.map((entry) => entry.action)).toEqual(['api_key.create'])
    const list = await context.call('GET', '/api/auth/api-keys', { token: owner.token })
    expect(list.status).toBe(200)
    const listed = list.body.apiKeys.find((key: { id: string }) => key.id === res.body.id)
    expect(listed).toMatchObject({ name: 'CI', prefix: res.body.prefix, lastUsedAt: null, revokedAt: null })
    expect(listed.key).toBeUndefined()
    expect(list.text).not.toContain(res.body.key)
  })

  const bad: [string, Record<string, unknown>, number, string][] = [
    ['no scopes', { name: 'x', scopes: [] }, 400, 'VALIDATION_ERROR'],
    ['an unknown scope', { name: 'x', scopes: ['admin'] }, 400, 'VALIDATION_ERROR'],
    ['a blank name', { name: '  ', scopes: ['read'] }, 400, 'VALIDATION_ERROR'],
    ['an expiry in the past', { name: 'x', scopes: ['read'], expiresAt: '2020-01-01T00:00:00Z' }, 400, 'VALIDATION_ERROR'],
    ['an expiry that is no time', { name: 'x', scopes: ['read'], expiresAt: 'tomorrow' }, 400, 'VALIDATION_ERROR'],
    ['an empty miniapp id', { name: 'x', scopes: ['read'], miniAppIds: [''] }, 400, 'VALIDATION_ERROR'],
    ['a mini app the owner is no member of', { name: 'x', scopes: ['read'], miniAppIds: ['nope'] }, 404, 'MINI_APP_NOT_FOUND'],
  ]
  for (const [what, body, status, code] of bad) {
    test(`refuses ${what} (${status} ${code})`, async () => {
      expect(outcome(await context.call('POST', '/api/auth/api-keys', { token: owner.token, json: body }))).toEqual({ status, code })
    })
  }

  test('without a token: 401', async () => {
    expect(outcome(await context.call('POST', '/api/auth/api-keys', { json: { name: 'x', scopes: ['read'] } }))).toEqual({ status: 401, code: 'AUTH_REQUIRED' })
  })

  test('a key cannot create, list or revoke keys (403 SCOPE_REQUIRED)', async () => {
    const { key, id } = await createKey(owner, { name: 'all', scopes: ['read', 'upload', 'release'] })
    expect(outcome(await context.call('POST', '/api/auth/api-keys', { token: key, json: { name: 'x', scopes: ['read'] } }))).toEqual({ status: 403, code: 'SCOPE_REQUIRED' })
    expect(outcome(await context.call('GET', '/api/auth/api-keys', { token: key }))).toEqual({ status: 403, code: 'SCOPE_REQUIRED' })
    expect(outcome(await context.call('DELETE', `/api/auth/api-keys/${id}`, { token: key }))).toEqual({ status: 403, code: 'SCOPE_REQUIRED' })
  })
})

describe('using keys', () => {
  test('read: list, get, workspace and runtime downloads; not upload or publish', async () => {
    const { key } = await createKey(owner, { name: 'reader', scopes: ['read'] })
    const list = await context.call('GET', '/api/mini-apps', { token: key })
    expect(list.status).toBe(200)
    expect(list.body.map((app: { appId: string }) => app.appId).sort()).toEqual(['blog', 'shop'])
    expect((await context.call('GET', `/api/mini-apps/${shop.id}`, { token: key })).status).toBe(200)
    expect((await context.call('GET', `/api/mini-apps/${shop.id}/workspace`, { token: key })).status).toBe(200)
    expect((await context.call('GET', `/api/mini-apps/access/versions/${versionId}/install?token=${key}`)).status).toBe(200)
    expect((await context.call('GET', `/api/mini-apps/access/versions/${versionId}/manifest?token=${key}`)).status).toBe(200)
    const refused = await upload(context, key, 'shop', uploadForm('shop', { version: '1.0.1' }))
    expect(outcome(refused)).toEqual({ status: 403, code: 'SCOPE_REQUIRED' })
    expect(refused.body.message).toContain('"upload"')
    const publish = await context.call('POST', `/api/mini-apps/${shop.id}/versions/${versionId}/publish`, { token: key, json: {} })
    expect(outcome(publish)).toEqual({ status: 403, code: 'SCOPE_REQUIRED' })
    expect(publish.body.message).toContain('"release"')
  })

  test('upload and release scopes do what they name; a runtime ?token= needs read', async () => {
    const { key } = await createKey(owner, { name: 'ci', scopes: ['upload', 'release'] })
    const uploaded = await upload(context, key, 'shop', uploadForm('shop', { version: '1.1.0' }))
    expect(uploaded.status).toBe(201)
    expect(uploaded.body.createdBy.email).toBe('owner@example.test')
    const published = await context.call('POST', `/api/mini-apps/${shop.id}/versions/${uploaded.body.id}/publish`, { token: key, json: { notes: 'from CI' } })
    expect(published.status).toBe(200)
    expect(published.body.status).toBe('PUBLISHED')
    expect(outcome(await context.call('GET', `/api/mini-apps/${shop.id}/workspace`, { token: key }))).toEqual({ status: 403, code: 'SCOPE_REQUIRED' })
    expect(outcome(await context.call('GET', `/api/mini-apps/access/versions/${versionId}/install?token=${key}`))).toEqual({ status: 403, code: 'SCOPE_REQUIRED' })
  })

  test('channels: read lists them; creating one and changing a rollout need release', async () => {
    const reader = await createKey(owner, { name: 'channel reader', scopes: ['read'] })
    const releaser = await createKey(owner, { name: 'channel releaser', scopes: ['release'] })
    const listed = await context.call('GET', `/api/mini-apps/${shop.id}/channels`, { token: reader.key })
    expect(listed.status).toBe(200)
    expect(listed.body.channels[0].name).toBe('stable')
    expect(outcome(await context.call('POST', `/api/mini-apps/${shop.id}/channels`, { token: reader.key, json: { name: 'beta' } }))).toEqual({ status: 403, code: 'SCOPE_REQUIRED' })
    expect((await context.call('POST', `/api/mini-apps/${shop.id}/channels`, { token: releaser.key, json: { name: 'beta' } })).status).toBe(201)
    expect(outcome(await context.call('PATCH', `/api/mini-apps/${shop.id}/channels/stable/rollout`, { token: reader.key, json: { rolloutPercent: 50 } }))).toEqual({ status: 403, code: 'SCOPE_REQUIRED' })
    const rollout = await context.call('PATCH', `/api/mini-apps/${shop.id}/channels/stable/rollout`, { token: releaser.key, json: { rolloutPercent: 100 } })
    expect(rollout.status).toBe(200)
  })

  test('insights: read reads them (api.md), other scopes are 403, a key for another miniapp 404', async () => {
    const reader = await createKey(owner, { name: 'insights reader', scopes: ['read'] })
    const releaser = await createKey(owner, { name: 'insights releaser', scopes: ['upload', 'release'] })
    const blogOnly = await createKey(owner, { name: 'insights blog', scopes: ['read'], miniAppIds: [blog.id] })
    const report = await context.call('GET', `/api/mini-apps/${shop.id}/insights?days=7`, { token: reader.key })
    expect(report.status).toBe(200)
    expect(report.body.days).toHaveLength(7)
    expect((await context.call('GET', `/api/mini-apps/shop/insights?days=7`, { token: reader.key })).status).toBe(200)
    expect(outcome(await context.call('GET', `/api/mini-apps/${shop.id}/insights`, { token: releaser.key }))).toEqual({ status: 403, code: 'SCOPE_REQUIRED' })
    expect(outcome(await context.call('GET', `/api/mini-apps/${shop.id}/insights`, { token: blogOnly.key }))).toEqual({ status: 404, code: 'MINI_APP_NOT_FOUND' })
    const strangersKey = await createKey(other, { name: 'not a member', scopes: ['read'] })
    expect(outcome(await context.call('GET', `/api/mini-apps/${shop.id}/insights`, { token: strangersKey.key }))).toEqual({ status: 404, code: 'MINI_APP_NOT_FOUND' })
  })

  test('the experience install takes a read key of a member (and 404 for a key of another mini app)', async () => {
    const reader = await createKey(owner, { name: 'experience', scopes: ['read'] })
    const blogOnly = await createKey(owner, { name: 'experience blog', scopes: ['read'], miniAppIds: [blog.id] })
    const res = await context.call('GET', `/api/mini-apps/access/apps/shop/experience/install?token=${reader.key}`)
    expect(res.status).toBe(200)
    expect(res.body.appId).toBe('shop')
    expect(outcome(await context.call('GET', `/api/mini-apps/access/apps/shop/experience/install?token=${blogOnly.key}`))).toEqual({ status: 404, code: 'MINI_APP_NOT_FOUND' })
  })

  test('session-only routes refuse keys: create mini app, members, delete version, approve a device session', async () => {
    const { key } = await createKey(owner, { name: 'everything', scopes: ['read', 'upload', 'release'] })
    expect(outcome(await context.call('POST', '/api/mini-apps', { token: key, json: { appId: 'newapp', name: 'N' } }))).toEqual({ status: 403, code: 'SCOPE_REQUIRED' })
    expect(outcome(await context.call('GET', `/api/mini-apps/${shop.id}/members`, { token: key }))).toEqual({ status: 403, code: 'SCOPE_REQUIRED' })
    expect(outcome(await context.call('DELETE', `/api/mini-apps/${shop.id}/versions/${versionId}`, { token: key }))).toEqual({ status: 403, code: 'SCOPE_REQUIRED' })
    const session = await context.call('POST', '/api/auth/cli/sessions')
    expect(outcome(await context.call('POST', `/api/auth/cli/sessions/${session.body.code}/approve`, { token: key }))).toEqual({ status: 403, code: 'SCOPE_REQUIRED' })
  })

  test("an admin's key has no admin powers: admin endpoints 403, other people's mini apps 404", async () => {
    const theirs = await createMiniApp(context, other.token, 'theirs')
    const { key } = await createKey(admin, { name: 'admin ci', scopes: ['read', 'upload', 'release'] })
    for (const path of ['/api/admin/users', '/api/admin/api-keys']) {
      expect(outcome(await context.call('GET', path, { token: key }))).toEqual({ status: 403, code: 'SCOPE_REQUIRED' })
    }
    expect(outcome(await context.call('GET', `/api/mini-apps/${theirs.id}`, { token: key }))).toEqual({ status: 404, code: 'MINI_APP_NOT_FOUND' })
    const me = await context.call('GET', '/api/auth/me', { token: key })
    expect(me.status).toBe(200)
    expect(me.body.role).toBe('USER')
    expect(me.body.apiKey.name).toBe('admin ci')
  })

  test('a key for one mini app answers 404 for the others, like a non-member', async () => {
    const { key } = await createKey(owner, { name: 'blog only', scopes: ['read', 'upload'], miniAppIds: [blog.id] })
    expect((await context.call('GET', '/api/mini-apps', { token: key })).body.map((app: { appId: string }) => app.appId)).toEqual(['blog'])
    expect(outcome(await context.call('GET', `/api/mini-apps/${shop.id}/workspace`, { token: key }))).toEqual({ status: 404, code: 'MINI_APP_NOT_FOUND' })
    expect(outcome(await upload(context, key, 'shop', uploadForm('shop', { version: '9.0.0' })))).toEqual({ status: 404, code: 'MINI_APP_NOT_FOUND' })
    expect(outcome(await context.call('GET', `/api/mini-apps/access/versions/${versionId}/install?token=${key}`))).toEqual({ status: 404, code: 'VERSION_NOT_FOUND' })
    expect((await upload(context, key, 'blog', uploadForm('blog', { version: '1.0.0' }))).status).toBe(201)
  })

  test('revoked, expired, unknown and malformed keys: 401 with their own codes', async () => {
    const revoked = await createKey(owner, { name: 'soon revoked', scopes: ['read'] })
    expect((await context.call('GET', '/api/mini-apps', { token: revoked.key })).status).toBe(200)
    const res = await context.call('DELETE', `/api/auth/api-keys/${revoked.id}`, { token: owner.token })
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ success: true, id: revoked.id })
    expect(outcome(await context.call('GET', '/api/mini-apps', { token: revoked.key }))).toEqual({ status: 401, code: 'API_KEY_REVOKED' })
    expect(outcome(await context.call('GET', `/api/mini-apps/access/versions/${versionId}/install?token=${revoked.key}`))).toEqual({ status: 401, code: 'API_KEY_REVOKED' })

    const expiring = await createKey(owner, { name: 'short', scopes: ['read'], expiresAt: new Date(context.now.value + 60_000).toISOString() })
    expect((await context.call('GET', '/api/mini-apps', { token: expiring.key })).status).toBe(200)
    context.advance(60_000)
    expect(outcome(await context.call('GET', '/api/mini-apps', { token: expiring.key }))).toEqual({ status: 401, code: 'API_KEY_EXPIRED' })

    expect(outcome(await context.call('GET', '/api/mini-apps', { token: `msk_${'A'.repeat(43)}` }))).toEqual({ status: 401, code: 'INVALID_API_KEY' })
    expect(outcome(await context.call('GET', '/api/mini-apps', { token: 'msk_short' }))).toEqual({ status: 401, code: 'INVALID_API_KEY' })
  })

  test("stops working when its owner is disabled, and reaches nothing once the owner leaves the mini app", async () => {
    const dev = await createTestUser(context, { email: 'dev@example.test' })
    const added = await context.call('POST', `/api/mini-apps/${shop.id}/members`, { token: owner.token, json: { email: dev.email, role: 'DEVELOPER' } })
    expect(added.status).toBe(201)
    const { key } = await createKey(dev, { name: 'dev ci', scopes: ['read'] })
    expect((await context.call('GET', `/api/mini-apps/${shop.id}/workspace`, { token: key })).status).toBe(200)
    context.dataDir.db.delete(miniAppMembers).where(eq(miniAppMembers.userId, dev.id)).run()
    expect(outcome(await context.call('GET', `/api/mini-apps/${shop.id}/workspace`, { token: key }))).toEqual({ status: 404, code: 'MINI_APP_NOT_FOUND' })
    context.dataDir.db.update(users).set({ status: 'DISABLED' }).where(eq(users.id, dev.id)).run()
    expect(outcome(await context.call('GET', '/api/mini-apps', { token: key }))).toEqual({ status: 401, code: 'API_KEY_OWNER_DISABLED' })
  })

  test("someone else's key cannot be revoked by you (404); an admin lists and revokes every key", async () => {
    const { id, key } = await createKey(other, { name: 'other ci', scopes: ['read'] })
    expect(outcome(await context.call('DELETE', `/api/auth/api-keys/${id}`, { token: owner.token }))).toEqual({ status: 404, code: 'API_KEY_NOT_FOUND' })
    expect(outcome(await context.call('GET', '/api/admin/api-keys', { token: owner.token }))).toEqual({ status: 403, code: 'ADMIN_REQUIRED' })
    const all = await context.call('GET', '/api/admin/api-keys', { token: admin.token })
    expect(all.status).toBe(200)
    expect(all.body.apiKeys.find((k: { id: string }) => k.id === id).owner.email).toBe('other@example.test')
    expect((await context.call('DELETE', `/api/admin/api-keys/${id}`, { token: admin.token })).status).toBe(200)
    expect(outcome(await context.call('GET', '/api/mini-apps', { token: key }))).toEqual({ status: 401, code: 'API_KEY_REVOKED' })
    expect(outcome(await context.call('DELETE', '/api/admin/api-keys/nope', { token: admin.token }))).toEqual({ status: 404, code: 'API_KEY_NOT_FOUND' })
    const audit = context.dataDir.db.select().from(auditLogs).where(eq(auditLogs.targetId, id)).all()
    expect(audit.map((entry) => entry.action).sort()).toEqual(['api_key.create', 'api_key.revoke'])
  })
})

describe('last use and new addresses', () => {
  test('lastUsedAt is answered at once but written in batches, not per request', async () => {
    const { id, key } = await createKey(owner, { name: 'usage', scopes: ['read'] })
    context.advance(1000)
    await context.call('GET', '/api/mini-apps', { token: key })
    const expected = new Date(context.now.value).toISOString()
    const listed = (await context.call('GET', '/api/auth/api-keys', { token: owner.token })).body.apiKeys.find((k: { id: string }) => k.id === id)
    expect(listed.lastUsedAt).toBe(expected)
    const stored = () => context.dataDir.db.select().from(apiKeys).where(eq(apiKeys.id, id)).get()!.lastUsedAt
    expect(stored()).toBeNull()
    context.app.store.apiKeyUsage.flush()
    expect(stored()).toBe(expected)
  })

  test('the first use from a new client address is audited once', async () => {
    const { id, key } = await createKey(owner, { name: 'addresses', scopes: ['read'] })
    const authenticator = createApiKeyAuthenticator({ db: context.dataDir.db, clock: () => context.now.value })
    authenticator.authenticate(key, 'read', '10.0.0.1')
    authenticator.authenticate(key, 'read', '10.0.0.1')
    authenticator.authenticate(key, 'read', '10.0.0.2')
    authenticator.usage.stop()
    const entries = context.dataDir.db.select().from(auditLogs).where(eq(auditLogs.targetId, id)).all().filter((entry) => entry.action === 'api_key.new_address')
    expect(entries.map((entry) => JSON.parse(entry.metadata).address)).toEqual(['10.0.0.1', '10.0.0.2'])
  })
})
