import { describe, expect, test, afterAll, beforeAll } from 'bun:test'
import { createTestContext } from '../../test-support'
import { createTestUser, type TestUser } from '../../test-fixtures'
import { canSeeMiniApp, isValidAppId } from './service'

const context = createTestContext()
afterAll(() => context.close())

let owner: TestUser
let developer: TestUser
let stranger: TestUser
let admin: TestUser
let miniAppId: string

const outcome = (res: { status: number; body: { code?: string } }) => ({ status: res.status, code: res.body.code })

beforeAll(async () => {
  owner = await createTestUser(context, { email: 'owner@example.test' })
  developer = await createTestUser(context, { email: 'dev@example.test' })
  stranger = await createTestUser(context, { email: 'stranger@example.test' })
  admin = await createTestUser(context, { email: 'admin@example.test', role: 'ADMIN' })
})

describe('appId rules', () => {
  const table: [string, boolean][] = [
    ['shop', true],
    ['com.example.shop', true],
    ['My_App-2', true],
    ['a', false],
    ['1shop', false],
    ['a/b', false],
    ['a..b', false],
    ['..', false],
    ['my app', false],
    ['a'.repeat(64), true],
    ['a'.repeat(65), false],
  ]
  for (const [appId, valid] of table) test(`${JSON.stringify(appId)} is ${valid ? 'valid' : 'invalid'}`, () => expect(isValidAppId(appId)).toBe(valid))
})

describe('create', () => {
  test('any user may create a miniapp: 201, and becomes its OWNER', async () => {
    const res = await context.call('POST', '/api/mini-apps', { token: owner.token, json: { appId: 'com.example.shop', name: 'Shop', description: 'Buy things', iconUrl: 'https://cdn.example.com/shop.png' } })
    expect(res.status).toBe(201)
    expect(res.body).toMatchObject({
      appId: 'com.example.shop',
      name: 'Shop',
      description: 'Buy things',
      iconUrl: 'https://cdn.example.com/shop.png',
      currentExperienceVersionId: null,
      currentReviewVersionId: null,
      currentReleaseVersionId: null,
      createdBy: { id: owner.id, email: owner.email, displayName: owner.displayName },
    })
    miniAppId = res.body.id
    const members = await context.call('GET', `/api/mini-apps/${miniAppId}/members`, { token: owner.token })
    expect(members.body).toEqual([expect.objectContaining({ userId: owner.id, role: 'OWNER' })])
  })

  for (const appId of ['a/b', 'a..b', '..', 'my app', ' shop', 'x', '9lives']) {
    test(`appId ${JSON.stringify(appId)}: 400 VALIDATION_ERROR naming appId`, async () => {
      const res = await context.call('POST', '/api/mini-apps', { token: owner.token, json: { appId, name: 'X' } })
      expect(outcome(res)).toEqual({ status: 400, code: 'VALIDATION_ERROR' })
      expect(res.body.details[0].field).toBe('appId')
    })
  }

  test('a duplicate appId: 409, also in another letter case', async () => {
    expect(outcome(await context.call('POST', '/api/mini-apps', { token: stranger.token, json: { appId: 'com.example.shop', name: 'Again' } }))).toEqual({ status: 409, code: 'APP_ID_TAKEN' })
    expect(outcome(await context.call('POST', '/api/mini-apps', { token: stranger.token, json: { appId: 'Com.Example.Shop', name: 'Again' } }))).toEqual({ status: 409, code: 'APP_ID_TAKEN' })
    // the message says what to do, not only that it is taken
    const again = await context.call('POST', '/api/mini-apps', { token: stranger.token, json: { appId: 'Com.Example.Shop', name: 'Again' } })
    expect(again.body.message).toBe('The appId Com.Example.Shop is already registered (app ids are unique on this server, whatever their letter case): miniship apps lists the miniapps you are a member of (its id may differ in letter case; push takes it as listed there), ask one of its owners to add you, or choose another appId')
  })

  test('without a name, with a blank name or a bad iconUrl: 400', async () => {
    expect(outcome(await context.call('POST', '/api/mini-apps', { token: owner.token, json: { appId: 'noname' } }))).toEqual({ status: 400, code: 'VALIDATION_ERROR' })
    expect(outcome(await context.call('POST', '/api/mini-apps', { token: owner.token, json: { appId: 'blank', name: '   ' } }))).toEqual({ status: 400, code: 'VALIDATION_ERROR' })
    expect(outcome(await context.call('POST', '/api/mini-apps', { token: owner.token, json: { appId: 'badicon', name: 'X', iconUrl: 'javascript:alert(1)' } }))).toEqual({ status: 400, code: 'VALIDATION_ERROR' })
  })

  test('without a token: 401', async () => {
    expect(outcome(await context.call('POST', '/api/mini-apps', { json: { appId: 'anon', name: 'X' } }))).toEqual({ status: 401, code: 'AUTH_REQUIRED' })
  })
})

describe('visibility', () => {
  test('a stranger gets 404 for the miniapp, its workspace and its members', async () => {
    for (const path of [`/api/mini-apps/${miniAppId}`, `/api/mini-apps/${miniAppId}/workspace`, `/api/mini-apps/${miniAppId}/members`]) {
      expect(outcome(await context.call('GET', path, { token: stranger.token }))).toEqual({ status: 404, code: 'MINI_APP_NOT_FOUND' })
    }
    expect(outcome(await context.call('PATCH', `/api/mini-apps/${miniAppId}`, { token: stranger.token, json: { name: 'Mine' } }))).toEqual({ status: 404, code: 'MINI_APP_NOT_FOUND' })
  })

  test('an unknown id: 404', async () => {
    expect(outcome(await context.call('GET', '/api/mini-apps/does-not-exist', { token: owner.token }))).toEqual({ status: 404, code: 'MINI_APP_NOT_FOUND' })
  })

  test('the list holds what the caller can see; admins see all', async () => {
    await context.call('POST', '/api/mini-apps', { token: stranger.token, json: { appId: 'stranger.app', name: 'Theirs' } })
    const mine = await context.call('GET', '/api/mini-apps', { token: owner.token })
    expect(mine.body.map((app: { appId: string }) => app.appId)).toEqual(['com.example.shop'])
    const all = await context.call('GET', '/api/mini-apps', { token: admin.token })
    expect(all.body.map((app: { appId: string }) => app.appId).sort()).toEqual(['com.example.shop', 'stranger.app'])
    const admins = await context.call('GET', `/api/mini-apps/${miniAppId}`, { token: admin.token })
    expect(admins.status).toBe(200)
  })

  test('canSeeMiniApp agrees with the endpoints', () => {
    const db = context.dataDir.db
    expect(canSeeMiniApp(db, { id: owner.id, email: owner.email, role: 'USER' }, miniAppId)).toBe(true)
    expect(canSeeMiniApp(db, { id: stranger.id, email: stranger.email, role: 'USER' }, miniAppId)).toBe(false)
    expect(canSeeMiniApp(db, { id: admin.id, email: admin.email, role: 'ADMIN' }, miniAppId)).toBe(true)
    expect(canSeeMiniApp(db, { id: owner.id, email: owner.email, role: 'USER' }, 'nope')).toBe(false)
  })
})

describe('update', () => {
  test('a member changes name, description and icon; appId stays', async () => {
    const res = await context.call('PATCH', `/api/mini-apps/${miniAppId}`, { token: owner.token, json: { name: 'Shop 2', description: null, iconUrl: '' } })
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ appId: 'com.example.shop', name: 'Shop 2', description: null, iconUrl: null })
  })

  test('appId in the payload: 400', async () => {
    const res = await context.call('PATCH', `/api/mini-apps/${miniAppId}`, { token: owner.token, json: { appId: 'renamed', name: 'X' } })
    expect(outcome(res)).toEqual({ status: 400, code: 'VALIDATION_ERROR' })
    expect(res.body.details).toEqual([{ field: 'appId', message: 'cannot be changed' }])
    const after = await context.call('GET', `/api/mini-apps/${miniAppId}`, { token: owner.token })
    expect(after.body).toMatchObject({ appId: 'com.example.shop', name: 'Shop 2' })
  })

  test('an unknown property or a wrong type: 400', async () => {
    expect(outcome(await context.call('PATCH', `/api/mini-apps/${miniAppId}`, { token: owner.token, json: { colour: 'red' } }))).toEqual({ status: 400, code: 'VALIDATION_ERROR' })
    expect(outcome(await context.call('PATCH', `/api/mini-apps/${miniAppId}`, { token: owner.token, json: { name: 42 } }))).toEqual({ status: 400, code: 'VALIDATION_ERROR' })
  })

  test('the change is audited', () => {
    const row = context.dataDir.db.$client.query("SELECT summary FROM audit_logs WHERE action = 'miniapp.update'").get() as { summary: string }
    expect(row.summary).toContain('name')
  })
})

describe('members', () => {
  test('an owner adds a developer by email (any case): 201', async () => {
    const res = await context.call('POST', `/api/mini-apps/${miniAppId}/members`, { token: owner.token, json: { email: 'DEV@example.test', role: 'DEVELOPER' } })
    expect(res.status).toBe(201)
    expect(res.body).toMatchObject({ userId: developer.id, email: developer.email, role: 'DEVELOPER' })
    const visible = await context.call('GET', `/api/mini-apps/${miniAppId}`, { token: developer.token })
    expect(visible.status).toBe(200)
  })

  test('adding a member twice: 409; an unknown email: 404; a bad role: 400', async () => {
    expect(outcome(await context.call('POST', `/api/mini-apps/${miniAppId}/members`, { token: owner.token, json: { email: developer.email, role: 'OWNER' } }))).toEqual({ status: 409, code: 'ALREADY_MEMBER' })
    expect(outcome(await context.call('POST', `/api/mini-apps/${miniAppId}/members`, { token: owner.token, json: { email: 'nobody@example.test', role: 'DEVELOPER' } }))).toEqual({ status: 404, code: 'USER_NOT_FOUND' })
    expect(outcome(await context.call('POST', `/api/mini-apps/${miniAppId}/members`, { token: owner.token, json: { email: stranger.email, role: 'ADMIN' } }))).toEqual({ status: 400, code: 'VALIDATION_ERROR' })
  })

  test('a developer may not manage members: 403; a stranger: 404', async () => {
    expect(outcome(await context.call('GET', `/api/mini-apps/${miniAppId}/members`, { token: developer.token }))).toEqual({ status: 403, code: 'OWNER_REQUIRED' })
    expect(outcome(await context.call('POST', `/api/mini-apps/${miniAppId}/members`, { token: developer.token, json: { email: stranger.email, role: 'DEVELOPER' } }))).toEqual({ status: 403, code: 'OWNER_REQUIRED' })
    expect(outcome(await context.call('DELETE', `/api/mini-apps/${miniAppId}/members/${owner.id}`, { token: developer.token }))).toEqual({ status: 403, code: 'OWNER_REQUIRED' })
    expect(outcome(await context.call('POST', `/api/mini-apps/${miniAppId}/members`, { token: stranger.token, json: { email: stranger.email, role: 'OWNER' } }))).toEqual({ status: 404, code: 'MINI_APP_NOT_FOUND' })
  })

  test('the last owner cannot be removed: 409', async () => {
    expect(outcome(await context.call('DELETE', `/api/mini-apps/${miniAppId}/members/${owner.id}`, { token: owner.token }))).toEqual({ status: 409, code: 'LAST_OWNER' })
  })

  test('an admin who is not a member manages members: adds a second owner, then the first owner may go', async () => {
    const added = await context.call('POST', `/api/mini-apps/${miniAppId}/members`, { token: admin.token, json: { email: stranger.email, role: 'OWNER' } })
    expect(added.status).toBe(201)
    const list = await context.call('GET', `/api/mini-apps/${miniAppId}/members`, { token: admin.token })
    expect(list.body.map((m: { email: string; role: string }) => `${m.email} ${m.role}`)).toEqual([`${owner.email} OWNER`, `${stranger.email} OWNER`, `${developer.email} DEVELOPER`])
    const removed = await context.call('DELETE', `/api/mini-apps/${miniAppId}/members/${owner.id}`, { token: stranger.token })
    expect(removed.status).toBe(200)
    expect(removed.body).toEqual({ success: true, userId: owner.id })
    expect(outcome(await context.call('GET', `/api/mini-apps/${miniAppId}`, { token: owner.token }))).toEqual({ status: 404, code: 'MINI_APP_NOT_FOUND' })
  })

  test('removing someone who is not a member: 404', async () => {
    expect(outcome(await context.call('DELETE', `/api/mini-apps/${miniAppId}/members/${owner.id}`, { token: stranger.token }))).toEqual({ status: 404, code: 'MEMBER_NOT_FOUND' })
  })

  test('member changes are audited', () => {
    const actions = (context.dataDir.db.$client.query("SELECT action FROM audit_logs WHERE action LIKE 'miniapp.member.%'").all() as { action: string }[]).map((r) => r.action)
    expect(actions.filter((a) => a === 'miniapp.member.add').length).toBe(2)
    expect(actions.filter((a) => a === 'miniapp.member.remove').length).toBe(1)
  })
})

describe('members: probing emails is rate-limited', () => {
  test('after the budget of unknown emails, every add answers 429 (registered or not), per user and per address', async () => {
    const { defaultRateLimits } = await import('../../config')
    const { createMiniApp } = await import('../../test-fixtures')
    const own = createTestContext({ rateLimit: true, trustProxy: true, rateLimits: { ...defaultRateLimits, memberUnknownEmail: 2 } })
    try {
      const prober = await createTestUser(own)
      const registered = await createTestUser(own)
      const app = await createMiniApp(own, prober.token, 'com.example.probe')
      const add = (token: string, email: string, address: string, miniAppId = app.id) =>
        own.call('POST', `/api/mini-apps/${miniAppId}/members`, { token, json: { email, role: 'DEVELOPER' }, headers: { 'x-forwarded-for': address } })
      const result = (res: { status: number; body: { code: string } }) => ({ status: res.status, code: res.body.code })
      expect(result(await add(prober.token, 'a@nowhere.test', '198.51.100.1'))).toEqual({ status: 404, code: 'USER_NOT_FOUND' })
      expect(result(await add(prober.token, 'b@nowhere.test', '198.51.100.2'))).toEqual({ status: 404, code: 'USER_NOT_FOUND' })
      // the user's budget is spent: an unknown and a registered email answer alike
      const unknown = await add(prober.token, 'c@nowhere.test', '198.51.100.3')
      expect(result(unknown)).toEqual({ status: 429, code: 'RATE_LIMITED' })
      expect(unknown.headers.get('retry-after')).not.toBeNull()
      expect(result(await add(prober.token, registered.email, '198.51.100.4'))).toEqual({ status: 429, code: 'RATE_LIMITED' })
      // adding registered people does not spend the budget: another owner from its own address
      const owner = await createTestUser(own)
      const other = await createMiniApp(own, owner.token, 'com.example.team')
      expect((await add(owner.token, registered.email, '203.0.113.1', other.id)).status).toBe(201)
      expect((await add(owner.token, prober.email, '203.0.113.1', other.id)).status).toBe(201)
      // an address that probed is limited for another user too
      expect(result(await add(owner.token, 'd@nowhere.test', '198.51.100.9', other.id))).toEqual({ status: 404, code: 'USER_NOT_FOUND' })
      expect(result(await add(owner.token, 'e@nowhere.test', '198.51.100.9', other.id))).toEqual({ status: 404, code: 'USER_NOT_FOUND' })
      const third = await createTestUser(own)
      const thirdApp = await createMiniApp(own, third.token, 'com.example.third')
      expect(result(await add(third.token, 'f@nowhere.test', '198.51.100.9', thirdApp.id))).toEqual({ status: 429, code: 'RATE_LIMITED' })
      expect(result(await add(third.token, 'f@nowhere.test', '198.51.100.11', thirdApp.id))).toEqual({ status: 404, code: 'USER_NOT_FOUND' })
      own.advance(60_000)
      expect(result(await add(prober.token, 'g@nowhere.test', '198.51.100.10'))).toEqual({ status: 404, code: 'USER_NOT_FOUND' })
    } finally {
      own.close()
    }
  })
})
