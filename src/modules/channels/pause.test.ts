// Pause against revert, and the state words of GET …/channels (decisions §13), over HTTP.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createTestContext, type TestContext } from '../../test-support'
import { createMiniApp, createTestUser, upload, uploadForm, type TestUser } from '../../test-fixtures'
import { rolloutBucket } from './decide'
import { pauseRollout } from './service'
import { channelDevicesText, type ChannelView } from './words'
import { servedFiles } from '../runtime/test-runtime'

const access = '/api/mini-apps/access'
const appId = 'com.example.pause'

let context: TestContext
let owner: TestUser
let admin: TestUser
let miniAppId = ''
let ciKey = ''
const ids: Record<string, string> = {}

const outcome = (res: { status: number; body: { code?: string } }) => ({ status: res.status, code: res.body?.code })
const patch = (json: Record<string, unknown>, token = owner.token, channel = 'stable') => context.call('PATCH', `/api/mini-apps/${miniAppId}/channels/${channel}/rollout`, { token, json })
const channels = async () => (await context.call('GET', `/api/mini-apps/${miniAppId}/channels`, { token: owner.token })).body.channels as { name: string; state: string | null; release: { version: string; rolloutPercent: number; paused: boolean; pausedBy: string | null; pauseReason: string | null } | null; previousRelease: { version: string } | null; defaultRelease: { version: string } | null }[]
const stable = async () => (await channels()).find((channel) => channel.name === 'stable')!

/** What a device gets: the update check (with currentVersion) names the version offered, or the one it keeps. */
async function updateVersion(deviceId: string | null, currentVersion: string): Promise<string> {
  const res = await context.call('GET', `${access}/apps/${appId}/update?platform=ios&currentVersion=${currentVersion}${deviceId ? `&deviceId=${deviceId}` : ''}`)
  expect(res.status).toBe(200)
  return res.body.updateAvailable ? res.body.install.version : currentVersion
}
/** The version release/install names; each of its file URLs must serve that version's file (size and sha256 as the answer lists). */
async function installVersion(query: string): Promise<string> {
  const res = await context.call('GET', `${access}/apps/${appId}/release/install${query}`)
  expect(res.status).toBe(200)
  const { served, listed } = await servedFiles((request) => context.app.handle(request), res.body)
  expect({ query, served }).toEqual({ query, served: listed })
  return res.body.version
}

function device(inside: boolean, salt: string): string {
  for (let index = 0; ; index++) {
    const deviceId = `pause-${salt}${index}`
    if (rolloutBucket(appId, ids['1.1.0']!, deviceId) < 30 === inside) return deviceId
  }
}

beforeAll(async () => {
  context = createTestContext()
  owner = await createTestUser(context)
  admin = await createTestUser(context, { role: 'ADMIN' })
  miniAppId = (await createMiniApp(context, owner.token, appId)).id
  for (const version of ['1.0.0', '1.1.0']) {
    const res = await upload(context, owner.token, appId, uploadForm(appId, { version }))
    ids[version] = res.body.id
  }
  expect((await context.call('POST', `/api/mini-apps/${miniAppId}/versions/${ids['1.0.0']}/publish`, { token: owner.token, json: {} })).status).toBe(200)
  const key = await context.call('POST', '/api/auth/api-keys', { token: owner.token, json: { name: 'ci-release', scopes: ['read', 'release'] } })
  ciKey = key.body.key
})
afterAll(() => context.close())

describe('pause keeps adopters, revert sends everyone back (decisions §13)', () => {
  test('a complete release: state complete, defaultRelease is it, previousRelease none', async () => {
    expect(await stable()).toMatchObject({ state: 'complete', release: { version: '1.0.0', rolloutPercent: 100, paused: false }, previousRelease: null, defaultRelease: { version: '1.0.0' } })
  })

  test('rolling out at 30 %: inside devices get 1.1.0, outside and id-less ones 1.0.0', async () => {
    expect((await context.call('POST', `/api/mini-apps/${miniAppId}/versions/${ids['1.1.0']}/publish`, { token: owner.token, json: { rolloutPercent: 30 } })).status).toBe(200)
    expect(await stable()).toMatchObject({ state: 'rolling-out', release: { version: '1.1.0', rolloutPercent: 30 }, previousRelease: { version: '1.0.0' }, defaultRelease: { version: '1.0.0' } })
    expect(await updateVersion(device(true, 'a'), '1.0.0')).toBe('1.1.0')
    expect(await updateVersion(device(false, 'a'), '1.0.0')).toBe('1.0.0')
  })

  test('paused: a device on 1.1.0 keeps it, any other currentVersion gets 1.0.0, legacy requests follow the bucket at the frozen percent', async () => {
    const paused = await patch({ paused: true, reason: 'crash spike' }, ciKey)
    expect(paused.status).toBe(200)
    expect(paused.body).toMatchObject({ name: 'stable', state: 'paused', release: { version: '1.1.0', rolloutPercent: 30, paused: true, pausedBy: `API key "ci-release" of ${owner.email}`, pauseReason: 'crash spike' } })
    expect(await stable()).toMatchObject({ state: 'paused', previousRelease: { version: '1.0.0' }, defaultRelease: { version: '1.0.0' } })
    const adopter = device(true, 'b')
    const other = device(false, 'b')
    // adopters (by currentVersion) keep it, whatever their bucket
    expect(await updateVersion(adopter, '1.1.0')).toBe('1.1.0')
    expect(await updateVersion(other, '1.1.0')).toBe('1.1.0')
    expect(await updateVersion(null, '1.1.0')).toBe('1.1.0')
    expect(await installVersion(`?deviceId=${other}&currentVersion=1.1.0`)).toBe('1.1.0')
    expect(await installVersion('?currentVersion=1.1.0')).toBe('1.1.0')
    // a device that runs something else gets the previous release, even inside the bucket
    expect(await updateVersion(adopter, '1.0.0')).toBe('1.0.0')
    expect(await updateVersion(adopter, '0.5.0')).toBe('1.0.0')
    expect(await installVersion(`?deviceId=${adopter}&currentVersion=1.0.0`)).toBe('1.0.0')
    // no currentVersion: the bucket rule at the frozen 30 %
    expect(await installVersion(`?deviceId=${adopter}`)).toBe('1.1.0')
    expect(await installVersion(`?deviceId=${other}`)).toBe('1.0.0')
    expect(await installVersion('')).toBe('1.0.0')
    const check = await context.call('GET', `${access}/apps/${appId}/release/install?currentVersion=not a version`)
    expect(outcome(check)).toEqual({ status: 400, code: 'VALIDATION_ERROR' })
  })

  test('while paused, changing the percent is 409 ROLLOUT_PAUSED; pausing again changes nothing', async () => {
    for (const rolloutPercent of [50, 100, 10]) expect(outcome(await patch({ rolloutPercent }))).toEqual({ status: 409, code: 'ROLLOUT_PAUSED' })
    // the message says what to do in the console's and the CLI's words (the full command); the API's bodies are in details
    const refused = await patch({ rolloutPercent: 50 })
    expect(refused.body.message).toMatch(new RegExp(`paused at \\d+ %; resume it first \\(Resume in the console, or miniship rollout ${appId} --resume\\), or revert it \\(miniship rollout ${appId} --revert\\)$`))
    expect(refused.body.message).not.toContain('{')
    expect(refused.body.details).toEqual([
      { field: 'paused', message: 'resume: PATCH this rollout with {"paused": false}' },
      { field: 'rolloutPercent', message: 'revert: PATCH this rollout with {"rolloutPercent": 0}' },
    ])
    const again = await patch({ paused: true })
    expect(again.status).toBe(200)
    expect(again.body.release.pausedBy).toBe(`API key "ci-release" of ${owner.email}`)
  })

  test('bad bodies are 400 VALIDATION_ERROR', async () => {
    for (const json of [{}, { paused: 'yes' }, { paused: true, rolloutPercent: 50 }, { paused: true, reason: 5 }, { rolloutPercent: 101 }]) {
      expect({ json, ...outcome(await patch(json)) }).toEqual({ json, status: 400, code: 'VALIDATION_ERROR' })
    }
  })

  test('a reason is at most 2000 characters, like notes: a longer one is 400 VALIDATION_ERROR (half a megabyte was stored and shown with every channel)', async () => {
    for (const reason of ['x'.repeat(2001), 'x'.repeat(500_000)]) {
      const refused = await patch({ paused: true, reason })
      expect({ length: reason.length, ...outcome(refused) }).toEqual({ length: reason.length, status: 400, code: 'VALIDATION_ERROR' })
      expect(refused.body.details).toEqual([{ field: 'reason', message: 'must be at most 2000 characters' }])
    }
    // characters, not UTF-16 units: 2000 emoji are 4000 units
    expect((await patch({ paused: true, reason: '🔥'.repeat(2000) })).status).toBe(200)
  })

  test('resume: back to rolling out at the same percent; the percent can change again', async () => {
    const resumed = await patch({ paused: false })
    expect(resumed.body).toMatchObject({ state: 'rolling-out', release: { version: '1.1.0', rolloutPercent: 30, paused: false, pausedBy: null } })
    expect(await updateVersion(device(true, 'c'), '1.0.0')).toBe('1.1.0')
    expect(await updateVersion(device(false, 'c'), '1.1.0')).toBe('1.0.0')
    expect((await patch({ rolloutPercent: 40 })).body).toMatchObject({ state: 'rolling-out', release: { rolloutPercent: 40 } })
  })

  test('revert (0 %) from a pause: every device, adopters included, gets 1.0.0; a reverted release cannot be paused', async () => {
    expect((await patch({ paused: true })).body.state).toBe('paused')
    const reverted = await patch({ rolloutPercent: 0 })
    expect(reverted.body).toMatchObject({ state: 'reverted', release: { version: '1.1.0', rolloutPercent: 0, paused: false }, defaultRelease: { version: '1.0.0' } })
    const adopter = device(true, 'd')
    expect(await updateVersion(adopter, '1.1.0')).toBe('1.0.0')
    expect(await installVersion(`?deviceId=${adopter}&currentVersion=1.1.0`)).toBe('1.0.0')
    expect(await installVersion(`?deviceId=${adopter}`)).toBe('1.0.0')
    expect(outcome(await patch({ paused: true }))).toEqual({ status: 409, code: 'ROLLOUT_REVERTED' })
  })

  test('complete: everyone gets 1.1.0; a complete release can be paused too, and the release guard may pause by name', async () => {
    expect((await patch({ rolloutPercent: 100 })).body).toMatchObject({ state: 'complete', defaultRelease: { version: '1.1.0' } })
    const { change } = pauseRollout(context.dataDir.db, () => context.now.value, 'release-guard', miniAppId, 'stable', { reason: 'crash rate 4 % over 1 %' })
    expect(change).toMatchObject({ action: 'pause', state: 'paused', previousState: 'complete', actor: 'release-guard', version: '1.1.0', rolloutPercent: 100 })
    expect(await stable()).toMatchObject({ state: 'paused', release: { pausedBy: 'release-guard', pauseReason: 'crash rate 4 % over 1 %' } })
    expect(await updateVersion(device(true, 'e'), '1.0.0')).toBe('1.0.0')
    expect(await updateVersion(device(true, 'e'), '1.1.0')).toBe('1.1.0')
    // a request that names no version follows the frozen 100 %: it still gets 1.1.0, and the words
    // the console and the CLI show say so (not "the others get 1.0.0")
    expect(await installVersion('')).toBe('1.1.0')
    const paused = await stable()
    expect(paused.defaultRelease).toMatchObject({ version: '1.1.0' })
    expect(channelDevicesText(paused as ChannelView)).toBe('Devices on 1.1.0 keep it; those that name their version get 1.0.0. Requests that name none (older clients, the release mirror) still get 1.1.0: revert to stop that.')
    expect((await patch({ paused: false })).body.state).toBe('complete')
  })

  test('every change is audited with who made it: the user, the API key by name, or release-guard', async () => {
    const res = await context.call('GET', '/api/admin/users?auditLimit=50', { token: admin.token })
    const entries = (res.body.auditLogs as { action: string; summary: string; metadata: { actor?: string; apiKey?: { name: string } } }[]).filter((entry) => entry.action.startsWith('channel.'))
    const actions = entries.map((entry) => [entry.action, entry.metadata.actor]).reverse()
    expect(actions).toEqual([
      ['channel.pause', `API key "ci-release" of ${owner.email}`],
      ['channel.resume', owner.email],
      ['channel.rollout', owner.email],
      ['channel.pause', owner.email],
      ['channel.rollout', owner.email],
      ['channel.rollout', owner.email],
      ['channel.pause', 'release-guard'],
      ['channel.resume', owner.email],
    ])
    expect(entries.at(-1)!.metadata.apiKey?.name).toBe('ci-release')
    expect(entries.at(-1)!.summary).toContain('paused the rollout of com.example.pause 1.1.0 on stable at 30 % (was rolling-out 30 %): crash spike')
    expect(entries.find((entry) => entry.metadata.actor === 'release-guard')!.summary).toStartWith('release-guard paused the rollout')
  })

  test('an unknown channel or app is 404; a stranger gets 404', async () => {
    expect(outcome(await patch({ paused: true }, owner.token, 'nightly'))).toEqual({ status: 404, code: 'CHANNEL_NOT_FOUND' })
    const stranger = await createTestUser(context)
    expect(outcome(await patch({ paused: true }, stranger.token))).toEqual({ status: 404, code: 'MINI_APP_NOT_FOUND' })
  })
})
