// The rest of what issue 33 asks the update client to get right, each against the compiled binary and on disk
// (fileStorage, as a Node host app keeps it): a crash at any storage write leaves the old version or the new
// one whole; a host app updated outside the release's hostVersionRange drops it at start(); progress and the
// mandatory flag; events kept on storage while offline (bounded) and sent at the next check.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createHash } from 'node:crypto'
import { cpSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { createUpdater, UpdateError, type FetchLike, type UpdaterOptions } from '../sdk/index'
import { fileStorage } from '../sdk/node'
import { failingStorage } from '../sdk/failing-storage'
import { startPublisher, type Publisher } from './sdk-support'
import { tempDir } from './support'

const appId = 'com.example.device'
let dir: string
let publisher: Publisher
const ids: Record<string, string> = {}

beforeAll(async () => {
  dir = tempDir('miniship-sdk-device-e2e-')
  publisher = await startPublisher(dir, appId, ['--insights-flush', '1s'])
  for (const version of ['1.0.0', '1.1.0']) ids[version] = await publisher.upload(version)
  await publisher.publish(ids['1.0.0']!)
}, 120_000)

afterAll(async () => {
  if (publisher) await publisher.server.stop()
  rmSync(dir, { recursive: true, force: true })
})

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex')

/** An updater of `deviceId` on the files under `root`, optionally through `storage` instead. */
function device(root: string, deviceId: string, options: Partial<UpdaterOptions> = {}) {
  return createUpdater({ serverUrl: publisher.server.baseUrl, appId, platform: 'ios', deviceId, storage: fileStorage(root), ...options })
}

/** The sha256 of each file, by kind, as install info names them. */
const digests = (files: Record<string, { sha256: string }>) => Object.fromEntries(Object.entries(files).map(([kind, file]) => [kind, file.sha256]))

describe('the update client on disk, against the binary', () => {
  test('a crash at any storage write of a download leaves 1.0.0 or 1.1.0 whole, never a mix; nothing but UpdateError is thrown', async () => {
    // a device that runs 1.0.0, confirmed
    const base = join(dir, 'crash-base')
    const first = device(base, 'crash-device')
    await first.start()
    const old = (await first.check())!
    await first.download(old)
    await first.start()
    await first.markReady()
    await publisher.publish(ids['1.1.0']!)
    const next = (await first.check())!
    expect(next.version).toBe('1.1.0')
    const expected: Record<string, Record<string, string>> = { '1.0.0': digests(old.install.files), '1.1.0': digests(next.install.files) }

    const outcomes = new Set<string>()
    for (let failAt = 1; ; failAt++) {
      const root = join(dir, `crash-${failAt}`)
      cpSync(base, root, { recursive: true })
      const failing = failingStorage(fileStorage(root), failAt)
      const client = device(root, 'crash-device', { storage: failing })
      let finished = false
      try {
        await client.start()
        await client.download((await client.check())!)
        finished = true
      } catch (error) {
        expect(error).toBeInstanceOf(UpdateError)
      }
      // the process dies here; the next launch reads what is on disk
      const { current } = await device(root, 'crash-device').start()
      expect(current).not.toBeNull()
      outcomes.add(current!.version)
      const want = expected[current!.version]!
      expect({ at: failAt, version: current!.version, bundle: sha256(readFileSync(current!.bundle)), manifest: sha256(readFileSync(current!.manifest)), assets: sha256(readFileSync(current!.assets)) }).toEqual({
        at: failAt,
        version: current!.version,
        bundle: want.bundleIos!,
        manifest: want.manifest!,
        assets: want.assetsIos!,
      })
      rmSync(root, { recursive: true, force: true })
      if (finished && failing.writes < failAt) break
      expect(failAt).toBeLessThan(300)
    }
    expect([...outcomes].sort()).toEqual(['1.0.0', '1.1.0'])
  }, 120_000)

  test('progress and the mandatory flag; a host app updated outside the release’s hostVersionRange drops it at start(), and the next check asks afresh', async () => {
    const mandatory = await publisher.upload('1.2.0')
    await publisher.publish(mandatory, { hostVersionRange: '>=1 <2', mandatory: true })
    const root = join(dir, 'host-device')
    const asked: string[] = []
    const spy: FetchLike = (url, init) => {
      if (url.includes('/update?')) asked.push(url)
      return fetch(url, init as RequestInit)
    }
    const onOld = device(root, 'host-device', { hostVersion: '1.5', fetch: spy })
    await onOld.start()
    const update = (await onOld.check())!
    expect(update).toMatchObject({ version: '1.2.0', versionId: mandatory, mandatory: true })
    expect(update.install.hostVersionRange).toBe('>=1 <2')
    const files = update.install.files
    const total = files.bundleIos.size + files.manifest.size + files.assetsIos.size
    const progress: Array<[number, number]> = []
    await onOld.download(update, { onProgress: (received, all) => progress.push([received, all]) })
    expect(progress.length).toBeGreaterThan(2)
    expect(progress.every(([, all]) => all === total)).toBe(true)
    expect(progress.every(([received], index) => index === 0 || received > progress[index - 1]![0])).toBe(true)
    expect(progress.at(-1)).toEqual([total, total])
    expect((await device(root, 'host-device', { hostVersion: '1.5' }).start()).current!.version).toBe('1.2.0')

    // a store update of the host app to 2.0: 1.2.0 is not for it
    const onNew = device(root, 'host-device', { hostVersion: '2.0', fetch: spy })
    const started = await onNew.start()
    expect(started).toEqual({ current: null, dropped: { versionId: mandatory, version: '1.2.0', hostVersionRange: '>=1 <2' } })
    expect(onNew.current()).toBeNull()
    asked.length = 0
    const offered = await onNew.check()
    expect(new URL(asked[0]!).searchParams.get('hostVersion')).toBe('2.0.0')
    expect(new URL(asked[0]!).searchParams.get('currentVersion')).toBe('0.0.0')
    // the server skips the release a 2.0 host may not run and offers the one before it
    expect(offered!.version).toBe('1.1.0')
  }, 60_000)

  test('events wait on disk while offline, the oldest dropped past maxPendingEvents, and go with the next check once online', async () => {
    const beta = await publisher.call('POST', `/api/mini-apps/${publisher.miniAppId}/channels`, { name: 'beta' })
    expect(beta.status).toBe(201)
    const release = await publisher.upload('3.0.0')
    expect((await publisher.call('POST', `/api/mini-apps/${publisher.miniAppId}/versions/${release}/publish`, { channel: 'beta' })).status).toBe(200)
    const root = join(dir, 'offline-device')
    let online = true
    const network: FetchLike = (url, init) => (online ? fetch(url, init as RequestInit) : Promise.reject(new TypeError('Network request failed')))
    const options = { channel: 'beta', fetch: network, maxPendingEvents: 3 }
    const phone = device(root, 'offline-device', options)
    await phone.start()
    await phone.download((await phone.check())!)
    // offline from here: installed, launched, launched, rolled_back, of which the 3 latest are kept
    online = false
    for (let launch = 0; launch < 3; launch++) await device(root, 'offline-device', options).start()
    const offline = device(root, 'offline-device', options)
    const error = await offline.flushEvents().catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(UpdateError)
    expect((error as UpdateError).code).toBe('NETWORK')
    const kept = JSON.parse(readFileSync(join(root, 'events.json'), 'utf8')) as Array<{ event: { event: string; versionId: string } }>
    expect(kept.map((entry) => entry.event.event)).toEqual(['launched', 'launched', 'rolled_back'])

    // back online, after a restart: the next check sends them, and insights count them
    online = true
    const restarted = device(root, 'offline-device', options)
    await restarted.start()
    expect(await restarted.check()).toBeNull() // 3.0.0 crash-looped here: not offered again
    expect(await restarted.flushEvents()).toEqual({ sent: 0, pending: 0 })
    let row: { installed: number; launched: number; rolledBack: number } | undefined
    for (let attempt = 0; attempt < 100; attempt++) {
      const report = await publisher.call('GET', `/api/mini-apps/${publisher.miniAppId}/insights?days=1&channel=beta`)
      expect(report.status).toBe(200)
      row = report.body.days.flatMap((day: { versions: unknown[] }) => day.versions).find((version: { versionId: string }) => version.versionId === release)
      if (row && row.rolledBack === 1 && row.launched === 2) break
      await Bun.sleep(100)
    }
    expect(row).toMatchObject({ installed: 0, launched: 2, rolledBack: 1 })
  }, 60_000)
})
