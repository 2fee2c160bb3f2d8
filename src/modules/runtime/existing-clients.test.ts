// What the existing CLI and host runtime need (decisions §9): manifest version, warnings, experience install, origins, deep links.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createTestContext, type TestContext } from '../../test-support'
import { createMiniApp, createTestUser, upload, uploadForm, type TestUser } from '../../test-fixtures'
import { derivedManifestUrl } from './test-runtime'

const access = '/api/mini-apps/access'
const appId = 'com.example.clients'
let context: TestContext
let owner: TestUser
let stranger: TestUser
let admin: TestUser
let miniAppId = ''

const outcome = (res: { status: number; body: { code?: string } }) => ({ status: res.status, code: res.body?.code })

beforeAll(async () => {
  context = createTestContext()
  owner = await createTestUser(context)
  stranger = await createTestUser(context)
  admin = await createTestUser(context, { role: 'ADMIN' })
  miniAppId = (await createMiniApp(context, owner.token, appId)).id
})
afterAll(() => context.close())

describe('the manifest version (decisions §5, §9)', () => {
  test('app.json says 0.0.1, the form 1.0.1733000000000: 201, the stored and downloaded manifest say the form’s, with MANIFEST_VERSION_SET', async () => {
    const manifest = JSON.stringify({ appId, name: 'Shop', version: '0.0.1', pages: { index: 'pages/index' } })
    const res = await upload(context, owner.token, appId, uploadForm(appId, { version: '1.0.1733000000000', manifest, channel: 'stable', releaseType: 'RELEASE' }))
    expect(res.status).toBe(201)
    expect(res.body.warnings).toEqual([{ code: 'MANIFEST_VERSION_SET', message: expect.stringContaining('1.0.1733000000000') }])
    const install = await context.call('GET', `${access}/versions/${res.body.id}/install?token=${owner.token}`)
    const downloaded = await context.app.handle(new Request(install.body.manifestUrl))
    expect(downloaded.status).toBe(200)
    const stored = await downloaded.json()
    expect(stored).toEqual({ appId, name: 'Shop', version: '1.0.1733000000000', pages: { index: 'pages/index' } })
  })

  test('a CLI-style upload (app.json with the package version, --version 1.0.1, extra fields): 201 with the warning', async () => {
    const form = uploadForm(appId, { version: '1.0.1', manifest: JSON.stringify({ name: 'Shop', version: '1.0.0', pages: { a: 'b' } }), channel: 'stable', releaseType: 'RELEASE' })
    form.append('buildTool', 'metro')
    const res = await upload(context, owner.token, appId, form)
    expect(res.status).toBe(201)
    expect(res.body.warnings.map((warning: { code: string }) => warning.code)).toEqual(['MANIFEST_VERSION_SET'])
  })

  test('a manifest without version and without pages: both warnings, as { code, message } objects', async () => {
    const res = await upload(context, owner.token, appId, uploadForm(appId, { version: '1.0.2', manifest: JSON.stringify({ name: 'Shop' }) }))
    expect(res.status).toBe(201)
    expect(res.body.warnings.map((warning: { code: string }) => warning.code)).toEqual(['MANIFEST_VERSION_SET', 'MANIFEST_WITHOUT_PAGES'])
    for (const warning of res.body.warnings) expect(typeof warning.message).toBe('string')
  })

  test('pages must be an object of strings, else MANIFEST_WITHOUT_PAGES', async () => {
    const res = await upload(context, owner.token, appId, uploadForm(appId, { version: '1.0.3', manifest: JSON.stringify({ version: '1.0.3', pages: { a: 1 } }) }))
    expect(res.body.warnings.map((warning: { code: string }) => warning.code)).toEqual(['MANIFEST_WITHOUT_PAGES'])
  })

  test('an appId that differs from the path stays 400 MANIFEST_MISMATCH', async () => {
    const res = await upload(context, owner.token, appId, uploadForm(appId, { version: '1.0.4', manifest: JSON.stringify({ appId: 'com.example.other', version: '1.0.4' }) }))
    expect(outcome(res)).toEqual({ status: 400, code: 'MANIFEST_MISMATCH' })
  })
})

describe('the experience install (decisions §9)', () => {
  test('an app without an experience version: 404 EXPERIENCE_NOT_FOUND (with a member’s token)', async () => {
    const empty = await createMiniApp(context, owner.token, 'com.example.empty')
    expect(empty.id).toBeTruthy()
    expect(outcome(await context.call('GET', `${access}/apps/com.example.empty/experience/install?token=${owner.token}`))).toEqual({ status: 404, code: 'EXPERIENCE_NOT_FOUND' })
    // without a token an unknown appId is answered as a miniapp that is not public (experience-existence.test.ts)
    expect(outcome(await context.call('GET', `${access}/apps/com.example.unknown/experience/install`))).toEqual({ status: 401, code: 'EXPERIENCE_NOT_PUBLIC' })
    expect(outcome(await context.call('GET', `${access}/apps/com.example.unknown/experience/install?token=${owner.token}`))).toEqual({ status: 404, code: 'MINI_APP_NOT_FOUND' })
  })

  test('without a token while not public: 401 EXPERIENCE_NOT_PUBLIC, saying how to turn it on', async () => {
    const res = await context.call('GET', `${access}/apps/${appId}/experience/install`)
    expect(outcome(res)).toEqual({ status: 401, code: 'EXPERIENCE_NOT_PUBLIC' })
    expect(res.body.message).toContain('experiencePublic')
  })

  test('with a member’s token: the current experience version; a stranger’s: 404; a download token: 401', async () => {
    const res = await context.call('GET', `${access}/apps/${appId}/experience/install?token=${owner.token}`)
    expect(res.status).toBe(200)
    expect(res.body.version).toBe('1.0.3')
    expect(outcome(await context.call('GET', `${access}/apps/${appId}/experience/install?token=${stranger.token}`))).toEqual({ status: 404, code: 'MINI_APP_NOT_FOUND' })
    const downloadToken = new URL(res.body.bundleUrl).searchParams.get('token')!
    expect(outcome(await context.call('GET', `${access}/apps/${appId}/experience/install?token=${downloadToken}`))).toEqual({ status: 401, code: 'INVALID_TOKEN' })
  })

  test('experiencePublic on (PATCH, audited, in the workspace): answered without a token, with working download URLs', async () => {
    const patched = await context.call('PATCH', `/api/mini-apps/${miniAppId}`, { token: owner.token, json: { experiencePublic: true } })
    expect(patched.status).toBe(200)
    expect(patched.body.experiencePublic).toBe(true)
    expect(outcome(await context.call('PATCH', `/api/mini-apps/${miniAppId}`, { token: owner.token, json: { experiencePublic: 'yes' } }))).toEqual({ status: 400, code: 'VALIDATION_ERROR' })
    const workspace = await context.call('GET', `/api/mini-apps/${miniAppId}/workspace`, { token: owner.token })
    expect(workspace.body.miniApp.experiencePublic).toBe(true)
    const audit = await context.call('GET', '/api/admin/users', { token: admin.token })
    expect(audit.body.auditLogs[0]).toMatchObject({ action: 'miniapp.update', metadata: { changed: ['experiencePublic'], experiencePublic: true } })
    const res = await context.call('GET', `${access}/apps/${appId}/experience/install`)
    expect(res.status).toBe(200)
    expect(res.body.version).toBe('1.0.3')
    const bundle = await context.app.handle(new Request(res.body.bundles.android))
    expect(bundle.status).toBe(200)
  })

  test("a draft's links from the public install stop working when experiencePublic is turned off (decisions §18), in every file and install info", async () => {
    const res = await context.call('GET', `${access}/apps/${appId}/experience/install`)
    expect(res.status).toBe(200)
    const versionId = res.body.versionId as string
    const token = new URL(res.body.bundles.android).searchParams.get('token')!
    const links = [res.body.bundles.android, res.body.bundles.ios, res.body.manifestUrl, res.body.assetsUrl.ios, `http://localhost${access}/versions/${versionId}/install?token=${token}`]
    for (const url of links) expect({ url, status: (await context.app.handle(new Request(url))).status }).toEqual({ url, status: 200 })
    expect((await context.call('PATCH', `/api/mini-apps/${miniAppId}`, { token: owner.token, json: { experiencePublic: false } })).status).toBe(200)
    for (const url of links) {
      const answer = await context.app.handle(new Request(url))
      expect({ url, status: answer.status, code: ((await answer.json()) as { code: string }).code }).toEqual({ url, status: 401, code: 'TOKEN_REVOKED' })
    }
    // a member's own links are not the public switch's: they keep working
    const member = await context.call('GET', `${access}/apps/${appId}/experience/install?token=${owner.token}`)
    expect((await context.app.handle(new Request(member.body.bundles.android))).status).toBe(200)
    // public again: the switch's links hold again
    expect((await context.call('PATCH', `/api/mini-apps/${miniAppId}`, { token: owner.token, json: { experiencePublic: true } })).status).toBe(200)
    expect((await context.app.handle(new Request(links[0]))).status).toBe(200)
  })
})

describe('URLs on the request origin, never a bare path (decisions §6)', () => {
  test('two origins never see each other’s cached URLs', async () => {
    const uploaded = await upload(context, owner.token, appId, uploadForm(appId, { version: '2.0.0' }))
    expect((await context.call('POST', `/api/mini-apps/${miniAppId}/versions/${uploaded.body.id}/publish`, { token: owner.token, json: {} })).status).toBe(200)
    const ask = async (host: string) => (await context.app.handle(new Request(`http://${host}${access}/apps/${appId}/release/install`, { headers: { host } }))).json()
    const first = await ask('apps.example.com')
    const second = await ask('10.1.2.3:3001')
    const again = await ask('apps.example.com')
    expect(first.bundleUrl).toStartWith(`http://apps.example.com/api/mini-apps/access/apps/${appId}/release/bundles/ios?token=`)
    expect(second.bundleUrl).toStartWith(`http://10.1.2.3:3001/api/mini-apps/access/apps/${appId}/release/bundles/ios?token=`)
    expect(again).toEqual(first)
    const pinned = async (host: string) => (await context.app.handle(new Request(`http://${host}${access}/versions/${uploaded.body.id}/install?token=${owner.token}`, { headers: { host } }))).json()
    expect((await pinned('a.example')).manifestUrl).toStartWith('http://a.example/api/')
    expect((await pinned('b.example')).manifestUrl).toStartWith('http://b.example/api/')
  })

  test('a Host header with a path or spaces: 400 INVALID_HOST, on install info, the update check and the workspace', async () => {
    for (const host of ['evil.example/phish', 'evil example', 'a.example?x']) {
      const release = await context.app.handle(new Request(`http://localhost${access}/apps/${appId}/release/install`, { headers: { host } }))
      expect({ host, status: release.status, code: (await release.json()).code }).toEqual({ host, status: 400, code: 'INVALID_HOST' })
      const check = await context.app.handle(new Request(`http://localhost${access}/apps/${appId}/update?platform=ios&currentVersion=1.0.0`, { headers: { host } }))
      expect(check.status).toBe(400)
      const workspace = await context.app.handle(new Request(`http://localhost/api/mini-apps/${miniAppId}/workspace`, { headers: { host, authorization: `Bearer ${owner.token}` } }))
      expect(workspace.status).toBe(400)
    }
  })

  test('access links: full install URLs, a deep link that carries it, and the expiry of drafts', async () => {
    const res = await context.app.handle(new Request(`http://localhost/api/mini-apps/${miniAppId}/workspace`, { headers: { host: 'apps.example.com', authorization: `Bearer ${owner.token}` } }))
    const workspace = await res.json()
    for (const link of workspace.accessLinks) {
      expect(link.installUrl).toStartWith(`http://apps.example.com/api/mini-apps/access/versions/${link.versionId}/install?token=`)
      expect(link.deepLink).toBe(`miniapp://miniapp/install/${link.versionId}?installUrl=${encodeURIComponent(link.installUrl)}`)
      const version = workspace.versions.find((row: { id: string }) => row.id === link.versionId)
      if (version.status === 'PUBLISHED') expect(link.expiresAt).toBeNull()
      else expect(link.expiresAt).toBe(new Date(context.now.value + 7 * 86_400_000).toISOString().replace(/\.\d{3}Z$/, '.000Z'))
    }
  })
})

describe('release-stable URLs (decisions §9)', () => {
  test('a runtime that installed the release finds the next release at the app.json next to its bundle URL, with no token', async () => {
    const installed = (await context.call('GET', `${access}/apps/${appId}/release/install`)).body
    expect(installed.version).toBe('2.0.0')
    const manifestUrl = derivedManifestUrl(installed.bundles.android)
    expect(new URL(manifestUrl).search).toBe('')
    const next = await upload(context, owner.token, appId, uploadForm(appId, { version: '2.1.0' }))
    expect((await context.call('POST', `/api/mini-apps/${miniAppId}/versions/${next.body.id}/publish`, { token: owner.token, json: {} })).status).toBe(200)
    const manifest = await context.app.handle(new Request(manifestUrl))
    expect(manifest.status).toBe(200)
    expect(manifest.headers.get('cache-control')).toBe('public, max-age=60')
    const etag = manifest.headers.get('etag')!
    expect((await manifest.json()).version).toBe('2.1.0')
    const revalidated = await context.app.handle(new Request(manifestUrl, { headers: { 'if-none-match': etag } }))
    expect(revalidated.status).toBe(304)
    const head = await context.app.handle(new Request(installed.bundles.ios, { method: 'HEAD' }))
    expect(head.status).toBe(200)
    expect(Number(head.headers.get('content-length'))).toBeGreaterThan(0)
    const range = await context.app.handle(new Request(installed.bundles.ios, { headers: { range: 'bytes=0-3' } }))
    expect(range.status).toBe(206)
  })

  test('paths below release/ that name no file: 404; an unknown platform: 404 PLATFORM_NOT_FOUND', async () => {
    expect((await context.app.handle(new Request(`http://localhost${access}/apps/${appId}/release/nothing`))).status).toBe(404)
    const platform = await context.app.handle(new Request(`http://localhost${access}/apps/${appId}/release/bundles/windows`))
    expect({ status: platform.status, code: (await platform.json()).code }).toEqual({ status: 404, code: 'PLATFORM_NOT_FOUND' })
    const unknown = await context.app.handle(new Request(`http://localhost${access}/apps/com.example.unknown/release/app.json`))
    expect({ status: unknown.status, code: (await unknown.json()).code }).toEqual({ status: 404, code: 'RELEASE_NOT_FOUND' })
  })
})
