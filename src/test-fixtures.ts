// Test-only helpers for the miniapp and version tests: users with tokens, zips built in memory, upload forms.
import { deflateRawSync } from 'node:zlib'
import { afterAll, beforeAll, expect } from 'bun:test'
import { users } from './db/schema'
import { createTokenService } from './modules/auth/tokens'
import { newId } from './ids'
import { createTestContext, type TestContext } from './test-support'
import { runCli, type CliRun } from './cli/test-run'

export interface TestUser {
  id: string
  email: string
  displayName: string
  token: string
}

let passwordHash: string | null = null

/** Inserts an active user straight into the database and signs an access token for it. */
export async function createTestUser(context: TestContext, options: { email?: string; role?: 'ADMIN' | 'USER' } = {}): Promise<TestUser> {
  const id = newId()
  const email = options.email ?? `user-${id.slice(-8)}@example.test`
  const role = options.role ?? 'USER'
  // argon2 costs a quarter second per hash; these users never log in with a password.
  passwordHash ??= await Bun.password.hash('not-used-by-tests', { algorithm: 'bcrypt', cost: 4 })
  const at = new Date(context.now.value).toISOString()
  context.dataDir.db
    .insert(users)
    .values({ id, email, displayName: email.split('@')[0]!, passwordHash, role, status: 'ACTIVE', tokenVersion: 1, createdAt: at, updatedAt: at })
    .run()
  const tokens = createTokenService(context.dataDir.secret, () => context.now.value, 3600)
  const token = await tokens.signAccess({ id, role, tokenVersion: 1 })
  return { id, email, displayName: email.split('@')[0]!, token }
}

export interface ZipEntry {
  name: string
  content?: string | Uint8Array
  /** unix mode, e.g. 0o120777 for a symbolic link; directories when the name ends in `/` */
  mode?: number
  /** deflate the content (stored otherwise) */
  deflate?: boolean
  /** the name written in the local header when it should differ from the central directory's */
  localName?: string
  /** extra fields, as whole records (see `unicodePathExtra`) */
  centralExtra?: Uint8Array
  localExtra?: Uint8Array
  /** the high byte of "version made by" (3 unix, 0 DOS); unix by default */
  madeBy?: number
  /** the unpacked size written in both headers, when it should lie */
  declaredSize?: number
}

/** An Info-ZIP Unicode Path extra field (0x7075) naming `name`. */
export function unicodePathExtra(name: string, rawName: string): Uint8Array {
  const utf8 = new TextEncoder().encode(name)
  const field = new Uint8Array(4 + 5 + utf8.length)
  const view = new DataView(field.buffer)
  view.setUint16(0, 0x7075, true)
  view.setUint16(2, 5 + utf8.length, true)
  field[4] = 1
  view.setUint32(5, Bun.hash.crc32(new TextEncoder().encode(rawName)), true)
  field.set(utf8, 9)
  return field
}

export interface ZipOptions {
  /** the entry count written in the end record, when it should lie */
  declaredEntryCount?: number
  /** bytes written between the last entry and the central directory */
  gap?: Uint8Array
}

/**
 * A zip written byte by byte, so tests can make the hostile archives that tools refuse to make:
 * names that differ between the two records, extra fields, link bits, lying sizes and counts.
 */
export function buildZip(entries: ZipEntry[], options: ZipOptions = {}): Uint8Array {
  const encoder = new TextEncoder()
  const locals: Uint8Array[] = []
  const centrals: Uint8Array[] = []
  let offset = 0
  for (const entry of entries) {
    const name = encoder.encode(entry.name)
    const localName = entry.localName === undefined ? name : encoder.encode(entry.localName)
    const raw = typeof entry.content === 'string' ? encoder.encode(entry.content) : (entry.content ?? new Uint8Array())
    const data = entry.deflate ? new Uint8Array(deflateRawSync(raw, { level: 9 })) : raw
    const crc = Bun.hash.crc32(raw)
    const size = entry.declaredSize ?? raw.length
    const method = entry.deflate ? 8 : 0
    const isDirectory = entry.name.endsWith('/')
    const mode = entry.mode ?? (isDirectory ? 0o040755 : 0o100644)
    const localExtra = entry.localExtra ?? new Uint8Array()
    const centralExtra = entry.centralExtra ?? new Uint8Array()
    const local = new Uint8Array(30 + localName.length + localExtra.length)
    const lv = new DataView(local.buffer)
    lv.setUint32(0, 0x04034b50, true)
    lv.setUint16(4, 20, true)
    lv.setUint16(6, 0x800, true)
    lv.setUint16(8, method, true)
    lv.setUint32(14, crc, true)
    lv.setUint32(18, data.length, true)
    lv.setUint32(22, size, true)
    lv.setUint16(26, localName.length, true)
    lv.setUint16(28, localExtra.length, true)
    local.set(localName, 30)
    local.set(localExtra, 30 + localName.length)
    const central = new Uint8Array(46 + name.length + centralExtra.length)
    const cv = new DataView(central.buffer)
    cv.setUint32(0, 0x02014b50, true)
    cv.setUint16(4, ((entry.madeBy ?? 3) << 8) | 20, true) // unix by default, so the mode in the external attributes is meant
    cv.setUint16(6, 20, true)
    cv.setUint16(8, 0x800, true)
    cv.setUint16(10, method, true)
    cv.setUint32(16, crc, true)
    cv.setUint32(20, data.length, true)
    cv.setUint32(24, size, true)
    cv.setUint16(28, name.length, true)
    cv.setUint16(30, centralExtra.length, true)
    cv.setUint32(38, ((mode & 0xffff) << 16) >>> 0, true)
    cv.setUint32(42, offset, true)
    central.set(name, 46)
    central.set(centralExtra, 46 + name.length)
    locals.push(local, data)
    centrals.push(central)
    offset += local.length + data.length
  }
  if (options.gap) {
    locals.push(options.gap)
    offset += options.gap.length
  }
  const centralSize = centrals.reduce((sum, part) => sum + part.length, 0)
  const count = options.declaredEntryCount ?? entries.length
  const end = new Uint8Array(22)
  const ev = new DataView(end.buffer)
  ev.setUint32(0, 0x06054b50, true)
  ev.setUint16(8, Math.min(count, 0xffff), true)
  ev.setUint16(10, Math.min(count, 0xffff), true)
  ev.setUint32(12, centralSize, true)
  ev.setUint32(16, offset, true)
  if (count < 0xffff) return new Uint8Array(Buffer.concat([...locals, ...centrals, end]))
  // ZIP64: the real count lives in the ZIP64 end record, found through its locator.
  ev.setUint16(8, 0xffff, true)
  ev.setUint16(10, 0xffff, true)
  const zip64 = new Uint8Array(56)
  const zv = new DataView(zip64.buffer)
  zv.setUint32(0, 0x06064b50, true)
  zv.setBigUint64(4, 44n, true)
  zv.setUint16(12, 45, true)
  zv.setUint16(14, 45, true)
  zv.setBigUint64(24, BigInt(count), true)
  zv.setBigUint64(32, BigInt(count), true)
  zv.setBigUint64(40, BigInt(centralSize), true)
  zv.setBigUint64(48, BigInt(offset), true)
  const locator = new Uint8Array(20)
  const locv = new DataView(locator.buffer)
  locv.setUint32(0, 0x07064b50, true)
  locv.setBigUint64(8, BigInt(offset + centralSize), true)
  locv.setUint32(16, 1, true)
  return new Uint8Array(Buffer.concat([...locals, ...centrals, zip64, locator, end]))
}

export const iosAssets = () => buildZip([{ name: 'assets/' }, { name: 'assets/logo.png', content: 'png-bytes' }])
export const androidAssets = () => buildZip([{ name: 'drawable-mdpi/' }, { name: 'drawable-mdpi/logo.png', content: 'png-bytes' }, { name: 'raw/data.json', content: '{}' }])

export interface UploadParts {
  version?: string
  changelog?: string
  releaseType?: string
  channel?: string
  bundleIos?: string | Uint8Array | null
  bundleAndroid?: string | Uint8Array | null
  manifest?: string | Uint8Array | null
  assetsIos?: Uint8Array | null
  assetsAndroid?: Uint8Array | null
}

/** A complete valid upload form unless a part is overridden (null leaves that part out). */
export function uploadForm(appId: string, parts: UploadParts = {}): FormData {
  const form = new FormData()
  const version = parts.version ?? '1.0.0'
  if (version !== '') form.append('version', version)
  if (parts.changelog !== undefined) form.append('changelog', parts.changelog)
  if (parts.releaseType !== undefined) form.append('releaseType', parts.releaseType)
  if (parts.channel !== undefined) form.append('channel', parts.channel)
  const files: [string, string | Uint8Array | null | undefined, string, string][] = [
    ['bundleIos', parts.bundleIos === undefined ? `console.log("ios ${version}")` : parts.bundleIos, 'main.ios.jsbundle', 'application/javascript'],
    ['bundleAndroid', parts.bundleAndroid === undefined ? `console.log("android ${version}")` : parts.bundleAndroid, 'main.android.bundle', 'application/javascript'],
    ['manifest', parts.manifest === undefined ? JSON.stringify({ appId, name: 'Test app', version, pages: { index: 'pages/index' } }) : parts.manifest, 'app.json', 'application/json'],
    ['assetsIos', parts.assetsIos === undefined ? iosAssets() : parts.assetsIos, 'assets-ios.zip', 'application/zip'],
    ['assetsAndroid', parts.assetsAndroid === undefined ? androidAssets() : parts.assetsAndroid, 'assets-android.zip', 'application/zip'],
  ]
  for (const [field, content, fileName, type] of files) {
    if (content === null) continue
    form.append(field, new Blob([content as BlobPart], { type }), fileName)
  }
  return form
}

/** POSTs an upload form through the app and parses the answer. */
export async function upload(context: TestContext, token: string, appId: string, form: FormData | BodyInit) {
  return context.call('POST', `/api/mini-apps/by-app-id/${appId}/versions/upload`, { token, body: form as BodyInit })
}

/** Creates a miniapp through the API and returns its record. */
export async function createMiniApp(context: TestContext, token: string, appId: string) {
  const res = await context.call('POST', '/api/mini-apps', { token, json: { appId, name: `App ${appId}` } })
  if (res.status !== 201) throw new Error(`creating ${appId} failed: ${res.status} ${res.text}`)
  return res.body as { id: string; appId: string }
}

/**
 * A test app on its own temp data directory with a user signed in (its owner of the miniapps it makes);
 * set up and torn down by the calling file's beforeAll/afterAll.
 */
export function ownedTestApp(): { readonly context: TestContext; readonly owner: TestUser } {
  let context: TestContext
  let owner: TestUser
  beforeAll(async () => {
    context = createTestContext()
    owner = await createTestUser(context)
  })
  afterAll(() => context.close())
  return {
    get context() {
      return context
    },
    get owner() {
      return owner
    },
  }
}

/**
 * ownedTestApp, served on a free port of 127.0.0.1 for clients that speak HTTP (the real CLI, the
 * fleet simulator). `cli(args)` runs `miniship` as the owner against it.
 */
export function servedTestApp(): { readonly context: TestContext; readonly owner: TestUser; readonly url: string; cli(args: string[]): Promise<CliRun> } {
  const app = ownedTestApp()
  let server: ReturnType<typeof Bun.serve>
  beforeAll(() => {
    server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: (request) => app.context.app.handle(request) })
  })
  afterAll(() => server.stop(true))
  return {
    get context() {
      return app.context
    },
    get owner() {
      return app.owner
    },
    get url() {
      return `http://127.0.0.1:${server.port}`
    },
    cli(args) {
      return runCli(args, { env: { MINISHIP_TOKEN: app.owner.token, MINISHIP_SERVER: `http://127.0.0.1:${server.port}` } })
    },
  }
}

/** A miniapp of `app`'s owner with `versions` uploaded; `publish(version, percent)` publishes one on stable and expects 200. */
export async function appWithVersions(app: { readonly context: TestContext; readonly owner: TestUser }, appId: string, versions: readonly string[]) {
  const miniAppId = (await createMiniApp(app.context, app.owner.token, appId)).id as string
  const ids: Record<string, string> = {}
  for (const version of versions) ids[version] = (await upload(app.context, app.owner.token, appId, uploadForm(appId, { version }))).body.id
  const publish = async (version: string, rolloutPercent: number) => {
    const res = await app.context.call('POST', `/api/mini-apps/${miniAppId}/versions/${ids[version]}/publish`, { token: app.owner.token, json: { rolloutPercent } })
    expect(res.status).toBe(200)
  }
  return { miniAppId, ids, publish }
}
