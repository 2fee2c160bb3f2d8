// The channel decision of decisions §10 as a table, plus the bucket's distribution and stability.
import { describe, expect, spyOn, test } from 'bun:test'
import { createHash } from 'node:crypto'
import { decideRelease, rolloutBucket, type LiveRelease } from './decide'

const appId = 'com.example.shop'

function release(version: string, extra: Partial<LiveRelease> = {}): LiveRelease {
  return { versionId: `v-${version}`, version, rolloutPercent: 100, hostVersionRange: null, mandatory: false, ...extra }
}

/** A deviceId whose bucket for `versionId` is exactly `bucket` (found by trying ids in order). */
function deviceInBucket(versionId: string, bucket: number): string {
  for (let index = 0; ; index++) {
    const deviceId = `device-${index}`
    if (rolloutBucket(appId, versionId, deviceId) === bucket) return deviceId
  }
}

describe('rolloutBucket', () => {
  test('is the first 4 bytes of sha256(appId:versionId:deviceId), big-endian, mod 100', () => {
    for (const [version, device] of [['01J0', 'a'], ['v-2', 'ü-device'], ['x', '']]) {
      const digest = createHash('sha256').update(`${appId}:${version}:${device}`, 'utf8').digest()
      expect(rolloutBucket(appId, version!, device!)).toBe(digest.readUInt32BE(0) % 100)
    }
    // a fixed value, so a change of the function (or of its input's shape) cannot go unnoticed
    expect(rolloutBucket('app', 'version', 'device')).toBe(createHash('sha256').update('app:version:device').digest().readUInt32BE(0) % 100)
  })

  test('10,000 random devices at 25 % give 25 % ± 1.5 %, the same device always the same answer, and 25 → 50 keeps everyone who had it', () => {
    const next = release('1.1.0', { rolloutPercent: 25 })
    const releases = [next, release('1.0.0')]
    // fixed ids: the same 10,000 every run (random ones made this test fail about once in 300 runs)
    const devices = Array.from({ length: 10_000 }, (_, index) => `device-${index}-${(index * 2654435761) % 4294967296}`)
    const at25 = devices.filter((deviceId) => decideRelease(appId, releases, { deviceId }).release === next)
    expect(Math.abs(at25.length / devices.length - 0.25)).toBeLessThanOrEqual(0.015)
    for (const deviceId of devices.slice(0, 500)) {
      expect(decideRelease(appId, releases, { deviceId }).release).toBe(decideRelease(appId, releases, { deviceId }).release)
    }
    const raised = [{ ...next, rolloutPercent: 50 }, release('1.0.0')]
    const at50 = new Set(devices.filter((deviceId) => decideRelease(appId, raised, { deviceId }).release?.versionId === next.versionId))
    for (const deviceId of at25) expect(at50.has(deviceId)).toBe(true)
    expect(Math.abs(at50.size / devices.length - 0.5)).toBeLessThanOrEqual(0.015)
  })
})

describe('decideRelease', () => {
  const newest = release('1.2.0', { rolloutPercent: 30 })
  const previous = release('1.1.0')
  const oldest = release('1.0.0')
  const below = deviceInBucket(newest.versionId, 29)
  const at = deviceInBucket(newest.versionId, 30)

  const cases: { name: string; releases: LiveRelease[]; device: Parameters<typeof decideRelease>[2]; version: string | null; mandatory?: boolean }[] = [
    { name: 'no release at all', releases: [], device: {}, version: null },
    { name: 'a completed release goes to everyone', releases: [release('1.2.0'), previous], device: {}, version: '1.2.0' },
    { name: 'no deviceId during a rollout: the previous release', releases: [newest, previous], device: {}, version: '1.1.0' },
    { name: 'bucket just below the percent: the new release', releases: [newest, previous], device: { deviceId: below }, version: '1.2.0' },
    { name: 'bucket at the percent: the previous release', releases: [newest, previous], device: { deviceId: at }, version: '1.1.0' },
    { name: 'halted (0 %): everyone the previous release', releases: [{ ...newest, rolloutPercent: 0 }, previous], device: { deviceId: below }, version: '1.1.0' },
    { name: 'completed (100 %): everyone the new one', releases: [{ ...newest, rolloutPercent: 100 }, previous], device: { deviceId: at }, version: '1.2.0' },
    { name: 'a first release mid-rollout: outside the bucket there is nothing', releases: [newest], device: { deviceId: at }, version: null },
    {
      name: 'host range excluding the newest and the previous: the one before',
      releases: [release('1.2.0', { hostVersionRange: '>=3.0.0' }), release('1.1.0', { hostVersionRange: '>=2.5.0 <3' }), oldest],
      device: { hostVersion: '2.4.9' },
      version: '1.0.0',
    },
    { name: 'a host that fits nothing: no release', releases: [release('1.2.0', { hostVersionRange: '>=3' })], device: { hostVersion: '2.0.0' }, version: null },
    { name: 'without hostVersion the range is not applied', releases: [release('1.2.0', { hostVersionRange: '>=3' })], device: {}, version: '1.2.0' },
    { name: 'prerelease host versions order below their release', releases: [release('1.2.0', { hostVersionRange: '>=3.0.0' }), previous], device: { hostVersion: '3.0.0-beta.2' }, version: '1.1.0' },
    { name: 'the bucket and the host range together', releases: [newest, release('1.1.0', { hostVersionRange: '>=9' }), oldest], device: { deviceId: at, hostVersion: '2.0.0' }, version: '1.0.0' },
  ]
  for (const { name, releases, device, version } of cases) {
    test(name, () => {
      expect(decideRelease(appId, releases, device).release?.version ?? null).toBe(version)
    })
  }

  describe('mandatory escalation across three releases', () => {
    // newest first: 1.3.0 optional, 1.2.0 mandatory, 1.1.0 optional
    const chain = [release('1.3.0'), release('1.2.0', { mandatory: true }), release('1.1.0')]
    const table: [string, string | undefined, boolean][] = [
      ['a device below the mandatory release: the optional one after it stays mandatory', '1.1.0', true],
      ['a device on the mandatory release: the optional one is optional', '1.2.0', false],
      ['a device already on the newest: nothing to take', '1.3.0', false],
      ['a device on a version the channel never had, older than the mandatory one (semver order)', '1.0.5', true],
      ['a device on an unknown prerelease of the mandatory version (orders below it)', '1.2.0-rc.1', true],
      ['a device on an unknown version past the mandatory one', '1.2.5', false],
      ['no currentVersion: not mandatory', undefined, false],
    ]
    for (const [name, currentVersion, mandatory] of table) {
      test(name, () => {
        const decision = decideRelease(appId, chain, { currentVersion })
        expect(decision.release?.version).toBe('1.3.0')
        expect(decision.mandatory).toBe(mandatory)
      })
    }
    test('a mandatory release newer than the one the device gets does not count', () => {
      const rolling = [release('1.3.0', { mandatory: true, rolloutPercent: 10 }), release('1.2.0'), release('1.1.0')]
      const decision = decideRelease(appId, rolling, { currentVersion: '1.1.0', deviceId: deviceInBucket('v-1.3.0', 50) })
      expect(decision.release?.version).toBe('1.2.0')
      expect(decision.mandatory).toBe(false)
    })
  })

  test('the bucket is reported for a device during a rollout, and only then', () => {
    expect(decideRelease(appId, [newest, previous], { deviceId: below }).bucket).toBe(29)
    expect(decideRelease(appId, [release('1.2.0'), previous], { deviceId: below }).bucket).toBeNull()
  })

  test('the input hash is of UTF-8 text', () => {
    const digest = createHash('sha256').update(Buffer.from(`${appId}:v:Gerät`, 'utf8')).digest()
    expect(rolloutBucket(appId, 'v', 'Gerät')).toBe(digest.readUInt32BE(0) % 100)
  })
})

describe('a paused release below the newest (§13: a fix published over it)', () => {
  const fix = release('1.2.0', { rolloutPercent: 10 })
  const paused = release('1.1.0', { rolloutPercent: 30, paused: true })
  const good = release('1.0.0')
  const channel = [fix, paused, good]
  /** a deviceId outside the fix's 10 %, inside (adopted) or outside 1.1.0's frozen 30 % */
  function device(adopted: boolean, insideFix = false): string {
    for (let index = 0; ; index++) {
      const deviceId = `pair-${index}`
      if (rolloutBucket(appId, fix.versionId, deviceId) < 10 === insideFix && rolloutBucket(appId, paused.versionId, deviceId) < 30 === adopted) return deviceId
    }
  }
  const adopter = device(true)
  const other = device(false)
  const inside = device(false, true)

  const cases: { name: string; releases: LiveRelease[]; device: Parameters<typeof decideRelease>[2]; version: string | null }[] = [
    { name: 'a device on the release before it gets that one, not the paused one', releases: channel, device: { deviceId: other, currentVersion: '1.0.0' }, version: '1.0.0' },
    { name: 'an adopter that names another version gets the release before it', releases: channel, device: { deviceId: adopter, currentVersion: '1.0.0' }, version: '1.0.0' },
    { name: 'a device on a version the channel never had: the release before it', releases: channel, device: { deviceId: other, currentVersion: '0.9.0' }, version: '1.0.0' },
    { name: 'a device on the paused release keeps it, whatever its bucket', releases: channel, device: { deviceId: other, currentVersion: '1.1.0' }, version: '1.1.0' },
    { name: 'without deviceId, a device on the paused release keeps it', releases: channel, device: { currentVersion: '1.1.0' }, version: '1.1.0' },
    { name: 'no currentVersion, bucket below the frozen 30 % (adopted): the paused release', releases: channel, device: { deviceId: adopter }, version: '1.1.0' },
    { name: 'no currentVersion, bucket at or above the frozen 30 %: the release before it', releases: channel, device: { deviceId: other }, version: '1.0.0' },
    { name: 'neither deviceId nor currentVersion: the release before it', releases: channel, device: {}, version: '1.0.0' },
    { name: 'inside the fix\'s rollout: the fix, also from the paused release', releases: channel, device: { deviceId: inside, currentVersion: '1.1.0' }, version: '1.2.0' },
    { name: 'a device on the paused release its host range excludes: the release before it', releases: [fix, { ...paused, hostVersionRange: '>=3' }, good], device: { deviceId: other, currentVersion: '1.1.0', hostVersion: '2.0.0' }, version: '1.0.0' },
    { name: 'a paused first release: nothing for the others, as for a first release', releases: [fix, paused], device: { deviceId: other, currentVersion: '0.9.0' }, version: null },
    { name: 'the fix complete: every device gets it, those on the paused release too', releases: [{ ...fix, rolloutPercent: 100 }, paused, good], device: { deviceId: other, currentVersion: '1.1.0' }, version: '1.2.0' },
    { name: 'the fix reverted: the others get the release before the paused one', releases: [{ ...fix, rolloutPercent: 0 }, paused, good], device: { deviceId: inside, currentVersion: '1.0.0' }, version: '1.0.0' },
    { name: 'the fix reverted: a device on the paused release keeps it', releases: [{ ...fix, rolloutPercent: 0 }, paused, good], device: { deviceId: inside, currentVersion: '1.1.0' }, version: '1.1.0' },
    { name: 'the fix paused too: its others get the release before both', releases: [{ ...fix, paused: true }, paused, good], device: { deviceId: other, currentVersion: '1.0.0' }, version: '1.0.0' },
    { name: 'the fix paused too: a device on the older paused release keeps it', releases: [{ ...fix, paused: true }, paused, good], device: { deviceId: other, currentVersion: '1.1.0' }, version: '1.1.0' },
    { name: 'paused at 100 %: every device that names itself adopted it', releases: [fix, { ...paused, rolloutPercent: 100 }, good], device: { deviceId: other }, version: '1.1.0' },
    { name: 'paused at 100 %: a request that names no device still gets the release before it', releases: [fix, { ...paused, rolloutPercent: 100 }, good], device: {}, version: '1.0.0' },
    { name: 'the paused newest itself is unchanged: no deviceId at 100 % gets it', releases: [{ ...paused, rolloutPercent: 100 }, good], device: {}, version: '1.1.0' },
  ]
  for (const { name, releases, device: asked, version } of cases) {
    test(name, () => expect(decideRelease(appId, releases, asked).release?.version ?? null).toBe(version))
  }

  test('a reverted release below the newest goes to no device, those on it included; its mandatory flag still counts (§10)', () => {
    const reverted = release('1.1.0', { rolloutPercent: 0, mandatory: true })
    const over = [fix, reverted, good]
    // outside the fix: the release before the reverted one, whatever the device says it runs
    for (const asked of [{ deviceId: other, currentVersion: '1.0.0' }, { deviceId: other, currentVersion: '1.1.0' }, { deviceId: other }, {}]) {
      expect(decideRelease(appId, over, asked).release?.version).toBe('1.0.0')
    }
    // a reverted first release below a fix: nothing for the others
    expect(decideRelease(appId, [fix, reverted], { deviceId: other }).release).toBeNull()
    // inside the fix, coming from 1.0.0: the skipped mandatory 1.1.0 makes the fix mandatory
    expect(decideRelease(appId, over, { deviceId: inside, currentVersion: '1.0.0' })).toMatchObject({ release: fix, mandatory: true })
    // reverted and paused alike: no device keeps it
    expect(decideRelease(appId, [fix, { ...reverted, paused: true }, good], { deviceId: other, currentVersion: '1.1.0' }).release?.version).toBe('1.0.0')
  })

  test('mandatory is computed from the release the device gets, as before', () => {
    const mandatoryPaused = [fix, { ...paused, mandatory: true }, good]
    expect(decideRelease(appId, mandatoryPaused, { deviceId: other, currentVersion: '1.0.0' })).toMatchObject({ release: good, mandatory: false })
    expect(decideRelease(appId, mandatoryPaused, { deviceId: other, currentVersion: '0.9.0' })).toMatchObject({ release: good, mandatory: false })
    expect(decideRelease(appId, mandatoryPaused, { deviceId: inside, currentVersion: '1.0.0' })).toMatchObject({ release: fix, mandatory: true })
  })

  test('hashes once more only when a paused older release is in the way of a request that names no version', () => {
    const hash = spyOn(Bun.SHA256, 'hash')
    try {
      const calls = (releases: LiveRelease[], asked: Parameters<typeof decideRelease>[2]) => {
        hash.mockClear()
        decideRelease(appId, releases, asked)
        return hash.mock.calls.length
      }
      // the common case, as before: one hash for the newest mid-rollout, none otherwise
      expect(calls([fix, release('1.1.0'), good], { deviceId: other, currentVersion: '1.0.0' })).toBe(1)
      expect(calls([fix, release('1.1.0'), good], { deviceId: other })).toBe(1)
      expect(calls([release('1.2.0'), paused, good], { deviceId: other })).toBe(0)
      // a device that names its version passes the paused release without a hash
      expect(calls(channel, { deviceId: other, currentVersion: '1.0.0' })).toBe(1)
      expect(calls(channel, { deviceId: inside })).toBe(1)
      expect(calls(channel, { deviceId: other })).toBe(2)
    } finally {
      hash.mockRestore()
    }
  })
})
