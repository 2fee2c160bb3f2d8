// Runs on Hermes (the engine React Native ships): update scenarios against an in-memory fetch and storage.
// The test prepends `var FIXTURE = {...}` (install info, files, signatures) and reads the printed RESULT line.
import { createUpdater, memoryStorage, UpdateError, type FetchLike, type Update } from '../../src/sdk/index'
import { fromBase64 } from '../../src/sdk/encoding'

declare const print: (text: string) => void
interface Fixture {
  appId: string
  trustedKey: string
  /** install info signed by the trusted key, and the same signed by another key */
  signed: Update['install']
  otherKey: Update['install']
  /** file contents by URL, base64 */
  files: Record<string, string>
  tamperedUrl: string
}
declare const FIXTURE: Fixture

function serve(install: Update['install'], tamper: boolean): FetchLike {
  return async (url) => {
    if (url.indexOf('/update?') !== -1) {
      const text = JSON.stringify({ updateAvailable: true, mandatory: false, rollout: { percent: 100 }, install })
      return { ok: true, status: 200, body: null, text: async () => text, arrayBuffer: async () => new ArrayBuffer(0) }
    }
    const base64 = FIXTURE.files[url]
    if (base64 === undefined) return { ok: false, status: 404, body: null, text: async () => '{}', arrayBuffer: async () => new ArrayBuffer(0) }
    const bytes = fromBase64(base64)!
    if (tamper && url === FIXTURE.tamperedUrl) bytes[0] = bytes[0]! ^ 1
    // React Native's fetch: no streaming body, arrayBuffer() only
    return { ok: true, status: 200, body: null, text: async () => '', arrayBuffer: async () => bytes.buffer as ArrayBuffer }
  }
}

async function scenario(install: Update['install'], tamper: boolean): Promise<string> {
  const updater = createUpdater({ serverUrl: 'https://apps.example.com/api', appId: FIXTURE.appId, platform: 'android', deviceId: 'hermes-1', storage: memoryStorage(), trustedKeys: [FIXTURE.trustedKey], fetch: serve(install, tamper) })
  await updater.start()
  const update = await updater.check()
  if (!update) return 'no update'
  const started = Date.now()
  try {
    const current = await updater.download(update)
    return `installed ${current.version} in ${Date.now() - started} ms`
  } catch (error) {
    return error instanceof UpdateError ? error.code : `not an UpdateError: ${String(error)}`
  }
}

/** Installs the signed release, then launches it crashLoopLimit + 1 times without markReady(). */
async function crashLoop(): Promise<string> {
  const storage = memoryStorage()
  const make = () => createUpdater({ serverUrl: 'https://apps.example.com/api', appId: FIXTURE.appId, platform: 'android', deviceId: 'hermes-2', storage, trustedKeys: [FIXTURE.trustedKey], fetch: serve(FIXTURE.signed, false) })
  const first = make()
  await first.start()
  await first.download((await first.check())!)
  const launches: string[] = []
  for (let i = 0; i < 3; i++) {
    const started = await make().start()
    launches.push(started.rolledBack ? `rolled back ${started.rolledBack.version}` : started.current ? started.current.version : 'embedded')
  }
  const events = JSON.parse((await storage.readText('events.json'))!) as Array<{ event: { event: string } }>
  return launches.join(', ') + ' | ' + events.map((entry) => entry.event.event).join(',')
}

/** Two start() calls at once share one launch (one answer, one launched event); a crashLoopLimit of 0 is refused. */
async function sharedStart(): Promise<string> {
  const storage = memoryStorage()
  const make = (crashLoopLimit?: number) => createUpdater({ serverUrl: 'https://apps.example.com/api', appId: FIXTURE.appId, platform: 'android', deviceId: 'hermes-3', storage, trustedKeys: [FIXTURE.trustedKey], fetch: serve(FIXTURE.signed, false), crashLoopLimit })
  const first = make()
  await first.start()
  await first.download((await first.check())!)
  const client = make()
  const both = await Promise.all([client.start(), client.start()])
  const events = JSON.parse((await storage.readText('events.json'))!) as Array<{ event: { event: string } }>
  let limit = 'accepted'
  try {
    make(0)
  } catch (error) {
    limit = error instanceof UpdateError ? error.code : `not an UpdateError: ${String(error)}`
  }
  return `${both[0] === both[1] ? 'one answer' : 'two answers'}, ${events.filter((entry) => entry.event.event === 'launched').length} launched | crashLoopLimit 0: ${limit}`
}

async function main(): Promise<void> {
  const result = {
    crashLoop: await crashLoop(),
    signed: await scenario(FIXTURE.signed, false),
    tampered: await scenario(FIXTURE.signed, true),
    otherKey: await scenario(FIXTURE.otherKey, false),
    // a digest that is not 64 hex digits: the server's mistake, refused before any download
    malformedDigest: await scenario({ ...FIXTURE.signed, files: { ...FIXTURE.signed.files, bundleAndroid: { size: FIXTURE.signed.files.bundleAndroid.size, sha256: 'xyz' } } }, false),
    sharedStart: await sharedStart(),
    engine: typeof TextEncoder === 'undefined' ? 'no TextEncoder' : 'TextEncoder',
  }
  print('RESULT ' + JSON.stringify(result))
}

main().then(
  () => undefined,
  (error: unknown) => print('FAILED ' + String(error) + ' ' + String((error as Error)?.stack)),
)
