// The console screenshots of the docs, light and dark, taken from the browser tests' fixture (a
// running binary with a miniapp rolling out to 10 %), so that they never drift from the console.
//
//   bun scripts/screenshots.ts [outdir]     (default docs/images; MINISHIP_BINARY reuses a build)
//
// Needs /usr/bin/chromium (apt-get install -y chromium). Each page is shot at 1280×800 (the viewport,
// not the whole page, to keep the files small) and the overview also at 390×844, a phone.
import { mkdirSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import type { Browser, Page } from 'playwright-core'
import { hasChromium, launchChromium, CHROMIUM } from '../src/e2e/browser-support'
import { FIXTURE_APP_ID, signIn, startConsoleFixture } from '../src/e2e/console-fixture'

const root = join(import.meta.dir, '..')
const outDir = process.argv[2] ?? join(root, 'docs', 'images')

interface Shot {
  name: string
  path: string
  ready: string
  /** wait for the adoption chart (the day's device events reach it at the next flush) */
  chart?: boolean
  phone?: boolean
}

const shots: Shot[] = [
  { name: 'release-overview', path: `/apps/${FIXTURE_APP_ID}`, ready: 'channels', chart: true },
  { name: 'release-overview-phone', path: `/apps/${FIXTURE_APP_ID}`, ready: 'channels', chart: true, phone: true },
  { name: 'versions', path: `/apps/${FIXTURE_APP_ID}/versions`, ready: 'versions-table' },
  { name: 'miniapps', path: '/apps', ready: `app-${FIXTURE_APP_ID}` },
  { name: 'tokens', path: '/tokens', ready: 'login-command' },
]

async function open(page: Page, base: string, shot: Shot): Promise<void> {
  await page.goto(`${base}${shot.path}`)
  await page.getByTestId(shot.ready).first().waitFor()
  for (let attempt = 0; shot.chart && (await page.getByTestId('adoption-chart').count()) === 0 && attempt < 50; attempt++) {
    await Bun.sleep(200)
    await page.reload()
    await page.getByTestId(shot.ready).first().waitFor()
  }
  await page.waitForLoadState('networkidle')
  // no blinking caret or hover state in a picture
  await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur())
}

async function main(): Promise<void> {
  if (!hasChromium) throw new Error(`${CHROMIUM} is not installed: apt-get install -y chromium`)
  mkdirSync(outDir, { recursive: true })
  const fixture = await startConsoleFixture()
  let browser: Browser | null = null
  try {
    browser = await launchChromium()
    for (const scheme of ['light', 'dark'] as const) {
      for (const shot of shots) {
        const viewport = shot.phone ? { width: 390, height: 844 } : { width: 1280, height: 800 }
        const context = await browser.newContext({ viewport, colorScheme: scheme, deviceScaleFactor: 1 })
        const page = await context.newPage()
        await signIn(page, fixture.base)
        // the checklist of first steps belongs to a fresh instance, not to these pictures
        await page.evaluate(() => {
          for (const key of Object.keys(localStorage)) if (key.startsWith('miniship.checklist.')) localStorage.removeItem(key)
        })
        const me = await page.evaluate(async () => (await fetch('/api/auth/me', { headers: { authorization: `Bearer ${localStorage.getItem('miniship.token') ?? sessionStorage.getItem('miniship.token')}` } })).json())
        await page.evaluate((id) => localStorage.setItem(`miniship.checklist.${id}`, JSON.stringify({ marks: [], dismissed: true })), (me as { id: string }).id)
        await open(page, fixture.base, shot)
        const file = join(outDir, `${shot.name}-${scheme}.png`)
        await page.screenshot({ path: file })
        console.log(`${relative(root, file)}  ${Math.round(statSync(file).size / 1024)} KB`)
        await context.close()
      }
    }
  } finally {
    await browser?.close()
    await fixture.stop()
  }
}

await main()
