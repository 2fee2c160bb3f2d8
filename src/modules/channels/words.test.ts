// The state words of decisions §13 that the console and the CLI share: one table each.
import { describe, expect, test } from 'bun:test'
import { channelDevicesText, channelState, channelText, fallbackSignatureWarning, pausedKeptText, publishedText, rollbackClearsPauseFor, rollbackClearsPauseText, rolledBackVersions, versionStandingText, type ChannelView, type ReleaseState } from './words'

const v = (id: string, percent = 100, paused = false) => ({ versionId: id, version: id, rolloutPercent: percent, paused })
const channel = (state: ReleaseState, percent: number): ChannelView => ({ name: 'stable', state, release: v('1.1.0', percent, state === 'paused'), previousRelease: v('1.0.0') })

describe('state words', () => {
  const cases: [ReleaseState, number, string, string][] = [
    ['complete', 100, '1.1.0 complete 100 %', 'Every device gets 1.1.0.'],
    ['rolling-out', 30, '1.1.0 rolling-out 30 %', '30 % get 1.1.0; the others get 1.0.0.'],
    ['paused', 30, '1.1.0 paused 30 %', 'Devices on 1.1.0 keep it; the others get 1.0.0.'],
    ['reverted', 0, '1.1.0 reverted 0 %', 'Every device gets 1.0.0, those on 1.1.0 too.'],
  ]
  for (const [state, percent, text, devices] of cases) {
    test(state, () => {
      expect(channelText(channel(state, percent))).toBe(text)
      expect(channelDevicesText(channel(state, percent))).toBe(devices)
    })
  }

  test('paused complete (100 %): requests that name no version still get it (§13), and the words say so instead of "the others get" the previous one', () => {
    const pausedComplete: ChannelView = { name: 'stable', state: 'paused', release: v('1.1.0', 100, true), previousRelease: v('1.0.0'), defaultRelease: v('1.1.0', 100, true) }
    expect(channelDevicesText(pausedComplete)).toBe('Devices on 1.1.0 keep it; those that name their version get 1.0.0. Requests that name none (older clients, the release mirror) still get 1.1.0: revert to stop that.')
    // paused at 30 %, a request that names nothing gets the previous release: the short words hold
    expect(channelDevicesText({ ...channel('paused', 30), defaultRelease: v('1.0.0') })).toBe('Devices on 1.1.0 keep it; the others get 1.0.0.')
  })

  test('a paused release published over: the others pass over it, its devices keep it (§13), whatever the newest does', () => {
    const over = (state: ReleaseState, percent: number, previous: string | null = '1.0.0', paused = [v('1.1.0', 30, true)]): ChannelView => ({
      name: 'stable',
      state,
      release: v('1.2.0', percent, state === 'paused'),
      previousRelease: previous ? v(previous) : null,
      pausedReleases: paused,
    })
    const cases: [ChannelView, string][] = [
      [over('rolling-out', 10), '10 % get 1.2.0; the others get 1.0.0; devices on 1.1.0 (paused) keep it.'],
      [over('paused', 10), 'Devices on 1.2.0 keep it; the others get 1.0.0; devices on 1.1.0 (paused) keep it.'],
      [{ ...over('paused', 100), defaultRelease: v('1.2.0', 100, true) }, 'Devices on 1.2.0 keep it; those that name their version get 1.0.0; devices on 1.1.0 (paused) keep it. Requests that name none (older clients, the release mirror) still get 1.2.0: revert to stop that.'],
      [over('reverted', 0), 'Devices on 1.1.0 (paused) keep it; every other device gets 1.0.0, those on 1.2.0 too.'],
      [over('complete', 100), 'Every device gets 1.2.0.'],
      // the paused one was the first release: the others get nothing, as for a first rollout
      [over('rolling-out', 10, null), '10 % get 1.2.0; the others get nothing; devices on 1.1.0 (paused) keep it.'],
      [over('reverted', 0, null), 'No device gets 1.2.0; those on it keep it; devices on 1.1.0 (paused) keep it.'],
      [over('rolling-out', 10, '1.0.0', [v('1.1.0', 30, true), v('1.0.5', 50, true)]), '10 % get 1.2.0; the others get 1.0.0; devices on 1.1.0 or 1.0.5 (paused) keep theirs.'],
      // an older server sends no pausedReleases: the words as before
      [{ ...over('rolling-out', 10), pausedReleases: undefined }, '10 % get 1.2.0; the others get 1.0.0.'],
    ]
    for (const [view, text] of cases) expect(channelDevicesText(view)).toBe(text)
    // the console's pause and revert dialogs say the same, as a sentence of its own
    expect(pausedKeptText([v('1.1.0', 30, true)])).toBe('devices on 1.1.0 (paused) keep it')
  })

  test('a first release reverted: no device gets it, and those that installed it keep it (there is nothing to send them back to)', () => {
    expect(channelDevicesText({ name: 'beta', state: 'reverted', release: v('1.3.0', 0), previousRelease: null })).toBe('No device gets 1.3.0; those on it keep it.')
  })

  test('an older server without state: derived from the release the same way', () => {
    const derived = (percent: number, paused = false) => channelState({ name: 'stable', release: v('1.1.0', percent, paused), previousRelease: null })
    expect([derived(100), derived(30), derived(0), derived(30, true)]).toEqual(['complete', 'rolling-out', 'reverted', 'paused'])
    expect(channelState({ name: 'stable', release: null, previousRelease: null })).toBeNull()
  })
})

describe('a version is live only where some device can get it', () => {
  const none = new Set<string>()
  const cases: [string, ChannelView, string, string][] = [
    ['newest, rolling out', channel('rolling-out', 30), '1.1.0', 'live on stable, rolling-out 30 %'],
    ['previous, rolling out', channel('rolling-out', 30), '1.0.0', 'live on stable for the devices outside the rollout of 1.1.0'],
    ['newest, paused', channel('paused', 30), '1.1.0', 'live on stable, paused 30 %'],
    ['previous, paused', channel('paused', 30), '1.0.0', 'live on stable for the devices that do not run 1.1.0'],
    ['newest, reverted', channel('reverted', 0), '1.1.0', 'reverted on stable'],
    ['previous, reverted', channel('reverted', 0), '1.0.0', 'live on stable (1.1.0 is reverted)'],
    ['previous, complete', channel('complete', 100), '1.0.0', 'replaced on stable'],
    ['not in the channel', channel('complete', 100), '0.9.0', 'replaced'],
    ['paused, then published over: live for its devices', { ...channel('rolling-out', 10), pausedReleases: [v('1.0.5', 30, true)] }, '1.0.5', 'live on stable for the devices that run it (paused 30 %)'],
    ['paused, then published over by a complete release', { ...channel('complete', 100), pausedReleases: [v('1.0.5', 30, true)] }, '1.0.5', 'replaced on stable'],
    // the previous release, with a paused one between: its devices are not the previous one's
    ['previous, with a paused release between', { ...channel('rolling-out', 10), pausedReleases: [v('1.0.5', 30, true)] }, '1.0.0', 'live on stable for the devices outside the rollout of 1.1.0, except those on 1.0.5 (paused)'],
    // reverted, then published over: no device gets it, whatever the newest does (decide.ts)
    ['reverted, then published over', { ...channel('rolling-out', 10), revertedReleases: [v('1.0.5', 0)] }, '1.0.5', 'reverted on stable'],
    ['reverted, then published over by a complete release', { ...channel('complete', 100), revertedReleases: [v('1.0.5', 0)] }, '1.0.5', 'reverted on stable'],
    // an older server sends no revertedReleases: as before
    ['reverted below the newest, on an older server', { ...channel('rolling-out', 10), revertedReleases: undefined }, '1.0.5', 'replaced'],
  ]
  for (const [name, view, id, text] of cases) test(name, () => expect(versionStandingText({ id, status: 'PUBLISHED' }, [view], none)).toBe(text))

  test('a version a rollback moved off reads "rolled back"; drafts their status', () => {
    const rolledBack = rolledBackVersions([{ action: 'ROLLBACK', versionId: '1.0.0', previousVersionId: '0.9.0' }, { action: 'PUBLISH', versionId: '1.1.0', previousVersionId: '1.0.0' }])
    expect([...rolledBack]).toEqual(['0.9.0'])
    expect(versionStandingText({ id: '0.9.0', status: 'PUBLISHED' }, [channel('complete', 100)], rolledBack)).toBe('rolled back')
    expect(versionStandingText({ id: '2.0.0', status: 'IN_REVIEW' }, [channel('complete', 100)], rolledBack)).toBe('in-review')
  })
})

test('a publish goes to its channel, the same words in the console notice and the CLI line: "1.2.0 to beta (10 %)"', () => {
  expect(publishedText('1.2.0', 'beta', { rolloutPercent: 10 })).toBe('1.2.0 to beta (10 %)')
  expect(publishedText('1.2.0', 'stable')).toBe('1.2.0 to stable (100 %)')
  expect(publishedText('1.2.0', 'stable', { rolloutPercent: 20, mandatory: true, hostVersionRange: '>=2.0.0' })).toBe('1.2.0 to stable (20 %, mandatory, host >=2.0.0)')
})

test('a rollback to a paused release says who paused it and why, on one line, and what the rollback does (ROLLBACK_CLEARS_PAUSE)', () => {
  const cases: [{ pausedBy?: string | null; pauseReason?: string | null }, string][] = [
    [{ pausedBy: 'ana@example.test', pauseReason: 'crash spike' }, '1.1.0 was paused by ana@example.test (crash spike); rolling back to it clears the pause and sends it to every device on stable'],
    [{ pausedBy: 'release-guard', pauseReason: null }, '1.1.0 was paused by release-guard; rolling back to it clears the pause and sends it to every device on stable'],
    // a reason may hold line breaks: the CLI prints the warning as one line
    [{ pausedBy: null, pauseReason: 'crash\non Android 9 ' }, '1.1.0 was paused (crash on Android 9); rolling back to it clears the pause and sends it to every device on stable'],
  ]
  for (const [pause, text] of cases) expect(rollbackClearsPauseText('1.1.0', 'stable', pause)).toBe(text)
})

test('the Roll back… dialog warns, before confirming, of every paused release below the newest: the server warns of each (pausedBelow; pausedReleases from an older server)', () => {
  const paused = { ...v('1.0.5', 30, true), pausedBy: 'ana@example.test', pauseReason: 'crash spike' }
  const text = '1.0.5 was paused by ana@example.test (crash spike); rolling back to it clears the pause and sends it to every device on stable'
  const target = { id: '1.0.5', version: '1.0.5' }
  // below the previous release: not in pausedReleases, still cleared by a rollback to it
  expect(rollbackClearsPauseFor({ ...channel('rolling-out', 20), pausedReleases: [], pausedBelow: [paused] }, target)).toBe(text)
  expect(rollbackClearsPauseFor({ ...channel('rolling-out', 20), pausedReleases: [], pausedBelow: [] }, target)).toBeNull()
  expect(rollbackClearsPauseFor({ ...channel('rolling-out', 20), pausedBelow: [paused] }, { id: '1.0.0', version: '1.0.0' })).toBeNull()
  // an older server: what it sends
  expect(rollbackClearsPauseFor({ ...channel('rolling-out', 20), pausedReleases: [paused] }, target)).toBe(text)
})

describe('a pause, a revert or a lowered percent whose fallback signature rules refuse (FALLBACK_UNSIGNED, FALLBACK_KEY_REVOKED)', () => {
  const app = { appId: 'com.example.shop', requireSignature: true }
  const sign = 'sign it (miniship sign 1.0.0 --app com.example.shop --sign-key FILE)'
  const unsigned = 'which is not signed: host apps that require signatures will refuse it'
  const withPaused: ChannelView = { ...channel('rolling-out', 10), pausedReleases: [v('1.0.5', 30, true)] }
  const cases: [string, Parameters<typeof fallbackSignatureWarning>, string | null][] = [
    ['pause, unsigned', [app, 'pause', channel('rolling-out', 30), null], `FALLBACK_UNSIGNED: Devices on stable that do not run 1.1.0 fall back to 1.0.0, ${unsigned}; ${sign}`],
    ['revert, unsigned', [app, 'revert', channel('rolling-out', 30), null], `FALLBACK_UNSIGNED: Devices on stable, those on 1.1.0 too, fall back to 1.0.0, ${unsigned}; ${sign}`],
    // devices on a paused release between keep theirs: not said to fall back
    ['pause, a paused release between', [app, 'pause', withPaused, null], `FALLBACK_UNSIGNED: Devices on stable that do not run 1.1.0, except those on 1.0.5 (paused), fall back to 1.0.0, ${unsigned}; ${sign}`],
    ['revert, a paused release between', [app, 'revert', withPaused, null], `FALLBACK_UNSIGNED: Devices on stable, those on 1.1.0 too, except those on 1.0.5 (paused), fall back to 1.0.0, ${unsigned}; ${sign}`],
    // a lower percent sends the devices outside it back, those that ran 1.1.0 too (decide.ts)
    ['lowered percent, unsigned', [app, { lowerTo: 5 }, channel('rolling-out', 90), null], `FALLBACK_UNSIGNED: Devices on stable outside the new 5 % fall back to 1.0.0, ${unsigned}; ${sign}`],
    ['lowered percent, a paused release between', [app, { lowerTo: 5 }, withPaused, null], `FALLBACK_UNSIGNED: Devices on stable outside the new 5 %, except those on 1.0.5 (paused), fall back to 1.0.0, ${unsigned}; ${sign}`],
    [
      'signed by a key revoked since',
      [{ ...app, requireSignature: false }, 'pause', channel('rolling-out', 30), { keyId: 'ab12', keyName: 'old laptop', keyRevokedAt: '2026-11-20T00:00:00.000Z' }],
      'FALLBACK_KEY_REVOKED: Devices on stable that do not run 1.1.0 fall back to 1.0.0, which was signed by the key "old laptop" (ab12), revoked since: host apps that no longer trust that key will refuse it; sign 1.0.0 again with a current key (miniship sign 1.0.0 --app com.example.shop --sign-key FILE)',
    ],
    ['signed by a current key', [app, 'pause', channel('rolling-out', 30), { keyId: 'ab12', keyName: 'laptop', keyRevokedAt: null }], null],
    ['unsigned, signatures not required', [{ ...app, requireSignature: false }, 'revert', channel('rolling-out', 30), null], null],
    // the console without the version's row: it cannot tell, so it says nothing (the answer will)
    ['signature not known', [app, 'pause', channel('rolling-out', 30), undefined], null],
    ['nothing to fall back to', [app, 'revert', { ...channel('rolling-out', 30), previousRelease: null }, null], null],
  ]
  for (const [name, input, text] of cases) {
    test(name, () => {
      const warning = fallbackSignatureWarning(...input)
      expect(warning ? `${warning.code}: ${warning.message}` : null).toBe(text)
    })
  }
})
