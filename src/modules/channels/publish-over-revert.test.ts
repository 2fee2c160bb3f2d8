// Publishing over a reverted release does not bring the reverted version back to the devices outside the new rollout, over HTTP.
import { describe, expect, test } from 'bun:test'
import { appWithVersions, ownedTestApp } from '../../test-fixtures'
import { rolloutBucket } from './decide'
import { rolledBackVersions, versionStandingText } from './words'
import { jsonDocument, runCli } from '../../cli/test-run'

const access = '/api/mini-apps/access'

const owned = ownedTestApp()

async function setUp(appId: string, versions: string[]) {
  const { miniAppId, ids, publish } = await appWithVersions(owned, appId, versions)
  const revert = async () => expect((await owned.context.call('PATCH', `/api/mini-apps/${miniAppId}/channels/stable/rollout`, { token: owned.owner.token, json: { rolloutPercent: 0 } })).body.state).toBe('reverted')
  /** a device outside the rollout of `version` */
  const outside = (version: string, salt: string) => {
    for (let index = 0; ; index++) if (rolloutBucket(appId, ids[version]!, `${salt}${index}`) >= 10) return `${salt}${index}`
  }
  /** the version a device running `currentVersion` is offered, or keeps; null when the channel serves it nothing */
  const offered = async (deviceId: string, currentVersion: string) => {
    const res = await owned.context.call('GET', `${access}/apps/${appId}/update?platform=ios&deviceId=${deviceId}&currentVersion=${currentVersion}`)
    if (res.status === 404) return null
    expect(res.status).toBe(200)
    return res.body.updateAvailable ? (res.body.install.version as string) : currentVersion
  }
  const stable = async () => ((await owned.context.call('GET', `/api/mini-apps/${miniAppId}/channels`, { token: owned.owner.token })).body.channels as { name: string; previousRelease: { version: string } | null; defaultRelease: { version: string } | null }[]).find((channel) => channel.name === 'stable')!
  /** each version's standing as the console words it from the workspace it reads */
  const consoleStandings = async () => {
    const workspace = (await owned.context.call('GET', `/api/mini-apps/${miniAppId}/workspace`, { token: owned.owner.token })).body
    const rolledBack = rolledBackVersions(workspace.releaseHistory)
    return Object.fromEntries(workspace.versions.map((v: { id: string; version: string; status: string }) => [v.version, versionStandingText(v, workspace.channels, rolledBack)]))
  }
  const setPercent = async (rolloutPercent: number) => expect((await owned.context.call('PATCH', `/api/mini-apps/${miniAppId}/channels/stable/rollout`, { token: owned.owner.token, json: { rolloutPercent } })).status).toBe(200)
  return { miniAppId, publish, revert, setPercent, outside, offered, stable, consoleStandings }
}

describe('a release published over a reverted one', () => {
  test('the devices outside its rollout keep the release before the reverted one, not the reverted one', async () => {
    const app = await setUp('com.example.overrevert', ['1.0.0', '1.1.0', '1.2.0'])
    await app.publish('1.0.0', 100)
    await app.publish('1.1.0', 30)
    await app.revert()
    await app.publish('1.2.0', 10)
    const device = app.outside('1.2.0', 'outside-')
    expect(await app.offered(device, '1.0.0')).toBe('1.0.0')
    // a device that had adopted 1.1.0 before the revert is sent back, as the revert said
    expect(await app.offered(device, '1.1.0')).toBe('1.0.0')
    expect(await app.stable()).toMatchObject({ previousRelease: { version: '1.0.0' }, defaultRelease: { version: '1.0.0' } })
  })

  test('a reverted first release stays with no device when a fix is published at 10 %', async () => {
    const app = await setUp('com.example.firstrevert', ['1.0.0', '1.0.1'])
    await app.publish('1.0.0', 100)
    await app.revert()
    await app.publish('1.0.1', 10)
    expect(await app.offered(app.outside('1.0.1', 'first-'), '0.9.0')).toBeNull()
    expect(await app.stable()).toMatchObject({ previousRelease: null, defaultRelease: null })
  })

  test('the reverted release reads "reverted on stable", not "replaced", in the API, the console and versions ls, before and after the fix completes', async () => {
    const appId = 'com.example.revertedbelow'
    const app = await setUp(appId, ['1.0.0', '1.1.0', '1.2.0'])
    await app.publish('1.0.0', 100)
    await app.publish('1.1.0', 100)
    await app.revert()
    await app.publish('1.2.0', 10)
    // no device gets 1.1.0 (decide.ts), and the channel says so
    expect(await app.offered(app.outside('1.2.0', 'below-'), '1.1.0')).toBe('1.0.0')
    expect(await app.stable()).toMatchObject({ state: 'rolling-out', previousRelease: { version: '1.0.0' }, pausedReleases: [], revertedReleases: [{ version: '1.1.0', rolloutPercent: 0 }] })
    const rolling = { '1.2.0': 'live on stable, rolling-out 10 %', '1.1.0': 'reverted on stable', '1.0.0': 'live on stable for the devices outside the rollout of 1.2.0' }
    expect(await app.consoleStandings()).toEqual(rolling)
    // the CLI, against this server
    const server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: (request) => owned.context.app.handle(request) })
    try {
      const env = { MINISHIP_TOKEN: owned.owner.token, MINISHIP_SERVER: `http://127.0.0.1:${server.port}` }
      const listed = jsonDocument(await runCli(['versions', 'ls', appId, '--json'], { env })) as { versions: { version: string; standing: string }[] }
      expect(Object.fromEntries(listed.versions.map((v) => [v.version, v.standing]))).toEqual(rolling)
      const text = await runCli(['versions', 'ls', appId], { env })
      expect(text.stdout).toContain(`${'1.1.0'.padEnd(20)} build 2     reverted on stable\n`)
      // completed: 1.0.0 is replaced, 1.1.0 still reverted (no device ever got it back)
      await app.setPercent(100)
      const complete = { '1.2.0': 'live on stable, complete 100 %', '1.1.0': 'reverted on stable', '1.0.0': 'replaced on stable' }
      expect(await app.consoleStandings()).toEqual(complete)
      const after = jsonDocument(await runCli(['versions', 'ls', appId, '--json'], { env })) as { versions: { version: string; standing: string }[] }
      expect(Object.fromEntries(after.versions.map((v) => [v.version, v.standing]))).toEqual(complete)
    } finally {
      server.stop(true)
    }
  }, 30_000)
})
