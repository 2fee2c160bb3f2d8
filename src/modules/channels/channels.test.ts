// Channels, staged rollout, targeting, mandatory updates and the update check over HTTP (decisions §9, §10).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createTestContext, type TestContext } from '../../test-support'
import { createMiniApp, createTestUser, upload, uploadForm, type TestUser } from '../../test-fixtures'
import { derivedManifestUrl } from '../runtime/test-runtime'
import { rolloutBucket } from './decide'

const access = '/api/mini-apps/access'

let context: TestContext
let owner: TestUser
let stranger: TestUser
let miniAppId = ''
const appId = 'com.example.channels'
const ids: Record<string, string> = {}

const outcome = (res: { status: number; body: { code?: string } }) => ({ status: res.status, code: res.body?.code })

async function uploadVersion(version: string, extra: Parameters<typeof uploadForm>[1] = {}) {
  const res = await upload(context, owner.token, appId, uploadForm(appId, { version, ...extra }))
  if (res.status !== 201) throw new Error(`upload ${version}: ${res.status} ${res.text}`)
  ids[version] = res.body.id
  return res
}

const publish = (version: string, json: Record<string, unknown> = {}) => context.call('POST', `/api/mini-apps/${miniAppId}/versions/${ids[version]}/publish`, { token: owner.token, json })
const rollout = (channel: string, rolloutPercent: unknown) => context.call('PATCH', `/api/mini-apps/${miniAppId}/channels/${channel}/rollout`, { token: owner.token, json: { rolloutPercent } })
const update = (query: string) => context.call('GET', `${access}/apps/${appId}/update?${query}`)
const releaseInstall = (query = '') => context.call('GET', `${access}/apps/${appId}/release/install${query}`)

/** A deviceId whose bucket for the version is below (or at/above) the percent. */
function device(version: string, inside: boolean, percent: number, salt = ''): string {
  for (let index = 0; ; index++) {
    const deviceId = `dev-${salt}${index}`
    if (rolloutBucket(appId, ids[version]!, deviceId) < percent === inside) return deviceId
  }
}

beforeAll(async () => {
  context = createTestContext()
  owner = await createTestUser(context)
  stranger = await createTestUser(context)
  miniAppId = (await createMiniApp(context, owner.token, appId)).id
})
afterAll(() => context.close())

describe('channels', () => {
  test('stable always exists and is listed first; beta is created; names and duplicates are checked', async () => {
    const list = await context.call('GET', `/api/mini-apps/${miniAppId}/channels`, { token: owner.token })
    expect(list.status).toBe(200)
    expect(list.body.channels).toEqual([{ name: 'stable', createdAt: expect.any(String), state: null, release: null, previousRelease: null, pausedReleases: [], revertedReleases: [], pausedBelow: [], defaultRelease: null, guard: { enabled: false, maxFailureRate: 0.05, minDevices: 20, lastCheck: null, trip: null, heldAtFailedDevices: null } }])
    const created = await context.call('POST', `/api/mini-apps/${miniAppId}/channels`, { token: owner.token, json: { name: 'beta' } })
    expect(created.status).toBe(201)
    expect(created.body).toMatchObject({ name: 'beta', release: null, previousRelease: null })
    expect(outcome(await context.call('POST', `/api/mini-apps/${miniAppId}/channels`, { token: owner.token, json: { name: 'beta' } }))).toEqual({ status: 409, code: 'CHANNEL_EXISTS' })
    expect(outcome(await context.call('POST', `/api/mini-apps/${miniAppId}/channels`, { token: owner.token, json: { name: 'stable' } }))).toEqual({ status: 409, code: 'CHANNEL_EXISTS' })
    for (const name of ['Beta', '1beta', 'beta_x', '', 'a'.repeat(33), 'bé']) {
      expect(outcome(await context.call('POST', `/api/mini-apps/${miniAppId}/channels`, { token: owner.token, json: { name } }))).toEqual({ status: 400, code: 'VALIDATION_ERROR' })
    }
    expect(outcome(await context.call('GET', `/api/mini-apps/${miniAppId}/channels`, { token: stranger.token }))).toEqual({ status: 404, code: 'MINI_APP_NOT_FOUND' })
    const names = (await context.call('GET', `/api/mini-apps/${miniAppId}/channels`, { token: owner.token })).body.channels.map((channel: { name: string }) => channel.name)
    expect(names).toEqual(['stable', 'beta'])
  })

  test('an empty channel can be deleted; stable and unknown ones cannot', async () => {
    await context.call('POST', `/api/mini-apps/${miniAppId}/channels`, { token: owner.token, json: { name: 'qa' } })
    const deleted = await context.call('DELETE', `/api/mini-apps/${miniAppId}/channels/qa`, { token: owner.token })
    expect(deleted.status).toBe(200)
    expect(deleted.body).toEqual({ success: true, name: 'qa' })
    expect(outcome(await context.call('DELETE', `/api/mini-apps/${miniAppId}/channels/qa`, { token: owner.token }))).toEqual({ status: 404, code: 'CHANNEL_NOT_FOUND' })
    expect(outcome(await context.call('DELETE', `/api/mini-apps/${miniAppId}/channels/stable`, { token: owner.token }))).toEqual({ status: 409, code: 'CHANNEL_IS_DEFAULT' })
  })

  test('upload names a channel: an unknown one is 404 CHANNEL_NOT_FOUND, a bad name 400, beta is recorded', async () => {
    const unknown = await upload(context, owner.token, appId, uploadForm(appId, { version: '0.9.0', channel: 'nightly' }))
    expect(outcome(unknown)).toEqual({ status: 404, code: 'CHANNEL_NOT_FOUND' })
    const bad = await upload(context, owner.token, appId, uploadForm(appId, { version: '0.9.0', channel: 'Not A Name' }))
    expect(outcome(bad)).toEqual({ status: 400, code: 'VALIDATION_ERROR' })
    expect(bad.body.details).toEqual([{ field: 'channel', message: expect.any(String) }])
    const res = await uploadVersion('1.0.0', { channel: 'beta' })
    expect(res.body.channel).toBe('beta')
    await uploadVersion('0.9.0')
    expect((await context.call('GET', `/api/mini-apps/${miniAppId}/workspace`, { token: owner.token })).body.versions.find((v: { id: string }) => v.id === ids['0.9.0']).channel).toBe('stable')
  })

  test('publish refuses bad release options, each with its status and code', async () => {
    const cases: [Record<string, unknown>, number, string][] = [
      [{ rolloutPercent: 0 }, 400, 'VALIDATION_ERROR'],
      [{ rolloutPercent: 101 }, 400, 'VALIDATION_ERROR'],
      [{ rolloutPercent: 'x' }, 400, 'VALIDATION_ERROR'],
      [{ rolloutPercent: 12.5 }, 400, 'VALIDATION_ERROR'],
      [{ hostVersionRange: 'not a range' }, 400, 'INVALID_HOST_VERSION_RANGE'],
      [{ hostVersionRange: '>=2..0' }, 400, 'INVALID_HOST_VERSION_RANGE'],
      [{ hostVersionRange: 42 }, 400, 'INVALID_HOST_VERSION_RANGE'],
      [{ mandatory: 'yes' }, 400, 'VALIDATION_ERROR'],
      [{ rolloutPercent: null }, 400, 'VALIDATION_ERROR'],
      [{ channel: 'nightly' }, 404, 'CHANNEL_NOT_FOUND'],
      [{ channel: 'BAD NAME' }, 400, 'VALIDATION_ERROR'],
      [{ channel: 'Beta' }, 400, 'VALIDATION_ERROR'],
    ]
    for (const [json, status, code] of cases) expect({ json, ...outcome(await publish('1.0.0', json)) }).toEqual({ json, status, code })
  })

  test('a rollout change on a channel without a release: 409 NO_RELEASE; bad percents 400; unknown channel 404', async () => {
    expect(outcome(await rollout('beta', 50))).toEqual({ status: 409, code: 'NO_RELEASE' })
    expect(outcome(await rollout('nightly', 50))).toEqual({ status: 404, code: 'CHANNEL_NOT_FOUND' })
    expect(outcome(await rollout('Bad_Name', 50))).toEqual({ status: 400, code: 'VALIDATION_ERROR' })
    expect(outcome(await context.call('DELETE', `/api/mini-apps/${miniAppId}/channels/BETA`, { token: owner.token }))).toEqual({ status: 400, code: 'VALIDATION_ERROR' })
    for (const percent of [-1, 101, 'x', 2.5, null]) expect(outcome(await rollout('beta', percent))).toEqual({ status: 400, code: 'VALIDATION_ERROR' })
  })
})

describe('a release from beta to stable: 5 % → 50 % → 100 %, halted, rolled back; host targeting; a mandatory fix', () => {
  test('publish 0.9.0 to stable and 1.0.0 to beta (its upload channel is the default)', async () => {
    expect((await publish('0.9.0')).status).toBe(200)
    const res = await publish('1.0.0')
    expect(res.status).toBe(200)
    expect(res.body.status).toBe('PUBLISHED')
    const beta = await releaseInstall('?channel=beta')
    expect(beta.body.version).toBe('1.0.0')
    expect((await releaseInstall()).body.version).toBe('0.9.0')
    expect(outcome(await releaseInstall('?channel=nightly'))).toEqual({ status: 404, code: 'CHANNEL_NOT_FOUND' })
    expect(outcome(await releaseInstall('?channel=Bad%20Name'))).toEqual({ status: 400, code: 'VALIDATION_ERROR' })
    // publishing it again into beta: it is already a release there
    expect(outcome(await publish('1.0.0'))).toEqual({ status: 409, code: 'VERSION_ALREADY_PUBLISHED' })
  })

  test('rollback across channels is refused; an unknown channel is 404, a bad name 400', async () => {
    const rollback = (channel: string) => context.call('POST', `/api/mini-apps/${miniAppId}/rollback`, { token: owner.token, json: { targetVersionId: ids['0.9.0'], channel } })
    expect(outcome(await rollback('beta'))).toEqual({ status: 409, code: 'NOT_RELEASED_IN_CHANNEL' })
    expect(outcome(await rollback('nightly'))).toEqual({ status: 404, code: 'CHANNEL_NOT_FOUND' })
    expect(outcome(await rollback('Not A Name'))).toEqual({ status: 400, code: 'VALIDATION_ERROR' })
  })

  test('promote 1.0.0 to stable at 5 %: devices in the bucket get it, the rest and devices without an id keep 0.9.0', async () => {
    const res = await publish('1.0.0', { channel: 'stable', rolloutPercent: 5, notes: 'careful' })
    expect(res.status).toBe(200)
    const inside = device('1.0.0', true, 5)
    const outside = device('1.0.0', false, 5)
    expect((await releaseInstall(`?deviceId=${inside}`)).body.version).toBe('1.0.0')
    expect((await releaseInstall(`?deviceId=${outside}`)).body.version).toBe('0.9.0')
    expect((await releaseInstall()).body.version).toBe('0.9.0')
    // the contract's current release pointer is stable's newest release
    const workspace = await context.call('GET', `/api/mini-apps/${miniAppId}/workspace`, { token: owner.token })
    expect(workspace.body.miniApp.currentReleaseVersionId).toBe(ids['1.0.0'])
    const stable = workspace.body.channels.find((channel: { name: string }) => channel.name === 'stable')
    expect(stable).toMatchObject({ release: { version: '1.0.0', rolloutPercent: 5, mandatory: false, hostVersionRange: null }, previousRelease: { version: '0.9.0', rolloutPercent: 100 } })
    expect(workspace.body.releaseHistory[0]).toMatchObject({ action: 'PUBLISH', channel: 'stable', version: '1.0.0', rolloutPercent: 5, notes: 'careful', previousVersionId: ids['0.9.0'] })
  })

  test('the update check follows the same decision; its URLs name the offered version, release install keeps the device scope', async () => {
    const inside = device('1.0.0', true, 5, 'u')
    const outside = device('1.0.0', false, 5, 'u')
    const yes = await update(`platform=ios&currentVersion=0.9.0&deviceId=${inside}`)
    expect(yes.status).toBe(200)
    expect(yes.body).toMatchObject({ updateAvailable: true, mandatory: false, rollout: { percent: 5 }, install: { version: '1.0.0', versionId: ids['1.0.0'] } })
    expect(yes.headers.get('content-length')).toBe(String(Buffer.byteLength(yes.text)))
    expect((await update(`platform=android&currentVersion=0.9.0&deviceId=${outside}`)).body).toEqual({ updateAvailable: false })
    expect((await update(`platform=ios&currentVersion=1.0.0&deviceId=${inside}`)).body).toEqual({ updateAvailable: false })
    // the answer's URLs are the offered version's own (what the client checks is what it downloads,
    // whatever the rollout does meanwhile); stable's carry no channel
    const bundleUrl: string = yes.body.install.bundles.android
    expect(bundleUrl).toStartWith(`http://localhost/api/mini-apps/access/versions/${ids['1.0.0']}/bundles/android?token=`)
    expect(bundleUrl).not.toContain('channel=')
    // release install keeps the device in the path, so the manifest derived from its bundle URL is this device's (§9)
    const scoped: string = (await releaseInstall(`?deviceId=${inside}`)).body.bundles.android
    expect(scoped).toContain(`/apps/${appId}/channels/stable/devices/${inside}/release/bundles/android?token=`)
    const manifest = await context.app.handle(new Request(derivedManifestUrl(scoped)))
    expect(manifest.status).toBe(200)
    expect((await manifest.json()).version).toBe('1.0.0')
    const unscoped = await context.app.handle(new Request(`http://localhost${access}/apps/${appId}/release/bundles/app.json`))
    expect((await unscoped.json()).version).toBe('0.9.0')
  })

  test('a deviceId of the §18 alphabet (a UUID, base64url, dots and colons, 200 characters) gets its bucket, and its URLs answer the version it was offered', async () => {
    for (const deviceId of ['AbC-_x', '0192f0aa-0000-7000-8000-000000000001', 'a..b:c.d', 'a'.repeat(200)]) {
      const expected = rolloutBucket(appId, ids['1.0.0']!, deviceId) < 5 ? '1.0.0' : '0.9.0'
      const res = await update(`platform=ios&currentVersion=0.1.0&deviceId=${encodeURIComponent(deviceId)}`)
      expect({ deviceId, status: res.status, version: res.body.install?.version }).toEqual({ deviceId, status: 200, version: expected })
      const bundleUrl: string = res.body.install.bundles.ios
      expect(bundleUrl).toContain(`/versions/${ids[expected]}/bundles/ios?token=`)
      const bundle = await context.app.handle(new Request(bundleUrl))
      expect({ deviceId, status: bundle.status, etag: bundle.headers.get('etag') }).toEqual({ deviceId, status: 200, etag: `"${res.body.install.files.bundleIos.sha256}"` })
      const scoped: string = (await releaseInstall(`?deviceId=${encodeURIComponent(deviceId)}`)).body.bundles.ios
      const manifest = await context.app.handle(new Request(derivedManifestUrl(scoped)))
      expect({ deviceId, status: manifest.status, version: (await manifest.json()).version }).toEqual({ deviceId, status: 200, version: expected })
    }
  })

  test('the update check refuses bad input with status and code', async () => {
    const cases: [string, number, string][] = [
      ['currentVersion=1.0.0', 400, 'VALIDATION_ERROR'],
      ['platform=windows&currentVersion=1.0.0', 400, 'VALIDATION_ERROR'],
      ['platform=ios', 400, 'VALIDATION_ERROR'],
      ['platform=ios&currentVersion=latest', 400, 'VALIDATION_ERROR'],
      ['platform=ios&currentVersion=1.0', 400, 'VALIDATION_ERROR'],
      [`platform=ios&currentVersion=1.0.0&deviceId=${'a'.repeat(201)}`, 400, 'INVALID_DEVICE_ID'],
      ['platform=ios&currentVersion=1.0.0&deviceId=a%0Ab', 400, 'INVALID_DEVICE_ID'],
      ['platform=ios&currentVersion=1.0.0&deviceId=a%7Fb', 400, 'INVALID_DEVICE_ID'],
      ['platform=ios&currentVersion=1.0.0&deviceId=..', 400, 'INVALID_DEVICE_ID'],
      ['platform=ios&currentVersion=1.0.0&hostVersion=two', 400, 'VALIDATION_ERROR'],
      ['platform=ios&currentVersion=1.0.0&channel=nightly', 404, 'CHANNEL_NOT_FOUND'],
    ]
    for (const [query, status, code] of cases) expect({ query, ...outcome(await update(query)) }).toEqual({ query, status, code })
    const unknownApp = await context.call('GET', `${access}/apps/com.example.nothing/update?platform=ios&currentVersion=1.0.0`)
    expect(outcome(unknownApp)).toEqual({ status: 404, code: 'RELEASE_NOT_FOUND' })
  })

  test('raise 5 → 50 %: every device that had it keeps it; halt (0): everyone is back on 0.9.0; complete (100): everyone gets 1.0.0', async () => {
    const devices = Array.from({ length: 300 }, (_, index) => `fleet-${index}`)
    const versionOf = async (deviceId: string) => (await releaseInstall(`?deviceId=${deviceId}`)).body.version as string
    const at5 = new Set<string>()
    for (const deviceId of devices) if ((await versionOf(deviceId)) === '1.0.0') at5.add(deviceId)
    const raised = await rollout('stable', 50)
    expect(raised.status).toBe(200)
    expect(raised.body.release).toMatchObject({ version: '1.0.0', rolloutPercent: 50 })
    const at50 = new Set<string>()
    for (const deviceId of devices) if ((await versionOf(deviceId)) === '1.0.0') at50.add(deviceId)
    for (const deviceId of at5) expect(at50.has(deviceId)).toBe(true)
    expect(at50.size).toBeGreaterThan(at5.size)
    expect((await rollout('stable', 0)).status).toBe(200)
    for (const deviceId of [...at50].slice(0, 20)) expect(await versionOf(deviceId)).toBe('0.9.0')
    expect((await rollout('stable', 100)).status).toBe(200)
    for (const deviceId of devices.slice(0, 20)) expect(await versionOf(deviceId)).toBe('1.0.0')
    expect((await releaseInstall()).body.version).toBe('1.0.0')
    const history = (await context.call('GET', `/api/mini-apps/${miniAppId}/workspace`, { token: owner.token })).body.releaseHistory
    expect(history.slice(0, 3).map((row: { action: string; rolloutPercent: number }) => [row.action, row.rolloutPercent])).toEqual([
      ['ROLLOUT', 100],
      ['ROLLOUT', 0],
      ['ROLLOUT', 50],
    ])
    const audit = await context.call('GET', '/api/admin/users', { token: (await createTestUser(context, { role: 'ADMIN' })).token })
    expect(audit.body.auditLogs.filter((row: { action: string }) => row.action === 'channel.rollout').length).toBe(3)
  })

  test('deleting a channel with releases: 409 CHANNEL_HAS_RELEASES', async () => {
    expect(outcome(await context.call('DELETE', `/api/mini-apps/${miniAppId}/channels/beta`, { token: owner.token }))).toEqual({ status: 409, code: 'CHANNEL_HAS_RELEASES' })
  })

  test('a host app too old for 1.1.0 keeps 1.0.0; a mandatory 1.2.0 reaches every device, even one skipping it', async () => {
    await uploadVersion('1.1.0')
    expect((await publish('1.1.0', { hostVersionRange: '>=3.0.0' })).status).toBe(200)
    expect((await releaseInstall('?hostVersion=2.9.0')).body.version).toBe('1.0.0')
    expect((await releaseInstall('?hostVersion=3.1.0')).body.version).toBe('1.1.0')
    expect((await update('platform=ios&currentVersion=1.0.0&hostVersion=2.9.0')).body).toEqual({ updateAvailable: false })
    expect(outcome(await releaseInstall('?hostVersion=0.1.0&channel=beta'))).toEqual({ status: 200, code: undefined })
    await uploadVersion('1.2.0')
    expect((await publish('1.2.0', { mandatory: true })).status).toBe(200)
    await uploadVersion('1.3.0')
    expect((await publish('1.3.0')).status).toBe(200)
    const below = await update('platform=ios&currentVersion=1.0.0')
    expect(below.body).toMatchObject({ updateAvailable: true, mandatory: true, install: { version: '1.3.0' } })
    const past = await update('platform=android&currentVersion=1.2.0')
    expect(past.body).toMatchObject({ updateAvailable: true, mandatory: false, install: { version: '1.3.0' } })
  })

  test('roll back stable to 1.0.0: the releases above are withdrawn; a host that fits nothing gets 404 NO_COMPATIBLE_RELEASE', async () => {
    const res = await context.call('POST', `/api/mini-apps/${miniAppId}/rollback`, { token: owner.token, json: { targetVersionId: ids['1.0.0'], channel: 'stable', notes: 'bad build' } })
    expect(res.status).toBe(200)
    expect(res.body.miniApp.currentReleaseVersionId).toBe(ids['1.0.0'])
    expect((await releaseInstall()).body.version).toBe('1.0.0')
    expect((await update('platform=ios&currentVersion=1.3.0')).body).toMatchObject({ updateAvailable: true, install: { version: '1.0.0' } })
    const channels = (await context.call('GET', `/api/mini-apps/${miniAppId}/channels`, { token: owner.token })).body.channels
    expect(channels[0]).toMatchObject({ name: 'stable', release: { version: '1.0.0', rolloutPercent: 100 }, previousRelease: { version: '0.9.0' } })
    expect(outcome(await context.call('POST', `/api/mini-apps/${miniAppId}/rollback`, { token: owner.token, json: { targetVersionId: ids['1.0.0'] } }))).toEqual({ status: 409, code: 'ALREADY_CURRENT_RELEASE' })
    // a version rolled back past can be rolled forward to again (it served this channel before)
    expect((await context.call('POST', `/api/mini-apps/${miniAppId}/rollback`, { token: owner.token, json: { targetVersionId: ids['1.3.0'] } })).status).toBe(200)
    expect((await releaseInstall()).body.version).toBe('1.3.0')
    await uploadVersion('2.0.0')
    expect((await publish('2.0.0', { hostVersionRange: '>=9' })).status).toBe(200)
    expect((await releaseInstall('?hostVersion=9.0.0')).body.version).toBe('2.0.0')
    expect((await releaseInstall('?hostVersion=1.0.0')).body.version).toBe('1.3.0')
  })
})

describe('rolling back to a release an earlier rollback withdrew', () => {
  test('the releases published after it are withdrawn again, so a host outside its range falls back to the release before it', async () => {
    const other = 'com.example.rerelease'
    const otherId = (await createMiniApp(context, owner.token, other)).id
    const versionIds: Record<string, string> = {}
    for (const version of ['1.0.0', '1.1.0', '1.2.0']) {
      const res = await upload(context, owner.token, other, uploadForm(other, { version }))
      expect(res.status).toBe(201)
      versionIds[version] = res.body.id
    }
    const publishOther = (version: string, json: Record<string, unknown> = {}) => context.call('POST', `/api/mini-apps/${otherId}/versions/${versionIds[version]}/publish`, { token: owner.token, json })
    const rollbackOther = (version: string) => context.call('POST', `/api/mini-apps/${otherId}/rollback`, { token: owner.token, json: { targetVersionId: versionIds[version] } })
    const installed = async (query: string) => (await context.call('GET', `${access}/apps/${other}/release/install${query}`)).body.version
    expect((await publishOther('1.0.0')).status).toBe(200)
    expect((await publishOther('1.1.0', { hostVersionRange: '>=3' })).status).toBe(200)
    expect((await rollbackOther('1.0.0')).status).toBe(200)
    expect((await publishOther('1.2.0')).status).toBe(200)
    expect((await rollbackOther('1.1.0')).status).toBe(200)
    // 1.2.0 came after 1.1.0: rolled back from, it serves nobody
    expect(await installed('?hostVersion=2.0.0')).toBe('1.0.0')
    expect(await installed('?hostVersion=3.0.0')).toBe('1.1.0')
    const stable = (await context.call('GET', `/api/mini-apps/${otherId}/channels`, { token: owner.token })).body.channels[0]
    expect(stable).toMatchObject({ release: { version: '1.1.0' }, previousRelease: { version: '1.0.0' } })
    // a version uploaded for stable but only ever released on beta: rolling stable back to it
    // withdraws what stable released of versions uploaded after it
    expect((await context.call('POST', `/api/mini-apps/${otherId}/channels`, { token: owner.token, json: { name: 'beta' } })).status).toBe(201)
    for (const version of ['1.3.0', '1.4.0']) {
      const res = await upload(context, owner.token, other, uploadForm(other, { version }))
      versionIds[version] = res.body.id
    }
    expect((await publishOther('1.3.0', { channel: 'beta' })).status).toBe(200)
    expect((await publishOther('1.4.0')).status).toBe(200)
    expect((await rollbackOther('1.3.0')).status).toBe(200)
    const after = (await context.call('GET', `/api/mini-apps/${otherId}/channels`, { token: owner.token })).body.channels[0]
    expect(after).toMatchObject({ release: { version: '1.3.0' }, previousRelease: { version: '1.1.0' } })
  })
})
