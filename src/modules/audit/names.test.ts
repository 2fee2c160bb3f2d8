// The audit log names who and what (issue 26): an API key by its name and owner, targets by appId, version and email, not raw UUIDs.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { createTestContext, type TestContext } from '../../test-support'
import { createMiniApp, createTestUser, upload, uploadForm, type TestUser } from '../../test-fixtures'

const appId = 'com.example.audited'
let context: TestContext
let owner: TestUser
let admin: TestUser

beforeAll(async () => {
  context = createTestContext()
  owner = await createTestUser(context, { email: 'owner@example.test' })
  admin = await createTestUser(context, { role: 'ADMIN' })
})
afterAll(() => context.close())

interface Entry {
  action: string
  actorEmail: string | null
  actorName: string | null
  targetType: string
  targetId: string | null
  targetName: string | null
  metadata: { apiKey?: { name: string } }
}

test('an action made with an API key names the key and its owner; targets are named as people know them', async () => {
  const miniApp = await createMiniApp(context, owner.token, appId)
  const key = (await context.call('POST', '/api/auth/api-keys', { token: owner.token, json: { name: 'ci-release', scopes: ['read', 'upload', 'release'] } })).body.key as string
  const uploaded = await upload(context, key, appId, uploadForm(appId, { version: '1.0.0' }))
  expect(uploaded.status).toBe(201)
  expect((await context.call('POST', `/api/mini-apps/${miniApp.id}/versions/${uploaded.body.id}/publish`, { token: key, json: {} })).status).toBe(200)
  const disabled = await createTestUser(context, { email: 'leaver@example.test' })
  expect((await context.call('PATCH', `/api/admin/users/${disabled.id}`, { token: admin.token, json: { status: 'DISABLED' } })).status).toBe(200)

  const entries = (await context.call('GET', '/api/admin/users?auditLimit=100', { token: admin.token })).body.auditLogs as Entry[]
  const of = (action: string) => entries.find((entry) => entry.action === action)!
  for (const action of ['version.upload', 'version.publish']) {
    expect(of(action)).toMatchObject({ actorEmail: 'owner@example.test', actorName: 'API key "ci-release" of owner@example.test', targetType: 'version', targetName: `${appId} 1.0.0`, metadata: { apiKey: { name: 'ci-release' } } })
  }
  expect(of('miniapp.create')).toMatchObject({ actorName: 'owner@example.test', targetType: 'miniapp', targetName: appId })
  expect(entries.find((entry) => entry.action.startsWith('user.') && entry.targetId === disabled.id)).toMatchObject({ targetType: 'user', targetName: 'leaver@example.test' })
  expect(entries.find((entry) => entry.targetType === 'api_key')).toMatchObject({ targetName: expect.stringMatching(/^API key "ci-release" \(msk_/) })
  // a target that is gone keeps its id, and no name
  const version = (await upload(context, owner.token, appId, uploadForm(appId, { version: '1.1.0' }))).body
  expect((await context.call('DELETE', `/api/mini-apps/${miniApp.id}/versions/${version.id}`, { token: owner.token })).status).toBe(200)
  const after = (await context.call('GET', '/api/admin/users?auditLimit=100', { token: admin.token })).body.auditLogs as Entry[]
  expect(after.find((entry) => entry.action === 'version.delete')).toMatchObject({ targetId: version.id, targetName: null })
})

test('the sentence of an entry made with an API key names the key as its actor too, not the owner as if at a keyboard', async () => {
  const app = 'com.example.audited-summary'
  const miniApp = await createMiniApp(context, owner.token, app)
  const key = (await context.call('POST', '/api/auth/api-keys', { token: owner.token, json: { name: 'ci-summary', scopes: ['read', 'upload', 'release'] } })).body.key as string
  const first = await upload(context, key, app, uploadForm(app, { version: '1.0.0' }))
  expect(first.status).toBe(201)
  expect((await context.call('POST', `/api/mini-apps/${miniApp.id}/versions/${first.body.id}/publish`, { token: key, json: {} })).status).toBe(200)
  const second = await upload(context, key, app, uploadForm(app, { version: '1.1.0' }))
  expect((await context.call('POST', `/api/mini-apps/${miniApp.id}/versions/${second.body.id}/publish`, { token: key, json: {} })).status).toBe(200)
  expect((await context.call('POST', `/api/mini-apps/${miniApp.id}/rollback`, { token: key, json: { targetVersionId: first.body.id } })).status).toBe(200)
  expect((await context.call('POST', `/api/mini-apps/${miniApp.id}/channels`, { token: key, json: { name: 'beta' } })).status).toBe(201)

  const entries = ((await context.call('GET', '/api/admin/users?auditLimit=100', { token: admin.token })).body.auditLogs as (Entry & { summary: string })[]).filter(
    (entry) => entry.actorName === 'API key "ci-summary" of owner@example.test',
  )
  expect(entries.map((entry) => entry.action).sort()).toEqual(['channel.create', 'version.publish', 'version.publish', 'version.rollback', 'version.upload', 'version.upload'])
  for (const entry of entries) expect(entry.summary).toStartWith('API key "ci-summary" of owner@example.test ')
  // a person at a keyboard is still named by the email alone
  const own = ((await context.call('GET', '/api/admin/users?auditLimit=100', { token: admin.token })).body.auditLogs as (Entry & { summary: string })[]).find(
    (entry) => entry.action === 'miniapp.create' && entry.targetName === app,
  )!
  expect(own.summary).toBe(`owner@example.test created miniapp ${app}`)
})
