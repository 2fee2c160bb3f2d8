// The per-miniapp counters exist from the first scrape (zeros), so Prometheus' increase() sees every count a miniapp gets.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { createTestContext, type TestContext } from '../../test-support'
import { createMiniApp, createTestUser, upload, uploadForm, type TestUser } from '../../test-fixtures'

const metricsToken = 'scrape-token-series-0123456789'
const appId = 'com.example.series'
let context: TestContext
let owner: TestUser
let miniAppId = ''

beforeAll(async () => {
  context = createTestContext({ metricsToken })
  owner = await createTestUser(context)
  miniAppId = (await createMiniApp(context, owner.token, appId)).id
  const id = (await upload(context, owner.token, appId, uploadForm(appId, { version: '1.0.0' }))).body.id
  expect((await context.call('POST', `/api/mini-apps/${miniAppId}/versions/${id}/publish`, { token: owner.token, json: {} })).status).toBe(200)
})
afterAll(() => context.close())

const scrape = async () => (await context.call('GET', '/api/metrics', { token: metricsToken })).text
const sample = (text: string, series: string) => text.split('\n').find((line) => line.startsWith(`${series} `))?.split(' ')[1]

test('a miniapp nothing was counted for yet has its counters at 0, and they then move by what is counted', async () => {
  const label = `app_id="${appId}"`
  const first = await scrape()
  expect(sample(first, `miniship_app_install_info_total{${label}}`)).toBe('0')
  expect(sample(first, `miniship_app_update_checks_total{${label}}`)).toBe('0')
  expect(sample(first, `miniship_app_bundle_downloads_total{${label},platform="ios"}`)).toBe('0')
  expect(sample(first, `miniship_app_bundle_downloads_total{${label},platform="android"}`)).toBe('0')
  for (const event of ['installed', 'launched', 'failed', 'rolled_back']) expect(sample(first, `miniship_app_device_events_total{${label},event="${event}"}`)).toBe('0')
  for (const deviceId of ['a', 'b']) {
    expect((await context.call('GET', `/api/mini-apps/access/apps/${appId}/update?platform=ios&currentVersion=1.0.0&deviceId=${deviceId}`)).status).toBe(200)
  }
  expect(sample(await scrape(), `miniship_app_update_checks_total{${label}}`)).toBe('2')
})
