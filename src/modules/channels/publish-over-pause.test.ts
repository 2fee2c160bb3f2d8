// Publishing over a paused release does not hand the paused version to the devices outside the new rollout (§13), over HTTP.
import { describe, expect, test } from 'bun:test'
import { appWithVersions, ownedTestApp } from '../../test-fixtures'
import { describeChannel } from '../../client/status'
import type { Channel } from '../../client/publish'
import { rolloutBucket } from './decide'
import { servedFiles } from '../runtime/test-runtime'

const access = '/api/mini-apps/access'

const owned = ownedTestApp()

type StableChannel = Channel & { state: string; pausedReleases: { version: string }[] }

async function setUp(appId: string, versions: string[]) {
  const { miniAppId, ids, publish } = await appWithVersions(owned, appId, versions)
  const rollout = async (body: Record<string, unknown>) => {
    const res = await owned.context.call('PATCH', `/api/mini-apps/${miniAppId}/channels/stable/rollout`, { token: owned.owner.token, json: body })
    expect(res.status).toBe(200)
    return res.body as StableChannel
  }
  const rollback = async (version: string) => expect((await owned.context.call('POST', `/api/mini-apps/${miniAppId}/rollback`, { token: owned.owner.token, json: { targetVersionId: ids[version] } })).status).toBe(200)
  /** a deviceId outside the 10 % rollout of `fix`, and inside (adopted) or outside the frozen 30 % of `paused` */
  const device = (fix: string, paused: string, adopted: boolean, salt: string) => {
    for (let index = 0; ; index++) {
      const deviceId = `${salt}${index}`
      if (rolloutBucket(appId, ids[fix]!, deviceId) >= 10 && rolloutBucket(appId, ids[paused]!, deviceId) < 30 === adopted) return deviceId
    }
  }
  /** the version a device running `currentVersion` is offered, or keeps; null when the channel serves it nothing */
  const offered = async (deviceId: string, currentVersion: string) => {
    const res = await owned.context.call('GET', `${access}/apps/${appId}/update?platform=ios&deviceId=${deviceId}&currentVersion=${currentVersion}`)
    if (res.status === 404) return null
    expect(res.status).toBe(200)
    return res.body.updateAvailable ? (res.body.install.version as string) : currentVersion
  }
  /** the version release/install answers (the legacy clients' request), and that its files are that version's */
  const installed = async (query: string) => {
    const res = await owned.context.call('GET', `${access}/apps/${appId}/release/install${query ? `?${query}` : ''}`)
    expect(res.status).toBe(200)
    // what the device is told is what it downloads: each file URL serves the files the answer lists
    const { served, listed } = await servedFiles((request) => owned.context.app.handle(request), res.body)
    expect({ query, served }).toEqual({ query, served: listed })
    return res.body.version as string
  }
  const stable = async () => ((await owned.context.call('GET', `/api/mini-apps/${miniAppId}/channels`, { token: owned.owner.token })).body.channels as StableChannel[]).find((channel) => channel.name === 'stable')!
  return { appId, miniAppId, ids, publish, rollout, rollback, device, offered, installed, stable }
}

type App = Awaited<ReturnType<typeof setUp>>

/** 1.1.0 paused at 30 % (however), 1.2.0 published at 10 %: what each kind of device gets, and what the channel says. */
async function expectPausedKeptBack(app: App, salt: string) {
  const other = app.device('1.2.0', '1.1.0', false, `${salt}-other-`)
  const adopter = app.device('1.2.0', '1.1.0', true, `${salt}-adopter-`)
  // outside 1.2.0's 10 %, a device on 1.0.0 stays on 1.0.0: the paused 1.1.0 goes to no new device
  expect(await app.offered(other, '1.0.0')).toBe('1.0.0')
  expect(await app.offered(adopter, '1.0.0')).toBe('1.0.0')
  expect(await app.installed(`deviceId=${other}&currentVersion=1.0.0`)).toBe('1.0.0')
  // a device on 1.1.0 keeps it: no update offered
  const keeps = await owned.context.call('GET', `${access}/apps/${app.appId}/update?platform=ios&deviceId=${other}&currentVersion=1.1.0`)
  expect(keeps.body).toEqual({ updateAvailable: false })
  expect(await app.installed(`deviceId=${other}&currentVersion=1.1.0`)).toBe('1.1.0')
  // legacy requests (no currentVersion): the frozen 30 % decides with a deviceId, none without
  expect(await app.installed(`deviceId=${adopter}`)).toBe('1.1.0')
  expect(await app.installed(`deviceId=${other}`)).toBe('1.0.0')
  expect(await app.installed('')).toBe('1.0.0')
  const channel = await app.stable()
  expect(channel).toMatchObject({ state: 'rolling-out', release: { version: '1.2.0' }, previousRelease: { version: '1.0.0' }, defaultRelease: { version: '1.0.0' }, pausedReleases: [{ version: '1.1.0', paused: true, rolloutPercent: 30 }] })
  expect(describeChannel(channel)).toBe('1.2.0 rolling-out 10 %. 10 % get 1.2.0; the others get 1.0.0; devices on 1.1.0 (paused) keep it.')
}

test('a paused newest release says who paused it and why, as the console card does (miniship status, channels ls)', async () => {
  const app = await setUp('com.example.paused-by', ['1.0.0', '1.1.0'])
  await app.publish('1.0.0', 100)
  await app.publish('1.1.0', 30)
  expect(describeChannel(await app.stable())).not.toContain('Paused by')
  await app.rollout({ paused: true, reason: 'crash spike\non Android 9' })
  expect(describeChannel(await app.stable())).toBe(`1.1.0 paused 30 %. Devices on 1.1.0 keep it; the others get 1.0.0. Paused by ${owned.owner.email}: crash spike on Android 9.`)
  await app.rollout({ paused: false })
  await app.rollout({ paused: true })
  expect(describeChannel(await app.stable())).toEndWith(`. Paused by ${owned.owner.email}.`)
})

describe('a release published over a paused one', () => {
  test('a person paused 1.1.0 at 30 %, then published 1.2.0 at 10 %: the others keep 1.0.0, devices on 1.1.0 keep it', async () => {
    const app = await setUp('com.example.overpause', ['1.0.0', '1.1.0', '1.2.0'])
    await app.publish('1.0.0', 100)
    await app.publish('1.1.0', 30)
    expect((await app.rollout({ paused: true, reason: 'crash on Android 9' })).state).toBe('paused')
    await app.publish('1.2.0', 10)
    await expectPausedKeptBack(app, 'person')
  })

  test('the release guard paused 1.1.0: the same', async () => {
    const appId = 'com.example.overguard'
    const app = await setUp(appId, ['1.0.0', '1.1.0', '1.2.0'])
    await app.publish('1.0.0', 100)
    expect((await owned.context.call('PATCH', `/api/mini-apps/${app.miniAppId}/channels/stable`, { token: owned.owner.token, json: { guard: { enabled: true, minDevices: 20, maxFailureRate: 0.05 } } })).status).toBe(200)
    await app.publish('1.1.0', 30)
    const events = Array.from({ length: 20 }, (_, index) => ({ appId, versionId: app.ids['1.1.0'], platform: 'ios', event: 'failed', channel: 'stable', deviceId: `crashing-${index}` }))
    expect((await owned.context.call('POST', `${access}/events`, { json: { events } })).status).toBe(202)
    owned.context.app.store.insights.flush()
    expect(await app.stable()).toMatchObject({ state: 'paused', release: { version: '1.1.0', rolloutPercent: 30, pausedBy: 'release-guard' } })
    await app.publish('1.2.0', 10)
    await expectPausedKeptBack(app, 'guard')
  })

  test('reverting the fix leaves 1.1.0 paused below it; a rollback to 1.1.0 serves it to every device, as a rollback does', async () => {
    const appId = 'com.example.overpause.back'
    const app = await setUp(appId, ['1.0.0', '1.1.0', '1.2.0'])
    await app.publish('1.0.0', 100)
    await app.publish('1.1.0', 30)
    await app.rollout({ paused: true })
    await app.publish('1.2.0', 10)
    const other = app.device('1.2.0', '1.1.0', false, 'back-')
    const reverted = await app.rollout({ rolloutPercent: 0 })
    expect(reverted).toMatchObject({ state: 'reverted', previousRelease: { version: '1.0.0' }, defaultRelease: { version: '1.0.0' }, pausedReleases: [{ version: '1.1.0' }] })
    expect(describeChannel(reverted)).toBe('1.2.0 reverted 0 %. Devices on 1.1.0 (paused) keep it; every other device gets 1.0.0, those on 1.2.0 too.')
    expect(await app.offered(other, '1.2.0')).toBe('1.0.0')
    expect(await app.offered(other, '1.1.0')).toBe('1.1.0')
    // a person rolls back to 1.1.0: it is the newest again, complete and no longer paused
    await app.rollback('1.1.0')
    expect(await app.stable()).toMatchObject({ state: 'complete', release: { version: '1.1.0', rolloutPercent: 100, paused: false }, pausedReleases: [] })
    expect(await app.offered(other, '1.0.0')).toBe('1.1.0')
  })

  test('rolling back to 1.0.0 withdraws both; the fix complete serves every device, those on 1.1.0 too', async () => {
    const appId = 'com.example.overpause.done'
    const app = await setUp(appId, ['1.0.0', '1.1.0', '1.2.0'])
    await app.publish('1.0.0', 100)
    await app.publish('1.1.0', 30)
    await app.rollout({ paused: true })
    await app.publish('1.2.0', 10)
    const other = app.device('1.2.0', '1.1.0', false, 'done-')
    const complete = await app.rollout({ rolloutPercent: 100 })
    expect(describeChannel(complete)).toBe('1.2.0 complete 100 %. Every device gets 1.2.0.')
    expect(await app.offered(other, '1.1.0')).toBe('1.2.0')
    await app.rollback('1.0.0')
    expect(await app.stable()).toMatchObject({ state: 'complete', release: { version: '1.0.0' }, previousRelease: null, pausedReleases: [] })
    expect(await app.offered(other, '1.1.0')).toBe('1.0.0')
  })
})
