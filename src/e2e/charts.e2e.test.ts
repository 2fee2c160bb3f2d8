// The adoption chart in chromium: stacked areas and a legend with data, an empty state (not a blank box) without.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Browser, Page } from 'playwright-core'
import { hasChromium, launchChromium, screenshot, CHROMIUM } from './browser-support'

if (!hasChromium) console.warn(`chart browser tests skipped: ${CHROMIUM} is not installed (apt-get install -y chromium)`)

describe.skipIf(!hasChromium)('the adoption chart in chromium', () => {
  let browser: Browser
  let script: string
  const work = mkdtempSync(join(tmpdir(), 'miniship-chart-'))

  beforeAll(async () => {
    // the chart module as the console's bundler would ship it, exposed on window for the test page
    const entry = join(work, 'entry.ts')
    writeFileSync(entry, `import { adoptionChart } from ${JSON.stringify(join(import.meta.dir, '..', '..', 'web', 'charts', 'adoption.ts'))}\n;(window as unknown as { adoptionChart: typeof adoptionChart }).adoptionChart = adoptionChart\n`)
    const built = await Bun.build({ entrypoints: [entry], target: 'browser', format: 'iife' })
    if (!built.success) throw new Error(built.logs.join('\n'))
    script = await built.outputs[0]!.text()
    browser = await launchChromium()
  })
  afterAll(async () => {
    await browser?.close()
    rmSync(work, { recursive: true, force: true })
  })

  async function render(report: unknown): Promise<{ page: Page; errors: string[] }> {
    const page = await browser.newPage()
    const errors: string[] = []
    page.on('pageerror', (error) => errors.push(error.message))
    page.on('console', (message) => {
      if (message.type() === 'error') errors.push(message.text())
    })
    await page.setContent('<!doctype html><html><body><main id="root"></main></body></html>')
    await page.addScriptTag({ content: script })
    await page.evaluate((data) => {
      const chart = (window as unknown as { adoptionChart: (report: unknown) => HTMLElement }).adoptionChart(data)
      document.getElementById('root')!.append(chart)
    }, report)
    return { page, errors }
  }

  test('with data: one area per version, a legend with the shares of the latest day and the current release marked', async () => {
    const report = {
      days: [
        { day: '2026-11-20', versions: [{ versionId: 'a', version: '1.0.0', activeDevices: 90 }, { versionId: 'b', version: '1.1.0', activeDevices: 10 }] },
        { day: '2026-11-21', versions: [{ versionId: 'a', version: '1.0.0', activeDevices: 50 }, { versionId: 'b', version: '1.1.0', activeDevices: 50 }] },
        { day: '2026-11-22', versions: [{ versionId: 'a', version: '1.0.0', activeDevices: 25 }, { versionId: 'b', version: '1.1.0', activeDevices: 75 }] },
      ],
      adoption: { versionId: 'b', share: 0.75 },
    }
    const { page, errors } = await render(report)
    const chart = page.getByTestId('adoption-chart')
    await chart.waitFor()
    expect(await chart.locator('svg polygon').count()).toBe(2)
    expect(await chart.locator('polygon[data-version="1.1.0"] title').textContent()).toBe('1.1.0')
    const legend = await chart.locator('.chart-legend li').allTextContents()
    expect(legend.map((text) => text.trim())).toEqual(['1.0.0: 25 %', '1.1.0 (current release): 75 %'])
    expect(await page.getByTestId('adoption-chart-empty').count()).toBe(0)
    // the areas have a size on screen: not a blank box
    const box = await chart.locator('svg[role="img"]').boundingBox()
    expect(box!.width).toBeGreaterThan(100)
    expect(box!.height).toBeGreaterThan(50)
    expect(errors).toEqual([])
    await screenshot(page, 'adoption-chart-with-data')
    await page.close()
  })

  test('one day of data (decisions §13): a stacked bar with every version in it, and a legend that names its denominator', async () => {
    const report = {
      days: [{ day: '2026-11-22', devices: 200, versions: [{ versionId: 'b', version: '1.1.0', activeDevices: 7 }, { versionId: 'a', version: '1.0.0', activeDevices: 190 }, { versionId: null, version: 'other', activeDevices: 4 }] }],
      adoption: { versionId: 'b', share: 0.035, day: '2026-11-22', devices: 200 },
    }
    const { page, errors } = await render(report)
    const chart = page.getByTestId('adoption-chart')
    await chart.waitFor()
    // a day is a bar, not a sliver of an area: one segment per version, each wide enough to see
    const widths = await chart.locator('svg rect[data-version]').evaluateAll((bars) => bars.map((bar) => (bar as SVGGraphicsElement).getBBox().width))
    expect(widths).toHaveLength(3)
    for (const width of widths) expect(width).toBeGreaterThan(20)
    expect(await chart.locator('svg polygon').count()).toBe(0)
    const legend = (await chart.locator('.chart-legend li').allTextContents()).map((text) => text.trim())
    // 201 counted among 200 devices: one moved versions that day, and the legend says why the shares pass 100 %
    expect(legend).toEqual([
      'Share of the 200 devices seen on 2026-11-22:',
      '1.1.0 (current release): 4 %',
      '1.0.0: 95 %',
      'other (versions that are no release): 2 %',
      'A device that changed version that day counts under each version it ran, so these add up to more than 100 %.',
    ])
    expect(errors).toEqual([])
    await screenshot(page, 'adoption-chart-one-day')
    await page.close()
  })

  test('a rollout’s first day: every device seen on 1.0.0, 10 % of them also on 1.1.0; the legend says why 100 % and 10 % pass 100 %', async () => {
    const report = {
      days: [{ day: '2026-11-28', devices: 885, versions: [{ versionId: 'a', version: '1.0.0', activeDevices: 885 }, { versionId: 'b', version: '1.1.0', activeDevices: 85 }] }],
      adoption: { versionId: 'b', share: 85 / 885, day: '2026-11-28', devices: 885 },
    }
    const { page, errors } = await render(report)
    const chart = page.getByTestId('adoption-chart')
    await chart.waitFor()
    const legend = (await chart.locator('.chart-legend li').allTextContents()).map((text) => text.trim())
    expect(legend.slice(0, 3)).toEqual(['Share of the 885 devices seen on 2026-11-28:', '1.0.0: 100 %', '1.1.0 (current release): 10 %'])
    expect(await chart.getByTestId('adoption-overlap').textContent()).toBe('A device that changed version that day counts under each version it ran, so these add up to more than 100 %.')
    expect(errors).toEqual([])
    await page.close()
  })

  test('shares that add up to 100 %: no such note', async () => {
    const { page } = await render({
      days: [{ day: '2026-11-22', devices: 100, versions: [{ versionId: 'a', version: '1.0.0', activeDevices: 60 }, { versionId: 'b', version: '1.1.0', activeDevices: 40 }] }],
      adoption: { versionId: 'b', share: 0.4, day: '2026-11-22', devices: 100 },
    })
    await page.getByTestId('adoption-chart').waitFor()
    expect(await page.getByTestId('adoption-overlap').count()).toBe(0)
    await page.close()
  })

  test('without data: an empty state that says why, and no chart', async () => {
    const { page, errors } = await render({ days: [{ day: '2026-11-22', versions: [] }], adoption: { versionId: null, share: 0 } })
    const empty = page.getByTestId('adoption-chart-empty')
    await empty.waitFor()
    expect(await empty.textContent()).toContain('No devices seen in this period yet')
    expect(await empty.isVisible()).toBe(true)
    expect(await page.locator('[data-testid="adoption-chart"] svg[role="img"]').count()).toBe(0)
    expect(errors).toEqual([])
    await screenshot(page, 'adoption-chart-empty')
    await page.close()
  })
})
