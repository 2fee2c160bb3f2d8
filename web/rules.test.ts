// Table-driven checks of the console's pure rules (lifecycle buttons, install URLs, routes, dropped files).
import { describe, expect, test } from 'bun:test'
import { printable } from './dom.ts'
import { routeKey } from './features.ts'
import { modulePixels } from './qr.ts'
import { parseRoute, pathOf, type Route } from './router.ts'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { absoluteInstallUrl, allowedActions, cardSaysWhatDevicesGet, channelsReleasedIn, fileFieldFor, holdsVersion, isLocalOnly, nextRolloutStep, pushCommandFor } from './rules.ts'

describe('allowedActions', () => {
  const app = { currentReviewVersionId: 'r', currentReleaseVersionId: 'live' }
  const cases: [string, { id: string; status: 'DRAFT' | 'IN_REVIEW' | 'PUBLISHED' }, string][] = [
    ['draft', { id: 'd', status: 'DRAFT' }, 'review publish remove'],
    ['draft that is the review version', { id: 'r', status: 'DRAFT' }, 'publish remove'],
    ['in review, the review version', { id: 'r', status: 'IN_REVIEW' }, 'publish remove'],
    ['in review, a historical one', { id: 'h', status: 'IN_REVIEW' }, 'review publish remove'],
    ['published, not live', { id: 'old', status: 'PUBLISHED' }, 'rollback'],
    ['published and live', { id: 'live', status: 'PUBLISHED' }, ''],
  ]
  for (const [name, version, expected] of cases) {
    test(name, () => {
      const allowed = allowedActions(version, app)
      const shown = (['review', 'publish', 'rollback', 'remove'] as const).filter((k) => allowed[k]).join(' ')
      expect(shown).toBe(expected)
    })
  }
})

describe('allowedActions with channels', () => {
  const app = { currentReviewVersionId: null, currentReleaseVersionId: 'live' }
  const channel = (release: string | null, previous: string | null = null, reverted: string[] = []) => ({
    release: release ? ({ versionId: release } as never) : null,
    previousRelease: previous ? ({ versionId: previous } as never) : null,
    revertedReleases: reverted.map((versionId) => ({ versionId }) as never),
  })
  const cases: [string, string, ReturnType<typeof channel>[], boolean][] = [
    ['live on beta only: may go to stable', 'b', [channel('live'), channel('b')], true],
    ['live on stable, beta empty: may go to beta', 'live', [channel('live'), channel(null)], true],
    ['the release of every channel: nowhere left', 'live', [channel('live'), channel('live')], false],
    ['replaced on stable, live nowhere: roll back instead', 'old', [channel('live', 'old')], false],
    ['live on beta, stable just moved off it: roll back there instead', 'b', [channel('live', 'b'), channel('b')], false],
    // reverted on stable, then a fix published over it: still a release of stable, which refuses it again
    ['live on beta, reverted below the newest of stable: roll back there instead', 'b', [channel('fix', 'old', ['b']), channel('b')], false],
  ]
  for (const [name, id, channels, expected] of cases) {
    test(name, () => expect(allowedActions({ id, status: 'PUBLISHED' }, app, channels).publish).toBe(expected))
  }
})

describe('allowedActions with the channels each version is a release of (the workspace\'s releaseOf)', () => {
  const app = { currentReviewVersionId: null, currentReleaseVersionId: 'new' }
  const channel = (name: string, release: string, previous: string | null = null) => ({
    name,
    release: { versionId: release } as never,
    previousRelease: previous ? ({ versionId: previous } as never) : null,
  })
  // 1.0.0, 1.1.0 and 1.2.0 to stable at 100 %, then 1.0.0 to beta: stable still holds 1.0.0, two below its newest
  const stable = channel('stable', '1.2.0', '1.1.0')
  const beta = channel('beta', '1.0.0')
  const cases: [string, { releaseOf?: string[] }, ReturnType<typeof channel>[], boolean][] = [
    ['a release far below the newest of stable, live on beta: nowhere left', { releaseOf: ['stable', 'beta'] }, [stable, beta], false],
    ['the same with an empty channel: may go there', { releaseOf: ['stable', 'beta'] }, [stable, beta, channel('qa', '0.9.0')], true],
    // withdrawn from stable by a rollback below it: stable takes it again
    ['withdrawn from stable: may go there', { releaseOf: ['beta'] }, [stable, beta], true],
    // an older server sends no releaseOf: only what the channel records list
    ['an older server', {}, [stable, beta], true],
  ]
  for (const [name, held, channels, expected] of cases) {
    test(name, () => expect(allowedActions({ id: '1.0.0', status: 'PUBLISHED', ...held }, app, channels).publish).toBe(expected))
  }
  test('holdsVersion: a channel named in releaseOf, or listing the version itself', () => {
    expect(holdsVersion(stable, { id: '1.0.0', releaseOf: ['stable'] })).toBe(true)
    expect(holdsVersion(stable, { id: '1.0.0', releaseOf: [] })).toBe(false)
    expect(holdsVersion(stable, { id: '1.1.0', releaseOf: [] })).toBe(true)
    expect(holdsVersion({ ...stable, name: undefined }, { id: '1.0.0', releaseOf: ['stable'] })).toBe(false)
  })
})

describe('rollback with channels', () => {
  const app = { currentReviewVersionId: null, currentReleaseVersionId: 'new' }
  const channels = [
    { name: 'stable', release: { versionId: 'new' } as never, previousRelease: null },
    { name: 'beta', release: { versionId: 'b' } as never, previousRelease: null },
  ]
  const history = channelsReleasedIn([
    { versionId: 'b', channel: 'beta', action: 'PUBLISH' },
    { versionId: 'b', channel: 'beta', action: 'ROLLOUT' },
    { versionId: 'old', channel: 'stable', action: 'PUBLISH' },
    { versionId: 'new', channel: 'stable', action: 'PUBLISH' },
  ])
  const cases: [string, string, boolean][] = [
    ['replaced on stable: may come back there', 'old', true],
    ['only ever on beta, live there: nowhere to roll back to it', 'b', false],
    ['live on stable, never elsewhere', 'new', false],
    ['not in the history at all: released on stable before channels', 'ancient', true],
  ]
  for (const [name, id, expected] of cases) {
    test(name, () => expect(allowedActions({ id, status: 'PUBLISHED' }, app, channels, history.get(id) ?? null).rollback).toBe(expected))
  }
})

describe('absoluteInstallUrl', () => {
  const cases: [string, string][] = [
    ['/api/mini-apps/access/versions/v1/install?token=t', 'https://ms.example/api/mini-apps/access/versions/v1/install?token=t'],
    ['https://cdn.example/x/install?token=t', 'https://cdn.example/x/install?token=t'],
    ['mini-apps/access/versions/v1/install?token=t', 'https://ms.example/api/mini-apps/access/versions/v1/install?token=t'],
  ]
  for (const [input, expected] of cases) {
    test(input, () => expect(absoluteInstallUrl(input, 'https://ms.example')).toBe(expected))
  }
})

describe('parseRoute', () => {
  const at = (pathname: string, search = '', hash = '') => ({ pathname, search, hash }) as Location
  const cases: [Location, Route][] = [
    [at('/'), { name: 'apps' }],
    [at('/apps'), { name: 'apps' }],
    [at('/apps/'), { name: 'apps' }],
    [at('/apps/01J%2FX'), { name: 'workspace', id: '01J/X', tab: 'overview' }],
    [at('/apps/01J/versions'), { name: 'workspace', id: '01J', tab: 'versions' }],
    [at('/apps/01J/upload'), { name: 'workspace', id: '01J', tab: 'upload' }],
    [at('/apps/01J/nonsense'), { name: 'notfound', path: 'apps/01J/nonsense' }],
    [at('/tokens'), { name: 'tokens' }],
    [at('/admin'), { name: 'admin' }],
    // bookmarks of the hash-routed console
    [at('/', '', '#/apps'), { name: 'apps' }],
    [at('/', '', '#/apps/01J%2FX'), { name: 'workspace', id: '01J/X', tab: 'overview' }],
    [at('/', '', '#/admin'), { name: 'admin' }],
    [at('/', '', '#/signin'), { name: 'signin' }],
    [at('/', '', '#/nope/x/y'), { name: 'notfound', path: 'nope/x/y' }],
    [at('/cli/authorize', '?code=ABCD-1234'), { name: 'cli', code: 'ABCD-1234' }],
    [at('/cli/authorize/', ''), { name: 'cli', code: '' }],
  ]
  for (const [location, expected] of cases) {
    test(`${location.pathname}${location.search}${location.hash}`, () => expect(parseRoute(location)).toEqual(expected))
  }
})

describe('pathOf is the inverse of parseRoute', () => {
  const routes: Route[] = [{ name: 'apps' }, { name: 'workspace', id: 'a b/c', tab: 'overview' }, { name: 'workspace', id: 'x', tab: 'members' }, { name: 'tokens' }, { name: 'admin' }]
  for (const route of routes) {
    test(JSON.stringify(route), () => {
      const url = new URL(pathOf(route), 'https://ms.example')
      expect(parseRoute({ pathname: url.pathname, search: url.search, hash: '' } as Location)).toEqual(route)
    })
  }
})

describe('fileFieldFor', () => {
  const cases: [string, string | null][] = [
    ['main.ios.jsbundle', 'bundleIos'],
    ['main.jsbundle', 'bundleIos'],
    ['index.android.bundle', 'bundleAndroid'],
    ['shop-android.hbc', 'bundleAndroid'],
    ['app.json', 'manifest'],
    ['assets-ios.zip', 'assetsIos'],
    ['assets_android.zip', 'assetsAndroid'],
    ['assets.zip', null],
    ['ios-and-android.zip', null],
    ['biosphere.bundle', null],
    ['notes.txt', null],
  ]
  for (const [name, expected] of cases) test(`${name} → ${expected}`, () => expect(fileFieldFor(name)).toBe(expected as never))
})

describe('nextRolloutStep', () => {
  const cases: [number, number][] = [
    [0, 1],
    [1, 5],
    [7, 10],
    [10, 25],
    [50, 100],
    [100, 100],
  ]
  for (const [from, to] of cases) test(`${from} → ${to}`, () => expect(nextRolloutStep(from)).toBe(to))
})

describe('isLocalOnly', () => {
  const cases: [string, boolean][] = [
    ['http://localhost:3001/api/x', true],
    ['http://127.0.0.1:3001/api/x', true],
    ['http://[::1]:3001/', true],
    ['http://app.localhost/', true],
    ['https://apps.example.com/api/x', false],
    ['http://192.168.1.20:3001/', false],
    ['miniship://install?x=1', false],
    ['not a url', false],
  ]
  for (const [url, expected] of cases) test(url, () => expect(isLocalOnly(url)).toBe(expected))
})

describe('printable: control characters shown, not obeyed', () => {
  const cases: [string, string][] = [
    ['plain text', 'plain text'],
    ['bell\u0007', 'bell\u2407'],
    ['nul\u0000', 'nul\u2400'],
    ['del\u007f', 'del\u2421'],
    ['c1\u0085', 'c1⟨U+0085⟩'],
    ['evil\u202ereversed', 'evil⟨U+202E⟩reversed'],
    ['isolate\u2066x\u2069', 'isolate⟨U+2066⟩x⟨U+2069⟩'],
    ['lines\nand\ttabs stay', 'lines\nand\ttabs stay'],
  ]
  for (const [input, expected] of cases) test(JSON.stringify(input), () => expect(printable(input)).toBe(expected))
})

describe('routeKey: OpenAPI paths match whatever the modules name their parameters', () => {
  test.each([
    ['get', '/api/mini-apps/{miniAppId}/channels', 'GET /api/mini-apps/{}/channels'],
    ['patch', '/api/mini-apps/{id}/channels/{channel}/rollout', 'PATCH /api/mini-apps/{}/channels/{}/rollout'],
    ['GET', '/api/auth/api-keys', 'GET /api/auth/api-keys'],
  ])('%s %s', (method, path, expected) => expect(routeKey(method, path)).toBe(expected))
})

describe('modulePixels: at least 4 px a module, bigger for short texts', () => {
  test.each([
    [29, 8],
    [57, 4],
    [85, 4],
    [177, 4],
  ])('%p modules → %p px', (modules, px) => expect(modulePixels(modules)).toBe(px))
})

describe('cardSaysWhatDevicesGet', () => {
  test('a complete release for any host: the state says it; one for some hosts, or any other state: the card says who gets what', () => {
    expect(cardSaysWhatDevicesGet({ release: { hostVersionRange: null } }, 'complete')).toBe(false)
    // it hid "Every device gets 1.1.0 except host apps outside >=3.0.0: they get 1.0.0" on beta's card
    expect(cardSaysWhatDevicesGet({ release: { hostVersionRange: '>=3.0.0' } }, 'complete')).toBe(true)
    for (const state of ['rolling-out', 'paused', 'reverted']) expect(cardSaysWhatDevicesGet({ release: { hostVersionRange: null } }, state)).toBe(true)
  })
})

describe('pushCommandFor: the Tokens page, the Upload page and the first-steps checklist copy one command', () => {
  test('it signs when the miniapp requires signed versions', () => {
    expect(pushCommandFor({ appId: 'com.example.shop', requireSignature: false })).toBe('miniship push ./build --app com.example.shop --version 1.0.0')
    expect(pushCommandFor({ appId: 'com.example.shop', requireSignature: true })).toBe('miniship push ./build --app com.example.shop --version 1.0.0 --sign-key release.pem')
    expect(pushCommandFor(undefined)).toBe('miniship push ./build --app com.example.app --version 1.0.0')
  })

  test('the pieces the pages share (rules, dom, the checklist) import no page: only app.ts, the root, does', () => {
    const importsPage = (file: string) => /from '\.\/pages\//.test(readFileSync(join(import.meta.dir, file), 'utf8'))
    const shared = readdirSync(import.meta.dir).filter((name) => name.endsWith('.ts') && !name.endsWith('.test.ts') && name !== 'app.ts')
    expect(shared).toContain('checklist.ts')
    expect(shared.filter(importsPage)).toEqual([])
  })
})
