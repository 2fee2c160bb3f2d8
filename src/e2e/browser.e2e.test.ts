// The admin console in a real browser (chromium via playwright-core) against the compiled binary:
// sign in, create a miniapp, the whole version lifecycle, a CLI login (approve and deny), user
// administration (create, disable, register, role changes, password reset, the audit log), upload
// from the browser, channels and rollout, the install QR dialog, API keys, keep-me-signed-in,
// 100 versions, 360 px wide screens, dark mode, the keyboard, and where the token may and may not go.
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core'
import { buildZip, type ZipEntry } from '../test-fixtures'
import { encode } from 'uqr'
import { hasChromium, launchChromium, PageWatch, screenshot, CHROMIUM } from './browser-support'
import { callApi, runBinary, type ApiCallOptions, startBinary, tempDir, type RunningBinary } from './support'

const ADMIN = { email: 'admin@example.com', password: 'admin-password-1' }
const USER = { email: 'tester@example.com', displayName: 'Tess Tester', password: 'tester-password-1' }
/** Someone who creates their own account on the sign-in page (registration is open by default). */
const NEWCOMER = { email: 'newcomer@example.com', displayName: 'Nia Newcomer', password: 'newcomer-password-1', newPassword: 'reset-password-2' }
const APP_ID = 'com.example.shop'
/** 64 characters without a break: the longest App ID there can be, and a name as long */
const LONG_APP_ID = `com.${'x'.repeat(60)}`
const LONG_NAME = 'W'.repeat(64)
const MANY_APP_ID = 'com.example.many'
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

  async function newContext(options: { width?: number; height?: number; dark?: boolean } = {}): Promise<BrowserContext> {
    const context = await browser.newContext({ viewport: { width: options.width ?? 1280, height: options.height ?? 860 }, colorScheme: options.dark ? 'dark' : 'light' })
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

  /** The access token wherever the console keeps it (localStorage when "Keep me signed in" is on, else sessionStorage). */
  async function sessionToken(page: Page): Promise<string | null> {
    return page.evaluate(() => localStorage.getItem('miniship.token') ?? sessionStorage.getItem('miniship.token'))
  }

  async function noHorizontalScroll(page: Page, what: string, width = 360): Promise<void> {
    const scrollWidth = await page.evaluate(() => document.documentElement.scrollWidth)
    if (scrollWidth > width) throw new Error(`the ${what} page is ${scrollWidth} px wide on a ${width} px screen: it scrolls sideways`)
  }

  /** Opens a tab of the miniapp page and waits until it is the one drawn. */
  async function openTab(page: Page, name: 'overview' | 'versions' | 'history' | 'settings' | 'members'): Promise<void> {
    await tid(page, `tab-${name}`).click()
    await page.locator(`[data-testid="tab-${name}"][aria-current="page"]`).waitFor()
  }

  const appUrl = (id: string, tab = '') => `${base}/apps/${encodeURIComponent(id)}${tab ? `/${tab}` : ''}`

  const api = (method: string, path: string, options: ApiCallOptions = {}) => callApi(base, method, path, options)

  /** Uploads a version as the command-line tool does: multipart with both bundles, the manifest and two asset zips. */
  async function upload(version: string, changelog: string, appId = APP_ID): Promise<{ id: string }> {
    const form = new FormData()
    form.append('version', version)
    form.append('changelog', changelog)
    form.append('bundleIos', new Blob([`console.log("ios ${version}")`]), 'main.ios.jsbundle')
    form.append('bundleAndroid', new Blob([`console.log("android ${version}")`]), 'main.android.bundle')
    form.append('manifest', new Blob([JSON.stringify({ appId, version, name: 'Shop', pages: { home: 'Home' } })], { type: 'application/json' }), 'app.json')
    form.append('assetsIos', zipBlob([{ name: 'assets/' }, { name: 'assets/logo.png', content: `ios logo ${version}` }]), 'assets-ios.zip')
    form.append('assetsAndroid', zipBlob([{ name: 'drawable-mdpi/logo.png', content: `android logo ${version}` }, { name: 'raw/config.json', content: '{}' }]), 'assets-android.zip')
    const answer = await api('POST', `/api/mini-apps/by-app-id/${appId}/versions/upload`, { token: cliToken, body: form })
    expect(answer.status).toBe(201)
    return answer.body
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
    return page.locator('tr[data-testid^="version-"]').evaluateAll((rows) => rows.map((tr) => (tr as HTMLElement).dataset.testid!.slice('version-'.length)))
  }

  async function statusOf(page: Page, version: string): Promise<string | null> {
    return tid(page, `status-${version}`).getAttribute('data-status')
  }

  async function historyActions(page: Page): Promise<string[]> {
    return tid(page, 'history-entry').evaluateAll((items) => items.map((li) => (li as HTMLElement).dataset.action!))
  }

  /** Reloads the miniapp page (after an upload made outside the browser) and waits until it is drawn. */
  async function reloadWorkspace(page: Page): Promise<void> {
    await page.reload()
    await tid(page, 'app-title').waitFor()
  }

  /** The overview's live/review/experience lines, read from the Overview tab (then back to Versions). */
  async function summary(page: Page): Promise<{ release: string; review: string; experience: string }> {
    await openTab(page, 'overview')
    const read = async (id: string) => (await tid(page, id).textContent()) ?? ''
    const found = { release: await read('summary-release'), review: await read('summary-review'), experience: await read('summary-experience') }
    await openTab(page, 'versions')
    return found
  }

  async function historyOf(page: Page): Promise<{ actions: string[]; first: string }> {
    await openTab(page, 'history')
    const actions = await historyActions(page)
    const first = actions.length ? ((await tid(page, 'history-entry').first().textContent()) ?? '') : ''
    await openTab(page, 'versions')
    return { actions, first }
  }

  /** Confirms the open dialog (confirmation, publish or rollout), with notes when given. */
  async function confirm(page: Page, notes?: string): Promise<void> {
    const dialog = page.locator('dialog[open]')
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
      // the console's paths open the console (its router draws them); other paths stay JSON 404s
      for (const path of ['/apps', '/apps/some-id', '/apps/some-id/versions', '/tokens', '/admin', '/signin']) {
        const response = await fetch(`${base}${path}`)
        expect(response.status).toBe(200)
        expect(response.headers.get('content-type')).toContain('text/html')
        await response.body?.cancel()
      }
      const missing = await api('GET', '/no-such-page')
      expect(missing.status).toBe(404)
      expect(missing.body.code).toBeString()
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
      // "Keep me signed in" is on by default: the token lives in localStorage, never in cookies
      expect(await admin.evaluate(() => localStorage.getItem('miniship.token'))).toBe(token)
      expect(await admin.evaluate(() => sessionStorage.getItem('miniship.token'))).toBeNull()
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
      // a path of its own (no #), which the server answers with the console
      // the address names it by App ID (web/miniapp-address.ts); the API takes its internal id
      expect(new URL(admin.url()).pathname).toBe(`/apps/${APP_ID}`)
      const listed = await api('GET', '/api/mini-apps', { token: (await sessionToken(admin))! })
      miniAppId = listed.body.find((app: { appId: string }) => app.appId === APP_ID).id
      expect(await admin.title()).toBe('Shop · Overview · miniship')
      await tid(admin, 'summary-release').waitFor()
      expect(await tid(admin, 'summary-release').textContent()).toBe('none')
      expect(await tid(admin, 'overview-empty').textContent()).toContain('Upload the first version')
      await openTab(admin, 'versions')
      await tid(admin, 'versions-empty').waitFor()
      expect(await admin.title()).toBe('Shop · Versions · miniship')
      await openTab(admin, 'history')
      await tid(admin, 'release-history-empty').waitFor()
      // the owner sees the members tab with themself in it
      await openTab(admin, 'members')
      await tid(admin, `member-${ADMIN.email}`).waitFor()

      await tid(admin, 'back-to-apps').click()
      await tid(admin, `app-${APP_ID}`).waitFor()
      expect(new URL(admin.url()).pathname).toBe('/apps')
      await eventually(async () => expect(await tid(admin, `app-live-${APP_ID}`).textContent()).toContain('Not released yet'))
      // the create form folds away once there is an app; New miniapp opens it
      expect(await tid(admin, 'create-app-form').isVisible()).toBe(false)
      await tid(admin, 'new-app').click()
      expect(await tid(admin, 'create-app-form').isVisible()).toBe(true)
      await tid(admin, 'new-app').click()
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

      // the same link again: the page says it was approved instead of offering the buttons again
      await page.reload()
      await eventually(async () => expect(await tid(page, 'cli-result').getAttribute('data-state')).toBe('approved'))
      expect(await tid(page, 'cli-approve').count()).toBe(0)
      expect(await tid(page, 'cli-deny').count()).toBe(0)
      // and the server still refuses a second approval with 409 (a page drawn before the first approval would send it)
      const again = await api('POST', `/api/auth/cli/sessions/${code}/approve`, { token: cliToken })
      expect(again.status).toBe(409)
      expect(again.body.code).toBe('CLI_SESSION_ALREADY_APPROVED')

      // a code nobody created: the page says at once that it is unknown or expired (the server answers both alike,
      // 410, so that codes cannot be probed) and offers nothing to approve; the approval itself is refused the same way
      watch.expectHttpError('GET', /\/details$/, 410)
      await page.goto(`${base}/cli/authorize?code=ZZZZ-0000`)
      await eventually(async () => expect(await tid(page, 'cli-result').getAttribute('data-state')).toBe('410'))
      expect(await tid(page, 'cli-result').textContent()).toContain('unknown or has expired')
      expect(await tid(page, 'cli-approve').count()).toBe(0)
      expect(await tid(page, 'cli-deny').count()).toBe(0)
      const unknown = await api('POST', '/api/auth/cli/sessions/ZZZZ-0000/approve', { token: cliToken })
      expect(unknown.status).toBe(410)
      expect(unknown.body.code).toBe('CLI_SESSION_EXPIRED')
      await context.close()
    },
    STEP,
  )

  test(
    'Deny on the approval page: it shows who asks, the next poll answers expired with reason denied, and a reload says denied',
    async () => {
      const started = await fetch(`${base}/api/auth/cli/sessions`, { method: 'POST', headers: { 'user-agent': 'miniship-cli/test (linux)' } })
      expect(started.status).toBe(201)
      const { code } = (await started.json()) as { code: string }
      await admin.goto(`${base}/cli/authorize?code=${code}`)
      await tid(admin, 'cli-deny').waitFor()
      await eventually(async () => expect(await tid(admin, 'cli-requester').textContent()).toContain('127.0.0.1'))
      expect(await tid(admin, 'cli-requester').textContent()).toContain('miniship-cli/test (linux)')
      await screenshot(admin, 'cli-approval-requester')

      await tid(admin, 'cli-deny').click()
      await eventually(async () => expect(await tid(admin, 'cli-result').getAttribute('data-state')).toBe('denied'))
      expect(await tid(admin, 'cli-approve').count()).toBe(0)
      const poll = await api('GET', `/api/auth/cli/sessions/${code}`)
      expect(poll.status).toBe(200)
      expect(poll.body).toEqual({ status: 'expired', reason: 'denied' })

      await admin.reload()
      await eventually(async () => expect(await tid(admin, 'cli-result').getAttribute('data-state')).toBe('denied'))
      expect(await tid(admin, 'cli-approve').count()).toBe(0)
      expect(await tid(admin, 'cli-deny').count()).toBe(0)
    },
    STEP,
  )

  test(
    'upload → review → publish with notes, checking statuses, badges, buttons and the release history',
    async () => {
      await admin.goto(appUrl(miniAppId, 'versions'))
      await tid(admin, 'versions-empty').waitFor()
      await upload('1.0.0', 'First version: the shop front.')
      await reloadWorkspace(admin)

      expect(await versionOrder(admin)).toEqual(['1.0.0'])
      expect(await statusOf(admin, '1.0.0')).toBe('DRAFT')
      expect(await tid(admin, 'status-1.0.0').textContent()).toBe('Draft')
      expect(await tid(admin, 'changelog-1.0.0').textContent()).toBe('First version: the shop front.')
      expect(await tid(admin, 'version-1.0.0').locator('td[data-label="Build"]').textContent()).toBe('1')
      expect(await tid(admin, 'version-1.0.0').locator('td[data-label="Uploaded"]').textContent()).toContain('by admin')
      expect(await tid(admin, 'badge-experience-1.0.0').count()).toBe(1)
      expect(await tid(admin, 'badge-release-1.0.0').count()).toBe(0)
      expect(await buttonsOf(admin, '1.0.0')).toEqual(['review', 'publish', 'delete'])
      expect((await summary(admin)).experience).toBe('1.0.0 (build 1)')

      await tid(admin, 'review-1.0.0').click()
      await eventually(async () => expect(await statusOf(admin, '1.0.0')).toBe('IN_REVIEW'))
      expect(await tid(admin, 'status-1.0.0').textContent()).toBe('In review')
      expect(await tid(admin, 'badge-review-1.0.0').count()).toBe(1)
      expect(await buttonsOf(admin, '1.0.0')).toEqual(['publish', 'delete'])
      expect(await tid(admin, 'notice').textContent()).toContain('review version')
      expect((await summary(admin)).review).toBe('1.0.0 (build 1)')

      // Cancel first: nothing changes; then publish with notes (to stable, all devices: the defaults)
      await tid(admin, 'publish-1.0.0').click()
      await tid(admin, 'publish-dialog').waitFor()
      expect(await tid(admin, 'confirm-channel').inputValue()).toBe('stable')
      expect(await tid(admin, 'confirm-rolloutPercent').inputValue()).toBe('100')
      await tid(admin, 'confirm-cancel').click()
      await tid(admin, 'publish-dialog').waitFor({ state: 'detached' })
      expect(await statusOf(admin, '1.0.0')).toBe('IN_REVIEW')

      await tid(admin, 'publish-1.0.0').click()
      await confirm(admin, 'Launch of the shop.')
      await eventually(async () => expect(await statusOf(admin, '1.0.0')).toBe('PUBLISHED'))
      expect(await tid(admin, 'status-1.0.0').textContent()).toBe('Published')
      expect(await tid(admin, 'badge-release-1.0.0').count()).toBe(1)
      expect(await buttonsOf(admin, '1.0.0')).toEqual([]) // the release of every channel: nothing to review, publish, roll back to or delete
      expect((await summary(admin)).release).toBe('1.0.0 (build 1)')
      const history = await historyOf(admin)
      expect(history.actions).toEqual(['PUBLISH'])
      expect(history.first).toContain('Published 1.0.0 to stable')
      expect(history.first).toContain('Launch of the shop.')
      expect(history.first).toContain(ADMIN.email)
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
      expect(await tid(admin, 'version-1.1.0').locator('td[data-label="Build"]').textContent()).toBe('2')
      expect(await tid(admin, 'badge-experience-1.1.0').count()).toBe(1)
      expect(await tid(admin, 'badge-experience-1.0.0').count()).toBe(0)
      expect(await buttonsOf(admin, '1.1.0')).toEqual(['review', 'publish', 'delete'])
      expect(await buttonsOf(admin, '1.0.0')).toEqual([])

      // published straight from Draft
      await tid(admin, 'publish-1.1.0').click()
      await confirm(admin, 'Checkout in one step.')
      await eventually(async () => expect(await statusOf(admin, '1.1.0')).toBe('PUBLISHED'))
      expect(await tid(admin, 'badge-release-1.1.0').count()).toBe(1)
      expect(await tid(admin, 'badge-release-1.0.0').count()).toBe(0)
      expect(await buttonsOf(admin, '1.1.0')).toEqual([])
      expect(await buttonsOf(admin, '1.0.0')).toEqual(['rollback'])
      expect((await summary(admin)).release).toBe('1.1.0 (build 2)')
      let history = await historyOf(admin)
      expect(history.actions).toEqual(['PUBLISH', 'PUBLISH'])
      expect(history.first).toContain('Published 1.1.0 to stable (replacing 1.0.0)')

      await tid(admin, 'rollback-1.0.0').click()
      await confirm(admin, 'Checkout broke on old phones.')
      await eventually(async () => expect(await tid(admin, 'badge-release-1.0.0').count()).toBe(1))
      expect(await statusOf(admin, '1.1.0')).toBe('PUBLISHED')
      expect(await buttonsOf(admin, '1.1.0')).toEqual(['rollback'])
      expect(await buttonsOf(admin, '1.0.0')).toEqual([])
      expect(await tid(admin, 'notice').textContent()).toContain('Rolled back')
      expect((await summary(admin)).release).toBe('1.0.0 (build 1)')
      history = await historyOf(admin)
      expect(history.actions).toEqual(['ROLLBACK', 'PUBLISH', 'PUBLISH'])
      expect(history.first).toContain('Rolled back on stable to 1.0.0 (was 1.1.0)')
      expect(history.first).toContain('Checkout broke on old phones.')

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
      expect((await historyOf(admin)).actions).toEqual(['ROLLBACK', 'PUBLISH', 'PUBLISH'])

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
      await admin.goto(appUrl(miniAppId, 'members'))
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
      await tid(userPage, 'summary-release').waitFor()
      expect(await tid(userPage, 'summary-release').textContent()).toBe('1.0.0 (build 1)')
      await openTab(userPage, 'members')
      await tid(userPage, 'members-unavailable').waitFor()
      await openTab(userPage, 'versions')
      expect(await versionOrder(userPage)).toEqual(['1.1.0', '1.0.0'])

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
      await admin.goto(`${base}/admin`) // drawn afresh: the newcomer registered after the last visit
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
    'upload from the browser: a field error under the version, then the five files dropped on the page go up with a progress bar and the manifest warning',
    async () => {
      await admin.goto(appUrl(miniAppId))
      await tid(admin, 'upload-button').click()
      const form = tid(admin, 'upload-form')
      await form.waitFor()
      expect(new URL(admin.url()).pathname).toBe(`/apps/${APP_ID}/upload`)
      const files: Record<string, { name: string; mimeType: string; buffer: Buffer }> = {
        bundleIos: { name: 'main.ios.jsbundle', mimeType: 'application/javascript', buffer: Buffer.from('console.log("ios 1.3.0")') },
        bundleAndroid: { name: 'index.android.bundle', mimeType: 'application/javascript', buffer: Buffer.from('console.log("android 1.3.0")'.repeat(20_000)) },
        // no "pages" and no version: the server accepts it with a warning about each
        manifest: { name: 'app.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify({ appId: APP_ID, name: 'Shop' })) },
        assetsIos: { name: 'assets-ios.zip', mimeType: 'application/zip', buffer: Buffer.from(buildZip([{ name: 'assets/logo.png', content: 'ios logo 1.3.0' }])) },
        assetsAndroid: { name: 'assets-android.zip', mimeType: 'application/zip', buffer: Buffer.from(buildZip([{ name: 'drawable-mdpi/logo.png', content: 'android logo 1.3.0' }])) },
      }
      for (const [name, file] of Object.entries(files)) await form.locator(`[name=${name}]`).setInputFiles(file)
      await form.locator('[name=version]').fill('one point three')
      watch.expectHttpError('POST', /\/versions\/upload$/, 400)
      const refused = admin.waitForResponse((r) => r.url().endsWith('/versions/upload'))
      await tid(admin, 'upload-submit').click()
      const refusedBody = await (await refused).json()
      expect(refusedBody.code).toBe('VALIDATION_ERROR')
      await tid(admin, 'field-error-version').waitFor()
      expect(await form.locator('[name=version]').getAttribute('aria-invalid')).toBe('true')
      expect(await alertMessage(admin)).toBe(refusedBody.message)

      // empty the inputs, then drop the five files on the drop zone: each lands in its input by its name
      await form.evaluate((element) => {
        for (const input of element.querySelectorAll<HTMLInputElement>('input[type=file]')) input.value = ''
      })
      const dropped = Object.values(files).map((f) => ({ name: f.name, type: f.mimeType, base64: f.buffer.toString('base64') }))
      await tid(admin, 'drop-zone').evaluate((zone, list) => {
        const transfer = new DataTransfer()
        for (const f of list) transfer.items.add(new File([Uint8Array.from(atob(f.base64), (c) => c.charCodeAt(0))], f.name, { type: f.type }))
        zone.dispatchEvent(new DragEvent('drop', { dataTransfer: transfer, bubbles: true, cancelable: true }))
      }, dropped)
      const filled = await form.evaluate((element) => [...element.querySelectorAll<HTMLInputElement>('input[type=file]')].map((i) => `${i.name}:${i.files?.[0]?.name ?? ''}`))
      expect(filled).toEqual(Object.entries(files).map(([name, f]) => `${name}:${f.name}`))

      await form.locator('[name=version]').fill('1.3.0')
      await form.locator('[name=changelog]').fill('Uploaded from the browser.')
      await tid(admin, 'upload-submit').click()
      await tid(admin, 'upload-done').waitFor()
      const progress = tid(admin, 'upload-progress')
      const total = Number(await progress.getAttribute('data-total'))
      expect(total).toBeGreaterThan(500_000)
      expect(Number(await progress.getAttribute('data-loaded'))).toBe(total)
      expect(await tid(admin, 'upload-warnings').locator('li').evaluateAll((items) => items.map((li) => (li as HTMLElement).dataset.code))).toEqual(['MANIFEST_VERSION_SET', 'MANIFEST_WITHOUT_PAGES'])
      expect(await tid(admin, 'notice').textContent()).toContain('Uploaded 1.3.0 (build 4)')
      await screenshot(admin, 'upload-done')

      const workspace = await api('GET', `/api/mini-apps/${miniAppId}/workspace`, { token: cliToken })
      const uploaded = workspace.body.versions.find((v: { version: string }) => v.version === '1.3.0')
      expect(uploaded.status).toBe('DRAFT')
      expect(uploaded.changelog).toBe('Uploaded from the browser.')
      expect(uploaded.files.bundleAndroid.size).toBe(files.bundleAndroid!.buffer.length)
    },
    STEP,
  )

  test(
    'the install dialog: a QR code of the deep link at 4+ px per module with a 4-module quiet zone, the plain link, its expiry and the localhost warning',
    async () => {
      await admin.goto(appUrl(miniAppId, 'versions'))
      await tid(admin, 'install-1.3.0').click()
      const dialog = tid(admin, 'install-dialog')
      await dialog.waitFor()
      const svg = tid(admin, 'qr-1.3.0').locator('svg')
      const deepLink = (await tid(admin, 'qr-1.3.0').getAttribute('data-deep-link'))!
      const modules = Number(await svg.getAttribute('data-modules'))
      const px = Number(await svg.getAttribute('data-module-px'))
      expect(px).toBeGreaterThanOrEqual(4)
      expect(Number(await svg.getAttribute('width'))).toBe(modules * px)
      const drawn = await svg.boundingBox()
      expect(drawn!.width).toBeGreaterThanOrEqual(modules * 4)
      // the drawn modules are exactly the QR code of the deep link with a 4-module border
      const qr = encode(deepLink, { ecc: 'L', border: 4 })
      expect(qr.size).toBe(modules)
      let expected = ''
      qr.data.forEach((row, y) => row.forEach((dark, x) => (expected += dark ? `M${x} ${y}h1v1h-1z` : '')))
      expect(await svg.locator('path').getAttribute('d')).toBe(expected)
      for (let i = 0; i < 4; i++) {
        expect(qr.data[i]!.some(Boolean) || qr.data[modules - 1 - i]!.some(Boolean)).toBe(false)
        expect(qr.data.some((row) => row[i] || row[modules - 1 - i])).toBe(false)
      }
      // the same deep link the API hands out for this version (its token signed a moment apart)
      const workspace = await api('GET', `/api/mini-apps/${miniAppId}/workspace`, { token: cliToken })
      const link = workspace.body.accessLinks.find((l: { version: string }) => l.version === '1.3.0')
      const withoutToken = (url: string) => url.replace(/token(=|%3D)[^&]+/gi, 'token=…')
      expect(withoutToken(deepLink)).toBe(withoutToken(link.deepLink))
      const href = (await tid(admin, 'install-link-1.3.0').getAttribute('href'))!
      expect(withoutToken(href)).toBe(withoutToken(link.installUrl))
      expect(await tid(admin, 'install-link-1.3.0').textContent()).toBe(href)
      // a draft's link expires; this server is on 127.0.0.1, which a phone cannot reach
      expect(await tid(admin, 'link-expiry').textContent()).toContain('expires')
      expect(await tid(admin, 'localhost-warning').textContent()).toContain('127.0.0.1')
      await admin.screenshot({ path: join(import.meta.dir, '..', '..', 'test-output', 'screenshots', 'install-dialog.png') })
      await admin.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base })
      await tid(admin, 'copy-link-1.3.0').click()
      await eventually(async () => expect(await tid(admin, 'copy-link-1.3.0').textContent()).toBe('Copied ✓'))
      expect(await admin.evaluate(() => navigator.clipboard.readText())).toBe(href)
      await tid(admin, 'install-close').click()
      await dialog.waitFor({ state: 'detached' })
      // testers reach the experience version's dialog from the overview too
      await openTab(admin, 'overview')
      await tid(admin, 'install-experience').click()
      await tid(admin, 'qr-1.3.0').waitFor()
      await admin.keyboard.press('Escape')
      await dialog.waitFor({ state: 'detached' })
      await openTab(admin, 'versions')
    },
    STEP,
  )

  test(
    'publish 1.3.0 to beta at 10 %, raise the rollout to 100 %, pause, resume, then revert it',
    async () => {
      await tid(admin, 'publish-1.3.0').click()
      const dialog = tid(admin, 'publish-dialog')
      await dialog.waitFor()
      await tid(admin, 'confirm-channel').fill('beta')
      await tid(admin, 'confirm-rolloutPercent').fill('10')
      await tid(admin, 'confirm-hostVersionRange').fill('>=2.0.0')
      await screenshot(admin, 'publish-dialog')
      await tid(admin, 'confirm-ok').click()
      await dialog.waitFor({ state: 'detached' })
      await eventually(async () => expect(await tid(admin, 'notice').textContent()).toContain('Published 1.3.0 to beta (10 %, host >=2.0.0).'))
      let channels = (await api('GET', `/api/mini-apps/${miniAppId}/channels`, { token: cliToken })).body.channels
      let beta = channels.find((c: { name: string }) => c.name === 'beta')
      expect(beta.release).toMatchObject({ version: '1.3.0', rolloutPercent: 10, hostVersionRange: '>=2.0.0', mandatory: false })
      expect(channels.find((c: { name: string }) => c.name === 'stable').release.version).toBe('1.0.0')

      await openTab(admin, 'overview')
      const card = tid(admin, 'channel-beta')
      expect(await card.getAttribute('data-rollout')).toBe('10')
      expect(await card.getAttribute('data-version')).toBe('1.3.0')
      expect(await card.textContent()).toContain('rolling-out 10 %')
      expect(await card.getAttribute('data-state')).toBe('rolling-out')
      expect(await card.textContent()).toContain('>=2.0.0')
      expect(await tid(admin, 'channel-stable').getAttribute('data-version')).toBe('1.0.0')

      // raise: lower than now is refused in the dialog itself, then 100
      await tid(admin, 'rollout-raise-beta').click()
      const raise = tid(admin, 'rollout-dialog')
      await raise.waitFor()
      expect(await tid(admin, 'confirm-rolloutPercent').inputValue()).toBe('25')
      await tid(admin, 'confirm-rolloutPercent').fill('5')
      await tid(admin, 'confirm-ok').click()
      await raise.getByTestId('field-error-rolloutPercent').waitFor()
      await tid(admin, 'confirm-rolloutPercent').fill('100')
      await tid(admin, 'confirm-ok').click()
      await raise.waitFor({ state: 'detached' })
      await eventually(async () => expect(await tid(admin, 'channel-beta').getAttribute('data-rollout')).toBe('100'))
      expect(await tid(admin, 'rollout-raise-beta').count()).toBe(0)

      // pause says before confirming that devices on 1.3.0 keep it; revert that they go back
      await tid(admin, 'rollout-pause-beta').click()
      expect(await tid(admin, 'pause-dialog').textContent()).toContain('Devices that already run 1.3.0 keep it')
      // complete (100 %): requests that name no version still get it while paused, and the dialog says so
      expect(await tid(admin, 'pause-dialog').textContent()).toContain('Older clients and the release mirror, which name no version, still get 1.3.0 at the frozen 100 %: only Revert stops those.')
      await confirm(admin)
      await eventually(async () => expect(await tid(admin, 'channel-beta').getAttribute('data-state')).toBe('paused'))
      expect(await tid(admin, 'channel-state-beta').textContent()).toBe('paused 100 %')
      channels = (await api('GET', `/api/mini-apps/${miniAppId}/channels`, { token: cliToken })).body.channels
      expect(channels.find((c: { name: string }) => c.name === 'beta')).toMatchObject({ state: 'paused', release: { rolloutPercent: 100, paused: true } })
      await tid(admin, 'rollout-resume-beta').click()
      await eventually(async () => expect(await tid(admin, 'channel-beta').getAttribute('data-state')).toBe('complete'))
      await tid(admin, 'rollout-revert-beta').click()
      // beta had nothing before 1.3.0: the dialog says no device gets it any more, and that those that installed it keep it (nothing to send them back to)
      expect(await tid(admin, 'revert-dialog').textContent()).toContain('No device on beta gets 1.3.0 any more. There is no earlier release to send devices back to: those that installed 1.3.0')
      await confirm(admin)
      await eventually(async () => expect(await tid(admin, 'channel-beta').getAttribute('data-rollout')).toBe('0'))
      expect(await tid(admin, 'channel-state-beta').textContent()).toBe('reverted 0 %')
      channels = (await api('GET', `/api/mini-apps/${miniAppId}/channels`, { token: cliToken })).body.channels
      beta = channels.find((c: { name: string }) => c.name === 'beta')
      expect(beta).toMatchObject({ state: 'reverted', release: { rolloutPercent: 0 } })
      // Complete sends a reverted release to every device at once; reverted again for the rest of the suite
      await tid(admin, 'rollout-complete-beta').click()
      await eventually(async () => expect(await tid(admin, 'channel-beta').getAttribute('data-rollout')).toBe('100'))
      expect(await tid(admin, 'channel-state-beta').textContent()).toBe('complete 100 %')
      await tid(admin, 'rollout-revert-beta').click()
      await confirm(admin)
      await eventually(async () => expect(await tid(admin, 'channel-beta').getAttribute('data-rollout')).toBe('0'))
      await screenshot(admin, 'overview-rollout')

      const history = await historyOf(admin)
      expect(history.actions.slice(0, 7)).toEqual(['ROLLOUT', 'ROLLOUT', 'ROLLOUT', 'ROLLOUT', 'ROLLOUT', 'ROLLOUT', 'PUBLISH'])
      expect(history.first).toContain('Reverted 1.3.0 on beta')
      // the list of miniapps shows both channels, the reverted one as such
      await tid(admin, 'back-to-apps').click()
      await eventually(async () => expect(await tid(admin, `app-live-${APP_ID}`).textContent()).toContain('beta 1.3.0 reverted 0 %'))
      expect(await tid(admin, `app-live-${APP_ID}`).textContent()).toContain('stable 1.0.0')
    },
    STEP,
  )

  test(
    'Tokens: the login and push commands for this server; an API key created with scopes and an app, shown once, used over HTTP and by the CLI, then revoked',
    async () => {
      await tid(admin, 'nav-tokens').click()
      await tid(admin, 'login-command').waitFor()
      expect(await admin.title()).toBe('Tokens · miniship')
      expect(await tid(admin, 'login-command').textContent()).toBe(`miniship login --server ${base}/api`)
      expect(await tid(admin, 'push-command').textContent()).toStartWith('miniship push ')
      await tid(admin, 'copy-login').click()
      await eventually(async () => expect(await admin.evaluate(() => navigator.clipboard.readText())).toBe(`miniship login --server ${base}/api`))

      const openapi = await api('GET', '/api/openapi.json')
      if (!openapi.body.paths['/api/auth/api-keys']) {
        // a server without API keys: the page says so instead of offering a form that cannot work
        await tid(admin, 'keys-unavailable').waitFor()
        console.warn('API keys are not on this server yet: only the fallback of the Tokens page was checked')
        return
      }
      await tid(admin, 'keys-empty').waitFor()
      const form = tid(admin, 'create-key-form')
      await form.locator('[name=name]').fill('ci-shop')
      await form.locator(`[name=miniAppIds][value="${miniAppId}"]`).check()
      await tid(admin, 'create-key-submit').click()
      await tid(admin, 'new-key').waitFor()
      const key = (await tid(admin, 'new-key').textContent())!
      expect(key).toStartWith('msk_')
      await tid(admin, 'key-ci-shop').waitFor()
      const row = await tid(admin, 'key-ci-shop').textContent()
      expect(row).toContain('read, upload')
      expect(row).toContain(APP_ID)
      expect(row).toContain('never')
      expect(row).not.toContain(key) // the list shows the prefix only
      const created = (await api('GET', '/api/auth/api-keys', { token: cliToken })).body.apiKeys.find((k: { name: string }) => k.name === 'ci-shop')
      expect(created).toMatchObject({ scopes: ['read', 'upload'], miniAppIds: [miniAppId], revokedAt: null })

      // the key works over HTTP, for its app, and from the command-line tool in CI style (no login)
      const withKey = await api('GET', `/api/mini-apps/${miniAppId}/workspace`, { token: key })
      expect(withKey.status).toBe(200)
      const ciEnv = { MINISHIP_SERVER: base, MINISHIP_TOKEN: key, XDG_CONFIG_HOME: join(dir, 'ci-config'), HOME: join(dir, 'ci-home') }
      const listed = await runBinary(['apps', '--json'], { env: ciEnv })
      expect(listed.exitCode).toBe(0)
      expect(listed.stdout).toContain(APP_ID)
      // gone after a reload: shown once
      await admin.reload()
      await tid(admin, 'key-ci-shop').waitFor()
      expect(await tid(admin, 'new-key').count()).toBe(0)

      // administrators see every user's keys, with their owner
      await tid(admin, 'nav-admin').click()
      await tid(admin, `admin-key-${created.prefix}`).waitFor()
      expect(await tid(admin, `admin-key-${created.prefix}`).textContent()).toContain(ADMIN.email)
      await tid(admin, 'nav-tokens').click()
      await tid(admin, 'key-ci-shop').waitFor()

      await tid(admin, 'revoke-key-ci-shop').click()
      await confirm(admin)
      await tid(admin, 'key-ci-shop').waitFor({ state: 'detached' })
      expect(await tid(admin, 'notice').textContent()).toContain('Revoked the key ci-shop')
      const refused = await api('GET', `/api/mini-apps/${miniAppId}/workspace`, { token: key })
      expect(refused.status).toBe(401)
      const refusedCli = await runBinary(['apps', '--json'], { env: ciEnv })
      expect(refusedCli.exitCode).toBe(1)

      // an administrator revokes someone's key from the administration page
      const other = await api('POST', '/api/auth/api-keys', { token: cliToken, json: { name: 'laptop', scopes: ['read'] } })
      expect(other.status).toBe(201)
      await tid(admin, 'nav-admin').click()
      await tid(admin, `admin-revoke-key-${other.body.prefix}`).click()
      await confirm(admin)
      await tid(admin, `admin-key-${other.body.prefix}`).waitFor({ state: 'detached' })
      expect((await api('GET', '/api/mini-apps', { token: other.body.key })).status).toBe(401)
    },
    STEP,
  )

  test(
    'Keep me signed in: a second page of the same browser is signed in, sign-out there ends it on the first; unticked, the sign-in stays in its tab',
    async () => {
      const context = await newContext()
      const first = await context.newPage()
      await first.goto(`${base}/apps`)
      await tid(first, 'signin-form').waitFor()
      expect(await tid(first, 'keep-signed-in').isChecked()).toBe(true)
      await signInWithForm(first, ADMIN.email, ADMIN.password)
      await tid(first, 'current-user').waitFor()
      tokens.add((await sessionToken(first))!)

      const second = await context.newPage()
      await second.goto(`${base}/apps`)
      await tid(second, `app-${APP_ID}`).waitFor()
      expect(await tid(second, 'signin-form').count()).toBe(0)

      // sign-out in one ends it in the other (a storage event), without a reload
      await tid(second, 'sign-out').click()
      await tid(second, 'signin-form').waitFor()
      await tid(first, 'signin-form').waitFor()
      expect(await sessionToken(first)).toBeNull()
      expect(await tid(first, 'current-user').count()).toBe(0)

      // unticked: this tab only
      await tid(first, 'keep-signed-in').uncheck()
      await signInWithForm(first, ADMIN.email, ADMIN.password)
      await tid(first, 'current-user').waitFor()
      tokens.add((await sessionToken(first))!)
      expect(await first.evaluate(() => localStorage.getItem('miniship.token'))).toBeNull()
      expect(await first.evaluate(() => sessionStorage.getItem('miniship.token'))).not.toBeNull()
      await second.reload()
      await tid(second, 'signin-form').waitFor()
      // and a tab-only session also ends when another tab signs out
      await signInWithForm(second, ADMIN.email, ADMIN.password)
      await tid(second, 'current-user').waitFor()
      tokens.add((await sessionToken(second))!)
      await tid(second, 'sign-out').click()
      await tid(first, 'signin-form').waitFor()
      expect(await sessionToken(first)).toBeNull()
      await context.close()
    },
    STEP,
  )

  test(
    '100 versions: the versions tab stays under three screens at 1280×800, pages on, and filters by status',
    async () => {
      const created = await api('POST', '/api/mini-apps', { token: cliToken, json: { appId: MANY_APP_ID, name: 'Many versions' } })
      expect(created.status).toBe(201)
      const manyId = created.body.id as string
      let published = ''
      for (let i = 0; i < 100; i++) {
        const version = await upload(`2.0.${i}`, `Build number ${i + 1}.`, MANY_APP_ID)
        if (i === 41) published = version.id
      }
      expect((await api('POST', `/api/mini-apps/${manyId}/versions/${published}/publish`, { token: cliToken, json: {} })).status).toBe(200)

      const context = await newContext({ width: 1280, height: 800 })
      const page = await context.newPage()
      await page.goto(`${base}/signin`)
      await signInWithForm(page, ADMIN.email, ADMIN.password)
      await tid(page, 'current-user').waitFor()
      tokens.add((await sessionToken(page))!)
      await page.goto(appUrl(manyId, 'versions'))
      await tid(page, 'versions-table').waitFor()
      const firstPage = await versionOrder(page)
      expect(firstPage).toEqual(Array.from({ length: 25 }, (_, i) => `2.0.${99 - i}`))
      const height = await page.evaluate(() => document.documentElement.scrollHeight)
      expect(height).toBeLessThan(3 * 800)
      await screenshot(page, 'versions-100')

      await tid(page, 'versions-more').click()
      await eventually(async () => expect((await versionOrder(page)).length).toBe(50))
      const twoPages = await versionOrder(page)
      expect(twoPages).toEqual(Array.from({ length: 50 }, (_, i) => `2.0.${99 - i}`))
      for (let i = 0; i < 2; i++) await tid(page, 'versions-more').click().then(() => eventually(async () => expect((await versionOrder(page)).length).toBe(75 + 25 * i)))
      expect(await tid(page, 'versions-more').count()).toBe(0)
      expect(new Set(await versionOrder(page)).size).toBe(100)

      await tid(page, 'versions-filter').selectOption('PUBLISHED')
      await eventually(async () => expect(await versionOrder(page)).toEqual(['2.0.41']))
      expect(new URL(page.url()).search).toBe('?status=PUBLISHED')
      await page.reload()
      await tid(page, 'versions-table').waitFor()
      expect(await versionOrder(page)).toEqual(['2.0.41'])
      expect(await tid(page, 'versions-filter').inputValue()).toBe('PUBLISHED')
      await context.close()
    },
    60_000,
  )

  test(
    'Settings: name and description saved, and the experience version made public',
    async () => {
      await admin.goto(appUrl(miniAppId, 'settings'))
      const form = tid(admin, 'edit-app-form')
      await form.waitFor()
      expect(await form.locator('[name=experiencePublic]').isChecked()).toBe(false)
      await form.locator('[name=description]').fill('Buy things inside the host app, now with a wish list')
      await form.locator('[name=experiencePublic]').check()
      await tid(admin, 'edit-app-submit').click()
      await eventually(async () => expect(await tid(admin, 'notice').textContent()).toContain('Saved'))
      const app = await api('GET', `/api/mini-apps/${miniAppId}`, { token: cliToken })
      expect(app.body.description).toBe('Buy things inside the host app, now with a wish list')
      expect(app.body.experiencePublic).toBe(true)
      await eventually(async () => expect(await form.locator('[name=experiencePublic]').isChecked()).toBe(true))
      expect(await tid(admin, 'app-title').textContent()).toBe('Shop')

      // the list's search narrows by name or App ID
      await tid(admin, 'back-to-apps').click()
      await tid(admin, 'apps-search').fill('SHOP')
      expect(await tid(admin, `app-${APP_ID}`).isVisible()).toBe(true)
      expect(await tid(admin, `app-${MANY_APP_ID}`).isVisible()).toBe(false)
      await tid(admin, 'apps-search').fill('nothing like this')
      await tid(admin, 'apps-no-match').waitFor()
      expect(await tid(admin, `app-${APP_ID}`).isVisible()).toBe(false)
    },
    STEP,
  )

  test(
    'every page at 1280×800 and 390×844 (screenshots), and at 360 px with 64-character names and an 80-character word: nothing scrolls sideways',
    async () => {
      const long = await api('POST', '/api/mini-apps', { token: cliToken, json: { appId: LONG_APP_ID, name: LONG_NAME, description: `An unbroken word: ${'z'.repeat(80)}` } })
      expect(long.status).toBe(201)
      const session = await api('POST', '/api/auth/cli/sessions')
      const pages: [string, string, string][] = [
        ['apps', '/apps', `app-${LONG_APP_ID}`],
        ['overview', `/apps/${miniAppId}`, 'channel-beta'],
        ['versions', `/apps/${miniAppId}/versions`, 'versions-table'],
        ['upload', `/apps/${miniAppId}/upload`, 'upload-form'],
        ['history', `/apps/${miniAppId}/history`, 'release-history'],
        ['settings', `/apps/${miniAppId}/settings`, 'edit-app-form'],
        ['members', `/apps/${miniAppId}/members`, 'members-list'],
        ['long-app', `/apps/${long.body.id}`, 'app-title'],
        ['tokens', '/tokens', 'login-command'],
        ['admin', '/admin', 'users-table'],
        ['cli-approval', `/cli/authorize?code=${session.body.code}`, 'cli-approve'],
      ]
      for (const [width, height, shots] of [
        [1280, 800, true],
        [390, 844, true],
        [360, 780, false],
      ] as const) {
        const context = await newContext({ width, height })
        const page = await context.newPage()
        await page.goto(`${base}/`)
        await tid(page, 'signin-form').waitFor()
        await noHorizontalScroll(page, 'sign-in', width)
        if (shots) await screenshot(page, `sign-in-${width}`)
        await signInWithForm(page, ADMIN.email, ADMIN.password)
        await tid(page, `app-${APP_ID}`).waitFor()
        tokens.add((await sessionToken(page))!)
        for (const [name, path, ready] of pages) {
          await page.goto(`${base}${path}`)
          await tid(page, ready).waitFor()
          await page.waitForLoadState('networkidle')
          await noHorizontalScroll(page, name, width)
          if (shots) await screenshot(page, `${name}-${width}`)
        }
        expect(await tid(page, 'cli-code').isVisible()).toBe(true)
        // an old #/ bookmark opens its page at the real path
        await page.goto(`${base}/#/admin`)
        await tid(page, 'users-table').waitFor()
        expect(new URL(page.url()).pathname).toBe('/admin')
        // signing out forgets the token and shows the sign-in form
        await tid(page, 'sign-out').click()
        await tid(page, 'signin-form').waitFor()
        expect(await sessionToken(page)).toBeNull()
        expect(await tid(page, 'current-user').count()).toBe(0)
        await context.close()
      }
    },
    180_000, // three widths of every page: over a minute and a half on a busy machine
  )

  test(
    'insights on the overview: adoption and downloads per day drawn as SVG, and an empty state without data',
    async () => {
      const context = await newContext({ width: 1280, height: 800 })
      const page = await context.newPage()
      await page.goto(`${base}/signin`)
      await signInWithForm(page, ADMIN.email, ADMIN.password)
      await tid(page, 'current-user').waitFor()
      tokens.add((await sessionToken(page))!)
      const paths = Object.keys((await api('GET', '/api/openapi.json')).body.paths)
      const serverHasInsights = paths.some((path) => /^\/api\/mini-apps\/\{[^}]+\}\/insights$/.test(path))
      await page.goto(appUrl(miniAppId))
      await tid(page, 'channel-stable').waitFor()
      await page.waitForLoadState('networkidle')
      if (serverHasInsights) {
        // real events from two devices on 1.0.0: the panel counts the devices, the live release's share, and draws the adoption
        await tid(page, 'insights').waitFor()
        const workspace = await api('GET', `/api/mini-apps/${miniAppId}/workspace`, { token: cliToken })
        const live = workspace.body.versions.find((v: { version: string }) => v.version === '1.0.0').id
        const events = ['device-a', 'device-b'].flatMap((deviceId) => ['installed', 'launched'].map((event) => ({ appId: APP_ID, versionId: live, platform: 'ios', event, deviceId })))
        const sent = await api('POST', '/api/mini-apps/access/events', { json: { events } })
        expect(sent.status).toBe(202)
        expect(sent.body.accepted).toBe(4)
        await page.reload()
        await tid(page, 'insights').waitFor()
        await eventually(async () => expect(await tid(page, 'insights').locator('.figures').textContent()).toContain('Active devices2'))
        expect(await tid(page, 'insights').locator('.figures').textContent()).toContain('On 1.0.0100 %')
        expect(await tid(page, 'insights-empty').count()).toBe(0)
        expect(await tid(page, 'adoption-chart').locator('.chart-legend').textContent()).toContain('1.0.0')
      } else expect(await tid(page, 'insights').count()).toBe(0) // no endpoint, no panel (and no request that answers 404)

      // the drawing, with insights answered in the page (the same shape whether or not this server has them yet)
      const day = (d: number, versions: [string, string, number, number, number][]) => ({
        day: `2026-11-${String(d).padStart(2, '0')}`,
        versions: versions.map(([versionId, version, ios, android, activeDevices]) => ({ versionId, version, downloads: { ios, android }, installs: ios + android, failures: 0, activeDevices })),
      })
      let answer = {
        from: '2026-11-16',
        to: '2026-11-22',
        days: [16, 17, 18, 19, 20, 21, 22].map((d, i) => day(d, [['v1', '1.0.0', 5 - (i % 3), 3, 40 - i * 5], ['v2', '1.3.0', i, i * 2, i * 6]])),
        totals: { downloads: { ios: 40, android: 63 }, installs: 103, failures: 2, activeDevices: 61 },
        adoption: { versionId: null, share: 0.42 },
        recentFailures: [{ versionId: 'v2', version: '1.3.0', platform: 'ios', channel: 'beta', message: 'checksum mismatch', at: '2026-11-22T10:00:00.000Z' }],
      }
      await page.route('**/api/openapi.json', async (route) => {
        const response = await route.fetch()
        const json = await response.json()
        json.paths['/api/mini-apps/{miniAppId}/insights'] = { get: { summary: 'stubbed in this page' } }
        await route.fulfill({ response, json })
      })
      await page.route(/\/api\/mini-apps\/[^/]+\/insights\?/, (route) => route.fulfill({ json: answer }))
      await page.reload()
      await tid(page, 'adoption-chart').waitFor()
      // the adoption chart is the insights module's (web/charts/adoption.ts): one area per version
      expect(await tid(page, 'adoption-chart').locator('svg polygon').count()).toBe(2)
      const legend = await tid(page, 'adoption-chart').locator('.chart-legend li').allTextContents()
      expect(legend.map((item) => item.trim().split(':')[0])).toEqual(['1.0.0', '1.3.0'])
      expect(await tid(page, 'downloads-chart').locator('svg rect').count()).toBe(14)
      expect(await tid(page, 'downloads-chart').locator('.chart-legend').textContent()).toBe(' iOS Android')
      expect(await tid(page, 'downloads-chart').locator('.chart-range').textContent()).toBe('2026-11-16 – 2026-11-22')
      expect(await tid(page, 'insights').textContent()).toContain('103')
      expect(await tid(page, 'insights').textContent()).toContain('Recent install failures (1)')
      // each failure names the channel the device reported it on
      expect(await tid(page, 'recent-failure').textContent()).toStartWith('1.3.0 on beta: checksum mismatch · ')
      await screenshot(page, 'overview-insights')
      // the whole overview, channels and insights, fits one 1280×800 screen
      expect(await page.evaluate(() => document.documentElement.scrollHeight)).toBeLessThanOrEqual(800)

      answer = { ...answer, days: answer.days.map((d) => ({ ...d, versions: [] })), totals: { downloads: { ios: 0, android: 0 }, installs: 0, failures: 0, activeDevices: 0 }, recentFailures: [] }
      await page.reload()
      await tid(page, 'insights-empty').waitFor()
      expect(await tid(page, 'adoption-chart').count()).toBe(0)
      await context.close()
    },
    STEP,
  )

  test(
    'dark mode follows the system',
    async () => {
      const context = await newContext({ width: 1280, height: 800, dark: true })
      const page = await context.newPage()
      await page.goto(`${base}/signin`)
      await signInWithForm(page, ADMIN.email, ADMIN.password)
      await tid(page, 'current-user').waitFor()
      tokens.add((await sessionToken(page))!)
      await page.goto(appUrl(miniAppId))
      await tid(page, 'channel-beta').waitFor()
      const background = await page.evaluate(() => getComputedStyle(document.body).backgroundColor)
      const [r, g, b] = background.match(/\d+/g)!.map(Number)
      expect(r! + g! + b!).toBeLessThan(3 * 60)
      await screenshot(page, 'overview-dark')
      await page.goto(appUrl(miniAppId, 'versions'))
      await tid(page, 'versions-table').waitFor()
      await screenshot(page, 'versions-dark')
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
