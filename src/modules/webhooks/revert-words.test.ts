// A revert's webhook says what devices get now, as the CLI and the console do: the release before it, or none for a first release (over HTTP, to a real receiver).
import { afterAll, beforeAll, expect, test } from 'bun:test'
import type { Server } from 'bun'
import { createTestContext, type TestContext } from '../../test-support'
import { createMiniApp, createTestUser, upload, uploadForm, type TestUser } from '../../test-fixtures'

let context: TestContext
let owner: TestUser
let server: Server<undefined>
const received: { path: string; body: string }[] = []

beforeAll(async () => {
  context = createTestContext({ webhooksAllowPrivate: true })
  owner = await createTestUser(context)
  server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(request) {
      received.push({ path: new URL(request.url).pathname, body: await request.text() })
      return new Response('ok')
    },
  })
})
afterAll(() => {
  server.stop(true)
  context.close()
})

async function revertOf(appId: string, versions: string[]) {
  const miniAppId = (await createMiniApp(context, owner.token, appId)).id as string
  for (const format of ['json', 'slack']) {
    const res = await context.call('POST', `/api/mini-apps/${miniAppId}/webhooks`, { token: owner.token, json: { url: `http://127.0.0.1:${server.port}/${appId}/${format}`, events: ['rollout.changed'], format } })
    expect(res.status).toBe(201)
  }
  for (const version of versions) {
    const id = (await upload(context, owner.token, appId, uploadForm(appId, { version }))).body.id
    expect((await context.call('POST', `/api/mini-apps/${miniAppId}/versions/${id}/publish`, { token: owner.token, json: {} })).status).toBe(200)
  }
  const res = await context.call('PATCH', `/api/mini-apps/${miniAppId}/channels/stable/rollout`, { token: owner.token, json: { rolloutPercent: 0 } })
  expect(res.body.state).toBe('reverted')
  await context.app.store.jobs.drain()
  const json = JSON.parse(received.find((r) => r.path === `/${appId}/json`)!.body)
  const slack = JSON.parse(received.find((r) => r.path === `/${appId}/slack`)!.body).text as string
  return { data: json.data, slack, channel: res.body }
}

test('a reverted first release: the chat is not told devices get a previous release, for there is none', async () => {
  const { data, slack, channel } = await revertOf('com.example.revertfirst', ['1.0.0'])
  expect(channel.previousRelease).toBeNull()
  expect(data).toMatchObject({ rolloutPercent: 0, state: 'reverted', fallback: null })
  expect(slack).not.toContain('previous release')
  expect(slack).toBe('App com.example.revertfirst (com.example.revertfirst): the rollout of 1.0.0 on stable was reverted (no device gets it; there is no earlier release, so those on it keep it) by ' + owner.email)
})

test('a revert with a release before it names the release every device gets', async () => {
  const { data, slack, channel } = await revertOf('com.example.revertsecond', ['1.0.0', '1.1.0'])
  expect(channel.previousRelease.version).toBe('1.0.0')
  expect(data).toMatchObject({ rolloutPercent: 0, state: 'reverted', fallback: { id: channel.previousRelease.versionId, version: '1.0.0' } })
  expect(slack).toBe('App com.example.revertsecond (com.example.revertsecond): the rollout of 1.1.0 on stable was reverted (every device gets 1.0.0) by ' + owner.email)
})

test('a revert over a paused release: the chat does not say every device gets the fallback, for those on the paused one keep it (as status and the console say)', async () => {
  const appId = 'com.example.revertpaused'
  const miniAppId = (await createMiniApp(context, owner.token, appId)).id as string
  const res = await context.call('POST', `/api/mini-apps/${miniAppId}/webhooks`, { token: owner.token, json: { url: `http://127.0.0.1:${server.port}/${appId}/slack`, events: ['rollout.changed'], format: 'slack' } })
  expect(res.status).toBe(201)
  const ids: Record<string, string> = {}
  for (const version of ['1.0.0', '1.0.5', '1.1.0']) ids[version] = (await upload(context, owner.token, appId, uploadForm(appId, { version }))).body.id
  const publish = async (version: string, json: Record<string, unknown>) => expect((await context.call('POST', `/api/mini-apps/${miniAppId}/versions/${ids[version]}/publish`, { token: owner.token, json })).status).toBe(200)
  await publish('1.0.0', {})
  await publish('1.0.5', { rolloutPercent: 50 })
  expect((await context.call('PATCH', `/api/mini-apps/${miniAppId}/channels/stable/rollout`, { token: owner.token, json: { paused: true } })).status).toBe(200)
  await publish('1.1.0', {})
  const reverted = await context.call('PATCH', `/api/mini-apps/${miniAppId}/channels/stable/rollout`, { token: owner.token, json: { rolloutPercent: 0 } })
  expect(reverted.body.pausedReleases.map((release: { version: string }) => release.version)).toEqual(['1.0.5'])
  await context.app.store.jobs.drain()
  const slack = JSON.parse(received.find((r) => r.path === `/${appId}/slack`)!.body).text as string
  expect(slack).not.toContain('(every device gets 1.0.0)')
  expect(slack).toBe(`App ${appId} (${appId}): the rollout of 1.1.0 on stable was reverted (devices on 1.0.5 (paused) keep it; every other device gets 1.0.0) by ${owner.email}`)
})
