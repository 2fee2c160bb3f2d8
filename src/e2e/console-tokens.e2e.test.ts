// The Tokens page: the box with a key's secret ("copy it now") is about that key only.
import { describe, expect, test } from 'bun:test'
import type { Locator } from 'playwright-core'
import { hasChromium } from './browser-support'
import { signIn } from './console-fixture'
import { consoleSession } from './console-session'

describe.skipIf(!hasChromium)('the Tokens page', () => {
  const session = consoleSession({ seed: false })

  /** A signed-in page on /tokens, and its test-id lookup. */
  async function tokensPage() {
    const { fixture, browser, watch } = session
    const context = await browser.newContext()
    watch.attach(context)
    const page = await context.newPage()
    const tid = (id: string) => page.getByTestId(id)
    await signIn(page, fixture.base)
    await page.goto(`${fixture.base}/tokens`)
    return { context, page, tid }
  }

  /** Creates a key named `name` in the form; answers the secret the page shows for it. */
  async function createKey(tid: (id: string) => Locator, name: string): Promise<string> {
    await tid('create-key-form').locator('[name=name]').fill(name)
    await tid('create-key-submit').click()
    await tid('new-key').waitFor()
    const secret = (await tid('new-key').textContent()) ?? ''
    await tid(`key-${name}`).waitFor()
    return secret
  }

  test('a key revoked right after it was created takes its secret off the page with it', async () => {
    const { context, page, tid } = await tokensPage()
    await tid('keys-empty').waitFor()

    const secret = await createKey(tid, 'short-lived')
    expect(secret).toStartWith('msk_')

    await tid('revoke-key-short-lived').click()
    await page.locator('dialog[open]').getByTestId('confirm-ok').click()
    await tid('keys-empty').waitFor()
    await tid('notice').filter({ hasText: 'Revoked the key short-lived.' }).waitFor()
    // "copy it now" for a key that no longer works would be wrong
    expect(await tid('new-key').count()).toBe(0)
    expect(await page.content()).not.toContain(secret)
    await context.close()
  })

  test('revoking another key leaves the new key on screen: it has not been copied yet', async () => {
    const { fixture } = session
    await fixture.api('POST', '/api/auth/api-keys', { token: fixture.token, json: { name: 'older', scopes: ['read'] } })
    const { context, page, tid } = await tokensPage()
    await tid('key-older').waitFor()

    const secret = await createKey(tid, 'kept')

    await tid('revoke-key-older').click()
    await page.locator('dialog[open]').getByTestId('confirm-ok').click()
    await tid('key-older').waitFor({ state: 'detached' })
    expect(await tid('new-key').textContent()).toBe(secret)
    // leaving the page is what ends it
    await tid('nav-apps').click()
    await page.waitForURL(/\/apps$/)
    await tid('nav-tokens').click()
    await tid('key-kept').waitFor()
    expect(await tid('new-key').count()).toBe(0)
    await context.close()
  })
})
