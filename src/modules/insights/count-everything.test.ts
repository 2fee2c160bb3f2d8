// Decisions §13: insights count every device. After a mixed load (known, unknown and withdrawn versions; two channels) the report's totals equal the /api/metrics counters.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { createTestContext, type TestContext } from '../../test-support'
import { createMiniApp, createTestUser, upload, uploadForm, type TestUser } from '../../test-fixtures'
import { resolveUrl } from '../runtime/test-runtime'

const access = '/api/mini-apps/access'
const appId = 'com.example.truth'
const metricsToken = 'scrape-token-truth-0123456789'

let context: TestContext
let owner: TestUser
let miniAppId = ''
const ids: Record<string, string> = {}

beforeAll(async () => {
  context = createTestContext({ metricsToken })
  owner = await createTestUser(context)
  miniAppId = (await createMiniApp(context, owner.token, appId)).id
  expect((await context.call('POST', `/api/mini-apps/${miniAppId}/channels`, { token: owner.token, json: { name: 'beta' } })).status).toBe(201)
  for (const [version, channel] of [['1.0.0', 'stable'], ['1.1.0', 'stable'], ['1.2.0', 'stable'], ['2.0.0-beta.1', 'beta']] as const) {
    const res = await upload(context, owner.token, appId, uploadForm(appId, { version, channel }))
    ids[version] = res.body.id
    expect((await context.call('POST', `/api/mini-apps/${miniAppId}/versions/${res.body.id}/publish`, { token: owner.token, json: {} })).status).toBe(200)
  }
  // 1.2.0 is withdrawn from stable by a rollback to 1.1.0
  expect((await context.call('POST', `/api/mini-apps/${miniAppId}/rollback`, { token: owner.token, json: { targetVersionId: ids['1.1.0'], channel: 'stable' } })).status).toBe(200)
  // 1.3.0 is a draft, never released: known, so counted as itself (a tester's device runs it)
  ids['1.3.0'] = (await upload(context, owner.token, appId, uploadForm(appId, { version: '1.3.0' }))).body.id
})
afterAll(() => context.close())

/** A Prometheus sample's value (0 when absent). */
function sample(text: string, name: string, labels = ''): number {
  const line = text.split('\n').find((row) => row.startsWith(`${name}${labels ? `{${labels}}` : ''} `))
  return line ? Number(line.split(' ').at(-1)) : 0
}

test('the report counts known, unknown and withdrawn versions on every channel, and its totals equal /api/metrics', async () => {
  const check = (channel: string, currentVersion: string, deviceId: string, platform = 'ios') =>
    context.call('GET', `${access}/apps/${appId}/update?platform=${platform}&channel=${channel}&currentVersion=${encodeURIComponent(currentVersion)}&deviceId=${deviceId}`)
  const checks: [string, string, string, string?][] = [
    ['stable', '1.1.0', 'known-1'],
    ['stable', '1.0.0', 'known-2', 'android'],
    ['stable', '1.2.0', 'withdrawn-1'],
    ['stable', '1.2.0', 'withdrawn-2', 'android'],
    ['stable', '9.9.9', 'unknown-1'],
    ['stable', '0.0.1-made-up', 'unknown-2'],
    ['beta', '2.0.0-beta.1', 'beta-1'],
    ['beta', '1.1.0', 'beta-2'],
    ['beta', '3.0.0', 'beta-3', 'android'],
    ['stable', '1.3.0', 'draft-1'],
  ]
  for (const [channel, version, deviceId, platform] of checks) expect((await check(channel, version, deviceId, platform)).status).toBe(200)
  // a channel the app lacks: 404, counted nowhere
  expect((await check('nightly', '1.1.0', 'x')).status).toBe(404)

  for (const query of ['', '?channel=beta', '?deviceId=known-1']) {
    const info = await context.call('GET', `${access}/apps/${appId}/release/install${query}`)
    expect(info.status).toBe(200)
    const bundle = await context.app.handle(new Request(resolveUrl('http://localhost/api', info.body.bundles.android)))
    expect(bundle.status).toBe(200)
    await bundle.arrayBuffer()
  }

  const event = (fields: Record<string, unknown>) => ({ appId, platform: 'ios', event: 'launched', ...fields })
  const sent = await context.call('POST', `${access}/events`, {
    json: {
      events: [
        event({ versionId: ids['1.1.0'], deviceId: 'known-1' }),
        event({ version: '1.1.0', event: 'installed', deviceId: 'known-3' }),
        event({ version: '1.2.0', event: 'failed', message: 'crash', deviceId: 'withdrawn-1' }),
        event({ version: '1.2.0', event: 'rolled_back', deviceId: 'withdrawn-2', platform: 'android' }),
        event({ version: '8.8.8', deviceId: 'unknown-3' }),
        event({ versionId: 'not-an-id', deviceId: 'unknown-4' }),
        event({ channel: 'beta', version: '2.0.0-beta.1', event: 'installed', deviceId: 'beta-1' }),
        event({ channel: 'beta', version: '7.0.0', deviceId: 'beta-4' }),
        event({ channel: 'nightly', version: '1.1.0' }),
        event({ appId: 'com.example.nobody', version: '1.1.0' }),
      ],
    },
  })
  expect(sent.body).toMatchObject({ accepted: 8, rejected: 2, errors: [{ index: 8, code: 'CHANNEL_NOT_FOUND' }, { index: 9, code: 'MINI_APP_NOT_FOUND' }] })

  const report = (await context.call('GET', `/api/mini-apps/${miniAppId}/insights?days=1`, { token: owner.token })).body
  const metrics = (await context.call('GET', '/api/metrics', { token: metricsToken })).text
  const totals = report.totals
  /** The report's totals, and the same figures read from the counters (`app`: one miniapp's, else the server's). */
  const figures = (of: typeof totals) => ({ installInfoRequests: of.installInfoRequests, updateChecks: of.updateChecks, ios: of.downloads.ios, android: of.downloads.android, installed: of.installed, launched: of.launched, failures: of.failures, rolledBack: of.rolledBack })
  const counted = (text: string, app?: string) => {
    const [prefix, label] = app === undefined ? ['miniship_', (more: string) => more] : ['miniship_app_', (more: string) => (more === '' ? app : `${app},${more}`)]
    const event = (name: string) => sample(text, `${prefix}device_events_total`, label(`event="${name}"`))
    return {
      installInfoRequests: sample(text, `${prefix}install_info_total`, label('')),
      updateChecks: sample(text, `${prefix}update_checks_total`, label('')),
      ios: app === undefined ? sample(text, 'miniship_downloads_total', 'kind="bundleIos"') : sample(text, 'miniship_app_bundle_downloads_total', label('platform="ios"')),
      android: app === undefined ? sample(text, 'miniship_downloads_total', 'kind="bundleAndroid"') : sample(text, 'miniship_app_bundle_downloads_total', label('platform="android"')),
      installed: event('installed'),
      launched: event('launched'),
      failures: event('failed'),
      rolledBack: event('rolled_back'),
    }
  }
  expect(figures(totals)).toEqual(counted(metrics))
  // `installs` stays one release as an alias of installInfoRequests
  expect(totals.installs).toBe(totals.installInfoRequests)
  // per miniapp too: another miniapp's traffic moves the server's totals and its own counters, never this one's
  const otherApp = 'com.example.truth.other'
  const otherMiniApp = await createMiniApp(context, owner.token, otherApp)
  const otherVersion = (await upload(context, owner.token, otherApp, uploadForm(otherApp, { version: '1.0.0' }))).body.id
  expect((await context.call('POST', `/api/mini-apps/${otherMiniApp.id}/versions/${otherVersion}/publish`, { token: owner.token, json: {} })).status).toBe(200)
  for (const deviceId of ['o-1', 'o-2']) expect((await context.call('GET', `${access}/apps/${otherApp}/update?platform=ios&currentVersion=0.9.0&deviceId=${deviceId}`)).status).toBe(200)
  const after = (await context.call('GET', '/api/metrics', { token: metricsToken })).text
  expect(figures(totals)).toEqual(counted(after, `app_id="${appId}"`))
  expect(sample(after, 'miniship_app_update_checks_total', `app_id="${otherApp}"`)).toBe(2)
  expect(sample(after, 'miniship_update_checks_total')).toBe(totals.updateChecks + 2)

  // and the figures are what was sent, not zero on both sides
  expect(totals).toMatchObject({ updateChecks: 10, installInfoRequests: 3, installed: 2, launched: 4, failures: 1, rolledBack: 1, downloads: { ios: 0, android: 3 } })
  expect(sample(metrics, 'miniship_device_events_rejected_total')).toBe(2)

  // the withdrawn and unknown versions are in one `other` row per channel; a version the miniapp has
  // and the channel did not withdraw counts as itself, from update checks as from events: the draft
  // 1.3.0, and 1.1.0 reported on beta, where it was never released
  const versions = report.days.at(-1).versions as { versionId: string | null; version: string; updateChecks: number; launched: number; failures: number; rolledBack: number }[]
  const other = versions.filter((version) => version.versionId === null)
  expect(other).toHaveLength(1)
  expect(other[0]).toMatchObject({ version: 'other', updateChecks: 5, launched: 3, failures: 1, rolledBack: 1 })
  expect(versions.find((version) => version.versionId === ids['1.3.0'])).toMatchObject({ version: '1.3.0', updateChecks: 1 })
  const beta = (await context.call('GET', `/api/mini-apps/${miniAppId}/insights?days=1&channel=beta`, { token: owner.token })).body
  expect(beta.days.at(-1).versions.find((version: { versionId: string | null }) => version.versionId === null)).toMatchObject({ updateChecks: 1, launched: 1 })
  expect(beta.days.at(-1).versions.find((version: { versionId: string | null }) => version.versionId === ids['1.1.0'])).toMatchObject({ updateChecks: 1 })
  const rows = context.dataDir.db.$client.query<{ channel: string }, []>("SELECT DISTINCT channel FROM insight_counts WHERE version_id LIKE 'other:%' ORDER BY channel").all()
  expect(rows).toEqual([{ channel: 'beta' }, { channel: 'stable' }])
  // one denominator for the day's shares: the distinct devices seen
  expect(report.days.at(-1).devices).toBe(report.totals.activeDevices)
  expect(report.adoption.devices).toBe(report.days.at(-1).devices)
  // and the metrics gauge of today's devices counts the same ones, the `other` row's included
  expect(sample(metrics, 'miniship_active_devices', `app_id="${appId}"`)).toBe(report.totals.activeDevices)
})

test('a device on a reverted first release is counted: its update check is answered 404 and still reaches insights and /api/metrics', async () => {
  const firstApp = 'com.example.truth.first'
  const app = await createMiniApp(context, owner.token, firstApp)
  const first = (await upload(context, owner.token, firstApp, uploadForm(firstApp, { version: '1.0.0' }))).body.id
  expect((await context.call('POST', `/api/mini-apps/${app.id}/versions/${first}/publish`, { token: owner.token, json: { rolloutPercent: 50 } })).status).toBe(200)
  expect((await context.call('PATCH', `/api/mini-apps/${app.id}/channels/stable/rollout`, { token: owner.token, json: { rolloutPercent: 0 } })).body.state).toBe('reverted')
  const before = (await context.call('GET', '/api/metrics', { token: metricsToken })).text
  const check = (path: string) => context.call('GET', `${access}/apps/${path}`)
  for (const deviceId of ['first-1', 'first-2']) {
    const refused = await check(`${firstApp}/update?platform=ios&currentVersion=1.0.0&deviceId=${deviceId}`)
    expect({ status: refused.status, code: refused.body.code }).toEqual({ status: 404, code: 'RELEASE_NOT_FOUND' })
  }
  // a miniapp or a channel that does not exist: 404 too, counted nowhere (insight rows stay bounded)
  expect((await check(`com.example.nobody/update?platform=ios&currentVersion=1.0.0&deviceId=x`)).status).toBe(404)
  expect((await check(`${firstApp}/update?platform=ios&channel=nightly&currentVersion=1.0.0&deviceId=x`)).status).toBe(404)
  const after = (await context.call('GET', '/api/metrics', { token: metricsToken })).text
  expect(sample(after, 'miniship_update_checks_total') - sample(before, 'miniship_update_checks_total')).toBe(2)
  expect(sample(after, 'miniship_app_update_checks_total', `app_id="${firstApp}"`)).toBe(2)
  // an empty ?channel= is stable, for counting as for answering
  expect((await check(`${firstApp}/update?platform=ios&channel=&currentVersion=1.0.0&deviceId=first-3`)).status).toBe(404)
  const report = (await context.call('GET', `/api/mini-apps/${app.id}/insights?days=1`, { token: owner.token })).body
  expect(report.totals).toMatchObject({ updateChecks: 3, activeDevices: 3 })
  expect(report.days.at(-1).versions).toEqual([expect.objectContaining({ versionId: first, version: '1.0.0', updateChecks: 3 })])
  const stable = (await context.call('GET', `/api/mini-apps/${app.id}/insights?days=1&channel=stable`, { token: owner.token })).body
  expect(stable.totals).toMatchObject({ updateChecks: 3 })
})
