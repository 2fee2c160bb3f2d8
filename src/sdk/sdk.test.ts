// The update client against a real in-process server: check, verified download, atomic switch, crash loop, events, host range.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createHash, generateKeyPairSync, sign, type KeyObject } from 'node:crypto'
import { existsSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { createTestContext, tempDir, type TestContext } from '../test-support'
import { fileStorage, nodeCrypto } from './node'
import { createMiniApp, createTestUser, upload, uploadForm, type TestUser } from '../test-fixtures'
import { createUpdater, memoryStorage, UpdateError, type FetchLike, type FetchResponse, type MemoryStorage, type Update, type UpdaterOptions, type UpdateStorage } from './index'
import { buildStatement } from './statement'
import { failingStorage } from './failing-storage'
import { normalizeVersion, satisfiesRange } from './semver'
import { isSemverRange } from '../modules/channels/semver-range'
import { channelDevicesText } from '../modules/channels/words'

interface Setup {
  context: TestContext
  owner: TestUser
  miniAppId: string
  appId: string
  versions: Record<string, { id: string; files: Record<string, { size: number; sha256: string }>; ios: string }>
}

async function setUp(appId: string): Promise<Setup> {
  const context = createTestContext()
  const owner = await createTestUser(context)
  const miniApp = await createMiniApp(context, owner.token, appId)
  return { context, owner, miniAppId: miniApp.id, appId, versions: {} }
}

async function publishVersion(setup: Setup, version: string, options: { rolloutPercent?: number; hostVersionRange?: string } = {}) {
  const ios = `/* ios ${version} */ ` + 'x'.repeat(100_000)
  const uploaded = await upload(setup.context, setup.owner.token, setup.appId, uploadForm(setup.appId, { version, bundleIos: ios }))
  if (uploaded.status !== 201) throw new Error(`upload failed: ${uploaded.status} ${uploaded.text}`)
  const published = await setup.context.call('POST', `/api/mini-apps/${setup.miniAppId}/versions/${uploaded.body.id}/publish`, { token: setup.owner.token, json: options })
  if (published.status !== 200) throw new Error(`publish failed: ${published.status} ${published.text}`)
  setup.versions[version] = { id: uploaded.body.id, files: uploaded.body.files, ios }
}

/** fetch that goes to app.handle, as a phone's would go to the server */
const serverFetch =
  (context: TestContext): FetchLike =>
  async (url, init) =>
    context.app.handle(new Request(url, { method: init?.method, headers: init?.headers, body: init?.body })) as unknown as FetchResponse

/** Rewrites the JSON answers of the update check (what a signing server, or an attacker, would send). */
function rewriteUpdate(inner: FetchLike, change: (install: Record<string, unknown>) => void): FetchLike {
  return async (url, init) => {
    const response = await inner(url, init)
    if (!url.includes('/update?')) return response
    const body = JSON.parse(await response.text())
    if (body.install) change(body.install)
    return new Response(JSON.stringify(body), { status: response.status, headers: { 'content-type': 'application/json' } }) as unknown as FetchResponse
  }
}

/** Changes the bytes of file downloads whose URL matches, as a broken or hostile CDN would. */
function rewriteFiles(inner: FetchLike, matches: (url: string) => boolean, change: (bytes: Uint8Array) => Uint8Array): FetchLike {
  return async (url, init) => {
    const response = await inner(url, init)
    if (!matches(url) || !response.ok) return response
    const bytes = change(new Uint8Array(await response.arrayBuffer()))
    return new Response(bytes as BodyInit, { status: 200 }) as unknown as FetchResponse
  }
}

const flipFirstByte = (bytes: Uint8Array) => {
  const copy = bytes.slice()
  copy[0] = copy[0]! ^ 1
  return copy
}

function signer() {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519')
  const raw = Buffer.from(publicKey.export({ format: 'jwk' }).x!, 'base64url')
  return { publicKey: raw.toString('base64'), keyId: createHash('sha256').update(raw).digest('hex').slice(0, 16), privateKey }
}

/** The §14 signature the server will put in install info, made here with node's crypto. */
function signInstall(install: Record<string, unknown>, key: { keyId: string; privateKey: KeyObject }, appId = install.appId as string) {
  const files = install.files as Record<string, { sha256: string }>
  const digests = Object.fromEntries(Object.entries(files).map(([kind, info]) => [kind, info.sha256]))
  const statement = buildStatement(appId, install.version as string, digests)
  install.signature = { algorithm: 'ed25519', keyId: key.keyId, statement, value: sign(null, Buffer.from(statement), key.privateKey).toString('base64') }
}

function clone(storage: MemoryStorage): MemoryStorage {
  const copy = memoryStorage()
  for (const [path, bytes] of storage.files) copy.files.set(path, bytes.slice())
  return copy
}

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex')

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise
  } catch (error) {
    expect(error).toBeInstanceOf(UpdateError)
    return (error as UpdateError).code
  }
  return 'resolved'
}

describe('the update client against the server', () => {
  let setup: Setup
  const appId = 'com.example.sdk'
  const updater = (storage: UpdateStorage, options: Partial<UpdaterOptions> = {}) =>
    createUpdater({ serverUrl: 'http://localhost/api', appId, platform: 'ios', deviceId: 'device-1', storage, fetch: serverFetch(setup.context), ...options })
  /** a storage with 1.0.0 installed and confirmed */
  let withV1: MemoryStorage

  beforeAll(async () => {
    setup = await setUp(appId)
  })
  afterAll(() => setup.context.close())

  test('no release yet: check() answers null; an unknown channel is SERVER; an unreachable server is NETWORK', async () => {
    const client = updater(memoryStorage())
    await client.start()
    expect(await client.check()).toBeNull()
    expect(await codeOf(updater(memoryStorage(), { channel: 'nope' }).check())).toBe('SERVER')
    const offline: FetchLike = async () => {
      throw new TypeError('fetch failed')
    }
    expect(await codeOf(updater(memoryStorage(), { fetch: offline }).check())).toBe('NETWORK')
  })

  test('check, download with progress, switch: current() names the new files, whole; the next check has nothing new', async () => {
    await publishVersion(setup, '1.0.0')
    const storage = memoryStorage()
    const client = updater(storage)
    expect((await client.start()).current).toBeNull()
    const update = (await client.check())!
    expect(update).toMatchObject({ version: '1.0.0', versionId: setup.versions['1.0.0']!.id, mandatory: false })
    const progress: Array<[number, number]> = []
    const current = await client.download(update, { onProgress: (received, total) => progress.push([received, total]) })
    const files = setup.versions['1.0.0']!.files
    const total = files.bundleIos!.size + files.manifest!.size + files.assetsIos!.size
    expect(progress.length).toBeGreaterThan(2)
    expect(progress[progress.length - 1]).toEqual([total, total])
    expect(current).toMatchObject({ version: '1.0.0', pending: true })
    expect(client.current()).toEqual(current)
    const bundle = storage.files.get(current.bundle.replace('memory://', ''))!
    expect(new TextDecoder().decode(bundle)).toBe(setup.versions['1.0.0']!.ios)
    expect(sha256(storage.files.get(current.assets.replace('memory://', ''))!)).toBe(files.assetsIos!.sha256)
    expect(sha256(storage.files.get(current.manifest.replace('memory://', ''))!)).toBe(files.manifest!.sha256)
    expect(await client.check()).toBeNull()
    // the next launch runs it; markReady confirms it
    const relaunched = updater(storage)
    expect((await relaunched.start()).current).toMatchObject({ version: '1.0.0', pending: true })
    await relaunched.markReady()
    expect(relaunched.current()!.pending).toBe(false)
    withV1 = clone(storage)
  })

  test('without a streaming body (React Native) the answer is read whole and progress reported once per file', async () => {
    const noStreams: FetchLike = async (url, init) => {
      const response = await serverFetch(setup.context)(url, init)
      return { ok: response.ok, status: response.status, body: null, arrayBuffer: () => response.arrayBuffer(), text: () => response.text() }
    }
    const storage = memoryStorage()
    const client = updater(storage, { fetch: noStreams })
    await client.start()
    const progress: number[] = []
    const current = await client.download((await client.check())!, { onProgress: (received) => progress.push(received) })
    expect(progress).toHaveLength(3)
    expect(new TextDecoder().decode(storage.files.get(current.bundle.replace('memory://', ''))!)).toBe(setup.versions['1.0.0']!.ios)
  })

  test('a flipped byte is SHA256_MISMATCH, a longer file SIZE_MISMATCH; the running version stays, nothing is left behind, failed is reported', async () => {
    await publishVersion(setup, '1.1.0')
    const isBundle = (url: string) => url.includes('/bundles/ios')
    for (const [change, code] of [
      [flipFirstByte, 'SHA256_MISMATCH'],
      [(bytes: Uint8Array) => new Uint8Array([...bytes, 0x20]), 'SIZE_MISMATCH'],
      [(bytes: Uint8Array) => bytes.subarray(1), 'SIZE_MISMATCH'],
    ] as const) {
      const storage = clone(withV1)
      const client = updater(storage, { fetch: rewriteFiles(serverFetch(setup.context), isBundle, change) })
      await client.start()
      const update = (await client.check())!
      expect(update.version).toBe('1.1.0')
      expect(await codeOf(client.download(update))).toBe(code)
      expect(client.current()!.version).toBe('1.0.0')
      expect((await storage.list('versions')).length).toBe(1)
      const events = JSON.parse((await storage.readText('events.json'))!) as Array<{ event: { event: string; versionId: string; message: string } }>
      const failed = events.filter((entry) => entry.event.event === 'failed')
      expect(failed).toHaveLength(1)
      expect(failed[0]!.event).toMatchObject({ versionId: update.versionId })
      expect(failed[0]!.event.message).toStartWith(`${code}:`)
      // a new launch still runs 1.0.0, whole
      expect((await updater(storage).start()).current!.version).toBe('1.0.0')
    }
  })

  test('a malformed sha256 in install info is SERVER, naming the file, before anything is downloaded; the running version stays', async () => {
    for (const digest of ['xyz', 'g'.repeat(64), 'a'.repeat(63), 'a'.repeat(65), null, 123, ['a'.repeat(64)]]) {
      const fetched: string[] = []
      const inner = rewriteUpdate(serverFetch(setup.context), (install) => {
        ;(install.files as Record<string, { sha256: unknown }>).manifest!.sha256 = digest
      })
      const spying: FetchLike = (url, init) => {
        if (!url.includes('/update?') && !url.includes('/events')) fetched.push(url)
        return inner(url, init)
      }
      const storage = clone(withV1)
      const client = updater(storage, { fetch: spying })
      await client.start()
      const update = (await client.check())!
      const error = await client.download(update).catch((thrown: unknown) => thrown)
      expect({ digest, code: (error as UpdateError).code }).toEqual({ digest, code: 'SERVER' })
      expect((error as UpdateError).message).toStartWith('Install info has a malformed sha256 for the manifest')
      expect(fetched).toEqual([])
      expect(client.current()!.version).toBe('1.0.0')
      expect((await storage.list('versions')).length).toBe(1)
    }
    // uppercase hex is a digest all the same
    const upper = rewriteUpdate(serverFetch(setup.context), (install) => {
      const files = install.files as Record<string, { sha256: string }>
      for (const kind in files) files[kind]!.sha256 = files[kind]!.sha256.toUpperCase()
    })
    const client = updater(clone(withV1), { fetch: upper })
    await client.start()
    expect((await client.download((await client.check())!)).version).toBe('1.1.0')
  })

  test('a download refused part way (SIZE_MISMATCH, NETWORK) closes the file it was writing, and a failing close does not hide why', async () => {
    const isBundle = (url: string) => url.includes('/bundles/ios')
    const longer = rewriteFiles(serverFetch(setup.context), isBundle, (bytes) => new Uint8Array([...bytes, 0x20]))
    const cutShort: FetchLike = async (url, init) => {
      const response = await serverFetch(setup.context)(url, init)
      if (!isBundle(url)) return response
      const bytes = new Uint8Array(await response.arrayBuffer())
      let pulls = 0
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (pulls++ === 0) controller.enqueue(bytes.subarray(0, 5))
          else controller.error(new Error('connection reset'))
        },
      })
      return new Response(body, { status: 200 }) as unknown as FetchResponse
    }
    for (const [fetch, code, failingClose] of [
      [longer, 'SIZE_MISMATCH', false],
      [cutShort, 'NETWORK', false],
      [longer, 'SIZE_MISMATCH', true],
    ] as const) {
      const writers = { opened: 0, closed: 0 }
      const inner = clone(withV1)
      const storage: UpdateStorage = {
        ...inner,
        async openWrite(path) {
          const writer = await inner.openWrite(path)
          writers.opened++
          return {
            write: (chunk) => writer.write(chunk),
            async close() {
              writers.closed++
              await writer.close()
              if (failingClose) throw new Error('close failed')
            },
          }
        },
      }
      const client = updater(storage, { fetch })
      await client.start()
      expect(await codeOf(client.download((await client.check())!))).toBe(code)
      expect(writers).toEqual({ opened: 1, closed: 1 })
    }
    // fileStorage: no file under its directory is left open
    const dir = tempDir('miniship-sdk-open-')
    const openUnder = () =>
      readdirSync('/proc/self/fd').filter((fd) => {
        try {
          return readlinkSync(`/proc/self/fd/${fd}`).startsWith(dir)
        } catch {
          return false
        }
      })
    try {
      for (const [fetch, code] of [
        [longer, 'SIZE_MISMATCH'],
        [cutShort, 'NETWORK'],
      ] as const) {
        const client = updater(fileStorage(dir), { fetch })
        await client.start()
        expect(await codeOf(client.download((await client.check())!))).toBe(code)
        if (existsSync('/proc/self/fd')) expect(openUnder()).toEqual([])
      }
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  test('a download the network cuts or stalls is NETWORK and reports no failed event: the release guard counts failed devices, and a phone in a tunnel is not one', async () => {
    const isBundle = (url: string) => url.includes('/bundles/ios')
    const offlineFiles: FetchLike = async (url, init) => {
      if (isBundle(url)) throw new TypeError('Network request failed')
      return serverFetch(setup.context)(url, init)
    }
    const storage = clone(withV1)
    const client = updater(storage, { fetch: offlineFiles })
    await client.start()
    const update = (await client.check())!
    expect(await codeOf(client.download(update))).toBe('NETWORK')
    expect(client.current()!.version).toBe('1.0.0')
    const events = JSON.parse((await storage.readText('events.json')) ?? '[]') as Array<{ event: { event: string } }>
    expect(events.filter((entry) => entry.event.event === 'failed')).toEqual([])
    // a refused file still is one
    const tampered = updater(storage, { fetch: rewriteFiles(serverFetch(setup.context), isBundle, flipFirstByte) })
    expect(await codeOf(tampered.download(update))).toBe('SHA256_MISMATCH')
    const after = JSON.parse((await storage.readText('events.json'))!) as Array<{ event: { event: string; message: string } }>
    expect(after.filter((entry) => entry.event.event === 'failed').map((entry) => entry.event.message.split(':')[0])).toEqual(['SHA256_MISMATCH'])
  })

  test('a file download answered 5xx or 429 (a server or CDN that is down or busy) is SERVER with its status and reports no failed event; a 404 (a file the release lacks) still does', async () => {
    const isBundle = (url: string) => url.includes('/bundles/ios')
    const answering =
      (status: number): FetchLike =>
      async (url, init) =>
        isBundle(url) ? (new Response(JSON.stringify({ code: 'X', message: 'no' }), { status, headers: { 'content-type': 'application/json' } }) as unknown as FetchResponse) : serverFetch(setup.context)(url, init)
    const storage = clone(withV1)
    const failedCodes = async () => (JSON.parse((await storage.readText('events.json')) ?? '[]') as Array<{ event: { event: string; message: string } }>).filter((entry) => entry.event.event === 'failed').map((entry) => entry.event.message.split(' answered')[0])
    const update = (await updater(storage).check())!
    for (const status of [500, 502, 503, 429]) {
      const error = await updater(storage, { fetch: answering(status) }).download(update).catch((caught: unknown) => caught)
      expect({ status, code: (error as UpdateError).code, answered: (error as UpdateError).status }).toEqual({ status, code: 'SERVER', answered: status })
    }
    expect(await failedCodes()).toEqual([])
    expect(updater(storage).current()).toBeNull()
    const missing = await updater(storage, { fetch: answering(404) }).download(update).catch((caught: unknown) => caught)
    expect((missing as UpdateError).status).toBe(404)
    expect(await failedCodes()).toEqual(['SERVER: Downloading the bundleIos'])
  })

  test('a versionId that names a property every object has (constructor, __proto__) is downloaded like any other, not taken for a download already running', async () => {
    for (const versionId of ['constructor', '__proto__', 'toString']) {
      const client = updater(clone(withV1), { fetch: rewriteUpdate(serverFetch(setup.context), (install) => (install.versionId = versionId)) })
      await client.start()
      const update = (await client.check())!
      expect(update.versionId).toBe(versionId)
      expect(await client.download(update)).toMatchObject({ versionId, version: '1.1.0', pending: true })
      expect(client.current()).toMatchObject({ versionId, version: '1.1.0' })
    }
  })

  test('two downloads of one update at once (two check().then(download)) download it once, install it once and answer the same', async () => {
    const fileRequests: string[] = []
    const counting: FetchLike = (url, init) => {
      if (url.includes('/versions/')) fileRequests.push(url.split('?')[0]!)
      return serverFetch(setup.context)(url, init)
    }
    const storage = clone(withV1)
    const client = updater(storage, { fetch: counting })
    await client.start()
    const [first, second] = await Promise.all([client.check(), client.check()])
    const [a, b] = await Promise.all([client.download(first!), client.download(second!)])
    expect(a).toEqual(b)
    expect(fileRequests.length).toBe(3)
    expect(client.current()).toMatchObject({ version: first!.version, pending: true })
    const events = JSON.parse((await storage.readText('events.json'))!) as Array<{ event: { event: string } }>
    expect(events.filter((entry) => entry.event.event === 'installed').length).toBe(1)
    expect((await storage.list('versions')).length).toBe(2)
    // once it ended, a download() is one of its own again
    fileRequests.length = 0
    await client.download(first!)
    expect(fileRequests.length).toBe(3)
    // passed as a callback (map hands it an index and the array too), two updates are still two downloads
    const other = { ...first!, versionId: `${first!.versionId}-other` }
    // (as plain JavaScript passes it: TypeScript would refuse the index where the options go)
    const callback = client.download as (update: Update) => ReturnType<typeof client.download>
    const [one, two] = await Promise.all([...[first!].map(callback), ...[other].map(callback)])
    expect([one!.versionId, two!.versionId]).toEqual([first!.versionId, other.versionId])
  })

  test('a download the device cannot keep (a full disk, files it may not write: STORAGE) reports no failed event either, and the host app still gets STORAGE: the release guard counts failed devices, and a full phone is not one', async () => {
    const isBundle = (url: string) => url.includes('/bundles/ios')
    /** what reached the server's events endpoint */
    const posted: Array<{ event: string; message?: string }> = []
    const reporting =
      (inner: FetchLike): FetchLike =>
      async (url, init) => {
        if (url.endsWith('/mini-apps/access/events')) posted.push(...(JSON.parse(init!.body!).events as typeof posted))
        return inner(url, init)
      }
    // where the storage refuses: a chunk of the bundle, moving a finished file into place, the switch
    // (state.json); the disk being full, the events file is not written either: they wait in memory
    const full = 'ENOSPC: no space left on device, write'
    const denied = 'EACCES: permission denied, rename'
    const cases = [
      ['write', `writing the bundleIos: ${full}`],
      ['move', `renaming the bundleIos: ${denied}`],
      ['switch', `saving state: ${full}`],
    ] as const
    const outcomes: unknown[] = []
    for (const [where] of cases) {
      const inner = clone(withV1)
      const refuse = (why: string) => {
        throw new Error(why)
      }
      const storage: UpdateStorage = {
        ...inner,
        writeText: async () => refuse(full),
        async openWrite(path) {
          const writer = await inner.openWrite(path)
          return { write: async (chunk) => (where === 'write' ? refuse(full) : writer.write(chunk)), close: () => writer.close() }
        },
        rename: async (from, to) => (where === 'move' && from.endsWith('.part') ? refuse(denied) : inner.rename(from, to)),
      }
      posted.length = 0
      const client = updater(storage, { fetch: reporting(serverFetch(setup.context)) })
      await client.start()
      const update = (await client.check())!
      const error = await client.download(update).catch((thrown: unknown) => thrown)
      expect(error).toBeInstanceOf(UpdateError)
      expect(client.current()!.version).toBe('1.0.0')
      // the launches went out with check(); the failure is in memory only (the disk took no events file): a flush sends what is waiting
      const flushed = await client.flushEvents()
      expect(posted.map((event) => event.event)).toContain('launched')
      outcomes.push([where, `${(error as UpdateError).code}: ${(error as UpdateError).message}`, posted.filter((event) => event.event === 'failed').map((event) => event.message), flushed])
      expect((await updater(inner).start()).current!.version).toBe('1.0.0')
    }
    // the host app gets STORAGE as before, saying why; the server got no failed event, and none is waiting
    expect(outcomes).toEqual(cases.map(([where, message]) => [where, `STORAGE: ${message}`, [], { sent: 0, pending: 0 }]))
    // a refused file still is one, and reaches the server the same way
    posted.length = 0
    const tampered = updater(clone(withV1), { fetch: reporting(rewriteFiles(serverFetch(setup.context), isBundle, flipFirstByte)) })
    await tampered.start()
    expect(await codeOf(tampered.download((await tampered.check())!))).toBe('SHA256_MISMATCH')
    expect(await tampered.flushEvents()).toEqual({ sent: 1, pending: 0 })
    expect(posted.filter((event) => event.event === 'failed').map((event) => event.message!.split(':')[0])).toEqual(['SHA256_MISMATCH'])
    // anything else that throws (the app's own onProgress here; a verifier that throws on a forged
    // signature alike) is STORAGE to the app, as before, and still reported: only the storage adapter's refusals go unreported
    posted.length = 0
    const throwing = updater(clone(withV1), { fetch: reporting(serverFetch(setup.context)) })
    await throwing.start()
    const broke = () => {
      throw new Error('the app broke')
    }
    const thrown = await throwing.download((await throwing.check())!, { onProgress: broke }).catch((caught: unknown) => caught)
    expect([(thrown as UpdateError).code, (thrown as UpdateError).message]).toEqual(['STORAGE', 'the app broke'])
    expect(await throwing.flushEvents()).toEqual({ sent: 1, pending: 0 })
    expect(posted.filter((event) => event.event === 'failed').map((event) => event.message)).toEqual(['STORAGE: the app broke'])
  })

  test('a download that stalls for timeoutMs is NETWORK; the running version stays', async () => {
    const stalling: FetchLike = async (url, init) => {
      if (!url.includes('/bundles/ios')) return serverFetch(setup.context)(url, init)
      const signal = init!.signal as AbortSignal
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(new Uint8Array([47, 42]))
          // then nothing, until the client gives up
          signal.addEventListener('abort', () => controller.error(new Error('aborted')))
        },
      })
      return new Response(body, { status: 200 }) as unknown as FetchResponse
    }
    const client = updater(clone(withV1), { fetch: stalling, timeoutMs: 150 })
    await client.start()
    expect(await codeOf(client.download((await client.check())!))).toBe('NETWORK')
    expect(client.current()!.version).toBe('1.0.0')
  })

  test('without a streaming body (React Native) a download that never ends is NETWORK after timeoutMs and 1 ms per 8 bytes of the file', async () => {
    // Android's networking has no read timeout: only the client's deadline ends a stalled answer
    let manifestSize = 0
    const stalledWhole: FetchLike = async (url, init) => {
      const response = await serverFetch(setup.context)(url, init)
      if (!url.includes('/manifest')) return { ok: response.ok, status: response.status, body: null, arrayBuffer: () => response.arrayBuffer(), text: () => response.text() }
      const signal = init!.signal as AbortSignal
      return {
        ok: true,
        status: 200,
        body: null,
        arrayBuffer: () => new Promise<ArrayBuffer>((_, reject) => signal.addEventListener('abort', () => reject(signal.reason))),
        text: () => response.text(),
      }
    }
    const client = updater(clone(withV1), { fetch: stalledWhole, timeoutMs: 150 })
    await client.start()
    const update = (await client.check())!
    manifestSize = update.install.files.manifest!.size
    const error = await client.download(update).catch((thrown: unknown) => thrown)
    expect((error as UpdateError).code).toBe('NETWORK')
    expect((error as UpdateError).message).toContain(`no answer in ${150 + manifestSize / 8} ms`)
    expect(client.current()!.version).toBe('1.0.0')
  })

  test('without a streaming body, install info with no size for a file is SIZE_MISMATCH (reported), not a deadline of NaN that aborts at once as NETWORK', async () => {
    const slowWhole: FetchLike = async (url, init) => {
      const response = await serverFetch(setup.context)(url, init)
      const signal = init?.signal as AbortSignal | undefined
      const arrayBuffer = () =>
        new Promise<ArrayBuffer>((resolve, reject) => {
          // the body comes whole after 30 ms, as a phone's would; an abort before that rejects
          const timer = setTimeout(() => resolve(response.arrayBuffer()), 30)
          signal?.addEventListener('abort', () => {
            clearTimeout(timer)
            reject(signal.reason)
          })
        })
      return { ok: response.ok, status: response.status, body: null, arrayBuffer, text: () => response.text() }
    }
    const noSize = rewriteUpdate(slowWhole, (install) => {
      delete (install.files as Record<string, { size?: number }>).manifest!.size
    })
    const client = updater(clone(withV1), { fetch: noSize })
    await client.start()
    expect(await codeOf(client.download((await client.check())!))).toBe('SIZE_MISMATCH')
    expect(client.current()!.version).toBe('1.0.0')
  })

  test('an update check that gets no answer in timeoutMs is NETWORK and says so, not just "aborted"', async () => {
    // as WHATWG fetch does (Node, Bun, browsers): an aborted request rejects with the signal's reason
    const hanging: FetchLike = (url, init) =>
      new Promise((_, reject) => {
        const signal = init!.signal as AbortSignal
        signal.addEventListener('abort', () => reject(signal.reason))
      })
    const error = await updater(memoryStorage(), { fetch: hanging, timeoutMs: 150 }).check().catch((thrown: unknown) => thrown)
    expect(error).toBeInstanceOf(UpdateError)
    expect((error as UpdateError).code).toBe('NETWORK')
    expect((error as UpdateError).message).toContain('no answer in 150 ms')
  })

  describe('signatures (§14) with pinned keys', () => {
    const trusted = signer()
    const other = signer()
    const alsoTrusted = signer()
    const pinned = (fetch: FetchLike) => updater(clone(withV1), { trustedKeys: [alsoTrusted.publicKey, trusted.publicKey], fetch })

    test('a version signed by a trusted key installs', async () => {
      const client = pinned(rewriteUpdate(serverFetch(setup.context), (install) => signInstall(install, trusted)))
      await client.start()
      expect((await client.download((await client.check())!)).version).toBe('1.1.0')
    })

    test('an unsigned version is SIGNATURE_REQUIRED, another key’s signature SIGNATURE_INVALID, before any download', async () => {
      let downloads = 0
      const counting: FetchLike = async (url, init) => {
        if (!url.includes('/update?') && !url.includes('/events')) downloads++
        return serverFetch(setup.context)(url, init)
      }
      const unsigned = pinned(counting)
      await unsigned.start()
      expect(await codeOf(unsigned.download((await unsigned.check())!))).toBe('SIGNATURE_REQUIRED')
      const forged = pinned(rewriteUpdate(counting, (install) => signInstall(install, { keyId: trusted.keyId, privateKey: other.privateKey })))
      await forged.start()
      expect(await codeOf(forged.download((await forged.check())!))).toBe('SIGNATURE_INVALID')
      expect(forged.current()!.version).toBe('1.0.0')
      expect(downloads).toBe(0)
    })

    test('a valid signature over another app’s statement, or one install info contradicts, is SIGNATURE_INVALID', async () => {
      const otherApp = pinned(rewriteUpdate(serverFetch(setup.context), (install) => signInstall(install, trusted, 'com.example.other')))
      await otherApp.start()
      expect(await codeOf(otherApp.download((await otherApp.check())!))).toBe('SIGNATURE_INVALID')
      const swapped = pinned(
        rewriteUpdate(serverFetch(setup.context), (install) => {
          signInstall(install, trusted)
          const files = install.files as Record<string, { sha256: string }>
          files.bundleIos!.sha256 = 'a'.repeat(64)
        }),
      )
      await swapped.start()
      expect(await codeOf(swapped.download((await swapped.check())!))).toBe('SIGNATURE_INVALID')
    })

    test('trustedKeys takes a readonly array, as a config constant is written (`npm run typecheck` checks the type)', async () => {
      const TRUSTED_KEYS = [trusted.publicKey] as const
      const client = updater(clone(withV1), { trustedKeys: TRUSTED_KEYS, fetch: rewriteUpdate(serverFetch(setup.context), (install) => signInstall(install, trusted)) })
      await client.start()
      expect((await client.download((await client.check())!)).version).toBe('1.1.0')
    })

    test('a signed bundle changed on the way is SHA256_MISMATCH', async () => {
      const client = pinned(rewriteFiles(rewriteUpdate(serverFetch(setup.context), (install) => signInstall(install, trusted)), (url) => url.includes('/bundles/ios'), flipFirstByte))
      await client.start()
      expect(await codeOf(client.download((await client.check())!))).toBe('SHA256_MISMATCH')
    })

    test('a trusted key that is not 32 bytes of base64 is refused at createUpdater as INVALID_OPTION, as the docs say of options', () => {
      // the docs' own placeholder, as a developer might leave it
      let thrown: unknown
      try {
        updater(memoryStorage(), { trustedKeys: ['q3Y…base64 Ed25519 public key…='] })
      } catch (error) {
        thrown = error
      }
      expect(thrown).toBeInstanceOf(UpdateError)
      expect((thrown as UpdateError).code).toBe('INVALID_OPTION')
      expect((thrown as UpdateError).message).toContain('Not an Ed25519 public key')
    })

    test('a trusted key of small order (under which anyone can sign anything) or no point of the curve is INVALID_OPTION', () => {
      const identity = new Uint8Array(32)
      identity[0] = 1
      for (const key of [identity, new Uint8Array(32), new Uint8Array(32).fill(255)]) {
        let thrown: unknown
        try {
          updater(memoryStorage(), { trustedKeys: [Buffer.from(key).toString('base64')] })
        } catch (error) {
          thrown = error
        }
        expect({ key: Buffer.from(key).toString('hex'), code: (thrown as UpdateError | undefined)?.code }).toEqual({ key: Buffer.from(key).toString('hex'), code: 'INVALID_OPTION' })
      }
    })
  })

  test.each([
    ['an atomic rename', false],
    ['a rename that removes the target first', true],
  ])('a crash at any storage write leaves 1.0.0 or 1.1.0 whole, never a mix (%s)', async (_, splitRename) => {
    const outcomes = new Set<string>()
    for (let failAt = 1; ; failAt++) {
      const storage = clone(withV1)
      const failing = failingStorage(storage, failAt, splitRename)
      const client = updater(failing)
      await client.start()
      const update = (await client.check())!
      let finished = false
      try {
        await client.download(update)
        finished = true
      } catch (error) {
        expect(error).toBeInstanceOf(UpdateError)
      }
      // the process dies here; the next launch reads what is on storage
      const next = updater(storage)
      const { current } = await next.start()
      expect(current).not.toBeNull()
      const version = current!.version
      outcomes.add(version)
      const expected = version === '1.0.0' ? setup.versions['1.0.0']! : setup.versions['1.1.0']!
      expect(sha256(storage.files.get(current!.bundle.replace('memory://', ''))!)).toBe(expected.files.bundleIos!.sha256)
      expect(sha256(storage.files.get(current!.manifest.replace('memory://', ''))!)).toBe(expected.files.manifest!.sha256)
      expect(sha256(storage.files.get(current!.assets.replace('memory://', ''))!)).toBe(expected.files.assetsIos!.sha256)
      // no half download is left behind
      expect((await storage.list('versions')).length).toBeLessThanOrEqual(2)
      if (finished && failing.writes < failAt) break
      expect(failAt).toBeLessThan(200)
    }
    expect([...outcomes].sort()).toEqual(['1.0.0', '1.1.0'])
  })

  test('launched crashLoopLimit times without markReady(): rolled back to the previous version and reported as rolled_back', async () => {
    const storage = clone(withV1)
    const launch = () => updater(storage, { crashLoopLimit: 2 }).start()
    const first = updater(storage)
    await first.start()
    const installed = await first.download((await first.check())!)
    expect(installed.version).toBe('1.1.0')
    expect((await launch()).current!.version).toBe('1.1.0')
    expect((await launch()).current!.version).toBe('1.1.0')
    const third = await launch()
    expect(third.rolledBack).toEqual({ versionId: setup.versions['1.1.0']!.id, version: '1.1.0' })
    expect(third.current).toMatchObject({ version: '1.0.0', pending: false })
    expect(await storage.list('versions')).toHaveLength(1)
    const events = JSON.parse((await storage.readText('events.json'))!) as Array<{ event: { event: string; versionId: string } }>
    expect(events.map((entry) => entry.event.event)).toEqual(['installed', 'launched', 'launched', 'rolled_back', 'launched'])
    expect(events[3]!.event.versionId).toBe(setup.versions['1.1.0']!.id)
    // the events reach the server
    const sent = await updater(storage).flushEvents()
    expect(sent).toEqual({ sent: 5, pending: 0 })
    // the version that crash-looped is not offered again on this device
    expect(await updater(storage).check()).toBeNull()
  })

  test('two start() calls at the same time are one launch: both get the same answer, the crash-loop count moves once', async () => {
    const storage = clone(withV1)
    const first = updater(storage)
    await first.start()
    await first.download((await first.check())!)
    // the host app calls start() from two places at once (a remount, a second listener)
    const client = updater(storage, { crashLoopLimit: 2 })
    const [one, two] = await Promise.all([client.start(), client.start()])
    expect(two).toBe(one)
    expect(one.current).toMatchObject({ version: '1.1.0', pending: true })
    // one launch counted: the next one is the second of crashLoopLimit 2, not a rollback
    const next = await updater(storage, { crashLoopLimit: 2 }).start()
    expect(next.rolledBack).toBeUndefined()
    expect(next.current).toMatchObject({ version: '1.1.0', pending: true })
    const events = JSON.parse((await storage.readText('events.json'))!) as Array<{ event: { event: string } }>
    expect(events.map((entry) => entry.event.event)).toEqual(['installed', 'launched', 'launched'])
    // once settled, a start() is a launch of its own again (as the docs' reload right after a download is)
    expect((await client.start()).rolledBack).toMatchObject({ version: '1.1.0' })
  })

  test('markReady() keeps a version through later launches', async () => {
    const storage = clone(withV1)
    const first = updater(storage)
    await first.start()
    await first.download((await first.check())!)
    const launched = updater(storage)
    await launched.start()
    await launched.markReady()
    for (let i = 0; i < 4; i++) expect((await updater(storage).start()).current).toMatchObject({ version: '1.1.0', pending: false })
    expect(await storage.list('versions')).toHaveLength(1)
  })

  test('events wait on storage while offline (bounded), survive a restart, and are sent by flushEvents() and the next check()', async () => {
    const storage = clone(withV1)
    const posted: Array<{ events: unknown[]; status: number; answer: { accepted: number } }> = []
    let online = false
    const network: FetchLike = async (url, init) => {
      if (!online) throw new TypeError('Network request failed')
      const response = await serverFetch(setup.context)(url, init)
      if (url.endsWith('/mini-apps/access/events')) {
        const answer = JSON.parse(await response.text())
        posted.push({ events: JSON.parse(init!.body!).events, status: response.status, answer })
        return new Response(JSON.stringify(answer), { status: response.status }) as unknown as FetchResponse
      }
      return response
    }
    for (let i = 0; i < 5; i++) await updater(storage, { fetch: network, maxPendingEvents: 3 }).start()
    expect(await codeOf(updater(storage, { fetch: network }).flushEvents())).toBe('NETWORK')
    expect(await codeOf(updater(storage, { fetch: network }).check())).toBe('NETWORK')
    online = true
    const client = updater(storage, { fetch: network })
    expect(await client.flushEvents()).toEqual({ sent: 3, pending: 0 })
    expect(posted).toHaveLength(1)
    expect(posted[0]!.status).toBe(202)
    expect(posted[0]!.answer.accepted).toBe(3)
    expect(posted[0]!.events[0]).toMatchObject({ appId, versionId: setup.versions['1.0.0']!.id, platform: 'ios', event: 'launched', channel: 'stable', deviceId: 'device-1' })
    // a new event goes out with the next check
    await client.start()
    await client.check()
    expect(posted).toHaveLength(2)
    expect(await client.flushEvents()).toEqual({ sent: 0, pending: 0 })
  })

  test('a batch of events stays under the server’s 64 KB a request: 100 failures with long messages all reach it, none is dropped by a 413', async () => {
    // over HTTP, as a phone sends it: the server judges the body by its content-length
    const server = Bun.serve({ port: 0, fetch: (request) => setup.context.app.handle(request) })
    try {
      const answers: Array<{ status: number; accepted?: number }> = []
      const network: FetchLike = async (url, init) => {
        const events = url.endsWith('/mini-apps/access/events')
        // the files' host refuses them, with a long message (a network error, a 5xx or a 429 is no failure of the release: not reported)
        if (!events && !url.includes('/update?')) return new Response(JSON.stringify({ code: 'ACCESS_DENIED', message: 'the bucket refuses the proxy this object; '.repeat(20) }), { status: 403 }) as unknown as FetchResponse
        const response = await fetch(url, init as RequestInit)
        if (!events) return response as unknown as FetchResponse
        const text = await response.text()
        answers.push({ status: response.status, ...JSON.parse(text) })
        return new Response(text, { status: response.status }) as unknown as FetchResponse
      }
      const client = updater(memoryStorage(), { serverUrl: `http://localhost:${server.port}/api`, fetch: network, maxPendingEvents: 100 })
      await client.start()
      const update = (await client.check())!
      for (let i = 0; i < 100; i++) expect(await codeOf(client.download(update))).toBe('SERVER')
      expect(await client.flushEvents()).toEqual({ sent: 100, pending: 0 })
      // before: one request of about 70 KB, answered 413, and the 100 events dropped as delivered
      expect(answers.map((answer) => answer.status)).toEqual(answers.map(() => 202))
      expect(answers.length).toBeGreaterThan(1)
      expect(answers.reduce((sum, answer) => sum + (answer.accepted ?? 0), 0)).toBe(100)
    } finally {
      server.stop(true)
    }
  })

  test('a captive portal’s 200 page is no delivery: the events stay on storage until the server itself takes them', async () => {
    const storage = clone(withV1)
    let portal = true
    const network: FetchLike = async (url, init) =>
      portal ? (new Response('<html><body>Sign in to the hotel Wi-Fi</body></html>', { status: 200, headers: { 'content-type': 'text/html' } }) as unknown as FetchResponse) : serverFetch(setup.context)(url, init)
    const client = updater(storage, { fetch: network })
    await client.start()
    const waiting = (JSON.parse((await storage.readText('events.json'))!) as unknown[]).length
    expect(waiting).toBeGreaterThan(0)
    // before: { sent: waiting, pending: 0 }, and the launch never reached insights
    expect(await codeOf(client.flushEvents())).toBe('SERVER')
    expect(await codeOf(client.check())).toBe('SERVER')
    portal = false
    expect(await client.flushEvents()).toEqual({ sent: waiting, pending: 0 })
  })

  test('flushes at the same time (a check() at launch, flushEvents() when the app goes to the background) send each event once: the server counts every event it takes', async () => {
    const storage = clone(withV1)
    let offline = true
    const posted: unknown[] = []
    const network: FetchLike = async (url, init) => {
      if (offline) throw new TypeError('Network request failed')
      if (url.endsWith('/mini-apps/access/events')) posted.push(...JSON.parse(init!.body!).events)
      return serverFetch(setup.context)(url, init)
    }
    for (let i = 0; i < 3; i++) await updater(storage, { fetch: network }).start()
    offline = false
    const waiting = (JSON.parse((await storage.readText('events.json'))!) as unknown[]).length
    expect(waiting).toBeGreaterThanOrEqual(3)
    const client = updater(storage, { fetch: network })
    const [, flushed] = await Promise.all([client.check(), client.flushEvents(), client.check()])
    // before: the three flushes each read the same pending events and each sent them all (each launch counted three times)
    expect(posted).toHaveLength(waiting)
    expect(flushed).toEqual({ sent: waiting, pending: 0 })
    expect(await client.flushEvents()).toEqual({ sent: 0, pending: 0 })
  })

  test('fileStorage and nodeCrypto (miniship/sdk/node): the files on disk, a refused bundle leaves no directory behind', async () => {
    const dir = tempDir('miniship-sdk-files-')
    try {
      const client = updater(fileStorage(dir), { crypto: nodeCrypto(), embeddedVersion: '0.9.0' })
      await client.start()
      const current = await client.download((await client.check())!)
      expect(current.bundle).toBe(join(dir, 'versions', current.bundle.split('/').slice(-2)[0]!, 'bundle'))
      expect(readFileSync(current.bundle, 'utf8')).toBe(setup.versions['1.1.0']!.ios)
      expect(JSON.parse(readFileSync(join(dir, 'state.json'), 'utf8')).current.version).toBe('1.1.0')
      const tampered = updater(fileStorage(dir), { crypto: nodeCrypto(), fetch: rewriteFiles(serverFetch(setup.context), (url) => url.includes('/assets/ios'), flipFirstByte), embeddedVersion: '0.9.0' })
      const { current: running } = await tampered.start()
      const refused = await codeOf(tampered.download({ ...(await updater(memoryStorage()).check())!, version: '1.1.0' }))
      expect(refused).toBe('SHA256_MISMATCH')
      expect(readdirSync(join(dir, 'versions'))).toEqual([running!.bundle.split('/').slice(-2)[0]!])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  test('a host app updated outside the release’s hostVersionRange drops the update at start(); the next check asks afresh', async () => {
    await publishVersion(setup, '1.2.0', { hostVersionRange: '>=2.0.0 <3' })
    // the range comes from the server's own install info (§17), nothing added on the way
    const storage = clone(withV1)
    const onTwo = updater(storage, { hostVersion: '2.1.0' })
    await onTwo.start()
    const update = (await onTwo.check())!
    expect(update.version).toBe('1.2.0')
    expect(update.install.hostVersionRange).toBe('>=2.0.0 <3')
    await onTwo.download(update)
    expect((await updater(storage, { hostVersion: '2.9.0' }).start()).current!.version).toBe('1.2.0')
    const onThree = updater(storage, { hostVersion: '3.0.0' })
    const started = await onThree.start()
    expect(started.dropped).toEqual({ versionId: setup.versions['1.2.0']!.id, version: '1.2.0', hostVersionRange: '>=2.0.0 <3' })
    expect(started.current).toBeNull()
    expect(await storage.list('versions')).toEqual([])
    // the server offers host 3.0.0 the newest release it can run
    const next = (await onThree.check())!
    expect(next.version).toBe('1.1.0')
  })
})

describe('signatures the server itself serves (§14): a version uploaded signed with a key the miniapp trusts', () => {
  let setup: Setup
  const trusted = signer()
  const other = signer()
  const client = (storage: UpdateStorage, trustedKeys?: string[]) =>
    createUpdater({ serverUrl: 'http://localhost/api', appId: setup.appId, platform: 'ios', deviceId: 'device-signed', storage, fetch: serverFetch(setup.context), trustedKeys })

  /** Uploads `version` signed by `key` over its own files' digests, and publishes it. */
  async function publishSigned(version: string, key: { keyId: string; privateKey: KeyObject }) {
    const form = uploadForm(setup.appId, { version })
    const digests: Record<string, string> = {}
    for (const [name, value] of form.entries()) if (typeof value !== 'string') digests[name] = sha256(new Uint8Array(await (value as Blob).arrayBuffer()))
    const statement = buildStatement(setup.appId, version, digests)
    form.append('signatureKeyId', key.keyId)
    form.append('signature', sign(null, Buffer.from(statement), key.privateKey).toString('base64'))
    const uploaded = await upload(setup.context, setup.owner.token, setup.appId, form)
    if (uploaded.status !== 201) throw new Error(`signed upload failed: ${uploaded.status} ${uploaded.text}`)
    const published = await setup.context.call('POST', `/api/mini-apps/${setup.miniAppId}/versions/${uploaded.body.id}/publish`, { token: setup.owner.token, json: {} })
    if (published.status !== 200) throw new Error(`publish failed: ${published.status} ${published.text}`)
  }

  beforeAll(async () => {
    setup = await setUp('com.example.sdk-signed')
    const added = await setup.context.call('POST', `/api/mini-apps/${setup.miniAppId}/signing-keys`, { token: setup.owner.token, json: { name: 'release laptop', publicKey: trusted.publicKey } })
    expect(added.status).toBe(201)
  })
  afterAll(() => setup.context.close())

  test('an unsigned release, as the server serves it: SIGNATURE_REQUIRED, nothing installed', async () => {
    await publishVersion(setup, '1.0.0')
    const storage = memoryStorage()
    const pinned = client(storage, [trusted.publicKey])
    await pinned.start()
    const update = (await pinned.check())!
    expect(update.install.signature).toBeUndefined()
    expect(await codeOf(pinned.download(update))).toBe('SIGNATURE_REQUIRED')
    expect(pinned.current()).toBeNull()
  })

  test('the server’s signature installs under the trusted key; a client pinning another key refuses it (SIGNATURE_INVALID) and keeps what it runs', async () => {
    await publishSigned('1.1.0', trusted)
    const storage = memoryStorage()
    const pinned = client(storage, [other.publicKey, trusted.publicKey])
    await pinned.start()
    const update = (await pinned.check())!
    expect(update.install.signature).toMatchObject({ algorithm: 'ed25519', keyId: trusted.keyId })
    expect((await pinned.download(update)).version).toBe('1.1.0')
    expect(pinned.current()!.version).toBe('1.1.0')

    const elsewhere = client(memoryStorage(), [other.publicKey])
    await elsewhere.start()
    expect(await codeOf(elsewhere.download((await elsewhere.check())!))).toBe('SIGNATURE_INVALID')
    expect(elsewhere.current()).toBeNull()
    // without pinned keys the signature is not required
    const unpinned = client(memoryStorage())
    await unpinned.start()
    expect((await unpinned.download((await unpinned.check())!)).version).toBe('1.1.0')
  })

  // it installed unsigned and signed updates alike, as if no keys were given: an empty list read from
  // a setting left unset turned signature checks off without a word
  test('trustedKeys: [] trusts no key: a signed update is SIGNATURE_INVALID, an unsigned one SIGNATURE_REQUIRED, nothing installed', async () => {
    const empty = client(memoryStorage(), [])
    await empty.start()
    expect(await codeOf(empty.download((await empty.check())!))).toBe('SIGNATURE_INVALID')
    expect(empty.current()).toBeNull()
    const unsigned = (await empty.check())!
    delete (unsigned.install as { signature?: unknown }).signature
    expect(await codeOf(empty.download(unsigned))).toBe('SIGNATURE_REQUIRED')
    expect(empty.current()).toBeNull()
  })
})

describe('a staged rollout decides what the update client gets', () => {
  test('a device outside a 1 % rollout gets nothing new; at 100 % it updates', async () => {
    const setup = await setUp('com.example.rollout')
    try {
      await publishVersion(setup, '1.0.0')
      await publishVersion(setup, '2.0.0', { rolloutPercent: 1 })
      const storage = memoryStorage()
      // a device whose bucket for 2.0.0 is not 0
      let deviceId = ''
      for (let i = 0; ; i++) {
        deviceId = `d-${i}`
        const digest = createHash('sha256').update(`${setup.appId}:${setup.versions['2.0.0']!.id}:${deviceId}`).digest()
        if (digest.readUInt32BE(0) % 100 !== 0) break
      }
      const client = createUpdater({ serverUrl: 'http://localhost', appId: setup.appId, platform: 'android', deviceId, storage, fetch: serverFetch(setup.context), embeddedVersion: '1.0.0' })
      await client.start()
      expect(await client.check()).toBeNull()
      const raised = await setup.context.call('PATCH', `/api/mini-apps/${setup.miniAppId}/channels/stable/rollout`, { token: setup.owner.token, json: { rolloutPercent: 100 } })
      expect(raised.status).toBe(200)
      const update = (await client.check()) as Update
      expect(update.version).toBe('2.0.0')
      const current = await client.download(update)
      expect(new TextDecoder().decode(storage.files.get(current.bundle.replace('memory://', ''))!)).toBe('console.log("android 2.0.0")')
    } finally {
      setup.context.close()
    }
  })
})

describe('a channel’s first release reverted (0 %, nothing earlier to go back to)', () => {
  test('the update client keeps what it installed, and the words the console and the CLI show say so', async () => {
    const setup = await setUp('com.example.revert-first')
    try {
      await publishVersion(setup, '1.0.0')
      const client = createUpdater({ serverUrl: 'http://localhost', appId: setup.appId, platform: 'ios', deviceId: 'device-1', storage: memoryStorage(), fetch: serverFetch(setup.context) })
      await client.start()
      await client.download((await client.check())!)
      await client.start()
      await client.markReady()
      const reverted = await setup.context.call('PATCH', `/api/mini-apps/${setup.miniAppId}/channels/stable/rollout`, { token: setup.owner.token, json: { rolloutPercent: 0 } })
      expect(reverted.status).toBe(200)
      // the server has nothing for any device (404 RELEASE_NOT_FOUND): check() answers null, the installed version stays
      expect(await client.check()).toBeNull()
      await client.start()
      expect(client.current()!.version).toBe('1.0.0')
      const channels = await setup.context.call('GET', `/api/mini-apps/${setup.miniAppId}/channels`, { token: setup.owner.token })
      const stable = channels.body.channels[0]
      expect([stable.state, stable.previousRelease]).toEqual(['reverted', null])
      expect(channelDevicesText(stable)).toBe('No device gets 1.0.0; those on it keep it.')
    } finally {
      setup.context.close()
    }
  })
})

describe('the version running now, while the next one downloads in the background (the docs’ snippet)', () => {
  let setup: Setup
  const appId = 'com.example.sdk-running'
  const updater = (storage: UpdateStorage) =>
    createUpdater({ serverUrl: 'http://localhost/api', appId, platform: 'ios', deviceId: 'device-running', storage, fetch: serverFetch(setup.context) })
  const launch = (storage: UpdateStorage) => updater(storage).start()

  beforeAll(async () => {
    setup = await setUp(appId)
    await publishVersion(setup, '1.0.0')
  })
  afterAll(() => setup.context.close())

  test('markReady() confirms the version start() answered, not one downloaded since: that one is still rolled back when it crash-loops', async () => {
    const storage = memoryStorage()
    const first = updater(storage)
    await first.start()
    await first.download((await first.check())!)
    const second = updater(storage)
    await second.start()
    await second.markReady()
    await publishVersion(setup, '1.1.0')
    // launch: 1.0.0 runs; check().then(download) gets 1.1.0 before 1.0.0 has shown its first screen
    const client = updater(storage)
    expect((await client.start()).current!.version).toBe('1.0.0')
    await client.download((await client.check())!)
    await client.markReady()
    // 1.1.0 never ran; it crashes at every launch
    expect((await launch(storage)).current).toMatchObject({ version: '1.1.0', pending: true })
    expect((await launch(storage)).current).toMatchObject({ version: '1.1.0', pending: true })
    const third = await launch(storage)
    expect(third.rolledBack).toEqual({ versionId: setup.versions['1.1.0']!.id, version: '1.1.0' })
    expect(third.current).toMatchObject({ version: '1.0.0', pending: false })
  })

  test('a download does not remove the files of the version running, even one not yet confirmed; the next start() does', async () => {
    await publishVersion(setup, '2.0.0')
    const storage = memoryStorage()
    const first = updater(storage)
    await first.start()
    await first.download((await first.check())!)
    // 2.0.0 runs, pending; meanwhile 2.1.0 is published and downloaded
    const client = updater(storage)
    const running = (await client.start()).current!
    expect(running).toMatchObject({ version: '2.0.0', pending: true })
    await publishVersion(setup, '2.1.0')
    await client.download((await client.check())!)
    for (const file of [running.bundle, running.manifest, running.assets]) expect(storage.files.has(file.replace('memory://', ''))).toBe(true)
    expect((await launch(storage)).current!.version).toBe('2.1.0')
    expect(storage.files.has(running.bundle.replace('memory://', ''))).toBe(false)
  })

  test('markReady() after a download switched: the running version started well, so a crash loop of the new one goes back to it, not past it', async () => {
    await publishVersion(setup, '3.0.0')
    const storage = memoryStorage()
    const first = updater(storage)
    await first.start()
    await first.download((await first.check())!)
    // 3.0.0 runs, not yet confirmed; 3.1.0 is downloaded before its first screen, then it shows
    const client = updater(storage)
    expect((await client.start()).current).toMatchObject({ version: '3.0.0', pending: true })
    await publishVersion(setup, '3.1.0')
    await client.download((await client.check())!)
    await client.markReady()
    expect(client.current()).toMatchObject({ version: '3.1.0', pending: true })
    expect((await launch(storage)).current).toMatchObject({ version: '3.1.0', pending: true })
    expect((await launch(storage)).current).toMatchObject({ version: '3.1.0', pending: true })
    const third = await launch(storage)
    expect(third.rolledBack).toMatchObject({ version: '3.1.0' })
    expect(third.current).toMatchObject({ version: '3.0.0', pending: false })
  })
})

describe('the host app’s own version (hostVersion)', () => {
  let setup: Setup
  const appId = 'com.example.sdk-host'
  const updater = (storage: UpdateStorage, hostVersion: string | undefined, fetch?: FetchLike) =>
    createUpdater({ serverUrl: 'http://localhost/api', appId, platform: 'ios', deviceId: 'device-host', storage, fetch: fetch ?? serverFetch(setup.context), hostVersion })
  const events = async (storage: UpdateStorage) => JSON.parse((await storage.readText('events.json'))!) as Array<{ event: { event: string; versionId: string; hostVersion?: string; message?: string } }>

  beforeAll(async () => {
    setup = await setUp(appId)
  })
  afterAll(() => setup.context.close())

  test('a crash loop on a new host does not go back to a version outside its hostVersionRange: it runs the embedded version', async () => {
    await publishVersion(setup, '1.0.0', { hostVersionRange: '>=1.0.0 <2' })
    const storage = memoryStorage()
    const first = updater(storage, '1.0.0')
    await first.start()
    await first.download((await first.check())!)
    await updater(storage, '1.0.0').start()
    await updater(storage, '1.0.0').markReady()
    // the next release runs on any host; installed on host 1.0.0, its previous is 1.0.0
    await publishVersion(setup, '1.1.0')
    const second = updater(storage, '1.0.0')
    await second.start()
    expect((await second.download((await second.check())!)).version).toBe('1.1.0')
    const onOneFive = clone(storage as MemoryStorage)
    // the host app is updated to 2.0.0, where 1.1.0 crashes at every launch
    expect((await updater(storage, '2.0.0').start()).current!.version).toBe('1.1.0')
    expect((await updater(storage, '2.0.0').start()).current!.version).toBe('1.1.0')
    const third = await updater(storage, '2.0.0').start()
    expect(third.rolledBack).toEqual({ versionId: setup.versions['1.1.0']!.id, version: '1.1.0' })
    expect(third.dropped).toEqual({ versionId: setup.versions['1.0.0']!.id, version: '1.0.0', hostVersionRange: '>=1.0.0 <2' })
    expect(third.current).toBeNull()
    expect(await storage.list('versions')).toEqual([])
    // (the check before the download sent what came before); no launch of 1.0.0 after the rollback
    const reported = (await events(storage)).map((entry) => entry.event)
    expect(reported.map((event) => event.event)).toEqual(['installed', 'launched', 'launched', 'rolled_back'])
    expect(reported[3]).toMatchObject({ versionId: setup.versions['1.1.0']!.id, hostVersion: '2.0.0' })
    expect(reported[3]!.message).toContain('back to embedded')
    expect((await updater(storage, '2.0.0').start()).current).toBeNull()
    // a host still inside the range goes back to 1.0.0, as before
    let back = await updater(onOneFive, '1.5.0').start()
    for (let launch = 2; launch <= 3; launch++) back = await updater(onOneFive, '1.5.0').start()
    expect(back.rolledBack!.version).toBe('1.1.0')
    expect(back.dropped).toBeUndefined()
    expect(back.current).toMatchObject({ version: '1.0.0', pending: false })
  })

  test('a hostVersion of one or two parts ("1.5", as iOS names it) is sent and compared as 1.5.0; one that is no version is refused at createUpdater', async () => {
    const urls: string[] = []
    const recording: FetchLike = (url, init) => {
      urls.push(url)
      return serverFetch(setup.context)(url, init)
    }
    const storage = memoryStorage()
    const client = updater(storage, '1.5', recording)
    await client.start()
    const update = (await client.check())!
    expect(update.version).toBe('1.1.0')
    expect(urls.find((url) => url.includes('/update?'))).toContain('hostVersion=1.5.0')
    await client.download(update)
    expect((await events(storage)).map((entry) => entry.event.hostVersion)).toEqual(['1.5.0'])
    // installed under host 1.5 with no range; a range recorded for it is read against 1.5.0 too
    const withRange = clone(storage)
    const state = JSON.parse((await withRange.readText('state.json'))!)
    state.current.hostVersionRange = '>=1.5.0 <2'
    await withRange.writeText('state.json', JSON.stringify(state))
    const started = await updater(withRange, '1.5').start()
    expect(started.dropped).toBeUndefined()
    expect(started.current!.version).toBe('1.1.0')
    expect((await updater(withRange, '2').start()).dropped).toMatchObject({ version: '1.1.0' })

    // null or empty: no host version (expo's nativeApplicationVersion where there is none), as if left out
    for (const none of ['', '  ', null]) expect(() => updater(memoryStorage(), none as string)).not.toThrow()
    for (const refused of ['latest', '1.2.3 (45)', '1.2.3.4', '1.2.3-01']) {
      let error: unknown
      try {
        updater(memoryStorage(), refused)
      } catch (caught) {
        error = caught
      }
      expect(error).toBeInstanceOf(UpdateError)
      expect((error as UpdateError).code).toBe('INVALID_OPTION')
      expect((error as UpdateError).message).toContain('hostVersion')
    }
  })

  test('an embeddedVersion of one or two parts is sent as currentVersion 1.2.0; one that is no version is INVALID_OPTION at createUpdater, not a SERVER 400 at every check', async () => {
    const urls: string[] = []
    const recording: FetchLike = (url, init) => {
      urls.push(url)
      return serverFetch(setup.context)(url, init)
    }
    const make = (embeddedVersion: string | undefined) => createUpdater({ serverUrl: 'http://localhost/api', appId, platform: 'ios', deviceId: 'device-embedded', storage: memoryStorage(), fetch: recording, embeddedVersion })
    await make('1.2').check()
    await make('v1.0.0').check()
    await make(undefined).check()
    expect(urls.map((url) => /currentVersion=([^&]*)/.exec(url)![1])).toEqual(['1.2.0', '1.0.0', '0.0.0'])
    for (const refused of ['latest', '1.2.3.4', '1.2.3 (45)']) {
      const error = (() => {
        try {
          make(refused)
        } catch (caught) {
          return caught
        }
      })()
      expect({ refused, code: (error as UpdateError | undefined)?.code }).toEqual({ refused, code: 'INVALID_OPTION' })
      expect((error as UpdateError).message).toContain('embeddedVersion')
    }
  })

  test('a deviceId the server would refuse (decisions §18) is INVALID_OPTION at createUpdater, not a SERVER error at every check', () => {
    for (const deviceId of ['', '.', '..', 'a b', 'q83v+jRW/JA=', 'é', 'x'.repeat(201)]) {
      let error: unknown
      try {
        createUpdater({ serverUrl: 'http://localhost/api', appId: 'com.example.ids', platform: 'ios', deviceId, storage: memoryStorage() })
      } catch (caught) {
        error = caught
      }
      expect({ deviceId, code: (error as UpdateError | undefined)?.code }).toEqual({ deviceId, code: 'INVALID_OPTION' })
      expect((error as UpdateError).message).toContain('deviceId')
    }
    for (const deviceId of ['device-1', 'AbC_09.x:y-z', 'x'.repeat(200)]) createUpdater({ serverUrl: 'http://localhost/api', appId: 'com.example.ids', platform: 'ios', deviceId, storage: memoryStorage() })
  })

  test('a crashLoopLimit that is not a whole number of launches, 1 or more, is INVALID_OPTION at createUpdater', () => {
    const create = (crashLoopLimit: number) => createUpdater({ serverUrl: 'http://localhost/api', appId: 'com.example.limits', platform: 'ios', deviceId: 'device-1', storage: memoryStorage(), crashLoopLimit })
    for (const crashLoopLimit of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, '2' as unknown as number]) {
      let error: unknown
      try {
        create(crashLoopLimit)
      } catch (caught) {
        error = caught
      }
      expect({ crashLoopLimit, code: (error as UpdateError | undefined)?.code }).toEqual({ crashLoopLimit, code: 'INVALID_OPTION' })
      expect((error as UpdateError).message).toContain('crashLoopLimit')
    }
    for (const crashLoopLimit of [1, 2, 10]) create(crashLoopLimit)
  })

  test.each([
    ['1', '1.0.0'],
    ['1.5', '1.5.0'],
    ['1.5.2', '1.5.2'],
    ['2.0.0-beta.1', '2.0.0-beta.1'],
    ['1.5-rc.1', '1.5.0-rc.1'],
    ['v2.3', '2.3.0'],
    ['1.05', '1.5.0'],
    [' 1.2.3 ', '1.2.3'],
    ['1.2.3+45', '1.2.3'],
    ['1.2.3.4', null],
    ['1.2.3-01', null],
    ['1.2.3 (45)', null],
    ['', null],
  ])('normalizeVersion(%p) is %p', (text, expected) => {
    expect(normalizeVersion(text)).toBe(expected)
  })
})

describe('host version ranges without Bun.semver (for phones)', () => {
  const cases: Array<[string, string]> = [
    ['2.3.0', '>=2.3.0 <3'],
    ['3.0.0', '>=2.3.0 <3'],
    ['2.2.9', '>=2.3.0 <3'],
    ['1.2.5', '^1.2'],
    ['2.0.0', '^1.2'],
    ['0.2.5', '^0.2.3'],
    ['0.3.0', '^0.2.3'],
    ['1.2.9', '~1.2.3'],
    ['1.3.0', '~1.2'],
    ['1.9.0', '1.x'],
    ['2.0.0', '1.x || >=3'],
    ['3.1.0', '1.x || >=3'],
    ['1.5.0', '1.0.0 - 2.0.0'],
    ['2.0.1', '1.0.0 - 2.0.0'],
    ['2.0.9', '1.0.0 - 2.0'],
    ['2.1.0', '>2.0'],
    ['2.0.5', '>2.0'],
    ['2.0.5', '<=2.0'],
    ['1.0.0', '*'],
    ['1.0.0-beta.1', '>=1.0.0'],
    ['5.0.0', '>= 4.2'],
  ]
  test.each(cases)('%s in %s agrees with Bun.semver', (version, range) => {
    expect(satisfiesRange(version, range)).toBe(Bun.semver.satisfies(version, range))
  })

  test('a prerelease host is outside a range unless it names a prerelease of the same version, as on the server', () => {
    expect(satisfiesRange('2.0.0-beta.1', '>=1.0.0 <2')).toBe(false)
    expect(satisfiesRange('1.9.0-rc.1', '>=1.0.0 <2')).toBe(false)
    expect(satisfiesRange('1.9.0-rc.1', '>=1.9.0-rc.0 <2')).toBe(true)
    expect(satisfiesRange('1.9.0-rc.11', '>1.9.0-rc.2')).toBe(true)
  })

  test('every range the server accepts, against hosts with and without prereleases: the same answer as Bun.semver (the server’s)', () => {
    const hosts: string[] = []
    for (const release of ['0.0.3', '0.2.3', '0.2.9', '0.3.0', '1.0.0', '1.2.0', '1.2.3', '1.2.4', '1.3.0', '1.9.0', '2.0.0', '2.0.1', '2.3.0', '3.0.0']) {
      hosts.push(release)
      for (const pre of ['0', '1', 'alpha', 'alpha.1', 'alpha.beta', 'beta.2', 'beta.11', 'rc.1']) hosts.push(`${release}-${pre}`)
    }
    hosts.push('v1.2.3', '1.2.3+45', '1.2', '1', 'not-a-version')
    const operators = ['', '=', '<', '<=', '>', '>=', '~', '^']
    const versions = ['*', 'x', '0', '1', '2', '0.0', '0.2', '1.2', '1.x', '1.2.x', '2.x.x', '0.0.3', '0.2.3', '1.2.3', '2.0.0', 'v1.2.3', '1.2.3+b', '1.2.3-alpha', '1.2.3-beta.2', '2.0.0-0', '1.9.0-rc.0', '0.0.3-rc.1', '1.x.0', '2.*.0', '2.X.10', '1.*.2', '1.x.0-rc.1', '1.2.x-beta', 'x.1.2', '*.*.3']
    const single = operators.flatMap((operator) => versions.map((version) => operator + version))
    const ranges = [
      ...single,
      ...single.flatMap((low, i) => single.filter((_, j) => (i * 7 + j) % 41 === 0).map((high) => `${low} ${high}`)),
      ...['1.2.3 - 2.0.0', '1.2 - 2', '1 - 1.9.0-rc.2', '0.2.3-beta - 1.x', '* - 2.0.0', '1.2.3-alpha - 1.2.3-beta.2'],
      ...['^1.2 || ^2', '1.x || >=3.0.0-0 <3.0.1', '<1 || 2.0.0-0 - 2.0.0', '>= 1.2 < 2', '^ 0.2.3'],
    ].filter(isSemverRange)
    expect(ranges.length).toBeGreaterThan(500)
    const disagreements: string[] = []
    for (const range of ranges) {
      for (const host of hosts) {
        const expected = Bun.semver.satisfies(host, range)
        if (satisfiesRange(host, range) !== expected) disagreements.push(`${host} in "${range}": Bun.semver ${expected}`)
      }
    }
    expect(disagreements).toEqual([])
  })
})

describe('a rollback while a download runs (two check().then(download) of different versions)', () => {
  let setup: Setup
  const appId = 'com.example.sdk-superseded'

  beforeAll(async () => {
    setup = await setUp(appId)
    await publishVersion(setup, '1.0.0')
    await publishVersion(setup, '2.0.0')
  })
  afterAll(() => setup.context.close())

  test('the download the server offered last is the one that stays: a slower earlier one (the release rolled back meanwhile) does not switch back to it, nor report it installed', async () => {
    // the 2.0.0 bundle is slow (a large file on a weak link): it arrives once `release()` is called
    let release = () => {}
    const held = new Promise<void>((resolve) => (release = resolve))
    const reported: Array<{ event: string; versionId: string }> = []
    const slow: FetchLike = async (url, init) => {
      if (url.includes(`/versions/${setup.versions['2.0.0']!.id}/bundles/ios`)) await held
      if (url.endsWith('/events')) reported.push(...JSON.parse(init!.body!).events)
      return serverFetch(setup.context)(url, init)
    }
    const storage = memoryStorage()
    const client = createUpdater({ serverUrl: 'http://localhost/api', appId, platform: 'ios', deviceId: 'device-superseded', storage, fetch: slow })
    await client.start()
    const offered = (await client.check())!
    expect(offered.version).toBe('2.0.0')
    const slowDownload = client.download(offered)
    // 2.0.0 is rolled back while the phone downloads it; the app comes back to the foreground and checks again
    const rolledBack = await setup.context.call('POST', `/api/mini-apps/${setup.miniAppId}/rollback`, { token: setup.owner.token, json: { targetVersionId: setup.versions['1.0.0']!.id } })
    expect(rolledBack.status).toBe(200)
    const now = (await client.check())!
    expect(now.version).toBe('1.0.0')
    expect((await client.download(now)).version).toBe('1.0.0')
    release()
    // the superseded download answers what the device runs next, as current() names it
    expect((await slowDownload).version).toBe('1.0.0')
    expect(client.current()).toMatchObject({ version: '1.0.0', pending: true })
    expect((await client.start()).current).toMatchObject({ version: '1.0.0' })
    expect(await client.check()).toBeNull()
    await client.flushEvents()
    expect(reported.filter((event) => event.event === 'installed').map((event) => event.versionId)).toEqual([setup.versions['1.0.0']!.id])
    // its files are gone: only 1.0.0's directory is left
    expect((await storage.list('versions')).length).toBe(1)
  })
})
