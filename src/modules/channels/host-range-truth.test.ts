// A complete release that targets host versions does not reach every device: the channel's words and the versions' standings say who gets the release before it, over HTTP.
import { describe, expect, test } from 'bun:test'
import { appWithVersions, ownedTestApp } from '../../test-fixtures'
import { channelDevicesText, rolledBackVersions, versionStandingText } from './words'
import { describeChannel } from '../../client/status'
import type { Channel } from '../../client/publish'

const owned = ownedTestApp()

async function setUp(appId: string) {
  const { miniAppId, ids, publish } = await appWithVersions(owned, appId, ['1.0.0', '1.1.0'])
  const publishFor = async (version: string, hostVersionRange: string) =>
    expect((await owned.context.call('POST', `/api/mini-apps/${miniAppId}/versions/${ids[version]}/publish`, { token: owned.owner.token, json: { hostVersionRange } })).status).toBe(200)
  /** the version a device on `hostVersion` is offered, or null when the channel serves it nothing */
  const offered = async (hostVersion: string) => {
    const res = await owned.context.call('GET', `/api/mini-apps/access/apps/${appId}/update?platform=ios&deviceId=dev-1&currentVersion=0.9.0&hostVersion=${hostVersion}`)
    if (res.status === 404) return null
    expect(res.status).toBe(200)
    return res.body.updateAvailable ? (res.body.install.version as string) : '0.9.0'
  }
  const workspace = async () => (await owned.context.call('GET', `/api/mini-apps/${miniAppId}/workspace`, { token: owned.owner.token })).body
  const stable = async () => ((await workspace()).channels as Channel[]).find((channel) => channel.name === 'stable')!
  const standings = async () => {
    const body = await workspace()
    const rolledBack = rolledBackVersions(body.releaseHistory)
    return Object.fromEntries(body.versions.map((v: { id: string; version: string; status: string }) => [v.version, versionStandingText(v, body.channels, rolledBack)]))
  }
  return { publish, publishFor, offered, stable, standings }
}

describe('a complete release with a host version range', () => {
  test('the channel does not say every device gets it, and the release before it reads live, not replaced', async () => {
    const app = await setUp('com.example.hostcomplete')
    await app.publish('1.0.0', 100)
    await app.publishFor('1.1.0', '>=3.0.0')
    // what devices get: an older host app gets 1.0.0
    expect(await app.offered('3.1.0')).toBe('1.1.0')
    expect(await app.offered('2.5.0')).toBe('1.0.0')
    const stable = await app.stable()
    expect(stable.state).toBe('complete')
    const words = channelDevicesText(stable)
    expect(words).not.toBe('Every device gets 1.1.0.')
    expect(words).toContain('1.0.0')
    expect(words).toContain('>=3.0.0')
    // miniship status and channels ls say the same
    expect(describeChannel(stable)).toContain(words)
    const standings = await app.standings()
    expect(standings['1.1.0']).toBe('live on stable, complete 100 %')
    expect(standings['1.0.0']).toStartWith('live on stable')
    expect(standings['1.0.0']).toContain('>=3.0.0')
  })

  test('with no release before it, the others get none', async () => {
    const app = await setUp('com.example.hostfirst')
    await app.publishFor('1.0.0', '>=3.0.0')
    expect(await app.offered('2.5.0')).toBeNull()
    const words = channelDevicesText(await app.stable())
    expect(words).not.toBe('Every device gets 1.0.0.')
    expect(words).toContain('>=3.0.0')
  })

  // an older release no host outside the newest's range fits is not what the others get: it reads replaced, and the words do not name it
  for (const [why, appId, newest, outside] of [
    ['for the same hosts', 'com.example.hostsame', '>=3.0.0', '2.5.0'],
    // a host below 2.0.0 gets nothing: 1.0.0 needs 3.0.0 or later
    ['for a narrower lower bound (>=3.0.0 under a newest >=2.0.0)', 'com.example.hostnarrower', '>= 2.0.0', '1.5.0'],
  ] as const) {
    test(`a release before it ${why} fits no host outside: it reads replaced, and the words do not name it`, async () => {
      const app = await setUp(appId)
      await app.publishFor('1.0.0', '>=3.0.0')
      await app.publishFor('1.1.0', newest)
      expect(await app.offered(outside)).toBeNull()
      expect(await app.offered('3.1.0')).toBe('1.1.0')
      expect(channelDevicesText(await app.stable())).not.toContain('they get 1.0.0')
      expect(await app.standings()).toEqual({ '1.1.0': 'live on stable, complete 100 %', '1.0.0': 'replaced on stable' })
    })
  }

  test('a release before it for a lower bound below the newest\'s (>=2.0.0 under >=3.0.0) is what hosts between get: live', async () => {
    const app = await setUp('com.example.hostwider')
    await app.publishFor('1.0.0', '>=2.0.0')
    await app.publishFor('1.1.0', '>=3.0.0')
    expect(await app.offered('2.5.0')).toBe('1.0.0')
    expect((await app.standings())['1.0.0']).toStartWith('live on stable for host apps outside >=3.0.0')
  })

  test('a complete release for any host still reads "every device"', async () => {
    const app = await setUp('com.example.hostany')
    await app.publish('1.0.0', 100)
    await app.publish('1.1.0', 100)
    expect(channelDevicesText(await app.stable())).toBe('Every device gets 1.1.0.')
    expect(await app.standings()).toEqual({ '1.1.0': 'live on stable, complete 100 %', '1.0.0': 'replaced on stable' })
  })
})
