// The server's own pages (the first-admin setup, page not found) on a phone in light and dark: they fit
// the screen and take the console's colours for the scheme, as the console's pages do, rather than a
// white page in a dark browser (the first page a newcomer opens).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import type { Browser } from 'playwright-core'
import { hasChromium, launchChromium } from './browser-support'
import { layoutProblems } from './console-layout'
import { startBinary, tempDir, type RunningBinary } from './support'

/** The console's --bg and --surface (web/styles.css) for each scheme, as computed colours. */
const colours = {
  light: { page: 'rgb(245, 246, 248)', card: 'rgb(255, 255, 255)' },
  dark: { page: 'rgb(15, 19, 25)', card: 'rgb(23, 28, 36)' },
}

describe.skipIf(!hasChromium)('the server pages follow the colour scheme', () => {
  let dir: string
  let server: RunningBinary
  let browser: Browser
  beforeAll(async () => {
    dir = tempDir()
    server = await startBinary({ dataDir: join(dir, 'data') })
    browser = await launchChromium()
  }, 60_000)
  afterAll(async () => {
    await browser?.close()
    await server?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  for (const scheme of ['light', 'dark'] as const) {
    test(`${scheme}: /setup and a page not found at 390 × 844`, async () => {
      const link = /(\/setup\?token=[A-Za-z0-9_-]+)/.exec(server.output().stderr)?.[1]
      expect(link).toBeTruthy()
      const context = await browser.newContext({ viewport: { width: 390, height: 844 }, colorScheme: scheme })
      try {
        const page = await context.newPage()
        for (const path of [link!, '/nothing-here']) {
          await page.goto(`${server.baseUrl}${path}`)
          await page.locator('section.card').waitFor()
          expect({ path, problems: await layoutProblems(page) }).toEqual({ path, problems: [] })
          const drawn = await page.evaluate(() => ({
            page: getComputedStyle(document.body).backgroundColor === 'rgba(0, 0, 0, 0)' ? getComputedStyle(document.documentElement).backgroundColor : getComputedStyle(document.body).backgroundColor,
            card: getComputedStyle(document.querySelector('section.card')!).backgroundColor,
          }))
          expect({ path, ...drawn }).toEqual({ path, ...colours[scheme] })
        }
      } finally {
        await context.close()
      }
    }, 60_000)
  }
})
