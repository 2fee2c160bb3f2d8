// The console on a desktop (1280 × 800) when what it shows is out of date or refused: a release
// changed elsewhere, a publish the server would refuse, a command-line sign-in already settled.
import { describe, expect, test } from 'bun:test'
import type { Page } from 'playwright-core'
import { hasChromium } from './browser-support'
import { consoleSession } from './console-session'

const DESKTOP = { width: 1280, height: 800 }

describe.skipIf(!hasChromium)('the console on a desktop', () => {
  const session = consoleSession()
  const { watch } = session

  const signedInPage = (): Promise<Page> => session.signedInPage(DESKTOP)

  test('a release paused elsewhere: Raise… is refused with the server’s message, and the card then shows it paused', async () => {
    const page = await signedInPage()
    const tid = (id: string) => page.getByTestId(id)
    await page.goto(`${session.fixture.base}/apps/${session.fixture.shop!.appId}`)
    expect(await tid('channel-state-stable').textContent()).toBe('rolling-out 10 %')
    // someone pauses it from the command line while this page is open
    const paused = await session.fixture.api('PATCH', `/api/mini-apps/${session.fixture.shop!.id}/channels/stable/rollout`, { token: session.fixture.token, json: { paused: true } })
    expect(paused.status).toBe(200)

    watch.expectHttpError('PATCH', /\/channels\/stable\/rollout$/, 409)
    await tid('rollout-raise-stable').click()
    await tid('rollout-dialog').getByRole('button', { name: 'Raise rollout' }).click()
    await tid('alert').getByText('is paused at 10 %').waitFor()
    // the page is drawn again: the state the message speaks of, and Resume instead of Raise…
    await page.getByTestId('channel-stable').and(page.locator('[data-state="paused"]')).waitFor({ timeout: 5000 })
    expect(await tid('channel-state-stable').textContent()).toBe('paused 10 %')
    expect(await tid('rollout-resume-stable').count()).toBe(1)
    expect(await tid('rollout-raise-stable').count()).toBe(0)
    expect(await tid('alert').textContent()).toContain('is paused at 10 %')
    // who paused it, named as History names people: display name with email (the "since … by" line keeps it on hover)
    const me = (await session.fixture.api('GET', '/api/auth/me', { token: session.fixture.token })).body as { email: string; displayName: string | null }
    const who = me.displayName ? `${me.displayName} (${me.email})` : me.email
    expect(await tid('channel-paused-stable').textContent()).toBe(`Paused by ${who}`)
    expect(await tid('channel-stable').locator(`span[title="${who}"]`).count()).toBe(1)

    expect((await session.fixture.api('PATCH', `/api/mini-apps/${session.fixture.shop!.id}/channels/stable/rollout`, { token: session.fixture.token, json: { paused: false } })).status).toBe(200)
  })

  test('publishing to a new channel with a host range the server refuses: said in the dialog, and no channel is created', async () => {
    const page = await signedInPage()
    const tid = (id: string) => page.getByTestId(id)
    await page.goto(`${session.fixture.base}/apps/${session.fixture.shop!.appId}/versions`)
    await tid('publish-1.2.0').click()
    const dialog = tid('publish-dialog')
    await dialog.locator('[name=channel]').fill('beta')
    await dialog.locator('[name=hostVersionRange]').fill('>=banana')
    await dialog.getByRole('button', { name: 'Publish 1.2.0' }).click()
    await dialog.getByText('must be a semver range such as >=2.3.0 <3 or ^2.1.0').waitFor()
    expect(await dialog.isVisible()).toBe(true)
    const channels = await session.fixture.api('GET', `/api/mini-apps/${session.fixture.shop!.id}/channels`, { token: session.fixture.token })
    expect(channels.body.channels.map((c: { name: string }) => c.name)).toEqual(['stable'])

    await dialog.locator('[name=hostVersionRange]').fill('>=2.3.0 <3')
    await dialog.locator('[name=rolloutPercent]').fill('10')
    await dialog.getByRole('button', { name: 'Publish 1.2.0' }).click()
    await tid('notice').getByText('Published 1.2.0 to beta (10 %, host >=2.3.0 <3).').waitFor()
  })

  test('a command-line sign-in once approved no longer says the tool is waiting for an approval', async () => {
    const page = await signedInPage()
    const tid = (id: string) => page.getByTestId(id)
    const waiting = 'The command-line tool is waiting for you to approve this code.'
    await page.goto(`${session.fixture.base}/cli/authorize?code=${session.fixture.cliCode}`)
    await tid('cli-approve').waitFor()
    expect(await page.locator('main').textContent()).toContain(waiting)
    await tid('cli-approve').click()
    await tid('cli-result').and(page.locator('[data-state="approved"]')).waitFor()
    expect(await page.locator('main').textContent()).not.toContain(waiting)
    // and on a reload of the settled code
    await page.reload()
    await tid('cli-result').and(page.locator('[data-state="approved"]')).waitFor()
    expect(await page.locator('main').textContent()).not.toContain(waiting)
  })
})
