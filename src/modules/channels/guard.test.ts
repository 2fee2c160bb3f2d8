// The release guard over HTTP (decisions §15): its settings on PATCH …/channels/{channel}, distinct failing devices, the pause and the resume.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createTestContext, type TestContext } from '../../test-support'
import { createMiniApp, createTestUser, upload, uploadForm, type TestUser } from '../../test-fixtures'
import { createApp } from '../../app'
import { Database } from 'bun:sqlite'
import type { GuardPause } from './guard'
import { failedText, guardPauseText, guardStateText, heldText } from './guard-text'
import { describeChannel } from '../../client/status'
import { eq } from 'drizzle-orm'
import { webhookDeliveries } from '../../db/schema'

let context: TestContext
let owner: TestUser
let developer: TestUser
let admin: TestUser
let stranger: TestUser
const pauses: GuardPause[] = []

const outcome = (res: { status: number; body: { code?: string } }) => ({ status: res.status, code: res.body?.code })

interface Fleet {
  appId: string
  miniAppId: string
  versionId: string
}

/** A miniapp whose stable channel rolls 1.1.0 out to 50 % over 1.0.0, with the guard set as given. */
async function fleet(appId: string, guard: Record<string, unknown> | null): Promise<Fleet> {
  const miniAppId = (await createMiniApp(context, owner.token, appId)).id
  const ids: string[] = []
  for (const version of ['1.0.0', '1.1.0']) ids.push((await upload(context, owner.token, appId, uploadForm(appId, { version }))).body.id)
  expect((await context.call('POST', `/api/mini-apps/${miniAppId}/versions/${ids[0]}/publish`, { token: owner.token, json: {} })).status).toBe(200)
  if (guard) expect((await setGuard(miniAppId, guard)).status).toBe(200)
  expect((await context.call('POST', `/api/mini-apps/${miniAppId}/versions/${ids[1]}/publish`, { token: owner.token, json: { rolloutPercent: 50 } })).status).toBe(200)
  return { appId, miniAppId, versionId: ids[1]! }
}

const setGuard = (miniAppId: string, guard: unknown, token = owner.token, channel = 'stable') => context.call('PATCH', `/api/mini-apps/${miniAppId}/channels/${channel}`, { token, json: { guard } })

type Event = 'installed' | 'launched' | 'failed' | 'rolled_back'
/** Device events as the update client sends them, 100 a request. */
async function report(target: Fleet, devices: string[], event: Event, versionId = target.versionId): Promise<void> {
  const all = devices.map((deviceId) => ({ appId: target.appId, versionId, platform: 'ios', event, channel: 'stable', deviceId }))
  for (let at = 0; at < all.length; at += 100) {
    const res = await context.call('POST', '/api/mini-apps/access/events', { json: { events: all.slice(at, at + 100) } })
    expect(res.status).toBe(202)
    expect(res.body.accepted).toBe(all.slice(at, at + 100).length)
  }
}
const names = (prefix: string, count: number) => Array.from({ length: count }, (_, index) => `${prefix}-${index}`)

/** The insights flush, after which the guard checks (serve runs it every --insights-flush). */
const flush = () => context.app.store.insights.flush()

async function stable(target: Fleet) {
  const res = await context.call('GET', `/api/mini-apps/${target.miniAppId}/channels`, { token: owner.token })
  expect(res.status).toBe(200)
  return res.body.channels.find((channel: { name: string }) => channel.name === 'stable')
}

async function auditEntries(action: string) {
  const res = await context.call('GET', '/api/admin/users?auditLimit=200', { token: admin.token })
  return (res.body.auditLogs as { action: string; actorEmail: string | null; summary: string; targetId: string; metadata: Record<string, unknown> }[]).filter((entry) => entry.action === action)
}

beforeAll(async () => {
  context = createTestContext()
  owner = await createTestUser(context)
  developer = await createTestUser(context)
  admin = await createTestUser(context, { role: 'ADMIN' })
  stranger = await createTestUser(context)
  context.app.store.releaseGuard.onPaused((pause) => pauses.push(pause))
})
afterAll(() => context.close())

describe('settings: PATCH …/channels/{channel} { guard }', () => {
  let target: Fleet
  beforeAll(async () => {
    target = await fleet('com.example.guard.settings', null)
    const added = await context.call('POST', `/api/mini-apps/${target.miniAppId}/members`, { token: owner.token, json: { email: developer.email, role: 'DEVELOPER' } })
    expect(added.status).toBe(201)
  })

  test('off by default: 5 % and 20 devices, nothing counted', async () => {
    expect((await stable(target)).guard).toEqual({ enabled: false, maxFailureRate: 0.05, minDevices: 20, lastCheck: null, trip: null, heldAtFailedDevices: null })
  })

  test('the owner turns it on (fields left out keep their value) and changes it; an admin may too; audited', async () => {
    const on = await setGuard(target.miniAppId, { enabled: true })
    expect(on.status).toBe(200)
    expect(on.body).toMatchObject({ name: 'stable', guard: { enabled: true, maxFailureRate: 0.05, minDevices: 20 } })
    const changed = await setGuard(target.miniAppId, { maxFailureRate: 0.1, minDevices: 50 })
    expect(changed.body.guard).toMatchObject({ enabled: true, maxFailureRate: 0.1, minDevices: 50 })
    const byAdmin = await setGuard(target.miniAppId, { enabled: false, maxFailureRate: 1, minDevices: 1 }, admin.token)
    expect(byAdmin.body.guard).toMatchObject({ enabled: false, maxFailureRate: 1, minDevices: 1 })
    expect((await stable(target)).guard).toMatchObject({ enabled: false, maxFailureRate: 1, minDevices: 1 })
    const entries = (await auditEntries('channel.guard')).filter((entry) => entry.targetId === target.miniAppId)
    expect(entries.map((entry) => [entry.actorEmail, entry.metadata.enabled, entry.metadata.maxFailureRate, entry.metadata.minDevices]).reverse()).toEqual([
      [owner.email, true, 0.05, 20],
      [owner.email, true, 0.1, 50],
      [admin.email, false, 1, 1],
    ])
    expect(entries[0]!.metadata.previous).toEqual({ enabled: true, maxFailureRate: 0.1, minDevices: 50 })
    expect(entries.at(-1)!.summary).toBe(`${owner.email} set ${target.appId} stable's release guard on: pauses when more than 5 % of devices fail, once 20 devices reported`)
  })

  test('a PATCH that changes nothing (the settings it already has, or {}) writes no audit entry and takes no write lock', async () => {
    const count = async () => (await auditEntries('channel.guard')).filter((entry) => entry.targetId === target.miniAppId).length
    const before = await count()
    const current = (await stable(target)).guard
    // a backup or a sqlite3 shell holds the write lock meanwhile
    const other = new Database(context.dataDir.paths.database)
    other.exec('BEGIN IMMEDIATE')
    try {
      for (const guard of [{ enabled: current.enabled, maxFailureRate: current.maxFailureRate, minDevices: current.minDevices }, { enabled: current.enabled }, {}]) {
        const res = await setGuard(target.miniAppId, guard)
        expect({ guard, status: res.status }).toEqual({ guard, status: 200 })
        expect(res.body.guard).toMatchObject({ enabled: current.enabled, maxFailureRate: current.maxFailureRate, minDevices: current.minDevices })
      }
    } finally {
      other.exec('ROLLBACK')
      other.close()
    }
    expect(await count()).toBe(before)
    // a bad body is still refused
    expect(outcome(await setGuard(target.miniAppId, { enabled: current.enabled, minDevices: 0 }))).toEqual({ status: 400, code: 'VALIDATION_ERROR' })
  })

  test('a developer of the miniapp is 403 OWNER_REQUIRED, a stranger 404, an unknown channel 404', async () => {
    expect(outcome(await setGuard(target.miniAppId, { enabled: true }, developer.token))).toEqual({ status: 403, code: 'OWNER_REQUIRED' })
    expect(outcome(await setGuard(target.miniAppId, { enabled: true }, stranger.token))).toEqual({ status: 404, code: 'MINI_APP_NOT_FOUND' })
    expect(outcome(await setGuard(target.miniAppId, { enabled: true }, owner.token, 'nightly'))).toEqual({ status: 404, code: 'CHANNEL_NOT_FOUND' })
    expect(outcome(await setGuard(target.miniAppId, { enabled: true }, owner.token, 'Not_A_Name'))).toEqual({ status: 400, code: 'VALIDATION_ERROR' })
  })

  test('bad settings are 400 VALIDATION_ERROR naming each field: rate in (0, 1], minDevices a whole number ≥ 1', async () => {
    const cases: [unknown, string[]][] = [
      [{ maxFailureRate: 0 }, ['guard.maxFailureRate']],
      [{ maxFailureRate: -0.1 }, ['guard.maxFailureRate']],
      [{ maxFailureRate: 1.01 }, ['guard.maxFailureRate']],
      [{ maxFailureRate: '0.05' }, ['guard.maxFailureRate']],
      [{ minDevices: 0 }, ['guard.minDevices']],
      [{ minDevices: 2.5 }, ['guard.minDevices']],
      [{ minDevices: '20' }, ['guard.minDevices']],
      [{ enabled: 'yes' }, ['guard.enabled']],
      [{ enabled: true, threshold: 0.1 }, ['guard.threshold']],
      [{ maxFailureRate: 2, minDevices: -1 }, ['guard.maxFailureRate', 'guard.minDevices']],
      ['on', ['guard']],
      [null, ['guard']],
      [[true], ['guard']],
    ]
    for (const [guard, fields] of cases) {
      const res = await setGuard(target.miniAppId, guard)
      expect({ guard, ...outcome(res), fields: (res.body.details ?? []).map((detail: { field: string }) => detail.field) }).toEqual({ guard, status: 400, code: 'VALIDATION_ERROR', fields })
    }
    const missing = await context.call('PATCH', `/api/mini-apps/${target.miniAppId}/channels/stable`, { token: owner.token, json: {} })
    expect(outcome(missing)).toEqual({ status: 400, code: 'VALIDATION_ERROR' })
    // nothing of the refused bodies was kept
    expect((await stable(target)).guard).toMatchObject({ enabled: false, maxFailureRate: 1, minDevices: 1 })
  })
})

describe('the check: distinct devices of the newest release, paused as release-guard', () => {
  test('trip: 12 of 140 devices failed (8.6 %) over 5 %: paused within a flush, audited with F, T and the rate, announced once', async () => {
    const target = await fleet('com.example.guard.trip', { enabled: true })
    const hooks: Record<string, string> = {}
    for (const format of ['json', 'slack']) {
      const hook = await context.call('POST', `/api/mini-apps/${target.miniAppId}/webhooks`, { token: owner.token, json: { url: `https://93.184.216.34/${format}`, events: ['rollout.paused'], format } })
      expect(hook.status).toBe(201)
      hooks[format] = hook.body.id
    }
    await report(target, names('ok', 128), 'launched')
    await report(target, names('bad', 12), 'installed')
    await report(target, names('bad', 8), 'failed')
    await report(target, names('bad', 12).slice(8), 'rolled_back')
    // the previous release's devices are not this release's
    await report(target, names('old', 100), 'failed', (await stable(target)).previousRelease.versionId)
    expect((await stable(target)).state).toBe('rolling-out')
    flush()
    const channel = await stable(target)
    expect(channel.state).toBe('paused')
    expect(channel.release).toMatchObject({ version: '1.1.0', rolloutPercent: 50, paused: true, pausedBy: 'release-guard', pauseReason: '12 of 140 devices failed (8.6 %), above the threshold of 5 %' })
    // the console's badge is made of these numbers
    expect(guardPauseText(channel.guard.trip)).toBe('paused by the release guard: 12 of 140 devices failed (8.6 %) — threshold 5 %')
    // and miniship status / channels ls end with the same words
    expect(describeChannel(channel)).toEndWith('. Paused by the release guard: 12 of 140 devices failed (8.6 %) — threshold 5 %.')
    expect(channel.guard.trip).toEqual({ failedDevices: 12, totalDevices: 140, failureRate: 12 / 140, maxFailureRate: 0.05, at: expect.any(String) })
    expect(channel.guard.lastCheck).toEqual({ failedDevices: 12, totalDevices: 140, failureRate: 12 / 140, at: channel.guard.trip.at })
    const entry = (await auditEntries('channel.pause')).find((candidate) => candidate.metadata.appId === target.appId)!
    expect(entry.actorEmail).toBeNull()
    // the console's Who column shows actorName: the guard by its name, not "system"
    expect((entry as { actorName?: string | null }).actorName).toBe('release-guard')
    // the release history's entry has no person: its notes name the guard, as the console's History reads them (web/pages/history.ts historyActor)
    const history = (await context.call('GET', `/api/mini-apps/${target.miniAppId}/workspace`, { token: owner.token })).body.releaseHistory as { action: string; actor: unknown; notes: string | null }[]
    const pauseEntry = history.find((candidate) => candidate.notes?.startsWith('paused by '))!
    expect(pauseEntry.actor).toBeNull()
    expect(pauseEntry.notes).toStartWith('paused by release-guard: 12 of 140 devices failed')
    expect(entry.metadata).toMatchObject({ actor: 'release-guard', channel: 'stable', version: '1.1.0', failedDevices: 12, totalDevices: 140, failureRate: 12 / 140, maxFailureRate: 0.05, minDevices: 20 })
    expect(entry.summary).toBe(`release-guard paused the rollout of ${target.appId} 1.1.0 on stable at 50 % (was rolling-out 50 %): 12 of 140 devices failed (8.6 %), above the threshold of 5 %`)
    expect(pauses.filter((pause) => pause.appId === target.appId)).toEqual([
      { miniAppId: target.miniAppId, appId: target.appId, channel: 'stable', versionId: target.versionId, version: '1.1.0', failedDevices: 12, totalDevices: 140, failureRate: 12 / 140, threshold: 0.05, rolloutPercent: 50, previousPercent: 50, previousState: 'rolling-out', reason: '12 of 140 devices failed (8.6 %), above the threshold of 5 %', warnings: [] },
    ])
    // rollout.paused as queued for the receivers (the body every attempt sends): the names of docs/webhooks.md, and the Slack line with its figures
    const queued = (hookId: string) => context.dataDir.db.select({ event: webhookDeliveries.event, body: webhookDeliveries.body }).from(webhookDeliveries).where(eq(webhookDeliveries.webhookId, hookId)).all()
    const [json] = queued(hooks.json!)
    expect(json!.event).toBe('rollout.paused')
    expect(JSON.parse(json!.body).data).toEqual({
      channel: 'stable',
      version: { id: target.versionId, version: '1.1.0' },
      rolloutPercent: 50,
      previousPercent: 50,
      state: 'paused',
      previousState: 'rolling-out',
      reason: '12 of 140 devices failed (8.6 %), above the threshold of 5 %',
      failedDevices: 12,
      devices: 140,
      failureRate: 12 / 140,
      maxFailureRate: 0.05,
      by: { type: 'system', name: 'release-guard' },
    })
    expect(JSON.parse(queued(hooks.slack!)[0]!.body).text).toBe(`App ${target.appId} (${target.appId}): the rollout of 1.1.0 on stable was paused by release-guard: 12 of 140 devices failed (8.6 %) — threshold 5 %`)
    // later checks of a paused release change nothing and announce nothing
    await report(target, names('late', 5), 'failed')
    flush()
    expect((await auditEntries('channel.pause')).filter((candidate) => candidate.metadata.appId === target.appId)).toHaveLength(1)
    expect(pauses.filter((pause) => pause.appId === target.appId)).toHaveLength(1)
    expect((await stable(target)).guard).toMatchObject({ lastCheck: { failedDevices: 17, totalDevices: 145 }, trip: { failedDevices: 12, totalDevices: 140 } })
  })

  test('a pause that sends the others back to an unsigned release while signatures are required: the pause stands, and its audit entry, its rollout.paused delivery and its Slack line carry FALLBACK_UNSIGNED', async () => {
    const target = await fleet('com.example.guard.unsigned', { enabled: true })
    const hooks: Record<string, string> = {}
    for (const format of ['json', 'slack']) {
      const hook = await context.call('POST', `/api/mini-apps/${target.miniAppId}/webhooks`, { token: owner.token, json: { url: `https://93.184.216.34/${format}`, events: ['rollout.paused'], format } })
      expect(hook.status).toBe(201)
      hooks[format] = hook.body.id
    }
    expect((await context.call('PATCH', `/api/mini-apps/${target.miniAppId}`, { token: owner.token, json: { requireSignature: true } })).status).toBe(200)
    await report(target, names('ok', 120), 'launched')
    await report(target, names('bad', 20), 'failed')
    flush()
    expect((await stable(target)).state).toBe('paused')
    const message = `Devices on stable that do not run 1.1.0 fall back to 1.0.0, which is not signed: host apps that require signatures will refuse it; sign it (miniship sign 1.0.0 --app ${target.appId} --sign-key FILE)`
    const warnings = [{ code: 'FALLBACK_UNSIGNED' as const, message }]
    expect(pauses.find((pause) => pause.appId === target.appId)!.warnings).toEqual(warnings)
    const entry = (await auditEntries('channel.pause')).find((candidate) => candidate.metadata.appId === target.appId)!
    expect(entry.metadata.warnings).toEqual(warnings)
    const queued = (hookId: string) => context.dataDir.db.select({ body: webhookDeliveries.body }).from(webhookDeliveries).where(eq(webhookDeliveries.webhookId, hookId)).all()
    expect(JSON.parse(queued(hooks.json!)[0]!.body).data.warnings).toEqual(warnings)
    expect(JSON.parse(queued(hooks.slack!)[0]!.body).text).toEndWith(`threshold 5 %; warning: ${message} (FALLBACK_UNSIGNED)`)
  })

  test('a pause whose rollout.paused cannot be queued (SQLite refuses the delivery) still stands: the release stops spreading, the failure is logged', async () => {
    const target = await fleet('com.example.guard.unheard', { enabled: true })
    const hook = await context.call('POST', `/api/mini-apps/${target.miniAppId}/webhooks`, { token: owner.token, json: { url: 'https://93.184.216.34/json', events: ['rollout.paused'] } })
    expect(hook.status).toBe(201)
    await report(target, names('ok', 120), 'launched')
    await report(target, names('bad', 20), 'failed')
    const client = context.dataDir.db.$client
    client.run("CREATE TRIGGER refuse_delivery BEFORE INSERT ON webhook_deliveries BEGIN SELECT RAISE(ABORT, 'refused'); END")
    try {
      flush()
    } finally {
      client.run('DROP TRIGGER refuse_delivery')
    }
    const channel = await stable(target)
    expect(channel.state).toBe('paused')
    expect(channel.guard.trip).toMatchObject({ failedDevices: 20, totalDevices: 140 })
    expect(context.logs.some((line) => line.includes('a rollout.paused listener failed') && line.includes('refused'))).toBe(true)
    // the listener's work was undone alone: no delivery row, the other listeners (this test's) still heard it
    expect(context.dataDir.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.webhookId, hook.body.id)).all()).toEqual([])
    expect(pauses.filter((pause) => pause.appId === target.appId)).toHaveLength(1)
  })

  test('hold: 7 of 140 is 5 %, not above 5 %: not paused; an 8th failing device is', async () => {
    const target = await fleet('com.example.guard.hold', { enabled: true })
    await report(target, names('ok', 133), 'launched')
    await report(target, names('bad', 7), 'failed')
    flush()
    expect(await stable(target)).toMatchObject({ state: 'rolling-out', guard: { lastCheck: { failedDevices: 7, totalDevices: 140, failureRate: 0.05 }, trip: null } })
    // one of the devices that were fine now fails: F 8, T still 140
    await report(target, ['ok-0'], 'failed')
    flush()
    expect(await stable(target)).toMatchObject({ state: 'paused', guard: { trip: { failedDevices: 8, totalDevices: 140 } } })
  })

  test('just over the threshold: 21 of 419 devices is 5.01 %, and every word of the pause says so, never "5 % — threshold 5 %"', async () => {
    const target = await fleet('com.example.guard.edge', { enabled: true })
    await report(target, names('ok', 398), 'launched')
    await report(target, names('bad', 21), 'failed')
    flush()
    const channel = await stable(target)
    expect(channel).toMatchObject({ state: 'paused', release: { pausedBy: 'release-guard', pauseReason: '21 of 419 devices failed (5.01 %), above the threshold of 5 %' } })
    expect(guardPauseText(channel.guard.trip)).toBe('paused by the release guard: 21 of 419 devices failed (5.01 %) — threshold 5 %')
    expect(failedText(channel.guard.lastCheck, channel.guard.maxFailureRate)).toBe('21 of 419 devices failed (5.01 %)')
    // below it by as little: one decimal more as well
    expect(failedText({ failedDevices: 20, totalDevices: 401, failureRate: 20 / 401 }, 0.05)).toBe('20 of 401 devices failed (4.99 %)')
    // a threshold set with two decimals is shown with them
    expect(guardStateText({ enabled: true, maxFailureRate: 0.0525, minDevices: 20 })).toBe('release guard on: pauses when more than 5.25 % of devices fail, once 20 devices reported')
  })

  test('too few devices: 19 of 19 failing is under minDevices 20; the 20th device trips it', async () => {
    const target = await fleet('com.example.guard.few', { enabled: true })
    await report(target, names('bad', 19), 'failed')
    flush()
    expect(await stable(target)).toMatchObject({ state: 'rolling-out', guard: { lastCheck: { failedDevices: 19, totalDevices: 19 } } })
    await report(target, ['ok-0'], 'launched')
    flush()
    expect(await stable(target)).toMatchObject({ state: 'paused', guard: { trip: { failedDevices: 19, totalDevices: 20 } } })
  })

  test('one noisy device sending 50 failed events counts once: 1 of 40 devices is 2.5 %', async () => {
    const target = await fleet('com.example.guard.noisy', { enabled: true })
    await report(target, names('ok', 39), 'launched')
    await report(target, Array.from({ length: 50 }, () => 'noisy-phone'), 'failed')
    flush()
    await report(target, Array.from({ length: 50 }, () => 'noisy-phone'), 'rolled_back')
    flush()
    expect(await stable(target)).toMatchObject({ state: 'rolling-out', guard: { lastCheck: { failedDevices: 1, totalDevices: 40 }, trip: null } })
  })

  test('guard off: 12 of 140 failing pause nothing and nothing is counted', async () => {
    const target = await fleet('com.example.guard.off', null)
    await report(target, names('ok', 128), 'launched')
    await report(target, names('bad', 12), 'failed')
    flush()
    expect(await stable(target)).toMatchObject({ state: 'rolling-out', guard: { enabled: false, lastCheck: null, trip: null } })
  })

  test('a person resumes: not paused again for the same F, nor for more good devices; paused again when more devices fail', async () => {
    const target = await fleet('com.example.guard.resume', { enabled: true })
    await report(target, names('ok', 90), 'launched')
    await report(target, names('bad', 10), 'failed')
    flush()
    expect((await stable(target)).state).toBe('paused')
    const resumed = await context.call('PATCH', `/api/mini-apps/${target.miniAppId}/channels/stable/rollout`, { token: owner.token, json: { paused: false } })
    expect(resumed.body.state).toBe('rolling-out')
    flush()
    expect((await stable(target)).state).toBe('rolling-out')
    // the same failing devices again, and new good ones: F stays 10, the rate still over 5 %
    await report(target, names('bad', 10), 'failed')
    await report(target, names('ok2', 20), 'launched')
    flush()
    expect(await stable(target)).toMatchObject({ state: 'rolling-out', guard: { lastCheck: { failedDevices: 10, totalDevices: 120 }, heldAtFailedDevices: 10 } })
    // why a rate over the threshold pauses nothing now, in the words the CLI and the console show
    expect(heldText((await stable(target)).guard)).toBe('held since a person resumed it at 10 failing devices: it pauses again once more than 10 fail')
    // two more devices fail: F 12 > 10 and 12 / 122 is over 5 %
    await report(target, names('worse', 2), 'failed')
    flush()
    expect(await stable(target)).toMatchObject({ state: 'paused', release: { pausedBy: 'release-guard' }, guard: { trip: { failedDevices: 12, totalDevices: 122 } } })
    const guardPauses = (await auditEntries('channel.pause')).filter((entry) => entry.metadata.appId === target.appId)
    expect(guardPauses.map((entry) => entry.metadata.failedDevices).reverse()).toEqual([10, 12])
  })

  test('devices that failed while it was paused, reported just before a person resumes, do not pause it again at once', async () => {
    const target = await fleet('com.example.guard.resume-late', { enabled: true })
    await report(target, names('ok', 90), 'launched')
    await report(target, names('bad', 10), 'failed')
    flush()
    expect((await stable(target)).state).toBe('paused')
    // adopters keep crashing while it is paused: their reports arrive, the next flush has not come yet
    await report(target, names('late', 3), 'failed')
    const resumed = await context.call('PATCH', `/api/mini-apps/${target.miniAppId}/channels/stable/rollout`, { token: owner.token, json: { paused: false } })
    expect(resumed.body.state).toBe('rolling-out')
    // the person resumed knowing of every failure reported so far: held at 13, not paused for them
    expect(resumed.body.guard).toMatchObject({ heldAtFailedDevices: 13, lastCheck: { failedDevices: 13 } })
    flush()
    expect(await stable(target)).toMatchObject({ state: 'rolling-out', guard: { heldAtFailedDevices: 13 } })
    await report(target, names('after', 2), 'failed')
    flush()
    expect(await stable(target)).toMatchObject({ state: 'paused', guard: { trip: { failedDevices: 15 } } })
  })

  test('a person reverting a release with failures not counted yet: reverted, not first paused by the guard (no rollout.paused, no guard audit entry)', async () => {
    const target = await fleet('com.example.guard.revert-first', { enabled: true })
    await report(target, names('ok', 90), 'launched')
    await report(target, names('bad', 10), 'failed')
    // the team saw the crashes before the next flush and reverts
    const reverted = await context.call('PATCH', `/api/mini-apps/${target.miniAppId}/channels/stable/rollout`, { token: owner.token, json: { rolloutPercent: 0 } })
    expect({ status: reverted.status, state: reverted.body.state }).toEqual({ status: 200, state: 'reverted' })
    flush()
    expect(await stable(target)).toMatchObject({ state: 'reverted', guard: { trip: null } })
    expect(pauses.filter((pause) => pause.miniAppId === target.miniAppId)).toEqual([])
    expect((await auditEntries('channel.pause')).filter((entry) => entry.targetId === target.versionId)).toEqual([])
  })

  test('reverted and raised again by a person: held like a resume until more devices fail', async () => {
    const target = await fleet('com.example.guard.revert', { enabled: true })
    const rollout = (json: Record<string, unknown>) => context.call('PATCH', `/api/mini-apps/${target.miniAppId}/channels/stable/rollout`, { token: owner.token, json })
    await report(target, names('ok', 90), 'launched')
    expect((await rollout({ rolloutPercent: 0 })).body.state).toBe('reverted')
    // a reverted release is not watched: failures now pause nothing
    await report(target, names('bad', 10), 'failed')
    flush()
    expect(await stable(target)).toMatchObject({ state: 'reverted', guard: { lastCheck: { failedDevices: 10, totalDevices: 100 }, trip: null } })
    expect((await rollout({ rolloutPercent: 20 })).body.state).toBe('rolling-out')
    flush()
    expect((await stable(target)).state).toBe('rolling-out')
    await report(target, ['worse-0'], 'failed')
    flush()
    expect(await stable(target)).toMatchObject({ state: 'paused', guard: { trip: { failedDevices: 11, totalDevices: 101 } } })
  })

  test('switched off and on again: F and T still count every device since the release was published, those reported while it was off too', async () => {
    const target = await fleet('com.example.guard.again', { enabled: true, minDevices: 1000 })
    await report(target, names('bad', 5), 'failed')
    flush()
    expect((await stable(target)).guard.lastCheck).toMatchObject({ failedDevices: 5, totalDevices: 5 })
    expect((await setGuard(target.miniAppId, { enabled: false })).body.guard).toMatchObject({ enabled: false, lastCheck: { failedDevices: 5 } })
    await report(target, names('ok', 5), 'launched')
    flush()
    expect((await setGuard(target.miniAppId, { enabled: true })).body.guard).toMatchObject({ enabled: true, lastCheck: null })
    await report(target, ['ok-9'], 'launched')
    flush()
    expect((await stable(target)).guard.lastCheck).toMatchObject({ failedDevices: 5, totalDevices: 11 })
  })

  test('switched on after devices failed: it pauses on the devices that reported since the release was published (§15)', async () => {
    const target = await fleet('com.example.guard.late', null)
    await report(target, names('ok', 90), 'launched')
    await report(target, names('bad', 10), 'failed')
    flush()
    expect(await stable(target)).toMatchObject({ state: 'rolling-out', guard: { enabled: false, lastCheck: null } })
    expect((await setGuard(target.miniAppId, { enabled: true })).status).toBe(200)
    // no new event: the next check reads what the release's devices reported so far
    flush()
    expect(await stable(target)).toMatchObject({ state: 'paused', release: { pausedBy: 'release-guard' }, guard: { lastCheck: { failedDevices: 10, totalDevices: 100 }, trip: { failedDevices: 10, totalDevices: 100 } } })
  })

  test('a check whose write fails loses no device: the next one counts them, once', async () => {
    const target = await fleet('com.example.guard.disk', { enabled: true, minDevices: 1000 })
    const client = context.dataDir.db.$client
    client.exec("CREATE TRIGGER refuse_guard_sketch BEFORE INSERT ON guard_device_sketches BEGIN SELECT RAISE(ABORT, 'disk full'); END")
    try {
      await report(target, names('bad', 3), 'failed')
      flush()
      expect(context.logs.some((line) => line.includes('release guard check failed') && line.includes('disk full'))).toBe(true)
      await report(target, [...names('bad', 3), 'ok-0'], 'launched')
    } finally {
      client.exec('DROP TRIGGER refuse_guard_sketch')
    }
    flush()
    expect((await stable(target)).guard.lastCheck).toMatchObject({ failedDevices: 3, totalDevices: 4 })
  })

  test('the counts survive a restart (stored with the flush), and a new release starts from zero, its predecessor’s sketches removed', async () => {
    const target = await fleet('com.example.guard.restart', { enabled: true, minDevices: 1000 })
    await report(target, names('ok', 30), 'launched')
    await report(target, names('bad', 3), 'failed')
    flush()
    // a second app on the same data directory: what serve finds after a restart
    const again = createApp({ config: context.config, db: context.dataDir.db, paths: context.dataDir.paths, secret: context.dataDir.secret, clock: () => context.now.value, log: () => {} })
    const events = [...names('bad', 3), 'bad-new'].map((deviceId) => ({ appId: target.appId, versionId: target.versionId, platform: 'ios', event: 'failed', channel: 'stable', deviceId }))
    const res = await again.handle(new Request('http://localhost/api/mini-apps/access/events', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ events }) }))
    expect(res.status).toBe(202)
    again.store.insights.flush()
    expect((await stable(target)).guard.lastCheck).toMatchObject({ failedDevices: 4, totalDevices: 34 })
    const sketches = () => context.dataDir.db.$client.query<{ n: number }, []>("SELECT count(*) AS n FROM guard_device_sketches").get()!.n
    expect(sketches()).toBeGreaterThan(0)
    const version = (await upload(context, owner.token, target.appId, uploadForm(target.appId, { version: '1.2.0' }))).body.id
    expect((await context.call('POST', `/api/mini-apps/${target.miniAppId}/versions/${version}/publish`, { token: owner.token, json: { rolloutPercent: 10 } })).status).toBe(200)
    await report(target, ['bad-0'], 'failed', version)
    flush()
    expect((await stable(target)).guard.lastCheck).toMatchObject({ failedDevices: 1, totalDevices: 1 })
    const releaseIds = context.dataDir.db.$client.query<{ id: string }, []>('SELECT DISTINCT release_id AS id FROM guard_device_sketches').all()
    const newest = context.dataDir.db.$client.query<{ id: string }, [string]>('SELECT id FROM channel_releases WHERE version_id = ?').get(version)!
    // only the releases the guard watches keep sketches: this app's newest, and the other tests' guarded channels
    expect(releaseIds.map((row) => row.id)).toContain(newest.id)
    const watchedOld = context.dataDir.db.$client.query<{ id: string }, [string]>('SELECT id FROM channel_releases WHERE version_id = ?').get(target.versionId)!
    expect(releaseIds.map((row) => row.id)).not.toContain(watchedOld.id)
  })
})
