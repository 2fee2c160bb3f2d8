// S3 storage against a real S3-compatible server (s3rver): uploads, downloads in both modes, faults, the mirror, doctor and GC.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readdirSync } from 'node:fs'
import { createTestContext, type TestContext } from '../test-support'
import type { Config } from '../config'
import { createMiniApp, createTestUser, upload, uploadForm, type TestUser } from '../modules/versions/test-fixtures'
import { sha256Hex } from '../modules/runtime/test-runtime'
import { checkStoredFiles } from '.'
import { collectStoreGarbage, findStoreGarbage } from './gc'
import { createS3BlobStore, describeProbeFailure, type S3BlobStore } from './s3'
import { startTestS3, type TestS3 } from './test-s3'

const access = '/api/mini-apps/access'
let s3: TestS3
beforeAll(async () => {
  s3 = await startTestS3()
})
afterAll(() => s3.close())

interface Setup {
  context: TestContext
  owner: TestUser
  miniAppId: string
  appId: string
  store: S3BlobStore
}

async function setUp(prefix: string, overrides: Partial<Config> = {}): Promise<Setup> {
  const context = createTestContext({ storage: s3.config(prefix), ...overrides })
  const owner = await createTestUser(context)
  const appId = `com.example.${prefix.replace(/[^a-z]/g, '')}`
  const miniApp = await createMiniApp(context, owner.token, appId)
  return { context, owner, miniAppId: miniApp.id, appId, store: createS3BlobStore(s3.config(prefix), context.dataDir.paths) }
}

async function uploadVersion(setup: Setup, version: string) {
  const res = await upload(setup.context, setup.owner.token, setup.appId, uploadForm(setup.appId, { version }))
  if (res.status !== 201) throw new Error(`upload failed: ${res.status} ${res.text}`)
  return res.body as { id: string; files: Record<string, { size: number; sha256: string }> }
}

const publish = (setup: Setup, versionId: string) => setup.context.call('POST', `/api/mini-apps/${setup.miniAppId}/versions/${versionId}/publish`, { token: setup.owner.token, json: {} })

const fileUrl = (versionId: string, path: string, token: string) => `${access}/versions/${versionId}/${path}?token=${encodeURIComponent(token)}`

describe('uploads into the bucket', () => {
  let setup: Setup
  let version: Awaited<ReturnType<typeof uploadVersion>>
  beforeAll(async () => {
    setup = await setUp('uploads')
    version = await uploadVersion(setup, '1.0.0')
  })
  afterAll(() => setup.context.close())

  test('every file lands under [prefix/]blobs/sha256/ab/<sha256>; nothing stays in the data directory', async () => {
    const listed = await setup.store.list()
    expect(listed.map((blob) => blob.sha256).sort()).toEqual(Object.values(version.files).map((file) => file.sha256).sort())
    for (const file of Object.values(version.files)) {
      const response = await fetch(s3.publicUrl(`uploads/blobs/sha256/${file.sha256.slice(0, 2)}/${file.sha256}`))
      expect(response.status).toBe(200)
      expect(sha256Hex(await response.arrayBuffer())).toBe(file.sha256)
    }
    expect(readdirSync(setup.context.dataDir.paths.tmp)).toEqual([])
    expect(readdirSync(`${setup.context.dataDir.paths.blobs}/sha256`)).toEqual([])
  })

  test('doctor finds every stored file intact in the bucket, and a missing one by its s3:// name', async () => {
    expect(await checkStoredFiles(setup.context.dataDir.db.$client, setup.store)).toEqual([])
    const other = await uploadVersion(setup, '1.0.1')
    await setup.store.remove(other.files.bundleIos!.sha256)
    const problems = await checkStoredFiles(setup.context.dataDir.db.$client, setup.store)
    expect(problems).toHaveLength(1)
    expect(problems[0]).toContain(`s3://miniship-test/uploads/blobs/sha256/${other.files.bundleIos!.sha256.slice(0, 2)}/`)
    expect(problems[0]).toContain('is missing')
  })

  test('deleting a version removes its objects; GC removes what no row refers to', async () => {
    const draft = await uploadVersion(setup, '3.0.0')
    const res = await setup.context.call('DELETE', `/api/mini-apps/${setup.miniAppId}/versions/${draft.id}`, { token: setup.owner.token })
    expect(res.status).toBe(200)
    expect(await setup.store.size(draft.files.bundleIos!.sha256)).toBeNull()
    const stray = await setup.store.commit({ path: await writeStray(setup, 'stray'), sha256: sha256Hex(new TextEncoder().encode('stray')), size: 5 })
    setup.store.release([stray.sha256])
    expect((await findStoreGarbage(setup.store, setup.context.dataDir.db.$client)).map((file) => file.sha256)).toEqual([stray.sha256])
    expect((await collectStoreGarbage(setup.store, setup.context.dataDir.db.$client)).removedFiles).toBe(1)
    expect(await setup.store.size(stray.sha256)).toBeNull()
    expect(await findStoreGarbage(setup.store, setup.context.dataDir.db.$client)).toEqual([])
  })
})

async function writeStray(setup: Setup, content: string): Promise<string> {
  const path = `${setup.context.dataDir.paths.tmp}/stray-${Bun.randomUUIDv7()}`
  await Bun.write(path, content)
  return path
}

for (const mode of ['redirect', 'proxy'] as const) {
  describe(`downloads with --s3-downloads ${mode}`, () => {
    let setup: Setup
    let versionId: string
    let token: string
    let bundle: { size: number; sha256: string }
    beforeAll(async () => {
      setup = await setUp(`dl${mode}`, { s3Downloads: mode })
      const version = await uploadVersion(setup, '1.0.0')
      versionId = version.id
      bundle = version.files.bundleAndroid!
      expect((await publish(setup, versionId)).status).toBe(200)
      const info = await setup.context.call('GET', `${access}/versions/${versionId}/install?token=${setup.owner.token}`)
      token = new URL(info.body.bundleUrl, 'http://localhost').searchParams.get('token')!
    })
    afterAll(() => setup.context.close())

    /** What a runtime gets: the answer, followed to the bucket when it is a redirect. */
    async function download(path: string, headers: Record<string, string> = {}, method = 'GET') {
      const first = await setup.context.app.handle(new Request(`http://localhost${fileUrl(versionId, path, token)}`, { method, headers }))
      if (first.status !== 302) return first
      expect(first.headers.get('cache-control')).toBe('no-store')
      return fetch(first.headers.get('location')!, { method, headers })
    }

    test('GET answers the bytes', async () => {
      const response = await download('bundles/android')
      expect(response.status).toBe(200)
      expect(sha256Hex(await response.arrayBuffer())).toBe(bundle.sha256)
    })

    test(`${mode === 'redirect' ? 'a 302 to a presigned URL valid a few minutes' : 'the same headers as local storage'}`, async () => {
      const response = await setup.context.app.handle(new Request(`http://localhost${fileUrl(versionId, 'bundles/android', token)}`))
      if (mode === 'redirect') {
        expect(response.status).toBe(302)
        const location = new URL(response.headers.get('location')!)
        expect(location.origin).toBe(s3.endpoint)
        expect(location.pathname).toBe(`/miniship-test/dlredirect/blobs/sha256/${bundle.sha256.slice(0, 2)}/${bundle.sha256}`)
        expect(location.searchParams.get('X-Amz-Expires')).toBe('300')
      } else {
        expect(response.status).toBe(200)
        expect(response.headers.get('etag')).toBe(`"${bundle.sha256}"`)
        expect(response.headers.get('content-type')).toBe('application/javascript')
        expect(response.headers.get('content-length')).toBe(String(bundle.size))
        expect(response.headers.get('cache-control')).toBe('public, max-age=31536000, immutable')
        await response.arrayBuffer()
      }
    })

    test('Range answers 206 with the slice', async () => {
      const whole = new Uint8Array(await (await download('bundles/android')).arrayBuffer())
      const response = await download('bundles/android', { range: 'bytes=2-5' })
      expect(response.status).toBe(206)
      expect(response.headers.get('content-range')).toBe(`bytes 2-5/${bundle.size}`)
      expect(new Uint8Array(await response.arrayBuffer())).toEqual(whole.slice(2, 6))
    })

    test('HEAD answers the headers from the database, 304 for a matching If-None-Match, 416 for a bad range', async () => {
      const head = await setup.context.app.handle(new Request(`http://localhost${fileUrl(versionId, 'bundles/android', token)}`, { method: 'HEAD' }))
      expect(head.status).toBe(200)
      expect(head.headers.get('content-length')).toBe(String(bundle.size))
      expect(head.headers.get('etag')).toBe(`"${bundle.sha256}"`)
      const cached = await setup.context.app.handle(new Request(`http://localhost${fileUrl(versionId, 'bundles/android', token)}`, { headers: { 'if-none-match': `"${bundle.sha256}"` } }))
      expect(cached.status).toBe(304)
      const bad = await setup.context.call('GET', fileUrl(versionId, 'bundles/android', token), { headers: { range: `bytes=${bundle.size + 10}-` } })
      expect(bad.status).toBe(416)
      expect(bad.body.code).toBe('RANGE_NOT_SATISFIABLE')
    })

    test('every token check comes first: no token 401, a wrong token 401, another version 403', async () => {
      const none = await setup.context.call('GET', `${access}/versions/${versionId}/bundles/android`)
      expect(none.status).toBe(401)
      expect(none.body.code).toBe('TOKEN_REQUIRED')
      const wrong = await setup.context.call('GET', fileUrl(versionId, 'bundles/android', 'nope'))
      expect(wrong.status).toBe(401)
      expect(wrong.body.code).toBe('INVALID_TOKEN')
      const other = await uploadVersion(setup, '2.0.0')
      const foreign = await setup.context.call('GET', fileUrl(other.id, 'bundles/android', token))
      expect(foreign.status).toBe(403)
      expect(foreign.body.code).toBe('TOKEN_WRONG_VERSION')
    })
  })
}

describe('faults: the bucket stops answering', () => {
  let setup: Setup
  let versionId: string
  let token: string
  beforeAll(async () => {
    setup = await setUp('faults', { s3Downloads: 'proxy' })
    const version = await uploadVersion(setup, '1.0.0')
    versionId = version.id
    await publish(setup, versionId)
    const info = await setup.context.call('GET', `${access}/versions/${versionId}/install?token=${setup.owner.token}`)
    token = new URL(info.body.bundleUrl, 'http://localhost').searchParams.get('token')!
  })
  afterAll(async () => {
    await s3.start()
    setup.context.close()
  })

  test('a download answers 503 STORAGE_UNAVAILABLE (proxy), an upload 503 with no row and, once the bucket is back, no object', async () => {
    const before = (await setup.store.list()).length
    await s3.stop()
    const download = await setup.context.call('GET', fileUrl(versionId, 'bundles/ios', token))
    expect(download.status).toBe(503)
    expect(download.body.code).toBe('STORAGE_UNAVAILABLE')
    expect(download.text).not.toContain('127.0.0.1')

    const uploaded = await upload(setup.context, setup.owner.token, setup.appId, uploadForm(setup.appId, { version: '9.9.9', bundleIos: 'fresh ios bytes', bundleAndroid: 'fresh android bytes' }))
    expect(uploaded.status).toBe(503)
    expect(uploaded.body.code).toBe('STORAGE_UNAVAILABLE')
    const workspace = await setup.context.call('GET', `/api/mini-apps/${setup.miniAppId}/workspace`, { token: setup.owner.token })
    expect(workspace.body.versions.map((row: { version: string }) => row.version)).toEqual(['1.0.0'])
    expect(readdirSync(setup.context.dataDir.paths.tmp)).toEqual([])

    await s3.start()
    expect((await setup.store.list()).length).toBe(before)
    expect(await setup.store.size(sha256Hex(new TextEncoder().encode('fresh ios bytes')))).toBeNull()
  })
})

describe('the bucket probe at start names the setting, never the secret', () => {
  test('wrong access key, missing bucket, nothing listening', async () => {
    const paths = { blobs: '/nonexistent', tmp: '/nonexistent' }
    const wrongKey = createS3BlobStore({ ...s3.config(), accessKeyId: 'WRONG', secretAccessKey: 'very-secret-value' }, paths)
    const keyError = await wrongKey.probe().then(() => null, (error: Error) => error.message)
    expect(keyError).toContain('MINISHIP_S3_ACCESS_KEY_ID')
    expect(keyError).not.toContain('very-secret-value')
    const noBucket = await createS3BlobStore({ ...s3.config(), bucket: 'no-such-bucket' }, paths).probe().then(() => null, (error: Error) => error.message)
    expect(noBucket).toContain('--s3-bucket')
    const nothing = await createS3BlobStore({ ...s3.config(), endpoint: 'http://127.0.0.1:9' }, paths).probe().then(() => null, (error: Error) => error.message)
    expect(nothing).toContain('--s3-endpoint')
    expect(await createS3BlobStore(s3.config(), paths).probe()).toBeUndefined()
  })

  test('describeProbeFailure: one line per cause', () => {
    const config = s3.config()
    expect(describeProbeFailure(config, 'AccessDenied')).toContain('refused')
    expect(describeProbeFailure(config, 'Whatever')).toContain('could not be written and read back')
  })
})

describe('the release mirror (decisions §11)', () => {
  let setup: Setup
  const cdnUrl = 'https://cdn.example.com'
  beforeAll(async () => {
    setup = await setUp('mirror', { mirrorReleases: true, cdnUrl })
  })
  afterAll(() => setup.context.close())

  const object = (path: string) => fetch(s3.publicUrl(`mirror/releases/${setup.appId}/stable/${path}`))

  test('publish writes install.json and every release-stable object with its Content-Type and Cache-Control; rollback rewrites them', async () => {
    const first = await uploadVersion(setup, '1.0.0')
    const second = await uploadVersion(setup, '1.1.0')
    expect((await object('install.json')).status).toBe(404)
    expect((await publish(setup, first.id)).status).toBe(200)
    const expected: [string, string, string][] = [
      ['bundles/ios', 'application/javascript', 'bundleIos'],
      ['bundles/android', 'application/javascript', 'bundleAndroid'],
      ['bundles/app.json', 'application/json', 'manifest'],
      ['app.json', 'application/json', 'manifest'],
      ['manifest', 'application/json', 'manifest'],
      ['assets/ios', 'application/zip', 'assetsIos'],
      ['assets/android', 'application/zip', 'assetsAndroid'],
    ]
    for (const [path, type, field] of expected) {
      const response = await object(path)
      expect(response.status).toBe(200)
      expect(response.headers.get('content-type')).toStartWith(type)
      expect(response.headers.get('cache-control')).toBe('public, max-age=60')
      expect(sha256Hex(await response.arrayBuffer())).toBe(first.files[field]!.sha256)
    }
    const install = await object('install.json')
    expect(install.headers.get('cache-control')).toBe('public, max-age=60')
    const info = await install.json()
    expect(info.versionId).toBe(first.id)
    expect(info.bundles.android).toStartWith(`${cdnUrl}/releases/${setup.appId}/stable/bundles/android?token=`)
    expect(info.bundleUrl).toStartWith(`${cdnUrl}/releases/${setup.appId}/stable/bundles/ios?token=`)
    expect(info.manifestUrl).toStartWith(`${cdnUrl}/releases/${setup.appId}/stable/manifest?token=`)
    expect(info.assetsUrl.ios).toStartWith(`${cdnUrl}/releases/${setup.appId}/stable/assets/ios?token=`)
    expect(info.files.bundleIos.sha256).toBe(first.files.bundleIos!.sha256)

    expect((await publish(setup, second.id)).status).toBe(200)
    expect((await (await object('install.json')).json()).versionId).toBe(second.id)
    expect(sha256Hex(await (await object('bundles/app.json')).arrayBuffer())).toBe(second.files.manifest!.sha256)

    const rolledBack = await setup.context.call('POST', `/api/mini-apps/${setup.miniAppId}/rollback`, { token: setup.owner.token, json: { targetVersionId: first.id } })
    expect(rolledBack.status).toBe(200)
    expect((await (await object('install.json')).json()).versionId).toBe(first.id)
    expect(sha256Hex(await (await object('bundles/ios')).arrayBuffer())).toBe(first.files.bundleIos!.sha256)
  })

  test('mid-rollout the mirror holds the previous release (what a device without deviceId gets); completing the rollout moves it', async () => {
    const third = await uploadVersion(setup, '2.0.0')
    const staged = await setup.context.call('POST', `/api/mini-apps/${setup.miniAppId}/versions/${third.id}/publish`, { token: setup.owner.token, json: { rolloutPercent: 30 } })
    expect(staged.status).toBe(200)
    const before = (await (await object('install.json')).json()).versionId
    expect(before).not.toBe(third.id)
    const completed = await setup.context.call('PATCH', `/api/mini-apps/${setup.miniAppId}/channels/stable/rollout`, { token: setup.owner.token, json: { rolloutPercent: 100 } })
    expect(completed.status).toBe(200)
    expect((await (await object('install.json')).json()).versionId).toBe(third.id)
    expect(sha256Hex(await (await object('app.json')).arrayBuffer())).toBe(third.files.manifest!.sha256)
  })

  test('a channel that serves nothing any more (its only release halted at 0 %) is removed from the mirror, as the server answers 404', async () => {
    const betaObject = (path: string) => fetch(s3.publicUrl(`mirror/releases/${setup.appId}/beta/${path}`))
    expect((await setup.context.call('POST', `/api/mini-apps/${setup.miniAppId}/channels`, { token: setup.owner.token, json: { name: 'beta' } })).status).toBe(201)
    const beta = await uploadVersion(setup, '3.0.0-beta.1')
    expect((await setup.context.call('POST', `/api/mini-apps/${setup.miniAppId}/versions/${beta.id}/publish`, { token: setup.owner.token, json: { channel: 'beta' } })).status).toBe(200)
    expect((await (await betaObject('install.json')).json()).versionId).toBe(beta.id)
    expect((await betaObject('bundles/ios')).status).toBe(200)
    const halted = await setup.context.call('PATCH', `/api/mini-apps/${setup.miniAppId}/channels/beta/rollout`, { token: setup.owner.token, json: { rolloutPercent: 0 } })
    expect(halted.status).toBe(200)
    expect((await setup.context.call('GET', `${access}/apps/${setup.appId}/release/install?channel=beta`)).body.code).toBe('RELEASE_NOT_FOUND')
    for (const path of ['install.json', 'app.json', 'bundles/app.json', 'manifest', 'bundles/ios', 'bundles/android', 'assets/ios', 'assets/android']) {
      expect({ path, status: (await betaObject(path)).status }).toEqual({ path, status: 404 })
    }
    // stable is another channel: untouched
    expect((await object('install.json')).status).toBe(200)
  })
})
