// The console names the server's --password-min-length wherever a password is set (create user, reset
// password, register), not the contract's 6: the hints read GET /api/info's passwordMinLength.
import { describe, expect, test } from 'bun:test'
import type { Locator } from 'playwright-core'
import { hasChromium } from './browser-support'
import { FIXTURE_ADMIN, signIn } from './console-fixture'
import { consoleSession } from './console-session'

/** The hint a field's input is described by (dom.ts's field(): aria-describedby). */
async function hintOf(input: Locator): Promise<string> {
  const id = await input.getAttribute('aria-describedby')
  expect(id).toBeTruthy()
  return (await input.page().locator(`[id="${id}"]`).textContent()) ?? ''
}

describe.skipIf(!hasChromium)('password hints follow --password-min-length', () => {
  const session = consoleSession({ seed: false, serverArgs: ['--password-min-length', '10'] })

  test('create user, reset password and register all say "At least 10 characters."; a shorter one is refused with the same number', async () => {
    const { fixture, browser, watch } = session
    expect((await fixture.api('GET', '/api/info')).body.passwordMinLength).toBe(10)
    const context = await browser.newContext()
    session.contexts.push(context)
    watch.attach(context)
    const page = await context.newPage()
    await signIn(page, fixture.base)
    await page.goto(`${fixture.base}/admin`)
    const form = page.getByTestId('create-user-form')
    await form.waitFor()
    expect(await hintOf(form.locator('[name=password]'))).toBe('At least 10 characters. Give it to the person yourself.')

    await page.getByTestId(`reset-password-${FIXTURE_ADMIN.email}`).click()
    const dialog = page.getByTestId('confirm-dialog')
    await dialog.waitFor()
    expect(await hintOf(dialog.getByTestId('confirm-password'))).toBe('At least 10 characters.')
    await page.getByTestId('confirm-cancel').click()
    await dialog.waitFor({ state: 'detached' })

    // the server refuses what the hint rules out, in the same number
    await form.locator('[name=email]').fill('short@example.com')
    await form.locator('[name=displayName]').fill('Short')
    await form.locator('[name=password]').fill('nine-char')
    watch.expectHttpError('POST', /^\/api\/admin\/users$/, 400)
    await page.getByTestId('create-user-submit').click()
    expect(await form.getByTestId('field-error-password').textContent()).toBe('must be at least 10 characters')

    // the register form (signed out) says the same
    const signedOut = await browser.newContext()
    session.contexts.push(signedOut)
    watch.attach(signedOut)
    const visitor = await signedOut.newPage()
    await visitor.goto(`${fixture.base}/signin`)
    await visitor.getByTestId('show-register').click()
    expect(await hintOf(visitor.getByTestId('register-form').locator('[name=password]'))).toBe('At least 10 characters.')
  }, 60_000)
})
