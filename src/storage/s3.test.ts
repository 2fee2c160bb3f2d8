// S3 storage against a real S3-compatible server (s3rver): uploads, downloads in both modes, faults, the mirror, doctor and GC.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createTestContext, tempDir, type TestContext } from '../test-support'
import { ConfigError, loadConfig, type Config, type S3StorageConfig } from '../config'
import { startServer, type RunningServer } from '../cli/serve'
import { createBackup } from '../backup/create'
import { createMiniApp, createTestUser, upload, uploadForm, type TestUser } from '../test-fixtures'
import { installFiles, sha256Hex, type InstallInfo } from '../modules/runtime/test-runtime'
import { checkStoredFiles } from '.'
import { collectStoreGarbage, findStoreGarbage } from './gc'
import { createS3BlobStore, createS3Client, decideOwnership, describeProbeFailure, type OwnershipFacts, type S3BlobStore } from './s3'
import { configRefusal, startTestS3, type TestS3 } from './test-s3'
import { writeStorageFileThen } from './storage-file'

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

/** The settings of a data directory whose storage.json records `prefix` (as serve leaves it). */
const ownedConfig = (prefix: string) => ({ ...s3.config(prefix), recorded: { owner: `test-${prefix}` } })

async function setUp(prefix: string, overrides: Partial<Config> = {}): Promise<Setup> {
  const context = createTestContext({ storage: ownedConfig(prefix), ...overrides })
  const owner = await createTestUser(context)
  const appId = `com.example.${prefix.replace(/[^a-z]/g, '')}`
  const miniApp = await createMiniApp(context, owner.token, appId)
  return { context, owner, miniAppId: miniApp.id, appId, store: createS3BlobStore(ownedConfig(prefix), context.dataDir.paths) }
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
    // an object under blobs/ that is no blob is found and removed, as a stray file under blobs/ is
    await setup.store.writeObject('blobs/sha256/zz/stray.txt', 'not a blob', { contentType: 'text/plain', cacheControl: 'no-cache' })
    const found = await findStoreGarbage(setup.store, setup.context.dataDir.db.$client)
    expect(found).toEqual([{ path: `s3://${setup.store.bucket}/${setup.store.objectKey('blobs/sha256/zz/stray.txt')}`, size: 10, sha256: null }])
    // serve's background collection leaves it (only an operator's doctor --fix removes strays)
    expect(await collectStoreGarbage(setup.store, setup.context.dataDir.db.$client)).toMatchObject({ removedFiles: 0 })
    // another installation nested below blobs/ (its owner marker beside its files) is not a stray
    await setup.store.writeObject('blobs/nested/miniship-owner.json', '{"owner":"x"}', { contentType: 'application/json', cacheControl: 'no-cache' })
    await setup.store.writeObject('blobs/nested/blobs/sha256/ab/file', 'theirs', { contentType: 'text/plain', cacheControl: 'no-cache' })
    expect((await findStoreGarbage(setup.store, setup.context.dataDir.db.$client)).map((file) => file.path)).toEqual([found[0]!.path])
    expect(await collectStoreGarbage(setup.store, setup.context.dataDir.db.$client, undefined, true)).toMatchObject({ removedFiles: 1, removedBytes: 10 })
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

    test(`a download resumed with a Range counts once, at its start from byte 0 (${mode === 'redirect' ? 'a 302 for a ranged request is no new download' : 'a 206 after byte 0 is none'})`, async () => {
      const downloads = () => setup.context.app.store.insights.counters.totals.downloads.bundleAndroid
      const before = downloads()
      // begun (counted), cut off, resumed where it stopped
      expect((await download('bundles/android')).status).toBe(200)
      const resumed = await download('bundles/android', { range: `bytes=3-` })
      expect(resumed.status).toBe(206)
      await resumed.arrayBuffer()
      expect(downloads()).toBe(before + 1)
      // the whole file as a range from byte 0 is a download
      const fromStart = await download('bundles/android', { range: 'bytes=0-' })
      expect(fromStart.status).toBe(206)
      await fromStart.arrayBuffer()
      expect(downloads()).toBe(before + 2)
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

  // the mirror is written by the job queue after the change has answered: run what is queued first
  const object = async (path: string) => (await setup.context.app.store.jobs.drain(), fetch(s3.publicUrl(`mirror/releases/${setup.appId}/stable/${path}`)))

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
    const betaObject = async (path: string) => (await setup.context.app.store.jobs.drain(), fetch(s3.publicUrl(`mirror/releases/${setup.appId}/beta/${path}`)))
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

  test("a deleted channel whose objects the mirror never removed (that write gave up, or the mirror was off) is removed at the next start's sync; live channels are written again", async () => {
    const goneObject = async (path: string) => (await setup.context.app.store.jobs.drain(), fetch(s3.publicUrl(`mirror/releases/${setup.appId}/gone/${path}`)))
    // what a channel deleted while its removal was lost leaves: its folder in the bucket, no channel row
    for (const name of ['install.json', 'manifest', 'bundles/ios']) await setup.store.writeObject(`releases/${setup.appId}/gone/${name}`, '{}', { contentType: 'application/json', cacheControl: 'public, max-age=60' })
    expect((await goneObject('install.json')).status).toBe(200)
    // the next start
    await setup.context.app.store.mirror!.syncAll()
    for (const path of ['install.json', 'manifest', 'bundles/ios']) {
      expect({ path, status: (await goneObject(path)).status }).toEqual({ path, status: 404 })
    }
    expect((await object('install.json')).status).toBe(200)
  })

  test("renaming the miniapp rewrites install.json's appName, as the server's install info says it", async () => {
    expect((await (await object('install.json')).json()).appName).not.toBe('Renamed shop')
    const renamed = await setup.context.call('PATCH', `/api/mini-apps/${setup.miniAppId}`, { token: setup.owner.token, json: { name: 'Renamed shop' } })
    expect(renamed.status).toBe(200)
    expect((await setup.context.call('GET', `${access}/apps/${setup.appId}/release/install`)).body.appName).toBe('Renamed shop')
    expect((await (await object('install.json')).json()).appName).toBe('Renamed shop')
  })

  test("a folder of an appId no miniapp has (the database restored from before that miniapp) is removed at the next start's sync", async () => {
    const vanished = (path: string) => fetch(s3.publicUrl(`mirror/releases/com.example.vanished/stable/${path}`))
    for (const name of ['install.json', 'manifest', 'bundles/ios']) await setup.store.writeObject(`releases/com.example.vanished/stable/${name}`, '{}', { contentType: 'application/json', cacheControl: 'public, max-age=60' })
    expect((await vanished('install.json')).status).toBe(200)
    await setup.context.app.store.mirror!.syncAll()
    await setup.context.app.store.jobs.drain()
    for (const path of ['install.json', 'manifest', 'bundles/ios']) {
      expect({ path, status: (await vanished(path)).status }).toEqual({ path, status: 404 })
    }
    expect((await object('install.json')).status).toBe(200)
  })
})

describe('the release mirror over a paused release published over (§13)', () => {
  let setup: Setup
  beforeAll(async () => {
    setup = await setUp('overpause', { mirrorReleases: true, cdnUrl: 'https://cdn.example.com' })
  })
  afterAll(() => setup.context.close())

  test('the mirror holds the release before the paused one, what a request without deviceId gets, not the paused release', async () => {
    const [good, bad, fix] = [await uploadVersion(setup, '1.0.0'), await uploadVersion(setup, '1.1.0'), await uploadVersion(setup, '1.2.0')]
    const release = (versionId: string, json: Record<string, unknown>) => setup.context.call('POST', `/api/mini-apps/${setup.miniAppId}/versions/${versionId}/publish`, { token: setup.owner.token, json })
    const mirrored = async () => (await setup.context.app.store.jobs.drain(), (await (await fetch(s3.publicUrl(`overpause/releases/${setup.appId}/stable/install.json`))).json()).versionId)
    expect((await release(good.id, {})).status).toBe(200)
    expect((await release(bad.id, { rolloutPercent: 30 })).status).toBe(200)
    expect((await setup.context.call('PATCH', `/api/mini-apps/${setup.miniAppId}/channels/stable/rollout`, { token: setup.owner.token, json: { paused: true } })).status).toBe(200)
    expect(await mirrored()).toBe(good.id)
    expect((await release(fix.id, { rolloutPercent: 10 })).status).toBe(200)
    expect(await mirrored()).toBe(good.id)
  })
})

// ---- one prefix, one data directory: the owner marker ------------------------------------------

describe('decideOwnership: who may open a prefix', () => {
  const X = { owner: 'inst-x', createdAt: '' }
  const Y = { owner: 'inst-y', createdAt: '' }
  type Row = [string, OwnershipFacts['recorded'], OwnershipFacts['marker'], boolean, OwnershipFacts['use'], string]
  const table: Row[] = [
    ['a fresh data directory takes an empty prefix', undefined, null, false, 'serve', 'claim new'],
    ['a fresh data directory refuses unmarked blobs', undefined, null, true, 'serve', 'foreign'],
    ['restore and migrate-storage fill an unmarked prefix', undefined, null, true, 'fill', 'claim new'],
    ['doctor/backup with flags naming unmarked blobs', undefined, null, true, 'read', 'foreign'],
    ['doctor/backup on an empty prefix', undefined, null, false, 'read', 'owned null'],
    ['a fresh data directory and a marker', undefined, X, false, 'serve', 'foreign'],
    ['a restore of a backup without an id and a marker', undefined, X, false, 'fill', 'foreign'],
    ['its own marker', { owner: 'inst-x' }, X, true, 'serve', 'owned inst-x'],
    ['its own marker, read', { owner: 'inst-x' }, X, true, 'read', 'owned inst-x'],
    ['another installation\'s marker', { owner: 'inst-x' }, Y, true, 'serve', 'foreign'],
    ['another installation\'s marker, restoring', { owner: 'inst-x' }, Y, true, 'fill', 'foreign'],
    ['its marker gone: written again', { owner: 'inst-x' }, null, true, 'serve', 'claim inst-x'],
    ['its marker gone, read: nothing written', { owner: 'inst-x' }, null, true, 'read', 'owned inst-x'],
    ['a storage.json of the previous release adopts its unmarked prefix', { owner: null }, null, true, 'serve', 'claim new'],
    ['… and doctor/backup read it as before', { owner: null }, null, true, 'read', 'owned null'],
    ['a storage.json of this place from before owner ids (a snapshot, an old backup) and a marker: the marker is its own', { owner: null }, X, true, 'serve', 'owned inst-x'],
    ['… and a damaged marker', { owner: null }, 'damaged', true, 'serve', 'foreign'],
    ['a damaged marker', { owner: 'inst-x' }, 'damaged', false, 'serve', 'foreign'],
  ]
  for (const [name, recorded, marker, holdsBlobs, use, expected] of table) {
    test(name, async () => {
      const decided = await decideOwnership({ recorded, marker, holdsBlobs: async () => holdsBlobs, use, where: 'bucket "b" prefix "p"', markerKey: 'p/miniship-owner.json', newOwner: () => 'new' })
      const shown = decided.kind === 'foreign' ? 'foreign' : `${decided.kind} ${decided.owner}`
      expect(shown).toBe(expected)
    })
  }
})

describe('the owner marker\'s conditional write, against stores s3rver cannot play', () => {
  // s3rver ignores If-None-Match on PUT; these answers are what Amazon S3, R2 and MinIO give when a
  // second claim races the first (412, or 409 while the first is being written), and what stores
  // without conditional writes answer (NotImplemented). A small S3-shaped endpoint on 127.0.0.1
  // answers the marker's GET and PUT as each such store would.
  type Put = { status: number; code?: string; meanwhile?: 'other' | 'mine' }
  const claimId = 'inst-claiming'
  function fakeStore(onConditionalPut: Put) {
    let marker: string | null = null
    const puts: { conditional: boolean }[] = []
    const error = (status: number, code: string) => new Response(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${code}</Message></Error>`, { status, headers: { 'content-type': 'application/xml' } })
    const server = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      async fetch(request) {
        if (!new URL(request.url).pathname.endsWith('/fake/miniship-owner.json')) return error(404, 'NoSuchKey')
        if (request.method === 'GET') return marker === null ? error(404, 'NoSuchKey') : new Response(marker)
        if (request.method !== 'PUT') return error(405, 'MethodNotAllowed')
        const conditional = request.headers.get('if-none-match') === '*'
        puts.push({ conditional })
        const body = await request.text()
        if (!conditional || onConditionalPut.status < 300) {
          marker = body
          return new Response(null, { status: 200 })
        }
        if (onConditionalPut.meanwhile) marker = JSON.stringify({ owner: onConditionalPut.meanwhile === 'mine' ? claimId : 'inst-other', createdAt: '' })
        return error(onConditionalPut.status, onConditionalPut.code ?? 'PreconditionFailed')
      },
    })
    const store = createS3BlobStore({ ...s3.config('fake'), endpoint: `http://127.0.0.1:${server.port}` }, { blobs: '/nonexistent', tmp: '/nonexistent' })
    return { store, puts, marker: () => (marker === null ? null : (JSON.parse(marker) as { owner: string }).owner), stop: () => server.stop(true) }
  }
  const claimedMeanwhile = 'S3 storage: bucket "miniship-test" prefix "fake" was claimed by another miniship data directory at the same time: give this data directory a bucket or --s3-prefix of its own'
  const table: [string, Put, { refused?: string; error?: string; owner: string | null; puts: boolean[] }][] = [
    ['412: another claim was written first: refused, its marker stays', { status: 412, meanwhile: 'other' }, { refused: claimedMeanwhile, owner: 'inst-other', puts: [true] }],
    ['409: another claim is being written: refused', { status: 409, code: 'ConditionalRequestConflict', meanwhile: 'other' }, { refused: claimedMeanwhile, owner: 'inst-other', puts: [true] }],
    ['412 on a marker that names this claim (an earlier write of it landed): taken', { status: 412, meanwhile: 'mine' }, { owner: claimId, puts: [true] }],
    ['501: a store without conditional writes gets a plain write', { status: 501, code: 'NotImplemented' }, { owner: claimId, puts: [true, false] }],
    ['400 NotImplemented: likewise', { status: 400, code: 'NotImplemented' }, { owner: claimId, puts: [true, false] }],
    ['403 AccessDenied: the store\'s code is named, nothing written', { status: 403, code: 'AccessDenied' }, { error: 'S3 storage: bucket "miniship-test" prefix "fake": the owner marker fake/miniship-owner.json could not be written (AccessDenied)', owner: null, puts: [true] }],
    ['200: the conditional write is the claim', { status: 200 }, { owner: claimId, puts: [true] }],
  ]
  test('a refused claim puts storage.json back as it was, or removes the one it wrote (serve, migrate-storage)', async () => {
    const fake = fakeStore({ status: 412, meanwhile: 'other' })
    const dataDir = tempDir()
    const path = join(dataDir, 'storage.json')
    try {
      const claimAfterWriting = () => writeStorageFileThen(dataDir, s3.config('fake'), claimId, () => fake.store.claim(claimId))
      expect(await claimAfterWriting().then(() => null, (error: Error) => error.message)).toBe(claimedMeanwhile)
      expect(existsSync(path)).toBe(false)
      writeFileSync(path, '{"storage":"local"}\n')
      expect(await claimAfterWriting().then(() => null, (error: Error) => error.message)).toBe(claimedMeanwhile)
      expect(readFileSync(path, 'utf8')).toBe('{"storage":"local"}\n')
    } finally {
      fake.stop()
      rmSync(dataDir, { recursive: true, force: true })
    }
  })

  for (const [what, put, expected] of table) {
    test(what, async () => {
      const fake = fakeStore(put)
      try {
        const failure = await fake.store.claim(claimId).then(() => null, (error: Error) => error)
        if (expected.refused !== undefined) {
          expect(failure).toBeInstanceOf(ConfigError)
          expect(failure?.message).toBe(expected.refused)
        } else if (expected.error !== undefined) {
          expect(failure).not.toBeInstanceOf(ConfigError)
          expect(failure?.message).toBe(expected.error)
        } else expect(failure).toBeNull()
        expect(fake.marker()).toBe(expected.owner)
        expect(fake.store.owner).toBe(expected.owner === claimId && !expected.refused && !expected.error ? claimId : null)
        expect(fake.puts.map((one) => one.conditional)).toEqual(expected.puts)
      } finally {
        fake.stop()
      }
    })
  }
})

describe('a prefix belongs to the data directory that filled it (serve, against s3rver)', () => {
  const running: RunningServer[] = []
  afterAll(async () => {
    for (const server of running) await server.stop()
  })

  const configFor = (dataDir: string, prefix: string, flags: Record<string, string> = {}) =>
    loadConfig({ dataDir, host: '127.0.0.1', port: '0', rateLimit: 'off', s3Downloads: 'proxy', ...flags }, { ...s3.env(prefix) })

  async function start(dataDir: string, prefix: string): Promise<{ server: RunningServer; base: string }> {
    const server = await startServer(configFor(dataDir, prefix))
    running.push(server)
    return { server, base: `http://127.0.0.1:${server.server.port}` }
  }

  async function stop(server: RunningServer) {
    await server.stop()
    running.splice(running.indexOf(server), 1)
  }

  /** An owner, a miniapp and one version uploaded over HTTP; answers the token, the version id and its file hashes. */
  async function populateOver(base: string, appId: string) {
    const post = (path: string, init: RequestInit) => fetch(`${base}${path}`, { method: 'POST', ...init })
    // nobody registers before the first administrator exists (decisions §13): made through the setup link
    const setupToken = running.find((server) => `http://127.0.0.1:${server.server.port}` === base)?.setupToken
    if (setupToken) await post('/setup', { headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ token: setupToken, email: `admin.${appId}@example.test`, password: 'admin-password' }) })
    const token = ((await (await post('/api/auth/register', { headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: `${appId}@example.test`, password: 'dev-password' }) })).json()) as { accessToken: string }).accessToken
    const auth = { authorization: `Bearer ${token}` }
    expect((await post('/api/mini-apps', { headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ appId, name: 'Shop' }) })).status).toBe(201)
    const uploaded = await post(`/api/mini-apps/by-app-id/${appId}/versions/upload`, { headers: auth, body: uploadForm(appId, { version: '1.0.0' }) })
    expect(uploaded.status).toBe(201)
    const version = (await uploaded.json()) as { id: string; files: Record<string, { sha256: string }> }
    return { token, versionId: version.id, hashes: [...new Set(Object.values(version.files).map((file) => file.sha256))].sort() }
  }

  /** What a runtime does: install info, then every file it names, each hash checked; answers how many. */
  async function installEveryFile(base: string, versionId: string, token: string): Promise<number> {
    const info = (await (await fetch(`${base}/api/mini-apps/access/versions/${versionId}/install?token=${token}`)).json()) as InstallInfo
    const files = installFiles(info)
    for (const [url, expected] of files) {
      const response = await fetch(url)
      expect(response.status).toBe(200)
      expect(sha256Hex(await response.arrayBuffer())).toBe(expected.sha256)
    }
    return files.length
  }

  const storageFileOf = (dataDir: string) => JSON.parse(readFileSync(join(dataDir, 'storage.json'), 'utf8')) as { owner?: string }
  const markerOf = async (prefix: string) => {
    const response = await fetch(s3.publicUrl(`${prefix}/miniship-owner.json`))
    return response.status === 404 ? null : ((await response.json()) as { owner: string; createdAt: string })
  }
  const blobsIn = async (prefix: string, owner: string) => (await createS3BlobStore({ ...s3.config(prefix), recorded: { owner } }, { blobs: '/nonexistent', tmp: '/nonexistent' }).list()).map((blob) => blob.sha256)
  const refusalOf = configRefusal

  test('serve with the release mirror turned off removes what the mirror left: nothing would keep it true through a rollback', async () => {
    const dataDir = tempDir()
    const mirrored = (path: string) => fetch(s3.publicUrl(`mirroroff/releases/com.example.mirroroff/stable/${path}`))
    let server = await startServer(configFor(dataDir, 'mirroroff', { mirrorReleases: 'on', cdnUrl: 'https://cdn.example.com' }))
    running.push(server)
    const base = `http://127.0.0.1:${server.server.port}`
    const { token, versionId } = await populateOver(base, 'com.example.mirroroff')
    const published = await fetch(`${base}/api/mini-apps/com.example.mirroroff/versions/${versionId}/publish`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: '{}' })
    expect(published.status).toBe(200)
    for (let i = 0; i < 250 && (await mirrored('install.json')).status !== 200; i++) await Bun.sleep(20)
    expect((await mirrored('install.json')).status).toBe(200)
    await stop(server)

    server = await startServer(configFor(dataDir, 'mirroroff'))
    running.push(server)
    for (let i = 0; i < 250 && (await mirrored('install.json')).status !== 404; i++) await Bun.sleep(20)
    for (const path of ['install.json', 'manifest', 'app.json', 'bundles/app.json', 'bundles/ios', 'bundles/android', 'assets/ios', 'assets/android']) {
      expect({ path, status: (await mirrored(path)).status }).toEqual({ path, status: 404 })
    }
    // the stored files stay: the server itself still installs the release
    expect((await fetch(`http://127.0.0.1:${server.server.port}/api/mini-apps/access/apps/com.example.mirroroff/release/install`)).status).toBe(200)
    await stop(server)
  })

  test('a new data directory pointed at another installation\'s prefix is refused; every file survives and still installs', async () => {
    const victim = tempDir()
    let { server, base } = await start(victim, 'victim')
    const owner = storageFileOf(victim).owner!
    expect(owner).toMatch(/^[0-9a-f-]{36}$/)
    expect((await markerOf('victim'))?.owner).toBe(owner)
    const { token, versionId, hashes } = await populateOver(base, 'com.example.victim')
    await stop(server)

    const newcomer = tempDir()
    const message = await refusalOf(startServer(configFor(newcomer, 'victim')))
    expect(message).toContain('bucket "miniship-test" prefix "victim" belongs to another miniship data directory')
    expect(message).toContain(owner)
    expect(message).not.toContain('\n')
    expect(message).not.toContain('S3RVER')
    expect(existsSync(join(newcomer, 'storage.json'))).toBe(false)
    expect(existsSync(join(newcomer, 'miniship.lock'))).toBe(false)

    expect(await blobsIn('victim', owner)).toEqual(hashes)
    expect((await markerOf('victim'))?.owner).toBe(owner)
    ;({ server, base } = await start(victim, 'victim'))
    expect(await installEveryFile(base, versionId, token)).toBe(5)
    await stop(server)
    rmSync(newcomer, { recursive: true, force: true })
  }, 30_000)

  test('two data directories that both found a prefix empty cannot both claim it: the second claim is refused and the marker stays the first one\'s', async () => {
    const paths = { blobs: '/nonexistent', tmp: '/nonexistent' }
    const first = createS3BlobStore(s3.config('race'), paths)
    const second = createS3BlobStore(s3.config('race'), paths)
    // both looked before either wrote: each was told it may take the prefix
    const [firstSays, secondSays] = [await first.ownership('serve'), await second.ownership('serve')]
    expect(firstSays.kind).toBe('claim')
    expect(secondSays.kind).toBe('claim')
    const [firstId, secondId] = [(firstSays as { owner: string }).owner, (secondSays as { owner: string }).owner]
    await first.claim(firstId)
    const refused = await second.claim(secondId).then(() => null, (error: Error) => error)
    expect(refused).toBeInstanceOf(ConfigError)
    expect(refused?.message).toBe('S3 storage: bucket "miniship-test" prefix "race" was claimed by another miniship data directory at the same time: give this data directory a bucket or --s3-prefix of its own')
    expect((await markerOf('race'))?.owner).toBe(firstId)
    expect(first.owner).toBe(firstId)
    expect(second.owner).toBeNull()
    // a claim finding the marker already its own is not refused
    await first.claim(firstId)
    expect((await markerOf('race'))?.owner).toBe(firstId)
  })

  test('blobs with no marker (a previous release\'s installation) are refused to a new data directory; their own data directory adopts them', async () => {
    const old = tempDir()
    let { server, base } = await start(old, 'oldrelease')
    const { token, versionId, hashes } = await populateOver(base, 'com.example.oldrelease')
    await stop(server)
    // as the previous release left it: storage.json without an owner id, no marker in the bucket
    const { owner: _dropped, ...withoutOwner } = storageFileOf(old) as Record<string, unknown>
    writeFileSync(join(old, 'storage.json'), JSON.stringify(withoutOwner))
    await createS3Client(s3.config()).delete('oldrelease/miniship-owner.json')
    expect(await markerOf('oldrelease')).toBeNull()

    const newcomer = tempDir()
    const message = await refusalOf(startServer(configFor(newcomer, 'oldrelease')))
    expect(message).toContain('bucket "miniship-test" prefix "oldrelease" already holds stored files of another miniship data directory')
    expect(await markerOf('oldrelease')).toBeNull()
    expect(await blobsIn('oldrelease', 'any')).toEqual(hashes)

    ;({ server, base } = await start(old, 'oldrelease'))
    const adopted = storageFileOf(old).owner
    expect(adopted).toMatch(/^[0-9a-f-]{36}$/)
    expect((await markerOf('oldrelease'))?.owner).toBe(adopted!)
    expect(await installEveryFile(base, versionId, token)).toBe(5)
    await stop(server)
    expect(await refusalOf(startServer(configFor(newcomer, 'oldrelease')))).toContain(`belongs to another miniship data directory (installation ${adopted}`)
    expect(await blobsIn('oldrelease', adopted!)).toEqual(hashes)
    rmSync(newcomer, { recursive: true, force: true })
  }, 30_000)

  test('doctor\'s checks, doctor --fix\'s collection and backup refuse a prefix of another installation and remove nothing', async () => {
    const victim = tempDir()
    const { server, base } = await start(victim, 'guarded')
    const { hashes } = await populateOver(base, 'com.example.guarded')
    await stop(server)
    const owner = storageFileOf(victim).owner!

    // a data directory with no version at all: every blob of the prefix would be garbage to it
    const context = createTestContext({ storage: s3.config('guarded') })
    try {
      for (const config of [s3.config('guarded'), { ...s3.config('guarded'), recorded: { owner: 'another-installation' } } satisfies S3StorageConfig]) {
        const store = createS3BlobStore(config, context.dataDir.paths)
        const problems = await checkStoredFiles(context.dataDir.db.$client, store)
        expect(problems).toHaveLength(1)
        expect(problems[0]).toContain('prefix "guarded" belongs to another miniship data directory')
        expect(await refusalOf(collectStoreGarbage(store, context.dataDir.db.$client))).toContain('belongs to another miniship data directory')
        expect(await refusalOf(findStoreGarbage(store, context.dataDir.db.$client))).toContain('belongs to another miniship data directory')
        expect(await refusalOf(createBackup({ dataDir: context.config.dataDir, out: join(tempDir(), 'backup.tar.gz'), store }))).toContain('belongs to another miniship data directory')
      }
      expect(await blobsIn('guarded', owner)).toEqual(hashes)
    } finally {
      context.close()
    }
  }, 30_000)
})
