// The console's signing views in chromium against the compiled binary (issue 27): which versions are
// signed and by which key, the Signing card (keys, requireSignature), and a publish refused for want of a signature.
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { generateKeyPairSync, sign } from 'node:crypto'
import type { Browser, Page } from 'playwright-core'
import { buildZip } from '../test-fixtures'
import { buildStatement } from '../sdk/statement'
import { hasChromium, launchChromium, PageWatch, screenshot } from './browser-support'
import { callApi, startBinary, tempDir, type RunningBinary, setUpFirstAdmin } from './support'

const OWNER = { email: 'signer@example.com', password: 'signer-password-1', displayName: 'Sig Ner' }
const APP_ID = 'com.example.signed'

function newKey() {
  const pair = generateKeyPairSync('ed25519')
  const raw = Buffer.from(pair.publicKey.export({ format: 'jwk' }).x!, 'base64url')
  return { privateKey: pair.privateKey, publicKey: raw.toString('base64'), keyId: new Bun.CryptoHasher('sha256').update(raw).digest('hex').slice(0, 16) }
}

describe.skipIf(!hasChromium)('signing in the console', () => {
  let dir: string
  let server: RunningBinary
  let browser: Browser
  let page: Page
  let watch: PageWatch
  let token: string
  let miniAppId: string
  const laptop = newKey()
  const spare = newKey()

  const tid = (id: string) => page.getByTestId(id)
  const api = (method: string, path: string, options: Parameters<typeof callApi>[3] = {}) => callApi(server.baseUrl, method, path, { token, ...options })

  async function upload(version: string, signed: boolean, key = laptop): Promise<string> {
    const parts: [string, string | Uint8Array, string][] = [
      ['bundleIos', `console.log("ios ${version}")`, 'main.ios.jsbundle'],
      ['bundleAndroid', `console.log("android ${version}")`, 'main.android.bundle'],
      ['manifest', JSON.stringify({ appId: APP_ID, version, name: 'Signed', pages: { home: 'Home' } }), 'app.json'],
      ['assetsIos', buildZip([{ name: 'assets/logo.png', content: 'ios' }]), 'assets-ios.zip'],
      ['assetsAndroid', buildZip([{ name: 'drawable-mdpi/logo.png', content: 'android' }]), 'assets-android.zip'],
    ]
    const form = new FormData()
    form.append('version', version)
    const digests: Record<string, string> = {}
    for (const [field, content, name] of parts) {
      form.append(field, new Blob([content as BlobPart]), name)
      digests[field] = new Bun.CryptoHasher('sha256').update(content).digest('hex')
    }
    if (signed) {
      form.append('signatureKeyId', key.keyId)
      form.append('signature', sign(null, Buffer.from(buildStatement(APP_ID, version, digests)), key.privateKey).toString('base64'))
    }
    const answer = await api('POST', `/api/mini-apps/by-app-id/${APP_ID}/versions/upload`, { body: form })
    expect(answer.status).toBe(201)
    return answer.body.id
  }

  beforeAll(async () => {
    dir = tempDir('miniship-signing-browser-')
    server = await startBinary({ dataDir: join(dir, 'data'), args: ['--rate-limit', 'off'] })
    // register opens once the first administrator exists (decisions §13)
    await setUpFirstAdmin(server)
    token = (await callApi(server.baseUrl, 'POST', '/api/auth/register', { json: OWNER })).body.accessToken
    miniAppId = (await api('POST', '/api/mini-apps', { json: { appId: APP_ID, name: 'Signed app' } })).body.id
    expect((await api('POST', `/api/mini-apps/${miniAppId}/signing-keys`, { json: { name: 'release laptop', publicKey: laptop.publicKey } })).status).toBe(201)
    await upload('1.0.0', false)
    await upload('1.1.0', true)
    watch = new PageWatch()
    browser = await launchChromium()
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
    watch.attach(context)
    page = await context.newPage()
    await page.goto(`${server.baseUrl}/`)
    const form = tid('signin-form')
    await form.locator('[name=email]').fill(OWNER.email)
    await form.locator('[name=password]').fill(OWNER.password)
    await tid('signin-submit').click()
    await tid('apps-list').waitFor()
  }, 120_000)

  afterEach(async () => {
    await Bun.sleep(100)
    expect(watch.takeProblems()).toEqual([])
  })

  afterAll(async () => {
    await browser?.close().catch(() => undefined)
    if (server) await server.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  test('the Versions table says which versions are signed, and by which key (name and keyId)', async () => {
    await page.goto(`${server.baseUrl}/apps/${miniAppId}/versions`)
    await tid('versions-table').waitFor()
    const signed = tid('signature-1.1.0')
    expect(await signed.getAttribute('data-signed')).toBe('true')
    expect(await signed.getAttribute('data-key-id')).toBe(laptop.keyId)
    expect(await signed.textContent()).toBe(`Signed · release laptop (${laptop.keyId})`)
    expect(await tid('signature-1.0.0').textContent()).toBe('Unsigned')
    await screenshot(page, 'signing-versions')
  })

  test('Settings › Signing: the keys, adding one, and the requireSignature switch', async () => {
    await page.goto(`${server.baseUrl}/apps/${miniAppId}/settings`)
    await tid('signing').waitFor()
    expect(await tid(`signing-key-${laptop.keyId}`).textContent()).toContain(laptop.publicKey)
    const form = tid('add-signing-key-form')
    await form.locator('[name=name]').fill('spare key')
    await form.locator('[name=publicKey]').fill(spare.publicKey)
    await tid('add-signing-key-submit').click()
    await tid(`signing-key-${spare.keyId}`).waitFor()
    expect(await tid('notice').textContent()).toContain(spare.keyId)

    await tid('require-signature').check()
    await tid('require-signature-submit').click()
    await tid('notice').getByText('Unsigned versions are now refused.').waitFor()
    expect((await api('GET', `/api/mini-apps/${miniAppId}`)).body.requireSignature).toBe(true)
    expect(await tid('require-signature').isChecked()).toBe(true)
    await screenshot(page, 'signing-settings')
  })

  test('publishing an unsigned version is refused, and the console shows why', async () => {
    await page.goto(`${server.baseUrl}/apps/${miniAppId}/versions`)
    await tid('publish-1.0.0').click()
    const dialog = page.locator('dialog[open]')
    await dialog.waitFor()
    expect(await dialog.getByTestId('publish-unsigned-warning').textContent()).toContain('requires signed versions')
    watch.expectHttpError('POST', /\/versions\/[^/]+\/publish$/, 422)
    await dialog.getByTestId('confirm-ok').click()
    await tid('alert').locator('p').first().waitFor()
    expect(await tid('alert').textContent()).toContain(`${APP_ID} requires signed versions`)
    // the code and status, as the CLI prints them after the same message
    expect(await tid('alert-code').textContent()).toBe('(SIGNATURE_REQUIRED, HTTP 422)')
    expect(await tid('status-1.0.0').getAttribute('data-status')).toBe('DRAFT')
  })

  test('the Tokens page’s push command signs, since the miniapp refuses unsigned pushes', async () => {
    await page.goto(`${server.baseUrl}/tokens`)
    expect(await tid('push-command').textContent()).toBe(`miniship push ./build --app ${APP_ID} --version 1.0.0 --sign-key release.pem`)
  })

  test('revoking a key keeps it listed as revoked', async () => {
    await page.goto(`${server.baseUrl}/apps/${miniAppId}/settings`)
    await tid(`revoke-signing-key-${spare.keyId}`).click()
    const dialog = page.locator('dialog[open]')
    await dialog.waitFor()
    await dialog.getByTestId('confirm-ok').click()
    await page.locator(`[data-testid="signing-key-${spare.keyId}"][data-revoked="true"]`).waitFor()
    expect(await tid(`revoke-signing-key-${spare.keyId}`).count()).toBe(0)
  })

  test('rolling back to an unsigned version under requireSignature: the dialog says the server will refuse it, and it does', async () => {
    // 1.0.0 published unsigned while signatures were not required, then 1.1.0 (signed) over it
    expect((await api('PATCH', `/api/mini-apps/${miniAppId}`, { json: { requireSignature: false } })).status).toBe(200)
    const versions = (await api('GET', `/api/mini-apps/${miniAppId}/workspace`)).body.versions as { id: string; version: string }[]
    for (const version of ['1.0.0', '1.1.0']) expect((await api('POST', `/api/mini-apps/${miniAppId}/versions/${versions.find((v) => v.version === version)!.id}/publish`, { json: {} })).status).toBe(200)
    expect((await api('PATCH', `/api/mini-apps/${miniAppId}`, { json: { requireSignature: true } })).status).toBe(200)
    await page.goto(`${server.baseUrl}/apps/${miniAppId}/versions`)
    await tid('rollback-1.0.0').click()
    const dialog = page.locator('dialog[open]')
    await dialog.waitFor()
    expect(await dialog.getByTestId('rollback-unsigned-warning').textContent()).toContain('the server will refuse to roll back to it')
    watch.expectHttpError('POST', /\/rollback$/, 422)
    await dialog.getByTestId('confirm-ok').click()
    await tid('alert').locator('p').first().waitFor()
    expect(await tid('alert').textContent()).toContain('requires signed versions')
    expect(await tid('alert-code').textContent()).toBe('(SIGNATURE_REQUIRED, HTTP 422)')
  })

  test('signed versions required and every key revoked: the Signing card says nothing can ship, as keys ls does', async () => {
    await page.goto(`${server.baseUrl}/apps/${miniAppId}/settings`)
    await tid('signing').waitFor()
    // a key still trusted: no warning
    expect(await tid('signing-no-trusted-key').count()).toBe(0)
    // revoked in the console: 1.1.0, which it signed, is what stable's devices get; the notice warns of it in keys revoke's words
    await tid(`revoke-signing-key-${laptop.keyId}`).click()
    const dialog = page.locator('dialog[open]')
    await dialog.waitFor()
    await dialog.getByTestId('confirm-ok').click()
    await tid('notice-warnings').waitFor()
    expect(await tid('notice-warnings').locator('li').getAttribute('data-code')).toBe('LIVE_RELEASE_KEY_REVOKED')
    expect(await tid('notice-warnings').textContent()).toBe(`1.1.0 (live on stable, complete 100 %) was signed by this key: host apps that no longer trust it will refuse it; sign 1.1.0 again with a current key (miniship sign 1.1.0 --app ${APP_ID} --sign-key FILE)`)
    await page.locator(`[data-testid="signing-key-${laptop.keyId}"][data-revoked="true"]`).waitFor()
    await page.reload()
    expect(await tid('signing-no-trusted-key').textContent()).toBe(`${APP_ID} requires signed versions and trusts no signing key: nothing can be uploaded, published or rolled back to until an owner or an administrator adds one.`)
  })

  test('a version signed by a key revoked since: the publish and rollback dialogs give the command that signs it again, in the server\'s words', async () => {
    // 1.1.0 (signed by the laptop key, revoked above) becomes an earlier release; 1.2.0 a draft signed by a key revoked after the upload
    expect((await api('PATCH', `/api/mini-apps/${miniAppId}`, { json: { requireSignature: false } })).status).toBe(200)
    const versions = (await api('GET', `/api/mini-apps/${miniAppId}/workspace`)).body.versions as { id: string; version: string }[]
    expect((await api('POST', `/api/mini-apps/${miniAppId}/rollback`, { json: { targetVersionId: versions.find((v) => v.version === '1.0.0')!.id } })).status).toBe(200)
    const ci = newKey()
    expect((await api('POST', `/api/mini-apps/${miniAppId}/signing-keys`, { json: { name: 'old ci', publicKey: ci.publicKey } })).status).toBe(201)
    const draft = await upload('1.2.0', true, ci)
    expect((await api('DELETE', `/api/mini-apps/${miniAppId}/signing-keys/${ci.keyId}`)).status).toBe(200)
    const refused = await api('POST', `/api/mini-apps/${miniAppId}/versions/${draft}/publish`, { json: {} })
    expect(refused.body.code).toBe('SIGNING_KEY_REVOKED')
    const serverWay = (version: string) => `sign ${version} again with a current key (miniship sign ${version} --app ${APP_ID} --sign-key FILE)`
    expect(refused.body.message).toEndWith(`; ${serverWay('1.2.0')}`)

    await page.goto(`${server.baseUrl}/apps/${miniAppId}/versions`)
    await tid('publish-1.2.0').click()
    let dialog = page.locator('dialog[open]')
    await dialog.waitFor()
    expect(await dialog.getByTestId('publish-revoked-warning').textContent()).toBe(`1.2.0 was signed by the key old ci, revoked since: the server will refuse to publish it; ${serverWay('1.2.0')}.`)
    await dialog.getByTestId('confirm-cancel').click()
    await tid('rollback-1.1.0').click()
    dialog = page.locator('dialog[open]')
    await dialog.waitFor()
    expect(await dialog.getByTestId('rollback-revoked-warning').textContent()).toBe(`1.1.0 was signed by the key release laptop, revoked since: the server will refuse to roll back to it; ${serverWay('1.1.0')}.`)
    await dialog.getByTestId('confirm-cancel').click()
  })
})
