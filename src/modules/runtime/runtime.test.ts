// The runtime download contract over HTTP: install info, every file endpoint, token rules, URL forms, cache freshness.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createTestContext, type TestContext } from '../../test-support'
import type { Config } from '../../config'
import { createMiniApp, createTestUser, upload, uploadForm, type TestUser } from '../../test-fixtures'
import { createTokenService } from '../auth/tokens'
import { derivedManifestUrl, resolveUrl, sha256Hex } from './test-runtime'
import { rmSync } from 'node:fs'
import { blobPath } from '../../storage'

const access = '/api/mini-apps/access'
const day = 86_400_000

interface Setup {
  context: TestContext
  owner: TestUser
  miniAppId: string
  appId: string
}

async function setUp(overrides: Partial<Config> = {}, appId = 'com.example.shop'): Promise<Setup> {
  const context = createTestContext(overrides)
  const owner = await createTestUser(context)
  const miniApp = await createMiniApp(context, owner.token, appId)
  return { context, owner, miniAppId: miniApp.id, appId }
}

async function uploadVersion(setup: Setup, version: string, parts: Parameters<typeof uploadForm>[1] = {}) {
  const res = await upload(setup.context, setup.owner.token, setup.appId, uploadForm(setup.appId, { version, ...parts }))
  if (res.status !== 201) throw new Error(`upload failed: ${res.status} ${res.text}`)
  return res.body as { id: string; version: string; files: Record<string, { size: number; sha256: string }> }
}

async function publish(setup: Setup, versionId: string) {
  const res = await setup.context.call('POST', `/api/mini-apps/${setup.miniAppId}/versions/${versionId}/publish`, { token: setup.owner.token, json: {} })
  if (res.status !== 200) throw new Error(`publish failed: ${res.status} ${res.text}`)
}

async function rollback(setup: Setup, targetVersionId: string) {
  const res = await setup.context.call('POST', `/api/mini-apps/${setup.miniAppId}/rollback`, { token: setup.owner.token, json: { targetVersionId } })
  if (res.status !== 200) throw new Error(`rollback failed: ${res.status} ${res.text}`)
}

const install = (context: TestContext, versionId: string, token?: string) =>
  context.call('GET', `${access}/versions/${versionId}/install${token === undefined ? '' : `?token=${encodeURIComponent(token)}`}`)

/** GET (or HEAD) of a URL from install info, as a runtime resolves it; a CDN URL goes to our /api as the CDN would forward it. */
async function fetchFrom(context: TestContext, url: string, init: { method?: string; headers?: Record<string, string> } = {}) {
  const serverBaseUrl = context.config.publicUrl ?? 'http://localhost/api'
  let resolved = resolveUrl(serverBaseUrl, url)
  if (context.config.cdnUrl && resolved.startsWith(context.config.cdnUrl + '/')) resolved = 'http://localhost/api' + resolved.slice(context.config.cdnUrl.length)
  const response = await context.app.handle(new Request(resolved, { method: init.method ?? 'GET', headers: init.headers }))
  return { response, bytes: new Uint8Array(await response.arrayBuffer()) }
}

const tokenOf = (url: string) => new URL(url, 'http://x').searchParams.get('token')

describe('install info', () => {
  let setup: Setup
  beforeAll(async () => {
    setup = await setUp()
  })
  afterAll(() => setup.context.close())

  test('every contract field plus files; URLs carry a download token, never the caller’s access token', async () => {
    const version = await uploadVersion(setup, '1.0.0', { bundleIos: 'ios-1', bundleAndroid: 'android-1' })
    const res = await install(setup.context, version.id, setup.owner.token)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toContain('application/json')
    expect(res.headers.get('content-length')).toBe(String(Buffer.byteLength(res.text)))
    const info = res.body
    expect(Object.keys(info).sort()).toEqual(['appId', 'appName', 'assetsUrl', 'bundleUrl', 'bundles', 'files', 'manifestUrl', 'releaseType', 'routeUrl', 'version', 'versionId'])
    expect(info).toMatchObject({ appId: setup.appId, appName: `App ${setup.appId}`, versionId: version.id, version: '1.0.0', releaseType: 'RELEASE', routeUrl: `miniapp://${setup.appId}` })
    // full URLs on the request's own origin when no --public-url/--cdn-url is set (decisions §6)
    const prefix = `http://localhost/api/mini-apps/access/versions/${version.id}`
    expect(info.bundleUrl).toStartWith(`${prefix}/bundles/ios?token=`)
    expect(info.bundles.ios).toBe(info.bundleUrl)
    expect(info.bundles.android).toStartWith(`${prefix}/bundles/android?token=`)
    expect(info.assetsUrl.ios).toStartWith(`${prefix}/assets/ios?token=`)
    expect(info.assetsUrl.android).toStartWith(`${prefix}/assets/android?token=`)
    expect(info.manifestUrl).toStartWith(`${prefix}/manifest?token=`)
    expect(info.files).toEqual(version.files)
    expect(info.files.bundleIos).toEqual({ size: 5, sha256: sha256Hex(new TextEncoder().encode('ios-1')) })
    for (const url of [info.bundleUrl, info.bundles.android, info.assetsUrl.ios, info.assetsUrl.android, info.manifestUrl]) {
      const token = tokenOf(url)!
      expect(token).not.toBe(setup.owner.token)
      const claims = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString())
      expect(claims).toMatchObject({ purpose: 'download', vid: version.id })
      // a draft's token expires after the configured download-token lifetime (7 days)
      expect(claims.exp).toBe(Math.floor(setup.context.now.value / 1000) + 7 * 86400)
    }
  })

  test('a published version gets the same token string every time, with no expiry', async () => {
    const version = await uploadVersion(setup, '1.1.0')
    await publish(setup, version.id)
    const first = await install(setup.context, version.id, setup.owner.token)
    setup.context.advance(60_000)
    const second = await install(setup.context, version.id, setup.owner.token)
    expect(second.text).toBe(first.text)
    const token = tokenOf(first.body.bundleUrl)!
    expect(JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString())).toEqual({ purpose: 'download', vid: version.id })
    // the download token itself opens install info too
    const again = await install(setup.context, version.id, token)
    expect(again.status).toBe(200)
    expect(again.text).toBe(first.text)
  })

  test('the public release install answers the current release; 404 RELEASE_NOT_FOUND alike before any and for an unknown appId', async () => {
    const fresh = await setUp({}, 'com.example.fresh')
    try {
      const none = await fresh.context.call('GET', `${access}/apps/${fresh.appId}/release/install`)
      expect({ status: none.status, code: none.body.code }).toEqual({ status: 404, code: 'RELEASE_NOT_FOUND' })
      await uploadVersion(fresh, '1.0.0')
      const draftOnly = await fresh.context.call('GET', `${access}/apps/${fresh.appId}/release/install`)
      expect({ status: draftOnly.status, code: draftOnly.body.code }).toEqual({ status: 404, code: 'RELEASE_NOT_FOUND' })
      for (const appId of ['com.example.unknown', 'x', 'a..b', '%zz']) {
        const res = await fresh.context.call('GET', `${access}/apps/${encodeURIComponent(appId)}/release/install`)
        // the same answer as an app with nothing released: appIds cannot be probed
        expect({ status: res.status, code: res.body.code }).toEqual({ status: 404, code: 'RELEASE_NOT_FOUND' })
      }
    } finally {
      fresh.context.close()
    }
  })
})

describe('every URL install info returns resolves to a working download', () => {
  const configurations: [string, Partial<Config>][] = [
    ['neither public nor CDN URL (the request origin)', {}],
    ['--public-url', { publicUrl: 'https://apps.example.com/api' }],
    ['--cdn-url', { publicUrl: 'https://apps.example.com/api', cdnUrl: 'https://cdn.example.net/miniship' }],
  ]
  for (const [name, overrides] of configurations) {
    test(name, async () => {
      const setup = await setUp(overrides)
      try {
        const bundleIos = 'ios '.repeat(1000)
        const version = await uploadVersion(setup, '2.0.0', { bundleIos, bundleAndroid: 'android bundle' })
        await publish(setup, version.id)
        const release = await setup.context.call('GET', `${access}/apps/${setup.appId}/release/install`)
        expect(release.status).toBe(200)
        const info = release.body
        const base = overrides.cdnUrl ?? overrides.publicUrl ?? 'http://localhost/api'
        const files: [string, string, string][] = [
          [info.bundleUrl, 'bundleIos', 'application/javascript'],
          [info.bundles.ios, 'bundleIos', 'application/javascript'],
          [info.bundles.android, 'bundleAndroid', 'application/javascript'],
          [info.assetsUrl.ios, 'assetsIos', 'application/zip'],
          [info.assetsUrl.android, 'assetsAndroid', 'application/zip'],
          [info.manifestUrl, 'manifest', 'application/json'],
          [derivedManifestUrl(info.bundleUrl), 'manifest', 'application/json'],
        ]
        for (const [url, kind, type] of files) {
          // release install info gives release-stable URLs (decisions §9), the derived manifest among them
          expect(url).toStartWith(`${base}/mini-apps/access/apps/${setup.appId}/release/`)
          const { response, bytes } = await fetchFrom(setup.context, url)
          expect(response.status).toBe(200)
          expect(response.headers.get('content-type')).toBe(type)
          expect(response.headers.get('cache-control')).toBe('public, max-age=60')
          expect({ kind, sha256: sha256Hex(bytes), size: bytes.length }).toEqual({ kind, ...info.files[kind] })
        }
        // install info by version id, through the URL the workspace's access link gives
        const workspace = await setup.context.call('GET', `/api/mini-apps/${setup.miniAppId}/workspace`, { token: setup.owner.token })
        const link = workspace.body.accessLinks.find((entry: { versionId: string }) => entry.versionId === version.id)
        const byLink = await setup.context.app.handle(new Request(resolveUrl(setup.context.config.publicUrl ?? 'http://localhost/api', link.installUrl)))
        expect(byLink.status).toBe(200)
        const pinned = await byLink.json()
        expect(pinned.files).toEqual(info.files)
        expect(pinned.bundleUrl).toStartWith(`${base}/mini-apps/access/versions/${version.id}/bundles/ios?token=`)
      } finally {
        setup.context.close()
      }
    })
  }
})

describe('file answers', () => {
  let setup: Setup
  let draft: { id: string }
  let published: { id: string }
  let draftInfo: Record<string, any>
  let publishedInfo: Record<string, any>
  const bundleIos = '0123456789'.repeat(100)

  beforeAll(async () => {
    setup = await setUp()
    published = await uploadVersion(setup, '1.0.0', { bundleIos })
    await publish(setup, published.id)
    draft = await uploadVersion(setup, '1.1.0', { bundleIos })
    draftInfo = (await install(setup.context, draft.id, setup.owner.token)).body
    publishedInfo = (await install(setup.context, published.id, setup.owner.token)).body
  })
  afterAll(() => setup.context.close())

  test('headers: type, length, strong ETag, disposition; immutable cache for published, no-cache for drafts', async () => {
    const expected: [string, string, string, string][] = [
      ['bundles.ios', 'bundleIos', 'application/javascript', 'main.ios.jsbundle'],
      ['bundles.android', 'bundleAndroid', 'application/javascript', 'main.android.bundle'],
      ['manifestUrl', 'manifest', 'application/json', 'app.json'],
      ['assetsUrl.ios', 'assetsIos', 'application/zip', 'assets-ios.zip'],
      ['assetsUrl.android', 'assetsAndroid', 'application/zip', 'assets-android.zip'],
    ]
    for (const [info, cacheControl] of [
      [publishedInfo, 'public, max-age=31536000, immutable'],
      [draftInfo, 'private, no-cache'],
    ] as const) {
      for (const [field, kind, type, name] of expected) {
        const url = field.split('.').reduce((value: any, key) => value[key], info) as string
        const { response } = await fetchFrom(setup.context, url)
        expect(response.status).toBe(200)
        expect(response.headers.get('content-type')).toBe(type)
        expect(response.headers.get('content-length')).toBe(String(info.files[kind].size))
        expect(response.headers.get('etag')).toBe(`"${info.files[kind].sha256}"`)
        expect(response.headers.get('cache-control')).toBe(cacheControl)
        expect(response.headers.get('content-disposition')).toBe(`attachment; filename="${name}"`)
      }
    }
  })

  test('GET …/bundle answers the iOS bundle, or Android with ?platform=android; the manifest also at …/app.json', async () => {
    const token = tokenOf(draftInfo.bundleUrl)!
    const ios = await fetchFrom(setup.context, `/api/mini-apps/access/versions/${draft.id}/bundle?token=${token}`)
    expect(sha256Hex(ios.bytes)).toBe(draftInfo.files.bundleIos.sha256)
    const android = await fetchFrom(setup.context, `/api/mini-apps/access/versions/${draft.id}/bundle?token=${token}&platform=android`)
    expect(sha256Hex(android.bytes)).toBe(draftInfo.files.bundleAndroid.sha256)
    for (const path of ['app.json', 'bundles/app.json', 'manifest']) {
      const manifest = await fetchFrom(setup.context, `/api/mini-apps/access/versions/${draft.id}/${path}?token=${token}`)
      expect(manifest.response.status).toBe(200)
      expect(JSON.parse(new TextDecoder().decode(manifest.bytes)).version).toBe('1.1.0')
    }
  })

  test('HEAD on every file endpoint answers the GET headers without a body', async () => {
    const token = tokenOf(draftInfo.bundleUrl)!
    const paths: [string, string][] = [
      ['bundle', 'bundleIos'],
      ['bundle?platform=android', 'bundleAndroid'],
      ['bundles/ios', 'bundleIos'],
      ['bundles/android', 'bundleAndroid'],
      ['manifest', 'manifest'],
      ['app.json', 'manifest'],
      ['bundles/app.json', 'manifest'],
      ['assets/ios', 'assetsIos'],
      ['assets/android', 'assetsAndroid'],
    ]
    for (const [path, kind] of paths) {
      const url = `${access}/versions/${draft.id}/${path}${path.includes('?') ? '&' : '?'}token=${token}`
      const get = await fetchFrom(setup.context, url)
      const { response, bytes } = await fetchFrom(setup.context, url, { method: 'HEAD' })
      expect({ path, status: response.status, length: response.headers.get('content-length'), etag: response.headers.get('etag'), body: bytes.length }).toEqual({
        path,
        status: 200,
        length: String(draftInfo.files[kind].size),
        etag: `"${draftInfo.files[kind].sha256}"`,
        body: 0,
      })
      for (const header of ['content-type', 'cache-control', 'content-disposition', 'accept-ranges']) expect(response.headers.get(header)).toBe(get.response.headers.get(header))
    }
    const ranged = await fetchFrom(setup.context, draftInfo.bundleUrl, { method: 'HEAD', headers: { range: 'bytes=10-19' } })
    expect({ status: ranged.response.status, range: ranged.response.headers.get('content-range'), length: ranged.response.headers.get('content-length') }).toEqual({
      status: 206,
      range: `bytes 10-19/${bundleIos.length}`,
      length: '10',
    })
    const refused = await fetchFrom(setup.context, `${access}/versions/${draft.id}/bundles/ios`, { method: 'HEAD' })
    expect(refused.response.status).toBe(401)
    const windows = await fetchFrom(setup.context, `${access}/versions/${draft.id}/assets/windows?token=${token}`, { method: 'HEAD' })
    expect(windows.response.status).toBe(404)
  })

  test('If-None-Match with the ETag → 304 without a body', async () => {
    const etag = `"${publishedInfo.files.bundleIos.sha256}"`
    const { response, bytes } = await fetchFrom(setup.context, publishedInfo.bundleUrl, { headers: { 'if-none-match': etag } })
    expect(response.status).toBe(304)
    expect(response.headers.get('etag')).toBe(etag)
    expect(bytes.length).toBe(0)
    const other = await fetchFrom(setup.context, publishedInfo.bundleUrl, { headers: { 'if-none-match': '"something-else"' } })
    expect(other.response.status).toBe(200)
  })

  test('a single Range → 206 with Content-Range; an interrupted download resumes into an identical file', async () => {
    const first = await fetchFrom(setup.context, draftInfo.bundleUrl, { headers: { range: 'bytes=0-399' } })
    expect(first.response.status).toBe(206)
    expect(first.response.headers.get('content-range')).toBe(`bytes 0-399/${bundleIos.length}`)
    const rest = await fetchFrom(setup.context, draftInfo.bundleUrl, { headers: { range: `bytes=${first.bytes.length}-` } })
    expect(rest.response.status).toBe(206)
    const whole = Buffer.concat([first.bytes, rest.bytes])
    expect(whole.toString()).toBe(bundleIos)
    expect(sha256Hex(whole)).toBe(draftInfo.files.bundleIos.sha256)
  })

  test('several ranges → 200 with the whole file (documented: one range or none is what runtimes send)', async () => {
    const { response, bytes } = await fetchFrom(setup.context, draftInfo.bundleUrl, { headers: { range: 'bytes=0-1,5-9' } })
    expect(response.status).toBe(200)
    expect(bytes.length).toBe(bundleIos.length)
  })

  for (const range of ['bytes=999999999-', 'bytes=5-2']) {
    test(`Range: ${range} → 416 RANGE_NOT_SATISFIABLE with Content-Range: bytes */size`, async () => {
      const { response, bytes } = await fetchFrom(setup.context, draftInfo.bundleUrl, { headers: { range } })
      expect(response.status).toBe(416)
      expect(JSON.parse(new TextDecoder().decode(bytes)).code).toBe('RANGE_NOT_SATISFIABLE')
      expect(response.headers.get('content-range')).toBe(`bytes */${bundleIos.length}`)
    })
  }
})

describe('tokens and bad input', () => {
  let setup: Setup
  let admin: TestUser
  let stranger: TestUser
  let draft: { id: string }
  let other: { id: string }
  let draftToken: string
  let otherToken: string

  beforeAll(async () => {
    setup = await setUp()
    admin = await createTestUser(setup.context, { role: 'ADMIN' })
    stranger = await createTestUser(setup.context)
    draft = await uploadVersion(setup, '1.0.0')
    other = await uploadVersion(setup, '1.0.1')
    draftToken = tokenOf((await install(setup.context, draft.id, setup.owner.token)).body.bundleUrl)!
    otherToken = tokenOf((await install(setup.context, other.id, setup.owner.token)).body.bundleUrl)!
  })
  afterAll(() => setup.context.close())

  const endpoints = (versionId: string) => ['install', 'bundle', 'bundles/ios', 'bundles/android', 'manifest', 'app.json', 'bundles/app.json', 'assets/ios', 'assets/android'].map((path) => `${access}/versions/${versionId}/${path}`)

  async function expectEverywhere(versionId: string, token: string | undefined, status: number, code: string) {
    for (const path of endpoints(versionId)) {
      const res = await setup.context.call('GET', token === undefined ? path : `${path}?token=${encodeURIComponent(token)}`)
      expect({ path, status: res.status, code: res.body.code }).toEqual({ path, status, code })
    }
  }

  test('missing token → 401 TOKEN_REQUIRED', () => expectEverywhere(draft.id, undefined, 401, 'TOKEN_REQUIRED'))
  test('empty token → 401 TOKEN_REQUIRED', () => expectEverywhere(draft.id, '', 401, 'TOKEN_REQUIRED'))
  test('garbage token → 401 INVALID_TOKEN', () => expectEverywhere(draft.id, 'not.a.token', 401, 'INVALID_TOKEN'))

  test('a token signed with another secret → 401 INVALID_TOKEN', async () => {
    const foreign = await createTokenService(new TextEncoder().encode('another-secret-another-secret-another-secret'), () => setup.context.now.value, 3600).signDownload(draft.id, null)
    await expectEverywhere(draft.id, foreign, 401, 'INVALID_TOKEN')
  })

  test('another version’s download token → 403 TOKEN_WRONG_VERSION', () => expectEverywhere(draft.id, otherToken, 403, 'TOKEN_WRONG_VERSION'))
  test('unknown version → 404 VERSION_NOT_FOUND (access token)', () => expectEverywhere('0192f0aa-0000-7000-8000-000000000000', setup.owner.token, 404, 'VERSION_NOT_FOUND'))
  test('an access token of someone who cannot see the miniapp → 404 VERSION_NOT_FOUND', () => expectEverywhere(draft.id, stranger.token, 404, 'VERSION_NOT_FOUND'))

  test('the owner’s and an admin’s access tokens and the version’s download token open every endpoint', async () => {
    for (const token of [setup.owner.token, admin.token, draftToken]) {
      for (const path of endpoints(draft.id)) {
        const res = await setup.context.call('GET', `${path}?token=${encodeURIComponent(token)}`)
        expect({ path, status: res.status }).toEqual({ path, status: 200 })
      }
    }
  })

  test('platform windows → 404 PLATFORM_NOT_FOUND', async () => {
    for (const path of ['bundles/windows', 'assets/windows', 'bundle?platform=windows&x=1']) {
      const separator = path.includes('?') ? '&' : '?'
      const res = await setup.context.call('GET', `${access}/versions/${draft.id}/${path}${separator}token=${draftToken}`)
      expect({ path, status: res.status, code: res.body.code }).toEqual({ path, status: 404, code: 'PLATFORM_NOT_FOUND' })
    }
  })

  test('a disabled user’s access token → 401', async () => {
    const member = await createTestUser(setup.context)
    const add = await setup.context.call('POST', `/api/mini-apps/${setup.miniAppId}/members`, { token: setup.owner.token, json: { email: member.email, role: 'DEVELOPER' } })
    expect(add.status).toBe(201)
    expect((await install(setup.context, draft.id, member.token)).status).toBe(200)
    const disable = await setup.context.call('PATCH', `/api/admin/users/${member.id}`, { token: admin.token, json: { status: 'DISABLED' } })
    expect(disable.status).toBe(200)
    await expectEverywhere(draft.id, member.token, 401, 'TOKEN_REVOKED')
  })

  test('an expired download token → 401 TOKEN_EXPIRED; fresh install info gives a working one', async () => {
    const fresh = await setUp({}, 'com.example.expiry')
    try {
      const version = await uploadVersion(fresh, '1.0.0')
      const info = (await install(fresh.context, version.id, fresh.owner.token)).body
      expect((await fetchFrom(fresh.context, info.bundleUrl)).response.status).toBe(200)
      fresh.context.advance(7 * day - 1000)
      expect((await fetchFrom(fresh.context, info.bundleUrl)).response.status).toBe(200)
      fresh.context.advance(1000)
      for (const url of [info.bundleUrl, info.manifestUrl, info.assetsUrl.android]) {
        const { response, bytes } = await fetchFrom(fresh.context, url)
        expect({ status: response.status, code: JSON.parse(new TextDecoder().decode(bytes)).code }).toEqual({ status: 401, code: 'TOKEN_EXPIRED' })
      }
      // the owner signs in again (the test user's access token lived an hour)
      const ownerToken = await createTokenService(fresh.context.dataDir.secret, () => fresh.context.now.value, 3600).signAccess({ id: fresh.owner.id, role: 'USER', tokenVersion: 1 })
      const renewed = (await install(fresh.context, version.id, ownerToken)).body
      expect((await fetchFrom(fresh.context, renewed.bundleUrl)).response.status).toBe(200)
    } finally {
      fresh.context.close()
    }
  })

  test('install info asked with a draft download token hands out that same token: a link cannot renew itself past its expiry', async () => {
    const fresh = await setUp({}, 'com.example.renewal')
    try {
      const version = await uploadVersion(fresh, '1.0.0')
      const first = (await install(fresh.context, version.id, fresh.owner.token)).body
      const linkToken = tokenOf(first.bundleUrl)!
      fresh.context.advance(6 * day)
      const again = (await install(fresh.context, version.id, linkToken)).body
      for (const url of [again.bundleUrl, again.manifestUrl, again.bundles.android, again.assetsUrl.ios]) expect(tokenOf(url)).toBe(linkToken)
      fresh.context.advance(day)
      const expired = await install(fresh.context, version.id, linkToken)
      expect({ status: expired.status, code: expired.body.code }).toEqual({ status: 401, code: 'TOKEN_EXPIRED' })
    } finally {
      fresh.context.close()
    }
  })

  test('a version deleted after its token was issued → 404 VERSION_NOT_FOUND', async () => {
    const doomed = await uploadVersion(setup, '3.0.0')
    const info = (await install(setup.context, doomed.id, setup.owner.token)).body
    const token = tokenOf(info.bundleUrl)!
    expect((await fetchFrom(setup.context, info.bundleUrl)).response.status).toBe(200)
    const removed = await setup.context.call('DELETE', `/api/mini-apps/${setup.miniAppId}/versions/${doomed.id}`, { token: setup.owner.token })
    expect(removed.status).toBe(200)
    await expectEverywhere(doomed.id, token, 404, 'VERSION_NOT_FOUND')
  })

  test('without a token the derived manifest paths answer the current release only', async () => {
    const fresh = await setUp({}, 'com.example.derived')
    try {
      const released = await uploadVersion(fresh, '1.0.0')
      await publish(fresh, released.id)
      const newer = await uploadVersion(fresh, '1.1.0')
      for (const path of ['app.json', 'bundles/app.json']) {
        const ok = await fresh.context.call('GET', `${access}/versions/${released.id}/${path}`)
        expect(ok.status).toBe(200)
        expect(ok.body.version).toBe('1.0.0')
        const refused = await fresh.context.call('GET', `${access}/versions/${newer.id}/${path}`)
        expect({ status: refused.status, code: refused.body.code }).toEqual({ status: 401, code: 'TOKEN_REQUIRED' })
        const unknown = await fresh.context.call('GET', `${access}/versions/0192f0aa-0000-7000-8000-000000000000/${path}`)
        expect({ status: unknown.status, code: unknown.body.code }).toEqual({ status: 401, code: 'TOKEN_REQUIRED' })
      }
      // the other file endpoints always need a token, even for the release
      const bundle = await fresh.context.call('GET', `${access}/versions/${released.id}/bundles/ios`)
      expect({ status: bundle.status, code: bundle.body.code }).toEqual({ status: 401, code: 'TOKEN_REQUIRED' })
    } finally {
      fresh.context.close()
    }
  })
})

describe('a download token opens its own version only, also once the caches know it', () => {
  // The runtime answers a download token it has verified before from its caches (the fast path),
  // so the token's scope must hold there too: each case first uses the token where it belongs
  // (filling the caches), then elsewhere. The other versions' install info is cached as well (the
  // owner asked for it), so a fast path that skipped the version check would have an answer ready.
  let setup: Setup
  let otherApp: Setup
  const versions: Record<string, { id: string }> = {}

  const paths = ['install', 'bundle', 'bundle?platform=android', 'bundles/ios', 'bundles/android', 'manifest', 'app.json', 'bundles/app.json', 'assets/ios', 'assets/android']
  const filePaths = paths.filter((path) => path !== 'install')
  const url = (versionId: string, path: string, token: string) => `${access}/versions/${versionId}/${path}${path.includes('?') ? '&' : '?'}token=${encodeURIComponent(token)}`

  /** GET of install info and every file endpoint, then HEAD of every file endpoint: status and code of each. */
  async function answers(versionId: string, token: string) {
    const seen: { request: string; status: number; code: string | undefined }[] = []
    for (const path of paths) {
      const res = await setup.context.call('GET', url(versionId, path, token))
      seen.push({ request: `GET ${path}`, status: res.status, code: res.status === 200 ? undefined : res.body.code })
    }
    for (const path of filePaths) {
      const { response, bytes } = await fetchFrom(setup.context, url(versionId, path, token), { method: 'HEAD' })
      seen.push({ request: `HEAD ${path}`, status: response.status, code: response.status === 200 ? undefined : JSON.parse(new TextDecoder().decode(bytes)).code })
    }
    return seen
  }

  const everywhere = (status: number, code?: string) => [...paths.map((path) => `GET ${path}`), ...filePaths.map((path) => `HEAD ${path}`)].map((request) => ({ request, status, code }))

  beforeAll(async () => {
    setup = await setUp({}, 'com.example.scope')
    const created = await createMiniApp(setup.context, setup.owner.token, 'com.example.neighbour')
    otherApp = { ...setup, miniAppId: created.id, appId: 'com.example.neighbour' }
    for (const [name, target, version] of [['published', setup, '1.0.0'], ['sibling', setup, '1.1.0'], ['neighbour', otherApp, '1.0.0']] as const) {
      versions[name] = await uploadVersion(target, version, { bundleIos: `${name} bundle` })
      await publish(target, versions[name]!.id)
    }
    versions.draft = await uploadVersion(setup, '2.0.0', { bundleIos: 'draft bundle' })
    versions.draftSibling = await uploadVersion(setup, '2.1.0', { bundleIos: 'draft sibling bundle' })
    for (const version of Object.values(versions)) expect((await install(setup.context, version.id, setup.owner.token)).status).toBe(200)
  })
  afterAll(() => setup.context.close())

  const cases: [string, string, string[]][] = [
    ['a published version', 'published', ['sibling', 'neighbour', 'draft']],
    ['a draft', 'draft', ['draftSibling', 'published', 'neighbour']],
  ]
  for (const [what, own, others] of cases) {
    test(`the token of ${what}: 200 on its own version, then 403 TOKEN_WRONG_VERSION on another of the same app and of another app`, async () => {
      const token = tokenOf((await install(setup.context, versions[own]!.id, setup.owner.token)).body.bundleUrl)!
      expect(await answers(versions[own]!.id, token)).toEqual(everywhere(200))
      // the token's own version still answers from the caches: the files it opens are its own
      const bundle = await fetchFrom(setup.context, url(versions[own]!.id, 'bundles/ios', token))
      expect(new TextDecoder().decode(bundle.bytes)).toBe(`${own} bundle`)
      for (const other of others) {
        expect({ other, answers: await answers(versions[other]!.id, token) }).toEqual({ other, answers: everywhere(403, 'TOKEN_WRONG_VERSION') })
      }
      // and once more on its own version after the refusals: nothing was cached for the wrong one
      expect(await answers(versions[own]!.id, token)).toEqual(everywhere(200))
    })
  }
})

describe('install info stays right across the lifecycle (cache freshness)', () => {
  test('publish, re-upload, rename, rollback and delete are seen at once', async () => {
    const setup = await setUp({}, 'com.example.fresh2')
    try {
      const releaseInstall = () => setup.context.call('GET', `${access}/apps/${setup.appId}/release/install`)
      const v1 = await uploadVersion(setup, '1.0.0', { bundleIos: 'v1' })
      // a draft re-uploaded under the same version string: same id, new files
      const before = (await install(setup.context, v1.id, setup.owner.token)).body
      const reuploaded = await uploadVersion(setup, '1.0.0', { bundleIos: 'v1 again' })
      expect(reuploaded.id).toBe(v1.id)
      const after = (await install(setup.context, v1.id, setup.owner.token)).body
      expect(after.files.bundleIos.sha256).not.toBe(before.files.bundleIos.sha256)
      expect(after.files.bundleIos.sha256).toBe(sha256Hex(new TextEncoder().encode('v1 again')))

      await publish(setup, v1.id)
      const first = (await releaseInstall()).body
      expect(first.versionId).toBe(v1.id)
      expect(JSON.parse(Buffer.from(tokenOf(first.bundleUrl)!.split('.')[1]!, 'base64url').toString()).exp).toBeUndefined()

      const v2 = await uploadVersion(setup, '2.0.0', { bundleIos: 'v2' })
      expect((await releaseInstall()).body.versionId).toBe(v1.id)
      await publish(setup, v2.id)
      expect((await releaseInstall()).body).toMatchObject({ versionId: v2.id, version: '2.0.0' })

      const rename = await setup.context.call('PATCH', `/api/mini-apps/${setup.miniAppId}`, { token: setup.owner.token, json: { name: 'Renamed shop' } })
      expect(rename.status).toBe(200)
      expect((await releaseInstall()).body.appName).toBe('Renamed shop')
      expect((await install(setup.context, v1.id, setup.owner.token)).body.appName).toBe('Renamed shop')

      await rollback(setup, v1.id)
      const rolledBack = (await releaseInstall()).body
      expect(rolledBack).toMatchObject({ versionId: v1.id, version: '1.0.0', appName: 'Renamed shop' })
      expect(rolledBack.bundleUrl).toBe(first.bundleUrl)
      expect(sha256Hex((await fetchFrom(setup.context, rolledBack.bundleUrl)).bytes)).toBe(sha256Hex(new TextEncoder().encode('v1 again')))

      // a draft deleted after its install info was served (and cached nowhere) is gone
      const v3 = await uploadVersion(setup, '3.0.0')
      const v3Info = (await install(setup.context, v3.id, setup.owner.token)).body
      await setup.context.call('DELETE', `/api/mini-apps/${setup.miniAppId}/versions/${v3.id}`, { token: setup.owner.token })
      const gone = await install(setup.context, v3.id, tokenOf(v3Info.bundleUrl)!)
      expect({ status: gone.status, code: gone.body.code }).toEqual({ status: 404, code: 'VERSION_NOT_FOUND' })
      // and so are its files, through the links that install info handed out
      for (const link of [v3Info.bundleUrl, v3Info.manifestUrl, v3Info.assetsUrl.android]) {
        const { response, bytes } = await fetchFrom(setup.context, link)
        expect({ status: response.status, code: JSON.parse(new TextDecoder().decode(bytes)).code }).toEqual({ status: 404, code: 'VERSION_NOT_FOUND' })
      }
    } finally {
      setup.context.close()
    }
  })
})

describe('a stored file gone from the data directory', () => {
  test('GET and HEAD → 500 STORED_FILE_MISSING as JSON, pointing at `miniship doctor`, the path only in the log', async () => {
    const setup = await setUp()
    try {
      const version = await uploadVersion(setup, '1.0.0', { bundleAndroid: 'android-only-here' })
      const info = (await install(setup.context, version.id, setup.owner.token)).body
      const blob = blobPath(setup.context.dataDir.paths, version.files.bundleAndroid!.sha256)
      rmSync(blob)
      const url = `${access}/versions/${version.id}/bundles/android?token=${tokenOf(info.bundleUrl)}`
      const get = await setup.context.call('GET', url)
      expect({ status: get.status, type: get.headers.get('content-type'), code: get.body.code }).toEqual({
        status: 500,
        type: 'application/json; charset=utf-8',
        code: 'STORED_FILE_MISSING',
      })
      expect(get.body.message).toContain('miniship doctor')
      expect(get.text).not.toContain(setup.context.dataDir.paths.root)
      expect(get.text).not.toContain(version.files.bundleAndroid!.sha256)
      expect(setup.context.logs.some((line) => line.includes('stored file missing') && line.includes(blob))).toBe(true)
      const head = await fetchFrom(setup.context, url, { method: 'HEAD' })
      expect({ status: head.response.status, code: JSON.parse(new TextDecoder().decode(head.bytes)).code }).toEqual({ status: 500, code: 'STORED_FILE_MISSING' })
      // the other files of the version still answer
      expect((await fetchFrom(setup.context, info.bundleUrl)).response.status).toBe(200)
    } finally {
      setup.context.close()
    }
  })
})
