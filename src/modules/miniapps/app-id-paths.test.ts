// Console URLs and API keys name a miniapp by the appId users know as well as by its UUID (issue 26).
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { createTestContext, type TestContext } from '../../test-support'
import { createMiniApp, createTestUser, upload, uploadForm, type TestUser } from '../../test-fixtures'

const appId = 'com.example.named'
let context: TestContext
let owner: TestUser
let miniAppId = ''
let otherId = ''
let versionId = ''

beforeAll(async () => {
  context = createTestContext()
  owner = await createTestUser(context)
  miniAppId = (await createMiniApp(context, owner.token, appId)).id
  otherId = (await createMiniApp(context, owner.token, 'com.example.unnamed')).id
  versionId = (await upload(context, owner.token, appId, uploadForm(appId, { version: '1.0.0' }))).body.id
})
afterAll(() => context.close())

const outcome = (res: { status: number; body: { code?: string } }) => ({ status: res.status, code: res.body?.code })

test('every /mini-apps/{miniAppId}/… route takes the appId: reads, publish, channels, rollout, insights', async () => {
  const byName = (method: string, path: string, json?: unknown) => context.call(method, `/api/mini-apps/${appId}${path}`, { token: owner.token, json })
  expect((await byName('GET', '')).body.id).toBe(miniAppId)
  const workspace = await byName('GET', '/workspace')
  expect(workspace.status).toBe(200)
  expect(workspace.body.versions.map((v: { id: string }) => v.id)).toEqual([versionId])
  expect((await byName('POST', `/versions/${versionId}/publish`, { rolloutPercent: 50 })).status).toBe(200)
  expect((await byName('GET', '/channels')).body.channels[0]).toMatchObject({ name: 'stable', state: 'rolling-out' })
  expect((await byName('PATCH', '/channels/stable/rollout', { paused: true })).body.state).toBe('paused')
  expect((await byName('GET', '/insights?days=1')).status).toBe(200)
  // the UUID still works, and both name the same record
  expect((await context.call('GET', `/api/mini-apps/${miniAppId}/channels`, { token: owner.token })).body.channels[0].state).toBe('paused')
})

test('a stranger, or an unknown appId, is 404 MINI_APP_NOT_FOUND', async () => {
  const stranger = await createTestUser(context)
  expect(outcome(await context.call('GET', `/api/mini-apps/${appId}/workspace`, { token: stranger.token }))).toEqual({ status: 404, code: 'MINI_APP_NOT_FOUND' })
  const unknown = await context.call('GET', `/api/mini-apps/com.example.nothing/workspace`, { token: owner.token })
  expect(outcome(unknown)).toEqual({ status: 404, code: 'MINI_APP_NOT_FOUND' })
  // the word the console and the CLI use
  expect((unknown.body as { message: string }).message).toBe('Miniapp com.example.nothing not found')
})

test("a non-member's 404 for an existing appId reads as for an unknown one: the miniapp's UUID is not disclosed, its App ID cannot be probed", async () => {
  const stranger = await createTestUser(context)
  const restricted = await context.call('POST', '/api/auth/api-keys', { token: owner.token, json: { name: 'other only', scopes: ['read', 'release'], miniAppIds: [otherId] } })
  for (const [token, method, path] of [
    [stranger.token, 'GET', ''],
    [stranger.token, 'GET', '/workspace'],
    [stranger.token, 'PATCH', '/channels/stable/rollout'],
    [stranger.token, 'GET', '/webhooks'],
    [restricted.body.key as string, 'GET', '/channels'],
  ] as const) {
    const json = method === 'PATCH' ? { paused: true } : undefined
    const existing = await context.call(method, `/api/mini-apps/${appId}${path}`, { token, json })
    const unknown = await context.call(method, `/api/mini-apps/com.example.nothing${path}`, { token, json })
    expect(outcome(existing)).toEqual({ status: 404, code: 'MINI_APP_NOT_FOUND' })
    expect(existing.text).not.toContain(miniAppId)
    expect((existing.body as { message: string }).message).toBe(`Miniapp ${appId} not found`)
    expect((existing.body as { message: string }).message.replace(appId, 'X')).toBe((unknown.body as { message: string }).message.replace('com.example.nothing', 'X'))
  }
})

test("an API key's miniAppIds take the appId; the key keeps the UUID and opens only that app", async () => {
  const created = await context.call('POST', '/api/auth/api-keys', { token: owner.token, json: { name: 'named', scopes: ['read'], miniAppIds: [appId] } })
  expect(created.status).toBe(201)
  expect(created.body.miniAppIds).toEqual([miniAppId])
  expect((await context.call('GET', `/api/mini-apps/${appId}/channels`, { token: created.body.key })).status).toBe(200)
  expect(outcome(await context.call('GET', `/api/mini-apps/${otherId}/channels`, { token: created.body.key }))).toEqual({ status: 404, code: 'MINI_APP_NOT_FOUND' })
  const unknown = await context.call('POST', '/api/auth/api-keys', { token: owner.token, json: { name: 'bad', scopes: ['read'], miniAppIds: ['com.example.nothing'] } })
  expect(outcome(unknown)).toEqual({ status: 404, code: 'MINI_APP_NOT_FOUND' })
})
