// Release history names the API key a change was made with: the console's History tab and Overview read
// "API key "ci" of owner@…" (as the CLI and the audit log do) instead of the owner's name, as if the owner
// had published, rolled back or changed the rollout by hand.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { createTestContext } from '../../test-support'
import { createMiniApp, createTestUser, upload, uploadForm, type TestUser } from '../../test-fixtures'

const context = createTestContext()
afterAll(() => context.close())

let owner: TestUser
let app: { id: string; appId: string }

beforeAll(async () => {
  owner = await createTestUser(context, { email: 'owner@example.test' })
  app = await createMiniApp(context, owner.token, 'com.example.history-keys')
})

test('publish, rollout, pause, resume and rollback made with an API key carry its name in releaseHistory; a person\'s own carry null', async () => {
  const created = await context.call('POST', '/api/auth/api-keys', { token: owner.token, json: { name: 'ci nightly', scopes: ['upload', 'release'] } })
  expect(created.status).toBe(201)
  const key = created.body.key as string
  const first = await upload(context, owner.token, app.appId, uploadForm(app.appId, { version: '1.0.0' }))
  const second = await upload(context, key, app.appId, uploadForm(app.appId, { version: '1.1.0' }))
  expect([first.status, second.status]).toEqual([201, 201])
  const steps: [string, string, string, unknown][] = [
    [owner.token, 'POST', `/api/mini-apps/${app.id}/versions/${first.body.id}/publish`, {}],
    [key, 'POST', `/api/mini-apps/${app.id}/versions/${second.body.id}/publish`, { rolloutPercent: 20 }],
    [key, 'PATCH', `/api/mini-apps/${app.id}/channels/stable/rollout`, { rolloutPercent: 40 }],
    [key, 'PATCH', `/api/mini-apps/${app.id}/channels/stable/rollout`, { paused: true, reason: 'crash spike' }],
    [owner.token, 'PATCH', `/api/mini-apps/${app.id}/channels/stable/rollout`, { paused: false }],
    [key, 'POST', `/api/mini-apps/${app.id}/rollback`, { targetVersionId: first.body.id }],
  ]
  for (const [token, method, path, json] of steps) {
    const answer = await context.call(method, path, { token, json })
    expect({ path, status: answer.status }).toEqual({ path, status: 200 })
  }
  const workspace = await context.call('GET', `/api/mini-apps/${app.id}/workspace`, { token: owner.token })
  expect(workspace.status).toBe(200)
  const history = (workspace.body.releaseHistory as { action: string; rolloutPercent: number | null; notes: string | null; actor: { email: string } | null; apiKey: { name: string } | null }[])
    .map((entry) => ({ action: entry.action, percent: entry.rolloutPercent, by: entry.actor?.email ?? null, apiKey: entry.apiKey }))
    .reverse()
  const ci = { name: 'ci nightly' }
  expect(history).toEqual([
    { action: 'PUBLISH', percent: 100, by: 'owner@example.test', apiKey: null },
    { action: 'PUBLISH', percent: 20, by: 'owner@example.test', apiKey: ci },
    { action: 'ROLLOUT', percent: 40, by: 'owner@example.test', apiKey: ci },
    { action: 'ROLLOUT', percent: 40, by: 'owner@example.test', apiKey: ci },
    { action: 'ROLLOUT', percent: 40, by: 'owner@example.test', apiKey: null },
    { action: 'ROLLBACK', percent: 100, by: 'owner@example.test', apiKey: ci },
  ])
})
