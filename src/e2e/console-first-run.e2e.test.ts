// The first sign-in after set-up: a checklist (create a miniapp, copy the push command, decide
// registration, add a signing key) above the miniapps, which ticks itself off, goes away once done,
// and can be hidden.
import { generateKeyPairSync } from 'node:crypto'
import { describe, expect, test } from 'bun:test'
import type { Page } from 'playwright-core'
import { hasChromium, screenshot } from './browser-support'
import { FIXTURE_ADMIN, uploadForm } from './console-fixture'
import { consoleSession } from './console-session'
import { layoutProblems } from './console-layout'

/** The base64 raw public key of a new Ed25519 pair, as the Signing card takes it. */
function publicKeyBase64(): string {
  return Buffer.from(generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }).x!, 'base64url').toString('base64')
}

const USER = { email: 'regular@example.com', displayName: 'Regular User', password: 'regular-password-1' }

describe.skipIf(!hasChromium)('the first sign-in after set-up', () => {
  const session = consoleSession({ seed: false })
  const { watch, contexts } = session

  async function signedIn(who: { email: string; password: string }, viewport = { width: 375, height: 812 }): Promise<Page> {
    const context = await session.browser.newContext({ viewport })
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: session.fixture.base })
    watch.attach(context)
    contexts.push(context)
    const page = await context.newPage()
    await page.goto(`${session.fixture.base}/signin`)
    await page.getByTestId('signin-form').locator('[name=email]').fill(who.email)
    await page.getByTestId('signin-form').locator('[name=password]').fill(who.password)
    await page.getByTestId('signin-submit').click()
    await page.getByTestId('current-user').waitFor()
    return page
  }

  const doneOf = (page: Page) =>
    page.locator('[data-testid=checklist] li').evaluateAll((items) => Object.fromEntries(items.map((li) => [(li as HTMLElement).dataset.testid!.slice('checklist-'.length), (li as HTMLElement).dataset.done === 'true'])))


  test('the checklist ticks off a created miniapp, a copied push command, the registration decision and a signing key, then goes away for good', async () => {
    const page = await signedIn(FIXTURE_ADMIN)
    await page.getByTestId('checklist').waitFor()
    expect(await doneOf(page)).toEqual({ 'create-miniapp': false, 'copy-push': false, registration: false, 'signing-key': false })
    expect(await page.getByTestId('checklist').textContent()).toContain('0 of 4 done')
    expect(await layoutProblems(page)).toEqual([])
    await screenshot(page, 'first-run-checklist-375')

    const form = page.getByTestId('create-app-form')
    await form.locator('[name=appId]').fill('com.example.first')
    await form.locator('[name=name]').fill('First')
    await page.getByTestId('create-app-submit').click()
    await page.getByTestId('app-title').waitFor()
    await page.getByTestId('back-to-apps').click()
    await page.getByTestId('app-com.example.first').waitFor()
    expect(await doneOf(page)).toEqual({ 'create-miniapp': true, 'copy-push': false, registration: false, 'signing-key': false })

    await page.getByTestId('checklist-copy-command').click()
    await page.locator('li[data-testid=checklist-copy-push][data-done=true]').waitFor()
    // it works as copied on the miniapp just created: no --channel, since that miniapp has only stable
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe('miniship push ./build --app com.example.first --version 1.0.0')
    expect(await doneOf(page)).toEqual({ 'create-miniapp': true, 'copy-push': true, registration: false, 'signing-key': false })
    expect(await page.getByTestId('checklist').textContent()).toContain('2 of 4 done')

    await page.getByTestId('checklist-registration-done').click()
    await page.locator('li[data-testid=checklist-registration][data-done=true]').waitFor()
    expect(await page.getByTestId('checklist').textContent()).toContain('3 of 4 done')
    expect(await layoutProblems(page)).toEqual([])

    // the signing step links to the miniapp's Settings › Signing, where the key is added
    await page.getByTestId('checklist-signing-link').click()
    const keyForm = page.getByTestId('add-signing-key-form')
    await keyForm.locator('[name=name]').fill('release laptop')
    await keyForm.locator('[name=publicKey]').fill(publicKeyBase64())
    await page.getByTestId('add-signing-key-submit').click()
    await page.getByTestId('signing-keys').waitFor()
    await page.getByTestId('back-to-apps').click()
    await page.getByTestId('app-com.example.first').waitFor()
    expect(await page.getByTestId('checklist').count()).toBe(0)
    await page.reload()
    await page.getByTestId('app-com.example.first').waitFor()
    expect(await page.getByTestId('checklist').count()).toBe(0)
  })

  test('in another browser: the Tokens page’s own Copy counts, and “Hide these steps” hides it for good', async () => {
    const page = await signedIn(FIXTURE_ADMIN, { width: 1280, height: 800 })
    await page.getByTestId('checklist').waitFor()
    // what this browser has not seen is not done here; the miniapp and its key are known to the server
    expect(await doneOf(page)).toEqual({ 'create-miniapp': true, 'copy-push': false, registration: false, 'signing-key': true })
    await page.getByTestId('nav-tokens').click()
    await page.getByTestId('copy-push').click()
    await page.getByTestId('nav-apps').click()
    await page.getByTestId('checklist').waitFor()
    expect(await doneOf(page)).toEqual({ 'create-miniapp': true, 'copy-push': true, registration: false, 'signing-key': true })
    await screenshot(page, 'first-run-checklist-1280')

    await page.getByTestId('checklist-dismiss').click()
    await page.getByTestId('checklist').waitFor({ state: 'detached' })
    await page.reload()
    await page.getByTestId('app-com.example.first').waitFor()
    expect(await page.getByTestId('checklist').count()).toBe(0)
  })

  test('a version pushed before the console was opened ticks off the push step, in a browser that never copied it', async () => {
    const { fixture } = session
    expect((await fixture.api('POST', '/api/mini-apps/by-app-id/com.example.first/versions/upload', { token: fixture.token, body: uploadForm('com.example.first', '1.0.0', 'first push') })).status).toBe(201)
    const page = await signedIn(FIXTURE_ADMIN)
    await page.getByTestId('checklist').waitFor()
    expect(await doneOf(page)).toEqual({ 'create-miniapp': true, 'copy-push': true, registration: false, 'signing-key': true })
  })

  test('a regular user never sees it: the steps are an administrator’s', async () => {
    expect((await session.fixture.api('POST', '/api/admin/users', { token: session.fixture.token, json: { ...USER, role: 'USER' } })).status).toBe(201)
    const page = await signedIn(USER)
    await page.getByTestId('apps-empty').waitFor()
    expect(await page.getByTestId('checklist').count()).toBe(0)
    // the empty list points at the New miniapp form where it is: above it
    expect(await page.getByTestId('apps-empty').textContent()).toContain('with the form above')
    expect((await page.getByTestId('create-app-form').boundingBox())!.y).toBeLessThan((await page.getByTestId('apps-empty').boundingBox())!.y)
  })
})
