// The report filtered to one channel: its adoption, devices and failures are that channel's, not the stable channel's or every channel's.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { createTestContext, type TestContext } from '../../test-support'
import { createMiniApp, createTestUser, upload, uploadForm, type TestUser } from '../../test-fixtures'

const access = '/api/mini-apps/access'
const appId = 'com.example.adoption'
let context: TestContext
let owner: TestUser
let miniAppId = ''
const ids: Record<string, string> = {}

beforeAll(async () => {
  context = createTestContext()
  owner = await createTestUser(context)
  miniAppId = (await createMiniApp(context, owner.token, appId)).id
  expect((await context.call('POST', `/api/mini-apps/${miniAppId}/channels`, { token: owner.token, json: { name: 'beta' } })).status).toBe(201)
  for (const [version, channel] of [['1.0.0', 'stable'], ['2.0.0', 'beta']] as const) {
    ids[version] = (await upload(context, owner.token, appId, uploadForm(appId, { version, channel }))).body.id
    expect((await context.call('POST', `/api/mini-apps/${miniAppId}/versions/${ids[version]}/publish`, { token: owner.token, json: {} })).status).toBe(200)
  }
})
afterAll(() => context.close())

test('with ?channel=beta, adoption names the beta release and its share of the devices seen', async () => {
  // four beta devices: three run the beta release, one still the stable one
  const events = ['2.0.0', '2.0.0', '2.0.0', '1.0.0'].map((version, index) => ({ appId, version, platform: 'ios', event: 'launched', channel: 'beta', deviceId: `beta-${index}` }))
  expect((await context.call('POST', `${access}/events`, { json: { events } })).body.accepted).toBe(4)
  const beta = await context.call('GET', `/api/mini-apps/${miniAppId}/insights?days=1&channel=beta`, { token: owner.token })
  expect(beta.status).toBe(200)
  expect(beta.body.adoption.versionId).toBe(ids['2.0.0'])
  expect(beta.body.adoption.share).toBe(0.75)
  // without a channel, the stable release, as before
  const all = await context.call('GET', `/api/mini-apps/${miniAppId}/insights?days=1`, { token: owner.token })
  expect(all.body.adoption.versionId).toBe(ids['1.0.0'])
  // a channel with no live release: no release to adopt
  expect((await context.call('POST', `/api/mini-apps/${miniAppId}/channels`, { token: owner.token, json: { name: 'empty' } })).status).toBe(201)
  const empty = await context.call('GET', `/api/mini-apps/${miniAppId}/insights?days=1&channel=empty`, { token: owner.token })
  expect(empty.body.adoption).toEqual({ versionId: null, share: 0, day: null, devices: 0 })
})

test('with ?channel=, device counts are the devices seen on that channel, not every device of the versions counted there', async () => {
  // stable: 20 devices on 1.0.0 (update checks); qa: 2 devices on 1.0.0, one of them also seen on stable
  expect((await context.call('POST', `/api/mini-apps/${miniAppId}/channels`, { token: owner.token, json: { name: 'qa' } })).status).toBe(201)
  for (let index = 0; index < 20; index++) {
    expect((await context.call('GET', `${access}/apps/${appId}/update?platform=ios&currentVersion=1.0.0&deviceId=stable-${index}`)).status).toBe(200)
  }
  const events = ['stable-0', 'qa-only'].map((deviceId) => ({ appId, version: '1.0.0', platform: 'android', event: 'launched', channel: 'qa', deviceId }))
  expect((await context.call('POST', `${access}/events`, { json: { events } })).body.accepted).toBe(2)
  const qa = await context.call('GET', `/api/mini-apps/${miniAppId}/insights?days=1&channel=qa`, { token: owner.token })
  expect(qa.status).toBe(200)
  expect(qa.body.totals.activeDevices).toBe(2)
  expect(qa.body.days[0].devices).toBe(2)
  expect(qa.body.days[0].versions.map((version: { version: string; activeDevices: number }) => [version.version, version.activeDevices])).toEqual([['1.0.0', 2]])
  // stable: its 20, and the beta devices of the test before are not stable's
  const stable = await context.call('GET', `/api/mini-apps/${miniAppId}/insights?days=1&channel=stable`, { token: owner.token })
  expect(stable.body.totals.activeDevices).toBe(20)
  // every channel together: a device seen on two channels counts once (20 stable + 1 qa-only + 4 beta)
  const all = await context.call('GET', `/api/mini-apps/${miniAppId}/insights?days=1`, { token: owner.token })
  expect(all.body.totals.activeDevices).toBe(25)
  // a channel nobody reported on: no devices
  const empty = await context.call('GET', `/api/mini-apps/${miniAppId}/insights?days=1&channel=empty`, { token: owner.token })
  expect(empty.body.totals.activeDevices).toBe(0)
})

test("with ?channel=, recentFailures are that channel's failures, each with its channel; failures stored before channels were kept with them show only without a channel", async () => {
  const failed = (version: string, channel: string, message: string) => ({ appId, version, platform: 'ios', event: 'failed', channel, deviceId: `${channel}-failing`, message })
  const sent = await context.call('POST', `${access}/events`, {
    json: { events: [failed('2.0.0', 'beta', 'beta crash 1'), failed('1.0.0', 'stable', 'stable crash'), failed('2.0.0', 'beta', 'beta crash 2'), failed('1.0.0', 'qa', 'qa crash')] },
  })
  expect(sent.body).toMatchObject({ accepted: 4, rejected: 0 })
  // one stored before its channel was kept (an older miniship): its channel is not known
  context.app.store.insights.flush()
  context.dataDir.db.$client.run("INSERT INTO insight_failures (version_id, mini_app_id, platform, message, at, channel) VALUES (?, ?, 'android', 'old crash', '2026-11-21T10:00:00.000Z', NULL)", [ids['1.0.0']!, miniAppId])
  const messages = async (query: string) => {
    const res = await context.call('GET', `/api/mini-apps/${miniAppId}/insights?days=1${query}`, { token: owner.token })
    expect(res.status).toBe(200)
    return res.body.recentFailures.map((failure: { message: string; channel: string | null }) => [failure.message, failure.channel])
  }
  expect(await messages('&channel=beta')).toEqual([['beta crash 2', 'beta'], ['beta crash 1', 'beta']])
  expect(await messages('&channel=stable')).toEqual([['stable crash', 'stable']])
  expect(await messages('&channel=empty')).toEqual([])
  expect(await messages('')).toEqual([['old crash', null], ['qa crash', 'qa'], ['beta crash 2', 'beta'], ['stable crash', 'stable'], ['beta crash 1', 'beta']])
})

test("a version's failures are kept per channel: many on stable push none of beta's out", async () => {
  const flood = Array.from({ length: 25 }, (_, index) => ({ appId, version: '2.0.0', platform: 'android', event: 'failed', channel: 'stable', deviceId: `stable-${index}`, message: `stable flood ${index}` }))
  expect((await context.call('POST', `${access}/events`, { json: { events: flood } })).body).toMatchObject({ accepted: 25, rejected: 0 })
  const beta = await context.call('GET', `/api/mini-apps/${miniAppId}/insights?days=1&channel=beta`, { token: owner.token })
  expect(beta.body.recentFailures.map((failure: { message: string }) => failure.message)).toEqual(['beta crash 2', 'beta crash 1'])
  const stable = await context.call('GET', `/api/mini-apps/${miniAppId}/insights?days=1&channel=stable`, { token: owner.token })
  expect(stable.body.recentFailures).toHaveLength(20)
  expect(stable.body.recentFailures[0]).toMatchObject({ version: '2.0.0', channel: 'stable', message: 'stable flood 24' })
})

test('after a revert, adoption names the release devices fall back to, as the console’s Live release and miniship status do', async () => {
  const revertApp = 'com.example.reverted'
  const id = (await createMiniApp(context, owner.token, revertApp)).id
  const versionIds: Record<string, string> = {}
  for (const [version, rolloutPercent] of [['1.0.0', 100], ['1.1.0', 10]] as const) {
    versionIds[version] = (await upload(context, owner.token, revertApp, uploadForm(revertApp, { version }))).body.id
    expect((await context.call('POST', `/api/mini-apps/${id}/versions/${versionIds[version]}/publish`, { token: owner.token, json: { rolloutPercent } })).status).toBe(200)
  }
  // ten devices on 1.0.0, one of which took 1.1.0 before the revert
  const events = [...Array.from({ length: 10 }, (_, index) => ({ appId: revertApp, version: '1.0.0', platform: 'ios', event: 'launched', deviceId: `device-${index}` })), { appId: revertApp, version: '1.1.0', platform: 'ios', event: 'installed', deviceId: 'device-0' }]
  expect((await context.call('POST', `${access}/events`, { json: { events } })).body.accepted).toBe(11)
  const rolling = await context.call('GET', `/api/mini-apps/${id}/insights?days=1`, { token: owner.token })
  expect(rolling.body.adoption.versionId).toBe(versionIds['1.1.0'])
  expect(rolling.body.adoption.share).toBe(0.1)

  expect((await context.call('PATCH', `/api/mini-apps/${id}/channels/stable/rollout`, { token: owner.token, json: { rolloutPercent: 0 } })).status).toBe(200)
  for (const query of ['days=1', 'days=1&channel=stable']) {
    const reverted = await context.call('GET', `/api/mini-apps/${id}/insights?${query}`, { token: owner.token })
    expect(reverted.body.adoption.versionId).toBe(versionIds['1.0.0'])
    expect(reverted.body.adoption.share).toBe(1)
  }
})
