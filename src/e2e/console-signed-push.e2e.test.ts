// A miniapp that requires signed versions, in the console at phone width (390x844): the Upload page says
// up front that the console cannot upload it, in the server's words, with the push command that signs;
// the first-steps checklist gives that same command, as the Tokens page does. And an address the
// console has no page for opens the console's "not found" page, not the server's JSON.
import { describe, expect, test } from 'bun:test'
import type { Page } from 'playwright-core'
import { signatureRequiredText } from '../modules/signing/words'
import { hasChromium, screenshot } from './browser-support'
import { consoleSession } from './console-session'
import { layoutProblems } from './console-layout'

const APP_ID = 'com.example.signedonly'
const SIGNED_PUSH = `miniship push ./build --app ${APP_ID} --version 1.0.0 --sign-key release.pem`
const phone = { width: 390, height: 844 }

describe.skipIf(!hasChromium)('the console on a phone: a miniapp that requires signed versions, and an address with no page', () => {
  const session = consoleSession({
    seed: false,
    prepare: async (fixture) => {
      const as = { token: fixture.token }
      const app = await fixture.api('POST', '/api/mini-apps', { ...as, json: { appId: APP_ID, name: 'Signed only' } })
      expect(app.status).toBe(201)
      expect((await fixture.api('PATCH', `/api/mini-apps/${app.body.id}`, { ...as, json: { requireSignature: true } })).status).toBe(200)
    },
  })
  const { watch } = session

  const phonePage = (): Promise<Page> => session.signedInPage(phone, { clipboard: true })

  test('the Upload page says the server refuses an unsigned upload, offers no form, and gives the command that signs', async () => {
    const page = await phonePage()
    await page.goto(`${session.fixture.base}/apps/${APP_ID}/upload`)
    await page.locator('#upload-title').waitFor()
    // no form that can only be refused, and the server's and the CLI's words before anything is filled in
    expect(await page.getByTestId('upload-form').count()).toBe(0)
    expect(await page.getByTestId('upload-signature-required-text').textContent()).toBe(signatureRequiredText(APP_ID, 'upload'))
    expect(await page.getByTestId('upload-submit').count()).toBe(0)
    expect(await page.locator('input[type=file]').count()).toBe(0)
    expect(await page.getByTestId('upload-push-command').textContent()).toBe(SIGNED_PUSH)
    await page.getByTestId('copy-upload-push').click()
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(SIGNED_PUSH)
    expect(await layoutProblems(page)).toEqual([])
    await screenshot(page, 'upload-signature-required-390')
    // the same command as the Tokens page's
    await page.goto(`${session.fixture.base}/tokens`)
    expect(await page.getByTestId('push-command').textContent()).toBe(SIGNED_PUSH)
  })

  test('the first-steps checklist copies the push command that signs, the Tokens page\'s', async () => {
    const page = await phonePage()
    await page.getByTestId('checklist').waitFor()
    expect(await page.getByTestId('checklist-copy-push').textContent()).toContain(SIGNED_PUSH)
    await page.getByTestId('checklist-copy-command').click()
    await page.locator('li[data-testid=checklist-copy-push][data-done=true]').waitFor()
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(SIGNED_PUSH)
    expect(await layoutProblems(page)).toEqual([])
  })

  test('an address with no console page opens the console\'s "not found" page (404, HTML, a link home), not the JSON error', async () => {
    const page = await phonePage()
    for (const path of ['/nowhere', '/register']) {
      watch.expectHttpError('GET', new RegExp(`^${path}$`), 404)
      const response = await page.goto(`${session.fixture.base}${path}`)
      expect(response!.status()).toBe(404)
      expect(response!.headers()['content-type']).toBe('text/html; charset=utf-8')
      expect(response!.headers()['content-security-policy']).toContain("frame-ancestors 'none'")
      expect(await page.locator('h1').textContent()).toBe('Page not found')
      expect(await page.locator('body').textContent()).not.toContain('ROUTE_NOT_FOUND')
      expect(await layoutProblems(page)).toEqual([])
    }
    await screenshot(page, 'not-found-390')
    await page.getByRole('link', { name: 'Go to the miniapps' }).click()
    await page.getByTestId('app-' + APP_ID).waitFor()
    expect(new URL(page.url()).pathname).toBe('/apps')
  })
})
