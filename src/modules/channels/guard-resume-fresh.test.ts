// A release the guard first sees while paused: a person's resume holds the guard at the failures they saw, as after its own pause.
import { expect, test } from 'bun:test'
import { appWithVersions, ownedTestApp } from '../../test-fixtures'

const app = ownedTestApp()

test('guard switched on while a person had paused the release: the resume is not undone by the failures seen before it, only by new ones', async () => {
  const { context, owner } = app
  const appId = 'com.example.freshguard'
  const { miniAppId, ids, publish } = await appWithVersions(app, appId, ['1.0.0', '1.1.0'])
  await publish('1.0.0', 100)
  await publish('1.1.0', 50)
  const call = (method: string, path: string, json: unknown) => context.call(method, `/api/mini-apps/${miniAppId}${path}`, { token: owner.token, json })
  const report = async (devices: string[], event: string) => {
    const res = await context.call('POST', '/api/mini-apps/access/events', { json: { events: devices.map((deviceId) => ({ appId, versionId: ids['1.1.0'], platform: 'android', event, channel: 'stable', deviceId })) } })
    expect(res.body.accepted).toBe(devices.length)
  }
  const flush = () => context.app.store.insights.flush()
  const names = (prefix: string, count: number) => Array.from({ length: count }, (_, index) => `${prefix}-${index}`)
  // 10 of 40 devices fail while the guard is off; the owner pauses by hand, counted
  await report(names('ok', 30), 'launched')
  await report(names('bad', 10), 'failed')
  flush()
  expect((await call('PATCH', '/channels/stable/rollout', { paused: true, reason: 'looking into it' })).body.state).toBe('paused')
  // the guard goes on while it is paused, and the owner resumes before any check ran
  expect((await call('PATCH', '/channels/stable', { guard: { enabled: true, maxFailureRate: 0.05, minDevices: 20 } })).status).toBe(200)
  expect((await call('PATCH', '/channels/stable/rollout', { paused: false })).body.state).toBe('rolling-out')
  flush()
  const after = (await context.call('GET', `/api/mini-apps/${miniAppId}/channels`, { token: owner.token })).body.channels[0]
  expect({ state: after.state, pausedBy: after.release.pausedBy, held: after.guard.heldAtFailedDevices }).toEqual({ state: 'rolling-out', pausedBy: null, held: 10 })
  // a new failing device (rate still over): now the guard pauses it
  await report(['bad-new'], 'failed')
  flush()
  const tripped = (await context.call('GET', `/api/mini-apps/${miniAppId}/channels`, { token: owner.token })).body.channels[0]
  expect({ state: tripped.state, pausedBy: tripped.release.pausedBy }).toEqual({ state: 'paused', pausedBy: 'release-guard' })
})
