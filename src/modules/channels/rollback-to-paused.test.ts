// A rollback to a paused release below the newest (§13) clears the pause and serves it to every device: the answer, the
// audit entry and `miniship rollback` say so (ROLLBACK_CLEARS_PAUSE), over HTTP and the real CLI against the app on a temp data directory.
import { describe, expect, test } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import { appWithVersions, servedTestApp } from '../../test-fixtures'
import { jsonDocument } from '../../cli/test-run'
import { auditLogs } from '../../db/schema'
import { rollbackClearsPauseFor, type ChannelView } from './words'

const served = servedTestApp()

const cli = served.cli

/** 1.0.0 at 100 %, 1.1.0 at 30 % paused (with `reason`), 1.2.0 published over it at 10 %. */
async function pausedBelow(appId: string, reason: string | null) {
  const { miniAppId, ids, publish } = await appWithVersions(served, appId, ['1.0.0', '1.1.0', '1.2.0'])
  await publish('1.0.0', 100)
  await publish('1.1.0', 30)
  expect((await served.context.call('PATCH', `/api/mini-apps/${miniAppId}/channels/stable/rollout`, { token: served.owner.token, json: reason ? { paused: true, reason } : { paused: true } })).status).toBe(200)
  await publish('1.2.0', 10)
  const stable = (await served.context.call('GET', `/api/mini-apps/${miniAppId}/channels`, { token: served.owner.token })).body.channels[0]
  expect(stable).toMatchObject({ name: 'stable', release: { version: '1.2.0' }, pausedReleases: [{ version: '1.1.0', paused: true }], pausedBelow: [{ version: '1.1.0', paused: true }] })
  const rollback = (version: string) => served.context.call('POST', `/api/mini-apps/${miniAppId}/rollback`, { token: served.owner.token, json: { targetVersionId: ids[version] } })
  return { miniAppId, ids, rollback }
}

describe('a rollback to a paused release', () => {
  test('the answer warns that the pause is cleared and every device gets it, naming who paused and why; the audit entry keeps the pause', async () => {
    const app = await pausedBelow('com.example.backtopaused', 'crash on Android 9')
    const res = await app.rollback('1.1.0')
    expect(res.status).toBe(200)
    expect(res.body.warnings).toEqual([
      { code: 'ROLLBACK_CLEARS_PAUSE', message: `1.1.0 was paused by ${served.owner.email} (crash on Android 9); rolling back to it clears the pause and sends it to every device on stable` },
    ])
    // what it says is what happened
    const stable = (await served.context.call('GET', `/api/mini-apps/${app.miniAppId}/channels`, { token: served.owner.token })).body.channels[0]
    expect(stable).toMatchObject({ state: 'complete', release: { version: '1.1.0', rolloutPercent: 100, paused: false }, pausedReleases: [] })
    const audit = served.context.dataDir.db.select().from(auditLogs).where(and(eq(auditLogs.action, 'version.rollback'), eq(auditLogs.targetId, app.ids['1.1.0']!))).get()!
    expect(audit.summary).toBe(`${served.owner.email} rolled com.example.backtopaused back to 1.1.0 on stable, clearing its pause`)
    expect(JSON.parse(audit.metadata)).toMatchObject({ clearedPause: { pausedBy: served.owner.email, reason: 'crash on Android 9' } })
  })

  test('a rollback to a release that is not paused warns of nothing', async () => {
    const app = await pausedBelow('com.example.backtoplain', null)
    const res = await app.rollback('1.0.0')
    expect(res.status).toBe(200)
    expect(res.body.warnings).toEqual([])
  })

  test('paused further down, below the previous release: the channel lists it in pausedBelow (not pausedReleases), and what the console says before confirming is the warning the answer carries', async () => {
    const appId = 'com.example.backtodeep'
    const { miniAppId, ids, publish } = await appWithVersions(served, appId, ['1.0.0', '1.1.0', '1.2.0', '1.3.0'])
    await publish('1.0.0', 100)
    await publish('1.1.0', 30)
    expect((await served.context.call('PATCH', `/api/mini-apps/${miniAppId}/channels/stable/rollout`, { token: served.owner.token, json: { paused: true, reason: 'crash spike' } })).status).toBe(200)
    await publish('1.2.0', 100)
    await publish('1.3.0', 20)
    const stable = async () => (await served.context.call('GET', `/api/mini-apps/${miniAppId}/channels`, { token: served.owner.token })).body.channels[0] as ChannelView & { name: string }
    const before = await stable()
    // below 1.2.0, the previous release: not one the devices outside the rollout pass over, so not in pausedReleases
    expect(before).toMatchObject({ release: { version: '1.3.0' }, previousRelease: { version: '1.2.0' }, pausedReleases: [], pausedBelow: [{ version: '1.1.0', paused: true, pausedBy: served.owner.email, pauseReason: 'crash spike' }] })
    // the console's Roll back… dialog, for each version, says what the answer then warns of
    const said = (version: string) => rollbackClearsPauseFor(before, { id: ids[version]!, version })
    expect(said('1.2.0')).toBeNull()
    expect(said('1.0.0')).toBeNull()
    const message = said('1.1.0')
    expect(message).toBe(`1.1.0 was paused by ${served.owner.email} (crash spike); rolling back to it clears the pause and sends it to every device on stable`)
    const res = await served.context.call('POST', `/api/mini-apps/${miniAppId}/rollback`, { token: served.owner.token, json: { targetVersionId: ids['1.1.0'] } })
    expect(res.status).toBe(200)
    expect(res.body.warnings).toEqual([{ code: 'ROLLBACK_CLEARS_PAUSE', message }])
    expect(await stable()).toMatchObject({ state: 'complete', release: { version: '1.1.0', paused: false }, pausedReleases: [], pausedBelow: [] })
  })

  test('miniship rollback prints the warning on stderr, and with --json as a warning entry', async () => {
    await pausedBelow('com.example.backtopaused.cli', null)
    const run = await cli(['rollback', 'com.example.backtopaused.cli', '1.1.0'])
    expect(run.exitCode).toBe(0)
    expect(run.stdout).toBe('Rolled com.example.backtopaused.cli back to 1.1.0 on stable.\n')
    const message = `1.1.0 was paused by ${served.owner.email}; rolling back to it clears the pause and sends it to every device on stable`
    expect(run.stderr).toBe(`warning: ${message} (ROLLBACK_CLEARS_PAUSE)\n`)

    await pausedBelow('com.example.backtopaused.json', 'suspect')
    const json = await cli(['rollback', 'com.example.backtopaused.json', '1.1.0', '--json'])
    expect(json.exitCode).toBe(0)
    expect(jsonDocument(json)).toMatchObject({
      version: { version: '1.1.0' },
      warnings: [{ code: 'ROLLBACK_CLEARS_PAUSE', message: `1.1.0 was paused by ${served.owner.email} (suspect); rolling back to it clears the pause and sends it to every device on stable` }],
    })
    // a rollback to a release that was not paused: no warning, and an empty list with --json
    const plain = await cli(['rollback', 'com.example.backtopaused.json', '1.0.0', '--json'])
    expect(plain.stderr).toBe('')
    expect(jsonDocument(plain)).toMatchObject({ version: { version: '1.0.0' }, warnings: [] })
  }, 30_000)
})

describe('a rollback to a reverted release', () => {
  test('below the newest (no device gets it): the console says before confirming what the answer then warns, ROLLBACK_OF_REVERTED, and the rollback sends it to every device', async () => {
    const appId = 'com.example.backtoreverted'
    const { miniAppId, ids, publish } = await appWithVersions(served, appId, ['1.0.0', '1.1.0', '1.2.0'])
    await publish('1.0.0', 100)
    await publish('1.1.0', 30)
    // paused first, then reverted: the revert is what the words name
    expect((await served.context.call('PATCH', `/api/mini-apps/${miniAppId}/channels/stable/rollout`, { token: served.owner.token, json: { paused: true, reason: 'crash spike' } })).status).toBe(200)
    expect((await served.context.call('PATCH', `/api/mini-apps/${miniAppId}/channels/stable/rollout`, { token: served.owner.token, json: { rolloutPercent: 0 } })).body.state).toBe('reverted')
    await publish('1.2.0', 10)
    const stable = async () => (await served.context.call('GET', `/api/mini-apps/${miniAppId}/channels`, { token: served.owner.token })).body.channels[0] as ChannelView & { name: string }
    const before = await stable()
    expect(before).toMatchObject({ release: { version: '1.2.0' }, revertedReleases: [{ version: '1.1.0' }] })
    const message = '1.1.0 was reverted on stable (no device gets it); rolling back to it sends it to every device on stable'
    expect(rollbackClearsPauseFor(before, { id: ids['1.1.0']!, version: '1.1.0' })).toBe(message)
    expect(rollbackClearsPauseFor(before, { id: ids['1.0.0']!, version: '1.0.0' })).toBeNull()
    const run = await cli(['rollback', appId, '1.1.0', '--json'])
    expect(run.exitCode).toBe(0)
    expect(jsonDocument(run)).toMatchObject({ version: { version: '1.1.0' }, warnings: [{ code: 'ROLLBACK_OF_REVERTED', message }] })
    expect(run.stderr).toBe(`warning: ${message} (ROLLBACK_OF_REVERTED)\n`)
    expect(await stable()).toMatchObject({ state: 'complete', release: { version: '1.1.0', rolloutPercent: 100 }, revertedReleases: [] })
    const audit = served.context.dataDir.db.select().from(auditLogs).where(and(eq(auditLogs.action, 'version.rollback'), eq(auditLogs.targetId, ids['1.1.0']!))).get()!
    expect(audit.summary).toBe(`${served.owner.email} rolled ${appId} back to 1.1.0 on stable, a release reverted there`)
  }, 30_000)
})

test('a rollback to a reverted release that a rollback withdrew since: ROLLBACK_OF_REVERTED too (no device gets it, and every one will)', async () => {
  const appId = 'com.example.backtowithdrawn'
  const { miniAppId, ids, publish } = await appWithVersions(served, appId, ['1.0.0', '1.1.0'])
  await publish('1.0.0', 100)
  await publish('1.1.0', 30)
  expect((await served.context.call('PATCH', `/api/mini-apps/${miniAppId}/channels/stable/rollout`, { token: served.owner.token, json: { rolloutPercent: 0 } })).body.state).toBe('reverted')
  const rollback = (version: string) => served.context.call('POST', `/api/mini-apps/${miniAppId}/rollback`, { token: served.owner.token, json: { targetVersionId: ids[version] } })
  // back to 1.0.0: the reverted 1.1.0 is withdrawn, and 1.0.0 was never reverted
  expect((await rollback('1.0.0')).body.warnings).toEqual([])
  const message = '1.1.0 was reverted on stable (no device gets it); rolling back to it sends it to every device on stable'
  // the console's Roll back… dialog knows it from the workspace (the channel no longer lists it)
  const workspace = async () => (await served.context.call('GET', `/api/mini-apps/${miniAppId}/workspace`, { token: served.owner.token })).body as { versions: { id: string; version: string; revertedIn: string[] }[] }
  const stable = (await served.context.call('GET', `/api/mini-apps/${miniAppId}/channels`, { token: served.owner.token })).body.channels[0] as ChannelView & { name: string }
  expect(stable.revertedReleases).toEqual([])
  const listed = (await workspace()).versions.find((version) => version.version === '1.1.0')!
  expect(listed.revertedIn).toEqual(['stable'])
  expect(rollbackClearsPauseFor(stable, listed)).toBe(message)
  expect(rollbackClearsPauseFor(stable, (await workspace()).versions.find((version) => version.version === '1.0.0')!)).toBeNull()
  const res = await rollback('1.1.0')
  expect(res.status).toBe(200)
  expect(res.body.warnings).toEqual([{ code: 'ROLLBACK_OF_REVERTED', message }])
  expect((await workspace()).versions.find((version) => version.version === '1.1.0')!.revertedIn).toEqual([])
  // and back to 1.0.0 once more: it was replaced, not reverted
  expect((await rollback('1.0.0')).body.warnings).toEqual([])
})
