// Remove channel… on the Overview: a channel that never served a release goes, with the words of
// `miniship channels rm`; one that serves a release stays, and the page shows the server's refusal.
import { describe, expect, test } from 'bun:test'
import type { Page } from 'playwright-core'
import { hasChromium, screenshot } from './browser-support'
import { FIXTURE_APP_ID, signIn } from './console-fixture'
import { consoleSession } from './console-session'
import { layoutProblems } from './console-layout'

describe.skipIf(!hasChromium)('removing a channel in the console', () => {
  const session = consoleSession()
  const { watch, contexts } = session

  async function overview(viewport = { width: 1280, height: 800 }): Promise<{ page: Page; tid: (id: string) => ReturnType<Page['getByTestId']> }> {
    const context = await session.browser.newContext({ viewport })
    watch.attach(context)
    contexts.push(context)
    const page = await context.newPage()
    await signIn(page, session.fixture.base)
    await page.goto(`${session.fixture.base}/apps/${FIXTURE_APP_ID}`)
    await page.getByTestId('channels').waitFor()
    return { page, tid: (id: string) => page.getByTestId(id) }
  }

  const channelsPath = () => `/api/mini-apps/${session.fixture.shop!.id}/channels`
  const as = () => ({ token: session.fixture.token })

  async function createChannel(name: string): Promise<void> {
    const created = await session.fixture.api('POST', channelsPath(), { ...as(), json: { name } })
    expect(created.status).toBe(201)
  }

  async function channelNames(): Promise<string[]> {
    const listed = await session.fixture.api('GET', channelsPath(), as())
    return (listed.body as { channels: { name: string }[] }).channels.map((c) => c.name)
  }

  test('a channel that never served a release is removed: its card goes and the notice says what the CLI says', async () => {
    await createChannel('qa-team')
    const { page, tid } = await overview()
    await tid('channel-qa-team').waitFor()
    // stable always exists: no button on its card
    expect(await tid('channel-remove-stable').count()).toBe(0)

    await tid('channel-remove-qa-team').click()
    const dialog = tid('remove-channel-dialog')
    await dialog.waitFor()
    expect(await dialog.textContent()).toContain('Only a channel that never served a release (or whose releases were all rolled back) can be removed; stable never.')
    expect(await tid('remove-channel-warning').count()).toBe(0)
    // Cancel leaves it
    await dialog.getByTestId('confirm-cancel').click()
    await dialog.waitFor({ state: 'detached' })
    expect(await channelNames()).toContain('qa-team')

    await tid('channel-remove-qa-team').click()
    await dialog.getByRole('button', { name: 'Remove qa-team' }).click()
    await tid('notice').getByText(`Removed channel qa-team of ${FIXTURE_APP_ID}.`).waitFor()
    await tid('channel-qa-team').waitFor({ state: 'detached' })
    expect(await tid('channel-stable').count()).toBe(1)
    expect(await channelNames()).toEqual(['stable'])
    expect(await page.locator('dialog[open]').count()).toBe(0)
  })

  test('a channel that serves a release stays: the dialog warns, and the alert shows the server’s refusal', async () => {
    await createChannel('beta')
    const workspace = await session.fixture.api('GET', `/api/mini-apps/${session.fixture.shop!.id}/workspace`, as())
    const v100 = (workspace.body as { versions: { id: string; version: string }[] }).versions.find((v) => v.version === '1.0.0')!
    const published = await session.fixture.api('POST', `/api/mini-apps/${session.fixture.shop!.id}/versions/${v100.id}/publish`, { ...as(), json: { channel: 'beta', rolloutPercent: 100, mandatory: true } })
    expect(published.status).toBe(200)

    const { page, tid } = await overview()
    await tid('channel-beta').waitFor()
    await tid('channel-remove-beta').click()
    await tid('remove-channel-warning').getByText('beta serves 1.0.0: the server will refuse to remove it.').waitFor()
    await screenshot(page, 'remove-channel-dialog')

    watch.expectHttpError('DELETE', /\/channels\/beta$/, 409)
    await tid('remove-channel-dialog').getByRole('button', { name: 'Remove beta' }).click()
    await tid('alert').getByText('Channel beta has releases; only a channel that never served one (or whose releases were all rolled back) can be deleted').waitFor()
    // the page is drawn again: the card is still there, the message too
    await tid('channel-beta').waitFor()
    expect(await tid('notice').textContent()).toBe('')
    expect(await tid('alert').textContent()).toContain('Channel beta has releases')
    expect(await channelNames()).toEqual(['stable', 'beta'])
    await screenshot(page, 'remove-channel-refused')
    // at 1280 px stable's four buttons (rolling out) leave its guard line no room beside them: it goes under them, whole
    expect(await layoutProblems(page)).toEqual([])
    const guardWidth = await tid('channel-stable').locator('.guard').evaluate((element) => element.getBoundingClientRect().width)
    expect(guardWidth).toBeGreaterThan(100)
  })

  test('at 375 px the card with the mandatory badge and Remove channel… still fits', async () => {
    // beta from the test above: a release, mandatory, and the button in its head
    const { page, tid } = await overview({ width: 375, height: 812 })
    await tid('channel-remove-beta').waitFor()
    await page.waitForLoadState('networkidle')
    await screenshot(page, 'remove-channel-phone')
    expect(await layoutProblems(page)).toEqual([])
  })
})
