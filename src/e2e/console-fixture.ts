// A running binary with a console worth looking at: an administrator, a miniapp with three versions
// (one live, one rolling out to 10 %, one draft), a member, an API key, a day of device events and a
// pending command-line sign-in. Shared by the phone-width browser test and scripts/screenshots.ts.
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import { buildZip, type ZipEntry } from '../test-fixtures'
import { callApi, runBinary, startBinary, tempDir, type ApiCallOptions, type RunningBinary } from './support'

export const FIXTURE_ADMIN = { email: 'admin@example.com', password: 'admin-password-1' }
export const FIXTURE_MEMBER = { email: 'dana@example.com', displayName: 'Dana Developer', password: 'dana-password-1' }
export const FIXTURE_APP_ID = 'com.example.shop'
/** 64 characters without a break, and a name as long: what a narrow screen must still hold */
export const FIXTURE_LONG_APP_ID = `com.${'x'.repeat(60)}`

export interface ConsoleFixture {
  base: string
  server: RunningBinary
  dataDir: string
  /** the administrator's access token */
  token: string
  /** internal ids of the miniapps the fixture made (empty when not seeded) */
  shop: { id: string; appId: string } | null
  longApp: { id: string; appId: string } | null
  /** a pending device sign-in code, for /cli/authorize */
  cliCode: string | null
  api(method: string, path: string, options?: ApiCallOptions): ReturnType<typeof callApi>
  stop(): Promise<void>
}

const zipBlob = (entries: ZipEntry[]): Blob => new Blob([new Uint8Array(buildZip(entries))], { type: 'application/zip' })

export function uploadForm(appId: string, version: string, changelog: string): FormData {
  const form = new FormData()
  form.append('version', version)
  form.append('changelog', changelog)
  form.append('bundleIos', new Blob([`console.log("ios ${version}")`]), 'main.ios.jsbundle')
  form.append('bundleAndroid', new Blob([`console.log("android ${version}")`]), 'main.android.bundle')
  form.append('manifest', new Blob([JSON.stringify({ appId, version, name: 'Shop', pages: { home: 'Home' } })], { type: 'application/json' }), 'app.json')
  form.append('assetsIos', zipBlob([{ name: 'assets/logo.png', content: `ios logo ${version}` }]), 'assets-ios.zip')
  form.append('assetsAndroid', zipBlob([{ name: 'drawable-mdpi/logo.png', content: `android logo ${version}` }]), 'assets-android.zip')
  return form
}

function expectStatus(answer: { status: number; body: unknown }, status: number, what: string): void {
  if (answer.status !== status) throw new Error(`${what}: expected ${status}, got ${answer.status} ${JSON.stringify(answer.body)}`)
}

/**
 * Starts the binary on a fresh data directory with an administrator. `seed: false` leaves it at
 * that (the first sign-in after set-up); otherwise it fills the console as described above.
 * `serverArgs` are added to `serve`'s (e.g. `--password-min-length 10`).
 */
export async function startConsoleFixture(options: { seed?: boolean; binary?: string; serverArgs?: string[] } = {}): Promise<ConsoleFixture> {
  const dir = tempDir('miniship-console-')
  const dataDir = join(dir, 'data')
  const init = await runBinary(['init', '--data-dir', dataDir], { binary: options.binary })
  if (init.exitCode !== 0) throw new Error(`init failed: ${init.stderr}`)
  const created = await runBinary(['create-admin', '--data-dir', dataDir, '--email', FIXTURE_ADMIN.email, '--password-stdin'], { stdin: `${FIXTURE_ADMIN.password}\n`, binary: options.binary })
  if (created.exitCode !== 0) throw new Error(`create-admin failed: ${created.stderr}`)
  const server = await startBinary({ dataDir, args: ['--rate-limit', 'off', '--insights-flush', '1s', ...(options.serverArgs ?? [])], binary: options.binary })
  const base = server.baseUrl
  const api = (method: string, path: string, callOptions: ApiCallOptions = {}) => callApi(base, method, path, callOptions)
  const login = await api('POST', '/api/auth/login', { json: FIXTURE_ADMIN })
  expectStatus(login, 200, 'signing in')
  const token: string = login.body.accessToken
  const fixture: ConsoleFixture = {
    base,
    server,
    dataDir,
    token,
    shop: null,
    longApp: null,
    cliCode: null,
    api,
    async stop() {
      await server.stop()
    },
  }
  if (options.seed === false) return fixture

  const as = { token }
  const shop = await api('POST', '/api/mini-apps', { ...as, json: { appId: FIXTURE_APP_ID, name: 'Shop', description: 'Buy things inside the host app' } })
  expectStatus(shop, 201, 'creating the miniapp')
  fixture.shop = { id: shop.body.id, appId: FIXTURE_APP_ID }
  const versions: Record<string, string> = {}
  for (const [version, changelog] of [
    ['1.0.0', 'First release'],
    ['1.1.0', 'Faster checkout'],
    ['1.2.0', 'Gift cards (draft)'],
  ]) {
    const uploaded = await api('POST', `/api/mini-apps/by-app-id/${FIXTURE_APP_ID}/versions/upload`, { ...as, body: uploadForm(FIXTURE_APP_ID, version!, changelog!) })
    expectStatus(uploaded, 201, `uploading ${version}`)
    versions[version!] = uploaded.body.id
  }
  const publish = async (version: string, json: Record<string, unknown>) =>
    expectStatus(await api('POST', `/api/mini-apps/${shop.body.id}/versions/${versions[version]}/publish`, { ...as, json }), 200, `publishing ${version}`)
  await publish('1.0.0', { notes: 'First release' })
  await publish('1.1.0', { notes: 'Faster checkout for a tenth of the devices', rolloutPercent: 10 })

  const member = await api('POST', '/api/admin/users', { ...as, json: { ...FIXTURE_MEMBER, role: 'USER' } })
  expectStatus(member, 201, 'creating a user')
  expectStatus(await api('POST', `/api/mini-apps/${shop.body.id}/members`, { ...as, json: { email: FIXTURE_MEMBER.email, role: 'DEVELOPER' } }), 201, 'adding a member')
  expectStatus(await api('POST', '/api/auth/api-keys', { ...as, json: { name: 'CI of the shop', scopes: ['read', 'upload', 'release'] } }), 201, 'creating an API key')

  // one day of devices: most on 1.0.0, one on the 10 % release
  const events = [
    ...['a', 'b', 'c', 'd', 'e'].flatMap((d) => ['installed', 'launched'].map((event) => ({ appId: FIXTURE_APP_ID, versionId: versions['1.0.0'], platform: d < 'c' ? 'ios' : 'android', event, deviceId: `device-${d}` }))),
    ...['installed', 'launched'].map((event) => ({ appId: FIXTURE_APP_ID, versionId: versions['1.1.0'], platform: 'ios', event, deviceId: 'device-f' })),
  ]
  expectStatus(await api('POST', '/api/mini-apps/access/events', { json: { events } }), 202, 'sending device events')
  // and downloads, as a host app makes them: install info, then the bundle of its platform (without
  // a device id, so that they land on the release everyone gets and the adoption stays as above)
  for (const platform of ['ios', 'ios', 'android', 'android', 'android'] as const) {
    const info = await api('GET', `/api/mini-apps/access/apps/${FIXTURE_APP_ID}/release/install?platform=${platform}`)
    expectStatus(info, 200, 'asking for install info')
    const bundle = await fetch(new URL(info.body.bundles[platform], `${base}/api/`))
    expectStatus({ status: bundle.status, body: await bundle.text() }, 200, 'downloading a bundle')
  }

  const long = await api('POST', '/api/mini-apps', { ...as, json: { appId: FIXTURE_LONG_APP_ID, name: 'W'.repeat(64), description: `An unbroken word: ${'z'.repeat(80)}` } })
  expectStatus(long, 201, 'creating the long miniapp')
  fixture.longApp = { id: long.body.id, appId: FIXTURE_LONG_APP_ID }

  const session = await api('POST', '/api/auth/cli/sessions')
  expectStatus(session, 201, 'starting a command-line sign-in')
  fixture.cliCode = session.body.code
  return fixture
}

/** Signs the fixture's administrator in through the console's form. */
export async function signIn(page: Page, base: string): Promise<void> {
  await page.goto(`${base}/signin`)
  const form = page.getByTestId('signin-form')
  await form.locator('[name=email]').fill(FIXTURE_ADMIN.email)
  await form.locator('[name=password]').fill(FIXTURE_ADMIN.password)
  await page.getByTestId('signin-submit').click()
  await page.getByTestId('current-user').waitFor()
}
