// Decisions §13: deleting a draft loses none of what devices reported of it; its counts, devices and failures go to the miniapp's `other` row, and the report's totals still equal /api/metrics.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { createTestContext, type TestContext } from '../../test-support'
import { createMiniApp, createTestUser, upload, uploadForm, type TestUser } from '../../test-fixtures'

const access = '/api/mini-apps/access'
const appId = 'com.example.deleted'
const metricsToken = 'scrape-token-deleted-0123456789'
let context: TestContext
let owner: TestUser
let miniAppId = ''
const ids: Record<string, string> = {}

beforeAll(async () => {
  context = createTestContext({ metricsToken })
  owner = await createTestUser(context)
  miniAppId = (await createMiniApp(context, owner.token, appId)).id
  ids['1.0.0'] = (await upload(context, owner.token, appId, uploadForm(appId, { version: '1.0.0' }))).body.id
  expect((await context.call('POST', `/api/mini-apps/${miniAppId}/versions/${ids['1.0.0']}/publish`, { token: owner.token, json: {} })).status).toBe(200)
  ids['2.0.0'] = (await upload(context, owner.token, appId, uploadForm(appId, { version: '2.0.0' }))).body.id
})
afterAll(() => context.close())

const report = async () => (await context.call('GET', `/api/mini-apps/${miniAppId}/insights?days=1`, { token: owner.token })).body
const check = (version: string, deviceId: string) => context.call('GET', `${access}/apps/${appId}/update?platform=ios&currentVersion=${version}&deviceId=${deviceId}`)
const sample = (text: string, series: string) => Number(text.split('\n').find((line) => line.startsWith(`${series} `))?.split(' ')[1])

test('a deleted draft’s update checks, install info, devices and failures stay in the report, in the other row', async () => {
  // testers run the draft: 3 update checks, 2 install-info answers, a failure, one update check of the release
  for (const deviceId of ['t1', 't2', 't3']) expect((await check('2.0.0', deviceId)).status).toBe(200)
  for (let i = 0; i < 2; i++) expect((await context.call('GET', `${access}/versions/${ids['2.0.0']}/install?token=${owner.token}`)).status).toBe(200)
  expect((await context.call('POST', `${access}/events`, { json: { events: [{ appId, versionId: ids['2.0.0'], platform: 'android', event: 'failed', deviceId: 't4', message: 'draft crash' }] } })).body.accepted).toBe(1)
  expect((await check('1.0.0', 'r1')).status).toBe(200)
  const before = await report()
  expect(before.totals).toMatchObject({ updateChecks: 4, installInfoRequests: 2, failures: 1, activeDevices: 5 })
  // counted but not yet written when the draft goes
  expect((await check('2.0.0', 't5')).status).toBe(200)

  expect((await context.call('DELETE', `/api/mini-apps/${miniAppId}/versions/${ids['2.0.0']}`, { token: owner.token })).status).toBe(200)
  const after = await report()
  expect(after.totals).toMatchObject({ updateChecks: 5, installInfoRequests: 2, installs: 2, failures: 1, activeDevices: 6 })
  const other = after.days.at(-1).versions.find((version: { versionId: string | null }) => version.versionId === null)
  expect(other).toMatchObject({ version: 'other', updateChecks: 4, installInfoRequests: 2, failures: 1, activeDevices: 5 })
  expect(after.days.at(-1).devices).toBe(6)
  // the report of the stable channel (every device above reported on it) keeps them too
  const stable = (await context.call('GET', `/api/mini-apps/${miniAppId}/insights?days=1&channel=stable`, { token: owner.token })).body
  expect(stable.totals.activeDevices).toBe(6)
  expect(stable.days.at(-1).versions.find((version: { versionId: string | null }) => version.versionId === null)).toMatchObject({ activeDevices: 5 })
  expect(after.recentFailures).toEqual([expect.objectContaining({ versionId: null, version: 'other', message: 'draft crash' })])

  const metrics = (await context.call('GET', '/api/metrics', { token: metricsToken })).text
  expect(sample(metrics, `miniship_app_update_checks_total{app_id="${appId}"}`)).toBe(after.totals.updateChecks)
  expect(sample(metrics, `miniship_app_install_info_total{app_id="${appId}"}`)).toBe(after.totals.installInfoRequests)
  expect(sample(metrics, `miniship_app_device_events_total{app_id="${appId}",event="failed"}`)).toBe(after.totals.failures)
  expect(sample(metrics, `miniship_active_devices{app_id="${appId}"}`)).toBe(6)
})

test('deleting drafts keeps the other row to its last 20 failure messages, as any version', async () => {
  const drafts: string[] = []
  for (const version of ['3.0.0', '3.1.0']) drafts.push((await upload(context, owner.token, appId, uploadForm(appId, { version }))).body.id)
  for (const versionId of drafts) {
    const events = Array.from({ length: 15 }, (_, index) => ({ appId, versionId, platform: 'ios', event: 'failed', deviceId: `f-${index}`, message: `crash ${index} of ${versionId}` }))
    expect((await context.call('POST', `${access}/events`, { json: { events } })).body.accepted).toBe(15)
  }
  await report()
  for (const versionId of drafts) expect((await context.call('DELETE', `/api/mini-apps/${miniAppId}/versions/${versionId}`, { token: owner.token })).status).toBe(200)
  const kept = context.dataDir.db.$client.query<{ n: number }, [string]>('SELECT count(*) AS n FROM insight_failures WHERE version_id = ?').get(`other:${miniAppId}`)!.n
  expect(kept).toBe(20)
})
