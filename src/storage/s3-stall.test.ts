// Issue 29: every object-storage call is bounded in time. A bucket that accepts connections and never answers (a TCP
// proxy in front of s3rver that freezes) fails uploads with 503 and keeps nothing; an answer that stalls mid-body ends
// the proxied download with an error instead of hanging the phone.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readdirSync } from 'node:fs'
import { createTestContext, tempDir, type TestContext } from '../test-support'
import { loadConfig } from '../config'
import { startServer } from '../cli/serve'
import { createMiniApp, createTestUser, upload, uploadForm, type TestUser } from '../test-fixtures'
import { sha256Hex } from '../modules/runtime/test-runtime'
import { hashBlob } from '.'
import { createS3BlobStore, type S3BlobStore } from './s3'
import { startTestS3, type TestS3 } from './test-s3'
import { startStallProxy, type StallProxy } from './test-stall'

let s3: TestS3
beforeAll(async () => {
  s3 = await startTestS3()
})
afterAll(() => s3.close())

interface Setup {
  context: TestContext
  owner: TestUser
  appId: string
  miniAppId: string
  proxy: StallProxy
  /** the same prefix straight at s3rver: what the bucket really holds */
  direct: S3BlobStore
}

/** An app whose bucket is reached through a stall proxy; `timeoutMs` undefined keeps the default. */
async function setUp(prefix: string, timeoutMs: number | undefined, s3Downloads: 'redirect' | 'proxy' = 'redirect'): Promise<Setup> {
  const proxy = await startStallProxy(s3.port)
  const storage = { ...s3.config(prefix), endpoint: proxy.endpoint, recorded: { owner: `test-${prefix}` }, ...(timeoutMs === undefined ? {} : { timeoutMs }) }
  const context = createTestContext({ storage, s3Downloads })
  const owner = await createTestUser(context)
  const appId = `com.example.${prefix.replace(/[^a-z]/g, '')}`
  const miniApp = await createMiniApp(context, owner.token, appId)
  const direct = createS3BlobStore({ ...s3.config(prefix), recorded: { owner: `test-${prefix}` } }, context.dataDir.paths)
  return { context, owner, appId, miniAppId: miniApp.id, proxy, direct }
}

async function tearDown(setup: Setup) {
  await setup.proxy.close()
  setup.context.close()
}

async function versionsOf(setup: Setup): Promise<string[]> {
  const workspace = await setup.context.call('GET', `/api/mini-apps/${setup.miniAppId}/workspace`, { token: setup.owner.token })
  return workspace.body.versions.map((row: { version: string }) => row.version)
}

const fresh = (what: string) => ({ bundleIos: `fresh ios ${what}`, bundleAndroid: `fresh android ${what}` })

describe('a frozen bucket (accepts connections, never answers)', () => {
  let setup: Setup
  beforeAll(async () => {
    setup = await setUp('frozen', undefined)
    const first = await upload(setup.context, setup.owner.token, setup.appId, uploadForm(setup.appId, { version: '1.0.0' }))
    expect(first.status).toBe(201)
  })
  afterAll(() => tearDown(setup))

  // the test's own time limit is the rule: with the default timeout the answer comes well within 30 s
  test('an upload answers 503 STORAGE_UNAVAILABLE with the default timeout, keeping no row, no temp file and no object', async () => {
    setup.proxy.mode = 'freeze'
    const uploaded = await upload(setup.context, setup.owner.token, setup.appId, uploadForm(setup.appId, { version: '2.0.0', ...fresh('frozen') }))
    expect(uploaded.status).toBe(503)
    expect(uploaded.body.code).toBe('STORAGE_UNAVAILABLE')
    expect(uploaded.text).not.toContain('127.0.0.1')
    setup.proxy.mode = 'pass'
    expect(await versionsOf(setup)).toEqual(['1.0.0'])
    expect(readdirSync(setup.context.dataDir.paths.tmp)).toEqual([])
    expect(await setup.direct.size(sha256Hex(new TextEncoder().encode('fresh ios frozen')))).toBeNull()
    expect(setup.context.logs.some((line) => line.includes('"code":"Timeout"'))).toBe(true)
  }, 30_000)
})

describe('a bucket that answers reads but freezes every write', () => {
  let setup: Setup
  beforeAll(async () => {
    setup = await setUp('writes', 1000)
  })
  afterAll(() => tearDown(setup))

  test('the stored file\'s PUT times out: 503, nothing kept, and the next upload once it answers again succeeds', async () => {
    setup.proxy.mode = 'freeze-writes'
    const uploaded = await upload(setup.context, setup.owner.token, setup.appId, uploadForm(setup.appId, { version: '1.0.0', ...fresh('writes') }))
    expect(uploaded.status).toBe(503)
    expect(uploaded.body.code).toBe('STORAGE_UNAVAILABLE')
    expect(await versionsOf(setup)).toEqual([])
    expect(readdirSync(setup.context.dataDir.paths.tmp)).toEqual([])
    setup.proxy.mode = 'pass'
    const again = await upload(setup.context, setup.owner.token, setup.appId, uploadForm(setup.appId, { version: '1.0.0', ...fresh('writes') }))
    expect(again.status).toBe(201)
  }, 20_000)
})

describe('every call of the S3 store is bounded', () => {
  let setup: Setup
  let store: S3BlobStore
  let stored: string
  beforeAll(async () => {
    setup = await setUp('calls', 500)
    store = createS3BlobStore({ ...s3.config('calls'), endpoint: setup.proxy.endpoint, recorded: { owner: 'test-calls' }, timeoutMs: 500 }, setup.context.dataDir.paths)
    const path = `${setup.context.dataDir.paths.tmp}/stored`
    await Bun.write(path, 'stored bytes')
    stored = sha256Hex(new TextEncoder().encode('stored bytes'))
    await store.commit({ path, sha256: stored, size: 12 })
    store.release([stored])
    expect(await store.list()).toHaveLength(1)
    setup.proxy.mode = 'freeze'
  })
  afterAll(() => tearDown(setup))

  const calls: [string, () => Promise<unknown>][] = [
    ['size (stat)', () => store.size(stored)],
    ['list', () => store.list()],
    ['remove', () => store.remove(stored)],
    ['deleteObject', () => store.deleteObject('releases/x/install.json')],
    ['writeObject (the mirror)', () => store.writeObject('releases/x/install.json', '{}', { contentType: 'application/json', cacheControl: 'no-cache' })],
    ['putFile (restore, migrate-storage)', async () => {
      const path = `${setup.context.dataDir.paths.tmp}/put`
      await Bun.write(path, 'put bytes')
      return store.putFile(sha256Hex(new TextEncoder().encode('put bytes')), path)
    }],
    ['reading a blob (doctor, migrate-storage)', () => hashBlob(store.read(stored), store.timeoutMs)],
    ['probe', () => store.probe()],
  ]
  for (const [name, call] of calls) {
    test(`${name} fails instead of waiting for ever`, async () => {
      let failure: unknown = null
      await call().catch((error: unknown) => {
        failure = error
      })
      expect(failure).not.toBeNull()
    }, 10_000)
  }

  test('commit answers 503 STORAGE_UNAVAILABLE, and removing unreferenced files gives up (logged) rather than hangs', async () => {
    const path = `${setup.context.dataDir.paths.tmp}/commit`
    await Bun.write(path, 'commit bytes')
    const failure = await store.commit({ path, sha256: sha256Hex(new TextEncoder().encode('commit bytes')), size: 12 }).catch((error: unknown) => error)
    expect(failure).toMatchObject({ status: 503, code: 'STORAGE_UNAVAILABLE' })
    expect(await store.removeUnreferenced([stored], () => false)).toEqual([stored])
  }, 10_000)
})

describe('a proxied download whose bucket stalls mid-body', () => {
  const bundle = 'x'.repeat(300_000)
  let setup: Setup
  let versionId: string
  let fileToken: string
  beforeAll(async () => {
    setup = await setUp('stall', 1500, 'proxy')
    const uploaded = await upload(setup.context, setup.owner.token, setup.appId, uploadForm(setup.appId, { version: '1.0.0', bundleAndroid: bundle }))
    expect(uploaded.status).toBe(201)
    versionId = uploaded.body.id
    const info = await setup.context.call('GET', `/api/mini-apps/access/versions/${versionId}/install?token=${setup.owner.token}`)
    fileToken = new URL(info.body.bundleUrl, 'http://localhost').searchParams.get('token')!
  })
  afterAll(() => tearDown(setup))

  const path = () => `/api/mini-apps/access/versions/${versionId}/bundles/android?token=${encodeURIComponent(fileToken)}`

  test('while the bucket answers, the whole file streams through', async () => {
    setup.proxy.mode = 'pass'
    const response = await setup.context.app.handle(new Request(`http://localhost${path()}`))
    expect(response.status).toBe(200)
    expect((await response.text()).length).toBe(bundle.length)
  })

  test('the answer has begun (200, first bytes) and its body ends with an error after the idle timeout, logged', async () => {
    setup.proxy.mode = 'stall-body'
    const response = await setup.context.app.handle(new Request(`http://localhost${path()}`))
    expect(response.status).toBe(200)
    expect(response.headers.get('content-length')).toBe(String(bundle.length))
    const failure = await response.arrayBuffer().then(() => null, (error: unknown) => error)
    expect(failure).toMatchObject({ code: 'Timeout' })
    expect(setup.context.logs.some((line) => line.includes('stopped arriving mid-body'))).toBe(true)
    setup.proxy.mode = 'pass'
  }, 15_000)

  test('over HTTP, the phone\'s download fails short of Content-Length instead of hanging', async () => {
    const dataDir = tempDir()
    const proxy = await startStallProxy(s3.port)
    const env = { ...s3.env('stallhttp'), MINISHIP_S3_ENDPOINT: proxy.endpoint, MINISHIP_S3_TIMEOUT: '2s' }
    const server = await startServer(loadConfig({ dataDir, host: '127.0.0.1', port: '0', rateLimit: 'off', s3Downloads: 'proxy' }, env))
    try {
      const base = `http://127.0.0.1:${server.server.port}/api`
      const post = async (route: string, init: RequestInit) => (await fetch(`${base}${route}`, { method: 'POST', ...init })).json() as Promise<Record<string, string>>
      const json = (body: unknown, token?: string) => ({ body: JSON.stringify(body), headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) } })
      // register opens once the first administrator exists (decisions §13): made through the setup link
      const setup = await fetch(`http://127.0.0.1:${server.server.port}/setup`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ token: server.setupToken!, email: 'admin@example.test', password: 'correct horse battery' }).toString() })
      expect(setup.status).toBeLessThan(400)
      const { accessToken } = await post('/auth/register', json({ email: 'stall@example.test', password: 'correct horse battery', displayName: 'Stall' }))
      await post('/mini-apps', json({ appId: 'com.example.stallhttp', name: 'Stall' }, accessToken))
      const version = await post('/mini-apps/by-app-id/com.example.stallhttp/versions/upload', { body: uploadForm('com.example.stallhttp', { bundleIos: bundle }), headers: { authorization: `Bearer ${accessToken}` } })
      const info = await (await fetch(`${base}/mini-apps/access/versions/${version.id}/install?token=${accessToken}`)).json()
      proxy.mode = 'stall-body'
      const response = await fetch(info.bundleUrl.startsWith('http') ? info.bundleUrl : `http://127.0.0.1:${server.server.port}${info.bundleUrl}`)
      expect(response.status).toBe(200)
      const failure = await response.arrayBuffer().then(() => null, (error: unknown) => error)
      expect(failure).not.toBeNull()
    } finally {
      await server.stop()
      await proxy.close()
    }
  }, 20_000)
})
