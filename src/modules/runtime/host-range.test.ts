// Install info of a release carries the channel release's hostVersionRange, null for any (decisions §17), over HTTP.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createTestContext, type TestContext } from '../../test-support'
import { createMiniApp, createTestUser, upload, uploadForm, type TestUser } from '../../test-fixtures'

const access = '/api/mini-apps/access'
const appId = 'com.example.hostrange'
let context: TestContext
let owner: TestUser
let miniAppId = ''
const ids: Record<string, string> = {}

async function uploadVersion(version: string) {
  const res = await upload(context, owner.token, appId, uploadForm(appId, { version }))
  if (res.status !== 201) throw new Error(`upload ${version}: ${res.status} ${res.text}`)
  ids[version] = res.body.id
}
const publish = (version: string, json: Record<string, unknown> = {}) => context.call('POST', `/api/mini-apps/${miniAppId}/versions/${ids[version]}/publish`, { token: owner.token, json })
const releaseInstall = (query: string) => context.call('GET', `${access}/apps/${appId}/release/install?${query}`)
const update = (query: string) => context.call('GET', `${access}/apps/${appId}/update?platform=ios&${query}`)

beforeAll(async () => {
  context = createTestContext()
  owner = await createTestUser(context)
  miniAppId = (await createMiniApp(context, owner.token, appId)).id
  expect((await context.call('POST', `/api/mini-apps/${miniAppId}/channels`, { token: owner.token, json: { name: 'beta' } })).status).toBe(201)
})
afterAll(() => context.close())

describe('hostVersionRange in release install info and the update check', () => {
  test('a release published without a range answers null (any host)', async () => {
    await uploadVersion('1.0.0')
    expect((await publish('1.0.0')).status).toBe(200)
    for (const query of ['', 'deviceId=dev-1', 'hostVersion=1.0.0']) {
      const info = await releaseInstall(query)
      expect(info.status).toBe(200)
      expect(info.body).toMatchObject({ version: '1.0.0', hostVersionRange: null })
    }
  })

  test('a release with a range carries it, on release/install and in the update check’s install, from every path', async () => {
    await uploadVersion('1.1.0')
    expect((await publish('1.1.0', { hostVersionRange: '>=2.0.0 <3' })).status).toBe(200)
    const plain = await releaseInstall('hostVersion=2.5.0')
    expect(plain.body).toMatchObject({ version: '1.1.0', hostVersionRange: '>=2.0.0 <3' })
    // the same answer again comes from the cache, still with the range
    expect((await releaseInstall('hostVersion=2.5.0')).text).toBe(plain.text)
    expect((await releaseInstall('hostVersion=2.6.0&deviceId=dev-2')).body.hostVersionRange).toBe('>=2.0.0 <3')
    const offered = await update('currentVersion=1.0.0&hostVersion=2.5.0&deviceId=dev-3')
    expect(offered.body).toMatchObject({ updateAvailable: true, install: { version: '1.1.0', hostVersionRange: '>=2.0.0 <3' } })
    // a host outside the range is offered the release before it, with that release's (null) range
    expect((await releaseInstall('hostVersion=3.0.0')).body).toMatchObject({ version: '1.0.0', hostVersionRange: null })
    expect((await update('currentVersion=0.9.0&hostVersion=3.0.0')).body).toMatchObject({ install: { version: '1.0.0', hostVersionRange: null } })
  })

  test('the same version released on two channels with different ranges: each answer carries its own channel’s', async () => {
    expect((await publish('1.1.0', { channel: 'beta', hostVersionRange: '^2.4.0' })).status).toBe(200)
    expect((await releaseInstall('channel=beta&hostVersion=2.5.0')).body).toMatchObject({ version: '1.1.0', hostVersionRange: '^2.4.0' })
    expect((await update('channel=beta&currentVersion=1.0.0&hostVersion=2.5.0')).body.install.hostVersionRange).toBe('^2.4.0')
    expect((await releaseInstall('hostVersion=2.5.0')).body.hostVersionRange).toBe('>=2.0.0 <3')
    expect((await update('currentVersion=1.0.0&hostVersion=2.5.0')).body.install.hostVersionRange).toBe('>=2.0.0 <3')
  })

  test('install info of a version by id names no release, so it has no hostVersionRange', async () => {
    const info = await context.call('GET', `${access}/versions/${ids['1.1.0']}/install?token=${owner.token}`)
    expect(info.status).toBe(200)
    expect(info.body.version).toBe('1.1.0')
    expect('hostVersionRange' in info.body).toBe(false)
  })
})
