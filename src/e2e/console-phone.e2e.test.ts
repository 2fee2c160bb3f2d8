// The console on a phone (375 × 812), light and dark: every page fits the screen, with no control
// cut off and no word broken; a miniapp's address by App ID.
import { describe, expect, test } from 'bun:test'
import { generateKeyPairSync, sign } from 'node:crypto'
import type { Page } from 'playwright-core'
import { buildStatement } from '../sdk/statement'
import { hasChromium, screenshot } from './browser-support'
import { FIXTURE_APP_ID, signIn, type ConsoleFixture } from './console-fixture'
import { consoleSession } from './console-session'
import { layoutProblems, type ConsolePage } from './console-layout'

const PHONE = { width: 375, height: 812 }

/** Every page of the seeded console, by the address a person would open. */
function consolePages(fixture: ConsoleFixture): ConsolePage[] {
  const shop = `/apps/${fixture.shop!.id}`
  return [
    { name: 'apps', path: '/apps', ready: `app-${FIXTURE_APP_ID}` },
    { name: 'overview', path: shop, ready: 'channels' },
    { name: 'versions', path: `${shop}/versions`, ready: 'versions-table' },
    { name: 'upload', path: `${shop}/upload`, ready: 'upload-form' },
    { name: 'history', path: `${shop}/history`, ready: 'release-history' },
    { name: 'settings', path: `${shop}/settings`, ready: 'edit-app-form' },
    { name: 'members', path: `${shop}/members`, ready: 'add-member-form' },
    { name: 'long-app', path: `/apps/${fixture.longApp!.id}`, ready: 'app-title' },
    { name: 'tokens', path: '/tokens', ready: 'keys-table' },
    { name: 'admin', path: '/admin', ready: 'users-table' },
    { name: 'cli-approval', path: `/cli/authorize?code=${fixture.cliCode}`, ready: 'cli-approve' },
  ]
}

/** The base64 raw public key of a new Ed25519 pair and its keyId (decisions §14). */
function newKey() {
  const pair = generateKeyPairSync('ed25519')
  const raw = Buffer.from(pair.publicKey.export({ format: 'jwk' }).x!, 'base64url')
  return { privateKey: pair.privateKey, publicKey: raw.toString('base64'), keyId: new Bun.CryptoHasher('sha256').update(raw).digest('hex').slice(0, 16) }
}

/**
 * What the first hour adds beside the fixture: two trusted keys (one revoked since), versions signed by
 * the one with the longer name, and two webhooks (one of a chat's long address), so that the Versions
 * table's signature badges, the Signing card, the Webhooks card and their audit entries are on the pages.
 */
async function signAndHook(fixture: ConsoleFixture): Promise<void> {
  const app = `/api/mini-apps/${FIXTURE_APP_ID}`
  const call = async (method: string, path: string, json: unknown, status: number) => {
    const answer = await fixture.api(method, path, { token: fixture.token, json })
    if (answer.status !== status) throw new Error(`${method} ${path}: expected ${status}, got ${answer.status} ${JSON.stringify(answer.body)}`)
    return answer.body
  }
  const laptop = newKey()
  const old = newKey()
  await call('POST', `${app}/signing-keys`, { name: 'release laptop of the shop team', publicKey: laptop.publicKey }, 201)
  await call('POST', `${app}/signing-keys`, { name: 'old laptop', publicKey: old.publicKey }, 201)
  const { versions } = await call('GET', `${app}/workspace`, undefined, 200)
  for (const v of versions as { id: string; version: string; files: Record<string, { sha256: string }> }[]) {
    const statement = buildStatement(FIXTURE_APP_ID, v.version, Object.fromEntries(Object.entries(v.files).map(([kind, file]) => [kind, file.sha256])))
    const by = v.version === '1.2.0' ? old : laptop
    await call('POST', `${app}/versions/${v.id}/signature`, { keyId: by.keyId, signature: sign(null, Buffer.from(statement), by.privateKey).toString('base64') }, 200)
  }
  await call('DELETE', `${app}/signing-keys/${old.keyId}`, undefined, 200)
  await call('POST', `${app}/webhooks`, { url: 'https://ci.example.com/miniship' }, 201)
  await call('POST', `${app}/webhooks`, { url: `https://hooks.slack.example.com/services/T0000000000/B0000000000/${'x'.repeat(48)}`, format: 'slack' }, 201)
}

describe.skipIf(!hasChromium)('the console on a phone', () => {
  const session = consoleSession({ prepare: signAndHook })
  const { watch, contexts } = session

  async function newPage(dark: boolean, viewport = PHONE): Promise<Page> {
    const context = await session.browser.newContext({ viewport, colorScheme: dark ? 'dark' : 'light' })
    watch.attach(context)
    contexts.push(context)
    return context.newPage()
  }

  for (const dark of [false, true]) {
    const scheme = dark ? 'dark' : 'light'
    test(
      `every page at 375 × 812 (${scheme}): nothing scrolls sideways, no control is cut off, no word is broken`,
      async () => {
        const page = await newPage(dark)
        await page.goto(`${session.fixture.base}/`)
        await page.getByTestId('signin-form').waitFor()
        const found: Record<string, string[]> = { 'sign-in': await layoutProblems(page) }
        await screenshot(page, `phone-sign-in-${scheme}`)
        await signIn(page, session.fixture.base)
        for (const { name, path, ready } of consolePages(session.fixture)) {
          await page.goto(`${session.fixture.base}${path}`)
          await page.getByTestId(ready).first().waitFor()
          await page.waitForLoadState('networkidle')
          found[name] = await layoutProblems(page)
          await screenshot(page, `phone-${name}-${scheme}`)
        }
        // the dialogs: publishing the draft, installing a version
        await page.goto(`${session.fixture.base}/apps/${session.fixture.shop!.id}/versions`)
        await page.getByTestId('publish-1.2.0').click()
        await page.locator('dialog[open]').waitFor()
        found['publish-dialog'] = await layoutProblems(page)
        await screenshot(page, `phone-publish-dialog-${scheme}`)
        await page.getByTestId('confirm-cancel').click()
        await page.getByTestId('install-1.1.0').click()
        await page.getByTestId('install-dialog').waitFor()
        found['install-dialog'] = await layoutProblems(page)
        await screenshot(page, `phone-install-dialog-${scheme}`)
        expect(Object.fromEntries(Object.entries(found).filter(([, problems]) => problems.length > 0))).toEqual({})
      },
      120_000,
    )
  }

  test('a miniapp opens at /apps/<App ID>, which is the address its links use; a link by internal id still opens it and shows the App ID address', async () => {
    const page = await newPage(false, { width: 1280, height: 800 })
    await signIn(page, session.fixture.base)
    await page.goto(`${session.fixture.base}/apps`)
    expect(await page.getByTestId(`open-app-${FIXTURE_APP_ID}`).getAttribute('href')).toBe(`/apps/${FIXTURE_APP_ID}`)

    await page.goto(`${session.fixture.base}/apps/${FIXTURE_APP_ID}`)
    await page.getByTestId('channels').waitFor()
    expect(await page.getByTestId('app-title').textContent()).toBe('Shop')
    expect(new URL(page.url()).pathname).toBe(`/apps/${FIXTURE_APP_ID}`)
    expect(await page.getByTestId('tab-versions').getAttribute('href')).toBe(`/apps/${FIXTURE_APP_ID}/versions`)
    await page.getByTestId('tab-versions').click()
    await page.getByTestId('versions-table').waitFor()
    expect(new URL(page.url()).pathname).toBe(`/apps/${FIXTURE_APP_ID}/versions`)

    // the old address, by internal id, with a tab and a query
    await page.goto(`${session.fixture.base}/apps/${session.fixture.shop!.id}/versions?status=PUBLISHED`)
    await page.getByTestId('versions-table').waitFor()
    expect(await page.getByTestId('app-id').textContent()).toBe(FIXTURE_APP_ID)
    const moved = new URL(page.url())
    expect(moved.pathname + moved.search).toBe(`/apps/${FIXTURE_APP_ID}/versions?status=PUBLISHED`)
    await page.goto(`${session.fixture.base}/apps/${session.fixture.shop!.id}`)
    await page.getByTestId('channels').waitFor()
    expect(new URL(page.url()).pathname).toBe(`/apps/${FIXTURE_APP_ID}`)

    // an App ID nobody has: the page says so
    await page.goto(`${session.fixture.base}/apps/com.example.nothing`)
    await page.getByTestId('load-error').waitFor()
    expect(await page.getByTestId('load-error').textContent()).toContain('No miniapp with the App ID com.example.nothing')
    expect(await page.getByTestId('alert').textContent()).toContain('com.example.nothing')
  })

  test('the adoption chart with one day of devices draws a stacked bar per version, wide enough to read, with its share beside it', async () => {
    for (const viewport of [PHONE, { width: 1280, height: 800 }]) {
      const page = await newPage(false, viewport)
      await signIn(page, session.fixture.base)
      await page.goto(`${session.fixture.base}/apps/${FIXTURE_APP_ID}`)
      const chart = page.getByTestId('adoption-chart')
      // the day's events reach the report at the next flush (1 s in the session.fixture)
      for (let attempt = 0; (await chart.count()) === 0 && attempt < 50; attempt++) {
        await Bun.sleep(200)
        await page.reload()
        await page.getByTestId('channels').waitFor()
        await page.waitForLoadState('networkidle')
      }
      await chart.waitFor()
      expect(await chart.locator('svg polygon').count()).toBe(0)
      const bars = chart.locator('svg rect[data-version]')
      expect(await bars.evaluateAll((rects) => rects.map((rect) => rect.getAttribute('data-version')))).toEqual(['1.0.0', '1.1.0'])
      for (const bar of await bars.all()) {
        const box = (await bar.boundingBox())!
        expect(box.width).toBeGreaterThanOrEqual(24)
      }
      const tallest = Math.max(...(await bars.evaluateAll((rects) => rects.map((rect) => rect.getBoundingClientRect().height))))
      expect(tallest).toBeGreaterThanOrEqual(80)
      expect(await chart.locator('svg[role=img]').textContent()).toContain('1.0.0 83 %')
      // the live version's share, with what it is a share of under it in small print (not as large as a figure)
      const fontOf = (testId: string) => page.getByTestId(testId).evaluate((el) => ({ size: parseFloat(getComputedStyle(el).fontSize), weight: Number(getComputedStyle(el).fontWeight) }))
      const share = await fontOf('figure-adoption')
      const of = await fontOf('figure-adoption-devices')
      expect(await page.getByTestId('figure-adoption-devices').textContent()).toMatch(/^of the \d+ devices seen on \d{4}-\d{2}-\d{2}$/)
      expect(of.size).toBeLessThan(share.size)
      expect(of.weight).toBeLessThan(600)
      // update checks are a figure of their own: a fleet on miniship/sdk asks those, not install info
      expect(await page.getByTestId('figure-update-checks').textContent()).toMatch(/^\d+$/)
      expect(await page.getByTestId('figure-update-checks').evaluate((dd) => dd.previousElementSibling?.textContent)).toBe('Update checks')
      await screenshot(page, `adoption-one-day-${viewport.width}`)
    }
  })

  test('the webhook form on a phone: each event reads as one sentence beside its box, at most two lines, not a narrow column', async () => {
    const page = await newPage(false)
    await signIn(page, session.fixture.base)
    await page.goto(`${session.fixture.base}/apps/${FIXTURE_APP_ID}/settings`)
    await page.getByTestId('add-webhook-form').waitFor()
    const lines = await page.getByTestId('add-webhook-form').locator('label.check').evaluateAll((labels) =>
      labels.map((label) => [label.getAttribute('data-testid'), Math.round(label.getBoundingClientRect().height / parseFloat(getComputedStyle(label).lineHeight))]),
    )
    expect(lines.length).toBe(5)
    expect(lines.filter(([, count]) => (count as number) > 2)).toEqual([])
  })

  test('the miniapp tabs scroll sideways in their own row on a phone, and the current tab is in view', async () => {
    const page = await newPage(false)
    await signIn(page, session.fixture.base)
    await page.goto(`${session.fixture.base}/apps/${session.fixture.shop!.id}/members`)
    await page.getByTestId('add-member-form').waitFor()
    const tabs = await page.locator('nav.tabs').evaluate((nav) => ({ overflowX: getComputedStyle(nav).overflowX, scrollWidth: nav.scrollWidth, clientWidth: nav.clientWidth }))
    expect(tabs.overflowX).toBe('auto')
    const current = await page.getByTestId('tab-members').boundingBox()
    expect(current!.x + current!.width).toBeLessThanOrEqual(PHONE.width)
  })
})
