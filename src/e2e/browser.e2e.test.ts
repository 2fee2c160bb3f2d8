// The admin console in a real browser (chromium via playwright-core) against the compiled binary:
// sign in, create a miniapp, the whole version lifecycle, a CLI login, user administration
// (create, disable, register, role changes, password reset, the audit log), a 360 px wide
// screen, the keyboard, and where the token may and may not go.
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core'
import { buildZip, type ZipEntry } from '../modules/versions/test-fixtures'
import { hasChromium, launchChromium, PageWatch, screenshot, CHROMIUM } from './browser-support'
import { callApi, runBinary, type ApiCallOptions, startBinary, tempDir, type RunningBinary } from './support'

const ADMIN = { email: 'admin@example.com', password: 'admin-password-1' }
const USER = { email: 'tester@example.com', displayName: 'Tess Tester', password: 'tester-password-1' }
/** Someone who creates their own account on the sign-in page (registration is open by default). */
const NEWCOMER = { email: 'newcomer@example.com', displayName: 'Nia Newcomer', password: 'newcomer-password-1', newPassword: 'reset-password-2' }
const APP_ID = 'com.example.shop'
const STEP = 30_000
/** Anything that looks like a JWT: our access tokens are JWTs, so none may appear in a URL. */
const JWT = /eyJ[\w-]{5,}\.[\w-]{5,}\.[\w-]{5,}/

if (!hasChromium) console.warn(`browser tests skipped: ${CHROMIUM} is not installed (apt-get install -y chromium)`)

/** Retries an assertion until it passes: the console draws after its fetches answer. */
async function eventually(check: () => Promise<void> | void, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    try {
      await check()
      return
    } catch (error) {
      if (Date.now() > deadline) throw error
      await Bun.sleep(50)
    }
  }
}

// a copy on a plain ArrayBuffer, which is what Blob accepts
const zipBlob = (entries: ZipEntry[]): Blob => new Blob([new Uint8Array(buildZip(entries))], { type: 'application/zip' })

describe.skipIf(!hasChromium)('the admin console in chromium', () => {
  let dir: string
  let dataDir: string
  let server: RunningBinary
  let base: string
  let browser: Browser
  let watch: PageWatch
  const contexts: BrowserContext[] = []
  /** every access token handed out during the run, to look for in request URLs at the end */
  const tokens = new Set<string>()
  let admin: Page
  let miniAppId: string
  let cliToken: string
  /** the newcomer's own console, signed in since they registered */
  let newcomer: Page

  async function newContext(options: { width?: number; height?: number } = {}): Promise<BrowserContext> {
    const context = await browser.newContext({ viewport: { width: options.width ?? 1280, height: options.height ?? 860 } })
    watch.attach(context)
    contexts.push(context)
    return context
  }

  const tid = (page: Page, id: string): Locator => page.getByTestId(id)

  async function alertMessage(page: Page): Promise<string> {
    const p = tid(page, 'alert').locator('p').first()
    await p.waitFor()
    return (await p.textContent()) ?? ''
  }

  async function signInWithForm(page: Page, email: string, password: string): Promise<void> {
    const form = tid(page, 'signin-form')
    await form.locator('[name=email]').fill(email)
    await form.locator('[name=password]').fill(password)
    await tid(page, 'signin-submit').click()
  }

  /** A fresh browser on the sign-in page. */
  async function signInPage(): Promise<Page> {
    const page = await (await newContext()).newPage()
    await page.goto(`${base}/`)
    await tid(page, 'signin-form').waitFor()
    return page
  }

  async function sessionToken(page: Page): Promise<string | null> {
    return page.evaluate(() => sessionStorage.getItem('miniship.token'))
  }

  async function noHorizontalScroll(page: Page, what: string): Promise<void> {
    const width = await page.evaluate(() => document.documentElement.scrollWidth)
    if (width > 360) throw new Error(`the ${what} page is ${width} px wide on a 360 px screen: it scrolls sideways`)
  }

  const api = (method: string, path: string, options: ApiCallOptions = {}) => callApi(base, method, path, options)

  /** Uploads a version as the command-line tool does: multipart with both bundles, the manifest and two asset zips. */
  async function upload(version: string, changelog: string): Promise<void> {
    const form = new FormData()
    form.append('version', version)
    form.append('changelog', changelog)
    form.append('bundleIos', new Blob([`console.log("ios ${version}")`]), 'main.ios.jsbundle')
    form.append('bundleAndroid', new Blob([`console.log("android ${version}")`]), 'main.android.bundle')
    form.append('manifest', new Blob([JSON.stringify({ appId: APP_ID, version, name: 'Shop' })], { type: 'application/json' }), 'app.json')
    form.append('assetsIos', zipBlob([{ name: 'assets/' }, { name: 'assets/logo.png', content: `ios logo ${version}` }]), 'assets-ios.zip')
    form.append('assetsAndroid', zipBlob([{ name: 'drawable-mdpi/logo.png', content: `android logo ${version}` }, { name: 'raw/config.json', content: '{}' }]), 'assets-android.zip')
    const answer = await api('POST', `/api/mini-apps/by-app-id/${APP_ID}/versions/upload`, { token: cliToken, body: form })
    expect(answer.status).toBe(201)
  }

  /** The lifecycle buttons a version card shows, in a fixed order. */
  async function buttonsOf(page: Page, version: string): Promise<string[]> {
    const card = tid(page, `version-${version}`)
    const shown: string[] = []
    for (const action of ['review', 'publish', 'rollback', 'delete']) {
      if (await card.getByTestId(`${action}-${version}`).count()) shown.push(action)
    }
    return shown
  }

  async function versionOrder(page: Page): Promise<string[]> {
    return page.locator('li[data-testid^="version-"]').evaluateAll((items) => items.map((li) => (li as HTMLElement).dataset.testid!.slice('version-'.length)))
  }

  async function statusOf(page: Page, version: string): Promise<string | null> {
    return tid(page, `status-${version}`).getAttribute('data-status')
  }

  async function historyActions(page: Page): Promise<string[]> {
    return tid(page, 'history-entry').evaluateAll((items) => items.map((li) => (li as HTMLElement).dataset.action!))
  }

  /** Reloads the workspace (after an upload made outside the browser) and waits until it is drawn. */
  async function reloadWorkspace(page: Page): Promise<void> {
    await page.reload()
    await tid(page, 'app-title').waitFor()
  }

  async function confirm(page: Page, notes?: string): Promise<void> {
    const dialog = tid(page, 'confirm-dialog')
    await dialog.waitFor()
    if (notes !== undefined) await dialog.getByTestId('confirm-notes').fill(notes)
    await dialog.getByTestId('confirm-ok').click()
    await dialog.waitFor({ state: 'detached' })
  }

  beforeAll(async () => {
    dir = tempDir('miniship-browser-')
    dataDir = join(dir, 'data')
    expect((await runBinary(['init', '--data-dir', dataDir])).exitCode).toBe(0)
    const created = await runBinary(['create-admin', '--data-dir', dataDir, '--email', ADMIN.email, '--password-stdin'], { stdin: `${ADMIN.password}\n` })
    expect(created.exitCode).toBe(0)
    server = await startBinary({ dataDir, args: ['--rate-limit', 'off'] })
    base = server.baseUrl
    watch = new PageWatch()
    browser = await launchChromium()
  }, 120_000)

  afterEach(async () => {
    await Bun.sleep(100) // late console lines and responses of the step just finished
    expect(watch.takeProblems()).toEqual([])
  })

  afterAll(async () => {
    for (const context of contexts) await context.close().catch(() => undefined)
    await browser?.close()
    if (server) await server.stop()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  test(
    'the console loads as one HTML request plus a few bundled assets, all from this server',
    async () => {
      const context = await newContext()
      const page = await context.newPage()
      const requests: { url: string; type: string }[] = []
      page.on('request', (r) => requests.push({ url: r.url(), type: r.resourceType() }))
      await page.goto(`${base}/`)
      await tid(page, 'signin-form').waitFor()
      await page.waitForLoadState('networkidle')
      const documents = requests.filter((r) => r.type === 'document')
      const assets = requests.filter((r) => r.type !== 'document' && r.type !== 'fetch' && !r.url.startsWith('data:'))
      expect(documents.map((r) => r.url)).toEqual([`${base}/`])
      expect(assets.length).toBeGreaterThanOrEqual(1)
      expect(assets.length).toBeLessThanOrEqual(4)
      for (const r of requests) if (!r.url.startsWith('data:')) expect(new URL(r.url).origin).toBe(base)
      expect(await page.title()).toBe('Sign in · miniship')
      await screenshot(page, 'sign-in')
      await context.close()
    },
    STEP,
  )

  test(
    'a wrong password shows the server’s message; then the admin signs in using only the keyboard',
    async () => {
      const context = await newContext()
      admin = await context.newPage()
      await admin.goto(`${base}/`)
      await tid(admin, 'signin-form').waitFor()

      watch.expectHttpError('POST', /^\/api\/auth\/login$/, 401)
      const refused = admin.waitForResponse((r) => r.url().endsWith('/api/auth/login'))
      await signInWithForm(admin, ADMIN.email, 'not-the-password')
      const body = await (await refused).json()
      expect(body.code).toBe('INVALID_CREDENTIALS')
      expect(await alertMessage(admin)).toBe(body.message)
      expect(await sessionToken(admin)).toBeNull()

      // Keyboard only from a fresh load: Tab to the email field, type, Tab, type, Enter.
      await admin.reload()
      await tid(admin, 'signin-form').waitFor()
      const focusedName = () => admin.evaluate(() => (document.activeElement as HTMLInputElement | null)?.name ?? '')
      for (let i = 0; i < 10 && (await focusedName()) !== 'email'; i++) await admin.keyboard.press('Tab')
      expect(await focusedName()).toBe('email')
      await admin.keyboard.type(ADMIN.email)
      await admin.keyboard.press('Tab')
      expect(await focusedName()).toBe('password')
      await admin.keyboard.type(ADMIN.password)
      await admin.keyboard.press('Enter')

      await tid(admin, 'current-user').waitFor()
      expect(await tid(admin, 'current-user').textContent()).toContain('Administrator')
      await expect(tid(admin, 'nav-admin').isVisible()).resolves.toBe(true)
      await tid(admin, 'apps-empty').waitFor()
      const token = await sessionToken(admin)
      expect(token).toMatch(JWT)
      tokens.add(token!)
      expect(admin.url()).not.toContain(token!)
      // the token lives in sessionStorage only: nothing in localStorage or cookies
      expect(await admin.evaluate(() => localStorage.length)).toBe(0)
      expect(await context.cookies()).toEqual([])
    },
    STEP,
  )

  test(
    'creating a miniapp: an invalid appId is explained under the field, a valid one opens its empty workspace',
    async () => {
      const form = tid(admin, 'create-app-form')
      watch.expectHttpError('POST', /^\/api\/mini-apps$/, 400)
      const refused = admin.waitForResponse((r) => r.url().endsWith('/api/mini-apps') && r.request().method() === 'POST')
      await form.locator('[name=appId]').fill('1-not-valid')
      await form.locator('[name=name]').fill('Shop')
      await tid(admin, 'create-app-submit').click()
      const body = await (await refused).json()
      expect(body.code).toBe('VALIDATION_ERROR')
      expect(await alertMessage(admin)).toBe(body.message)
      await tid(admin, 'field-error-appId').waitFor()
      expect(await form.locator('[name=appId]').getAttribute('aria-invalid')).toBe('true')

      await form.locator('[name=appId]').fill(APP_ID)
      await form.locator('[name=description]').fill('Buy things inside the host app')
      await tid(admin, 'create-app-submit').click()
      await tid(admin, 'app-title').waitFor()
      expect(await tid(admin, 'app-title').textContent()).toBe('Shop')
      expect(await tid(admin, 'app-id').textContent()).toBe(APP_ID)
      expect(await tid(admin, 'notice').textContent()).toContain('Created miniapp')
      await tid(admin, 'versions-empty').waitFor()
      await tid(admin, 'release-history-empty').waitFor()
      expect(await tid(admin, 'summary-release').textContent()).toBe('none')
      miniAppId = decodeURIComponent(new URL(admin.url()).hash.replace('#/apps/', ''))
      expect(miniAppId.length).toBeGreaterThan(0)
      // the owner sees the members section with themself in it
      await tid(admin, `member-${ADMIN.email}`).waitFor()

      await tid(admin, 'back-to-apps').click()
      await tid(admin, `app-${APP_ID}`).waitFor()
      expect(await tid(admin, `app-${APP_ID}`).textContent()).toContain('not released yet')
      await screenshot(admin, 'apps-list')
    },
    STEP,
  )

  test(
    'a CLI-like client’s login: signed out, the approval page asks to sign in; one click approves; the poll turns approved',
    async () => {
      const started = await api('POST', '/api/auth/cli/sessions')
      expect(started.status).toBe(201)
      const { code, verificationUrl } = started.body as { code: string; verificationUrl: string }
      expect((await api('GET', `/api/auth/cli/sessions/${code}`)).body.status).toBe('pending')

      const context = await newContext()
      const page = await context.newPage()
      const link = new URL(verificationUrl)
      await page.goto(`${base}${link.pathname}${link.search}`)
      await tid(page, 'cli-code').waitFor()
      expect(await tid(page, 'cli-code').textContent()).toBe(code)
      await tid(page, 'signin-form').waitFor()
      expect(await tid(page, 'cli-approve').count()).toBe(0)
      await signInWithForm(page, ADMIN.email, ADMIN.password)
      await tid(page, 'cli-approve').waitFor()
      tokens.add((await sessionToken(page))!)
      expect(await tid(page, 'cli-code').textContent()).toBe(code)
      await screenshot(page, 'cli-approval')

      await tid(page, 'cli-approve').click()
      await eventually(async () => expect(await tid(page, 'cli-result').getAttribute('data-state')).toBe('approved'))
      expect(await tid(page, 'cli-approve').count()).toBe(0)
      expect(await tid(page, 'cli-result').textContent()).toContain(ADMIN.email)

      const poll = await api('GET', `/api/auth/cli/sessions/${code}`)
      expect(poll.status).toBe(200)
      expect(poll.body.status).toBe('approved')
      expect(poll.body.user.email).toBe(ADMIN.email)
      cliToken = poll.body.accessToken
      expect(cliToken).toMatch(JWT)
      tokens.add(cliToken)

      // the same link again: the code is used up, and the page says so with the server's message
      await page.reload()
      await tid(page, 'cli-approve').waitFor()
      watch.expectHttpError('POST', /\/approve$/, 409)
      const used = page.waitForResponse((r) => r.url().endsWith('/approve'))
      await tid(page, 'cli-approve').click()
      const usedBody = await (await used).json()
      await eventually(async () => expect(await tid(page, 'cli-result').getAttribute('data-state')).toBe('409'))
      expect(await alertMessage(page)).toBe(usedBody.message)

      // a code nobody created
      await page.goto(`${base}/cli/authorize?code=ZZZZ-0000`)
      await tid(page, 'cli-approve').waitFor()
      // answered as an expired one is (410), so that codes cannot be probed
      watch.expectHttpError('POST', /\/approve$/, 410)
      const unknown = page.waitForResponse((r) => r.url().endsWith('/approve'))
      await tid(page, 'cli-approve').click()
      const unknownBody = await (await unknown).json()
      await eventually(async () => expect(await tid(page, 'cli-result').getAttribute('data-state')).toBe('410'))
      expect(await tid(page, 'cli-result').textContent()).toContain('unknown or has expired')
      expect(await alertMessage(page)).toBe(unknownBody.message)
      await context.close()
    },
    STEP,
  )

  test(
    'upload → review → publish with notes, checking statuses, badges, buttons and the release history',
    async () => {
      await admin.goto(`${base}/#/apps/${encodeURIComponent(miniAppId)}`)
      await tid(admin, 'versions-empty').waitFor()
      await upload('1.0.0', 'First version: the shop front.')
      await reloadWorkspace(admin)

      expect(await versionOrder(admin)).toEqual(['1.0.0'])
      expect(await statusOf(admin, '1.0.0')).toBe('DRAFT')
      expect(await tid(admin, 'status-1.0.0').textContent()).toBe('Draft')
      expect(await tid(admin, 'changelog-1.0.0').textContent()).toBe('First version: the shop front.')
      expect(await tid(admin, 'version-1.0.0').textContent()).toContain('Build 1')
      expect(await tid(admin, 'version-1.0.0').textContent()).toContain(`uploaded by admin (${ADMIN.email})`)
      expect(await tid(admin, 'badge-experience-1.0.0').count()).toBe(1)
      expect(await tid(admin, 'badge-release-1.0.0').count()).toBe(0)
      expect(await tid(admin, 'summary-experience').textContent()).toBe('1.0.0 (build 1)')
      expect(await buttonsOf(admin, '1.0.0')).toEqual(['review', 'publish', 'delete'])
      // an install link on this server and its QR code drawn in the page (an <svg>, no image request)
      const install = await tid(admin, 'install-link-1.0.0').getAttribute('href')
      expect(new URL(install!).origin).toBe(base)
      expect(await tid(admin, 'qr-1.0.0').locator('svg').count()).toBe(1)

      await tid(admin, 'review-1.0.0').click()
      await eventually(async () => expect(await statusOf(admin, '1.0.0')).toBe('IN_REVIEW'))
      expect(await tid(admin, 'status-1.0.0').textContent()).toBe('In review')
      expect(await tid(admin, 'badge-review-1.0.0').count()).toBe(1)
      expect(await tid(admin, 'summary-review').textContent()).toBe('1.0.0 (build 1)')
      expect(await buttonsOf(admin, '1.0.0')).toEqual(['publish', 'delete'])
      expect(await tid(admin, 'notice').textContent()).toContain('review version')

      // Cancel first: nothing changes; then publish with notes
      await tid(admin, 'publish-1.0.0').click()
      await tid(admin, 'confirm-dialog').waitFor()
      await tid(admin, 'confirm-cancel').click()
      await tid(admin, 'confirm-dialog').waitFor({ state: 'detached' })
      expect(await statusOf(admin, '1.0.0')).toBe('IN_REVIEW')

      await tid(admin, 'publish-1.0.0').click()
      await confirm(admin, 'Launch of the shop.')
      await eventually(async () => expect(await statusOf(admin, '1.0.0')).toBe('PUBLISHED'))
      expect(await tid(admin, 'status-1.0.0').textContent()).toBe('Published')
      expect(await tid(admin, 'badge-release-1.0.0').count()).toBe(1)
      expect(await tid(admin, 'summary-release').textContent()).toBe('1.0.0 (build 1)')
      expect(await buttonsOf(admin, '1.0.0')).toEqual([]) // the live release: nothing to review, publish, roll back to or delete
      expect(await historyActions(admin)).toEqual(['PUBLISH'])
      const entry = tid(admin, 'history-entry').first()
      expect(await entry.textContent()).toContain('Published 1.0.0')
      expect(await entry.textContent()).toContain('Launch of the shop.')
      expect(await entry.textContent()).toContain(ADMIN.email)
    },
    STEP,
  )

  test(
    'upload another → publish it → roll back → delete a draft, checking the page after each step',
    async () => {
      await upload('1.1.0', 'Faster checkout.')
      await reloadWorkspace(admin)
      expect(await versionOrder(admin)).toEqual(['1.1.0', '1.0.0'])
      expect(await statusOf(admin, '1.1.0')).toBe('DRAFT')
      expect(await tid(admin, 'version-1.1.0').textContent()).toContain('Build 2')
      expect(await tid(admin, 'badge-experience-1.1.0').count()).toBe(1)
      expect(await tid(admin, 'badge-experience-1.0.0').count()).toBe(0)
      expect(await buttonsOf(admin, '1.1.0')).toEqual(['review', 'publish', 'delete'])
      expect(await buttonsOf(admin, '1.0.0')).toEqual([])

      // published straight from Draft
      await tid(admin, 'publish-1.1.0').click()
      await confirm(admin, 'Checkout in one step.')
      await eventually(async () => expect(await statusOf(admin, '1.1.0')).toBe('PUBLISHED'))
      expect(await tid(admin, 'summary-release').textContent()).toBe('1.1.0 (build 2)')
      expect(await tid(admin, 'badge-release-1.1.0').count()).toBe(1)
      expect(await tid(admin, 'badge-release-1.0.0').count()).toBe(0)
      expect(await buttonsOf(admin, '1.1.0')).toEqual([])
      expect(await buttonsOf(admin, '1.0.0')).toEqual(['rollback'])
      expect(await historyActions(admin)).toEqual(['PUBLISH', 'PUBLISH'])
      expect(await tid(admin, 'history-entry').first().textContent()).toContain('Published 1.1.0 (replacing 1.0.0)')

      await tid(admin, 'rollback-1.0.0').click()
      await confirm(admin, 'Checkout broke on old phones.')
      await eventually(async () => expect(await tid(admin, 'summary-release').textContent()).toBe('1.0.0 (build 1)'))
      expect(await tid(admin, 'badge-release-1.0.0').count()).toBe(1)
      expect(await statusOf(admin, '1.1.0')).toBe('PUBLISHED')
      expect(await buttonsOf(admin, '1.1.0')).toEqual(['rollback'])
      expect(await buttonsOf(admin, '1.0.0')).toEqual([])
      expect(await historyActions(admin)).toEqual(['ROLLBACK', 'PUBLISH', 'PUBLISH'])
      const rollback = await tid(admin, 'history-entry').first().textContent()
      expect(rollback).toContain('Rolled back to 1.0.0 (was 1.1.0)')
      expect(rollback).toContain('Checkout broke on old phones.')
      expect(await tid(admin, 'notice').textContent()).toContain('Rolled back')

      await upload('1.2.0', 'An experiment nobody should ship.')
      await reloadWorkspace(admin)
      expect(await versionOrder(admin)).toEqual(['1.2.0', '1.1.0', '1.0.0'])
      expect(await buttonsOf(admin, '1.2.0')).toEqual(['review', 'publish', 'delete'])
      await screenshot(admin, 'workspace')

      // the delete dialog closes with Escape and nothing is deleted
      await tid(admin, 'delete-1.2.0').click()
      await tid(admin, 'confirm-dialog').waitFor()
      await admin.keyboard.press('Escape')
      await tid(admin, 'confirm-dialog').waitFor({ state: 'detached' })
      expect(await versionOrder(admin)).toEqual(['1.2.0', '1.1.0', '1.0.0'])

      await tid(admin, 'delete-1.2.0').click()
      await confirm(admin)
      await tid(admin, 'version-1.2.0').waitFor({ state: 'detached' })
      expect(await versionOrder(admin)).toEqual(['1.1.0', '1.0.0'])
      expect(await tid(admin, 'notice').textContent()).toContain('Deleted version 1.2.0')
      expect(await historyActions(admin)).toEqual(['ROLLBACK', 'PUBLISH', 'PUBLISH'])

      // what the server holds matches what the page showed
      const workspace = await api('GET', `/api/mini-apps/${miniAppId}/workspace`, { token: cliToken })
      expect(workspace.body.versions.map((v: { version: string; status: string }) => `${v.version}:${v.status}`)).toEqual(['1.1.0:PUBLISHED', '1.0.0:PUBLISHED'])
    },
    STEP,
  )

  test(
    'an admin creates a user, who signs in and is added as a member; once disabled, their session ends and their sign-in is refused',
    async () => {
      await tid(admin, 'nav-admin').click()
      await tid(admin, 'users-table').waitFor()
      expect(await tid(admin, `user-role-${ADMIN.email}`).getAttribute('data-role')).toBe('ADMIN')

      const form = tid(admin, 'create-user-form')
      await form.locator('[name=email]').fill(USER.email)
      await form.locator('[name=displayName]').fill(USER.displayName)
      await form.locator('[name=password]').fill(USER.password)
      await tid(admin, 'create-user-submit').click()
      await tid(admin, `user-row-${USER.email}`).waitFor()
      expect(await tid(admin, `user-status-${USER.email}`).getAttribute('data-status')).toBe('ACTIVE')
      expect(await tid(admin, `user-role-${USER.email}`).getAttribute('data-role')).toBe('USER')
      expect(await tid(admin, 'notice').textContent()).toContain(`Created ${USER.email}`)

      // the new user signs in elsewhere, sees no Admin link and no miniapps
      const userContext = await newContext()
      const userPage = await userContext.newPage()
      await userPage.goto(`${base}/`)
      await tid(userPage, 'signin-form').waitFor()
      await signInWithForm(userPage, USER.email, USER.password)
      await tid(userPage, 'apps-empty').waitFor()
      expect(await tid(userPage, 'current-user').textContent()).toContain(USER.displayName)
      expect(await tid(userPage, 'nav-admin').count()).toBe(0)
      tokens.add((await sessionToken(userPage))!)

      // the owner adds them to the miniapp: an unknown email is refused with the server's message first
      await admin.goto(`${base}/#/apps/${encodeURIComponent(miniAppId)}`)
      const addMember = tid(admin, 'add-member-form')
      await addMember.waitFor()
      watch.expectHttpError('POST', /\/members$/, 404)
      const unknown = admin.waitForResponse((r) => r.url().endsWith('/members') && r.request().method() === 'POST')
      await addMember.locator('[name=email]').fill('nobody@example.com')
      await tid(admin, 'add-member-submit').click()
      const unknownBody = await (await unknown).json()
      expect(unknownBody.code).toBe('USER_NOT_FOUND')
      expect(await alertMessage(admin)).toBe(unknownBody.message)
      await addMember.locator('[name=email]').fill(USER.email)
      await tid(admin, 'add-member-submit').click()
      await tid(admin, `member-${USER.email}`).waitFor()
      expect(await tid(admin, `member-${USER.email}`).textContent()).toContain('Developer')

      // now the miniapp is in their list; its members are for owners only, and the page says so
      await userPage.reload()
      // the workspace tells the page they are a developer, so it does not ask for the members (no 403 in the console)
      await tid(userPage, `open-app-${APP_ID}`).click()
      await tid(userPage, 'members-unavailable').waitFor()
      expect(await versionOrder(userPage)).toEqual(['1.1.0', '1.0.0'])
      expect(await tid(userPage, 'summary-release').textContent()).toBe('1.0.0 (build 1)')

      await tid(admin, 'nav-admin').click()
      await tid(admin, `user-row-${USER.email}`).waitFor()
      await tid(admin, `toggle-status-${USER.email}`).click()
      await confirm(admin)
      await eventually(async () => expect(await tid(admin, `user-status-${USER.email}`).getAttribute('data-status')).toBe('DISABLED'))
      expect(await tid(admin, `user-status-${USER.email}`).textContent()).toBe('Disabled')
      await eventually(async () => expect(await tid(admin, 'audit-entry').first().getAttribute('data-action')).toBe('user.status_change'))
      expect(await tid(admin, 'audit-entry').first().textContent()).toContain(`Disabled ${USER.email}`)
      await screenshot(admin, 'admin')

      // their open console finds out at the next request
      watch.expectHttpError('GET', /^\/api\/auth\/me$/, 401)
      await userPage.reload()
      await tid(userPage, 'signin-form').waitFor()
      expect(await alertMessage(userPage)).toContain('Please sign in again')
      expect(await sessionToken(userPage)).toBeNull()

      // and a fresh browser cannot sign in: the server's message is shown
      const freshContext = await newContext()
      const fresh = await freshContext.newPage()
      await fresh.goto(`${base}/`)
      await tid(fresh, 'signin-form').waitFor()
      watch.expectHttpError('POST', /^\/api\/auth\/login$/, 403)
      const refused = fresh.waitForResponse((r) => r.url().endsWith('/api/auth/login'))
      await signInWithForm(fresh, USER.email, USER.password)
      const body = await (await refused).json()
      expect(body.code).toBe('ACCOUNT_DISABLED')
      expect(await alertMessage(fresh)).toBe(body.message)
      expect(await sessionToken(fresh)).toBeNull()
      expect(await tid(fresh, 'current-user').count()).toBe(0)
      await userContext.close()
      await freshContext.close()
    },
    STEP,
  )

  test(
    'registering from the sign-in page: the newcomer lands signed in as a regular user, with no Admin link',
    async () => {
      newcomer = await signInPage()
      await tid(newcomer, 'show-register').click()
      const form = tid(newcomer, 'register-form')
      await form.waitFor()
      expect(await tid(newcomer, 'signin-form').count()).toBe(0)
      await form.locator('[name=displayName]').fill(NEWCOMER.displayName)
      await form.locator('[name=email]').fill(NEWCOMER.email)
      await form.locator('[name=password]').fill(NEWCOMER.password)
      const registered = newcomer.waitForResponse((r) => r.url().endsWith('/api/auth/register'))
      await tid(newcomer, 'register-submit').click()
      expect((await registered).status()).toBe(201)

      await tid(newcomer, 'apps-empty').waitFor()
      const who = await tid(newcomer, 'current-user').textContent()
      expect(who).toContain(NEWCOMER.displayName)
      expect(who).toContain('User')
      expect(who).not.toContain('Administrator')
      expect(await tid(newcomer, 'nav-admin').count()).toBe(0)
      expect(await tid(newcomer, 'nav-apps').isVisible()).toBe(true)
      expect(await newcomer.title()).toBe('Miniapps · miniship')
      const token = await sessionToken(newcomer)
      expect(token).toMatch(JWT)
      tokens.add(token!)
    },
    STEP,
  )

  test(
    'the admin makes the newcomer an administrator and back (each change ends their session), resets their password, and the audit log lists it all',
    async () => {
      const roleOf = () => tid(admin, `user-role-${NEWCOMER.email}`).getAttribute('data-role')
      await admin.goto(`${base}/#/admin`)
      await admin.reload() // the newcomer registered after this page was drawn
      await tid(admin, `user-row-${NEWCOMER.email}`).waitFor()
      expect(await roleOf()).toBe('USER')
      expect(await tid(admin, `user-role-${NEWCOMER.email}`).textContent()).toBe('User')

      // User → Administrator; the newcomer's open console finds its token revoked at the next request
      await tid(admin, `toggle-role-${NEWCOMER.email}`).click()
      await confirm(admin)
      await eventually(async () => expect(await roleOf()).toBe('ADMIN'))
      expect(await tid(admin, `user-role-${NEWCOMER.email}`).textContent()).toBe('Administrator')
      expect(await tid(admin, 'notice').textContent()).toContain(`${NEWCOMER.email} is now an administrator`)

      watch.expectHttpError('GET', /^\/api\/auth\/me$/, 401)
      const revoked = newcomer.waitForResponse((r) => r.url().endsWith('/api/auth/me'))
      await newcomer.reload()
      expect((await revoked).status()).toBe(401)
      await tid(newcomer, 'signin-form').waitFor()
      expect(await alertMessage(newcomer)).toContain('Please sign in again')
      expect(await sessionToken(newcomer)).toBeNull()
      // signed in again they are an administrator
      await signInWithForm(newcomer, NEWCOMER.email, NEWCOMER.password)
      await tid(newcomer, 'nav-admin').waitFor()
      expect(await tid(newcomer, 'current-user').textContent()).toContain('Administrator')
      const adminToken = (await sessionToken(newcomer))!
      tokens.add(adminToken)

      // Administrator → User: that token stops working too
      await tid(admin, `toggle-role-${NEWCOMER.email}`).click()
      await confirm(admin)
      await eventually(async () => expect(await roleOf()).toBe('USER'))
      expect(await tid(admin, 'notice').textContent()).toContain(`${NEWCOMER.email} is now a regular user`)
      const me = await api('GET', '/api/auth/me', { token: adminToken })
      expect(me.status).toBe(401)
      await newcomer.context().close()

      // a new password through the dialog (Cancel first changes nothing)
      await tid(admin, `reset-password-${NEWCOMER.email}`).click()
      await tid(admin, 'confirm-dialog').waitFor()
      await tid(admin, 'confirm-cancel').click()
      await tid(admin, 'confirm-dialog').waitFor({ state: 'detached' })
      await tid(admin, `reset-password-${NEWCOMER.email}`).click()
      const dialog = tid(admin, 'confirm-dialog')
      await dialog.waitFor()
      expect(await dialog.textContent()).toContain(`Set a new password for ${NEWCOMER.email}`)
      await dialog.getByTestId('confirm-password').fill(NEWCOMER.newPassword)
      await dialog.getByTestId('confirm-ok').click()
      await dialog.waitFor({ state: 'detached' })
      await eventually(async () => expect(await tid(admin, 'notice').textContent()).toContain(`Set a new password for ${NEWCOMER.email}`))

      // the audit log, newest first, tells the story of this account
      const aboutNewcomer = async () =>
        tid(admin, 'audit-entry').evaluateAll(
          (rows, email) => rows.filter((r) => r.textContent!.includes(email as string)).map((r) => `${(r as HTMLElement).dataset.action}: ${r.querySelector('td:last-child')!.firstChild!.textContent}`), // the summary, not its Details
          NEWCOMER.email,
        )
      await eventually(async () => expect((await aboutNewcomer())[0]).toStartWith('user.password_reset'))
      expect(await aboutNewcomer()).toEqual([
        `user.password_reset: Reset the password of ${NEWCOMER.email}`,
        `user.role_change: Changed the role of ${NEWCOMER.email} from ADMIN to USER`,
        `user.role_change: Changed the role of ${NEWCOMER.email} from USER to ADMIN`,
        `user.register: ${NEWCOMER.email} registered`,
      ])
      const changes = tid(admin, 'audit-entry').filter({ hasText: `Changed the role of ${NEWCOMER.email}` })
      for (const row of await changes.all()) expect(await row.textContent()).toContain(ADMIN.email) // who did it

      // paging: the console asks for 50 at a time and offers older ones only after a full page. Make
      // sure there is more than a page (60 renames of the tester, ending on their own name), and
      // fewer than two, so that one click on "older" reaches the end.
      const listing = await api('GET', '/api/admin/users', { token: cliToken })
      const tester = (listing.body.users as { id: string; email: string }[]).find((user) => user.email === USER.email)!
      for (let i = 1; i <= 60; i++) {
        const renamed = await api('PATCH', `/api/admin/users/${tester.id}`, { token: cliToken, json: { displayName: i === 60 ? USER.displayName : `${USER.displayName} ${i}` } })
        expect(renamed.status).toBe(200)
      }
      const everything = await api('GET', '/api/admin/users?auditLimit=1000', { token: cliToken })
      const total = everything.body.auditLogs.length as number
      expect(total).toBeGreaterThan(50)
      expect(total).toBeLessThanOrEqual(100)
      await admin.reload()
      await tid(admin, 'audit-older').waitFor()
      const rowKeys = () => tid(admin, 'audit-entry').evaluateAll((rows) => rows.map((r) => [...r.querySelectorAll('td')].map((td) => td.querySelector('time')?.getAttribute('datetime') ?? td.textContent).join('|')))
      const firstPage = await rowKeys()
      expect(firstPage.length).toBe(50)
      expect(await tid(admin, 'audit-end').count()).toBe(0)
      expect((await tid(admin, 'audit-entry').first().textContent())!).toContain(`Renamed ${USER.email} from "${USER.displayName} 59" to "${USER.displayName}"`)
      await tid(admin, 'audit-older').click()
      await eventually(async () => expect((await rowKeys()).length).toBe(total))
      const all = await rowKeys()
      expect(all.slice(0, 50)).toEqual(firstPage)
      expect(new Set(all).size).toBe(all.length)
      expect(await tid(admin, 'audit-end').isVisible()).toBe(true)
      expect(await tid(admin, 'audit-older').count()).toBe(0)
      // the oldest entry is the first thing that happened: the admin's creation on the command line
      expect(await tid(admin, 'audit-entry').last().getAttribute('data-action')).toBe(everything.body.auditLogs.at(-1).action)

      // a fresh browser: the old password is refused with the server's message, the new one works
      const fresh = await signInPage()
      watch.expectHttpError('POST', /^\/api\/auth\/login$/, 401)
      const refused = fresh.waitForResponse((r) => r.url().endsWith('/api/auth/login'))
      await signInWithForm(fresh, NEWCOMER.email, NEWCOMER.password)
      const body = await (await refused).json()
      expect(body.code).toBe('INVALID_CREDENTIALS')
      expect(await alertMessage(fresh)).toBe(body.message)
      expect(await sessionToken(fresh)).toBeNull()
      await signInWithForm(fresh, NEWCOMER.email, NEWCOMER.newPassword)
      await tid(fresh, 'apps-empty').waitFor()
      expect(await tid(fresh, 'current-user').textContent()).toContain(NEWCOMER.displayName)
      expect(await tid(fresh, 'current-user').textContent()).not.toContain('Administrator')
      expect(await tid(fresh, 'nav-admin').count()).toBe(0)
      tokens.add((await sessionToken(fresh))!)
      await fresh.context().close()
    },
    STEP,
  )

  test(
    'at 360 px wide every page fits without scrolling sideways',
    async () => {
      const context = await newContext({ width: 360, height: 780 })
      const page = await context.newPage()
      await page.goto(`${base}/`)
      await tid(page, 'signin-form').waitFor()
      await noHorizontalScroll(page, 'sign-in')
      await signInWithForm(page, ADMIN.email, ADMIN.password)
      await tid(page, `app-${APP_ID}`).waitFor()
      tokens.add((await sessionToken(page))!)
      await noHorizontalScroll(page, 'miniapps')
      await screenshot(page, 'apps-list-360')

      await tid(page, `open-app-${APP_ID}`).click()
      await tid(page, 'version-1.1.0').waitFor()
      await noHorizontalScroll(page, 'workspace')
      await screenshot(page, 'workspace-360')

      await page.goto(`${base}/#/admin`)
      await tid(page, 'users-table').waitFor()
      await noHorizontalScroll(page, 'admin')
      await screenshot(page, 'admin-360')

      const started = await api('POST', '/api/auth/cli/sessions')
      await page.goto(`${base}/cli/authorize?code=${started.body.code}`)
      await tid(page, 'cli-approve').waitFor()
      await noHorizontalScroll(page, 'CLI approval')

      // signing out forgets the token and shows the sign-in form
      await tid(page, 'sign-out').click()
      await tid(page, 'signin-form').waitFor()
      expect(await sessionToken(page)).toBeNull()
      expect(await tid(page, 'current-user').count()).toBe(0)
      await context.close()
    },
    STEP,
  )

  test('no request of any page carried an access token in its URL, and none went to another host', () => {
    expect(watch.requests.length).toBeGreaterThan(20)
    expect(tokens.size).toBeGreaterThanOrEqual(4)
    for (const request of watch.requests) {
      if (request.url.startsWith('data:')) continue
      expect(new URL(request.url).origin).toBe(base)
      expect(request.url).not.toMatch(JWT)
      for (const token of tokens) expect(request.url).not.toContain(token)
    }
    // the API calls carried the token in the Authorization header instead
    expect(watch.requests.filter((r) => r.resourceType === 'fetch').length).toBeGreaterThan(10)
  })
})
