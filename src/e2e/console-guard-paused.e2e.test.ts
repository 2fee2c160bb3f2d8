// A release the release guard paused, on the Overview at phone width: the card says once, in the words
// `miniship guard` prints, why it was paused (not a second time as "Paused by the release guard: …").
import { describe, expect, test } from 'bun:test'
import { hasChromium } from './browser-support'
import { signIn, uploadForm } from './console-fixture'
import { consoleSession } from './console-session'
import { layoutProblems } from './console-layout'

const APP_ID = 'com.example.guarded'

describe.skipIf(!hasChromium)('a release paused by the release guard, in the console', () => {
  const session = consoleSession({ seed: false })
  const { watch, contexts } = session

  test('the card names the guard’s pause once, as the CLI does', async () => {
    const { fixture } = session
    const as = { token: fixture.token }
    const app = await fixture.api('POST', '/api/mini-apps', { ...as, json: { appId: APP_ID, name: 'Guarded' } })
    expect(app.status).toBe(201)
    const ids: Record<string, string> = {}
    for (const version of ['1.0.0', '1.1.0']) {
      const uploaded = await fixture.api('POST', `/api/mini-apps/by-app-id/${APP_ID}/versions/upload`, { ...as, body: uploadForm(APP_ID, version, version) })
      expect(uploaded.status).toBe(201)
      ids[version] = uploaded.body.id
    }
    expect((await fixture.api('POST', `/api/mini-apps/${app.body.id}/versions/${ids['1.0.0']}/publish`, { ...as, json: {} })).status).toBe(200)
    expect((await fixture.api('POST', `/api/mini-apps/${app.body.id}/versions/${ids['1.1.0']}/publish`, { ...as, json: { rolloutPercent: 50 } })).status).toBe(200)
    expect((await fixture.api('PATCH', `/api/mini-apps/${app.body.id}/channels/stable`, { ...as, json: { guard: { enabled: true } } })).status).toBe(200)
    // 30 devices installed 1.1.0, 5 of them failed: 16.7 % over 5 %, once 20 reported
    const events = [
      ...Array.from({ length: 30 }, (_, index) => ({ appId: APP_ID, versionId: ids['1.1.0'], platform: 'android', event: 'installed', deviceId: `device-${index}` })),
      ...Array.from({ length: 5 }, (_, index) => ({ appId: APP_ID, versionId: ids['1.1.0'], platform: 'android', event: 'failed', deviceId: `device-${index}`, message: 'SHA256_MISMATCH: test' })),
    ]
    expect((await fixture.api('POST', '/api/mini-apps/access/events', { json: { events } })).status).toBe(202)
    // the guard counts at each insights flush (1 s here)
    let paused = false
    for (let i = 0; i < 100 && !paused; i++) {
      const channels = await fixture.api('GET', `/api/mini-apps/${app.body.id}/channels`, as)
      paused = channels.body.channels.find((c: { name: string }) => c.name === 'stable')?.release?.pausedBy === 'release-guard'
      if (!paused) await Bun.sleep(200)
    }
    expect(paused).toBe(true)

    const context = await session.browser.newContext({ viewport: { width: 390, height: 844 } })
    watch.attach(context)
    contexts.push(context)
    const page = await context.newPage()
    await signIn(page, fixture.base)
    await page.goto(`${fixture.base}/apps/${APP_ID}`)
    const badge = page.getByTestId('guard-paused-stable')
    await badge.waitFor()
    expect(await badge.textContent()).toBe('paused by the release guard: 5 of 30 devices failed (16.7 %) — threshold 5 %')
    // said once: no second line with the pause's stored reason in other words
    expect(await page.getByTestId('channel-paused-stable').count()).toBe(0)
    expect(await page.getByTestId('channel-stable').textContent()).not.toContain('above the threshold')
    expect(await layoutProblems(page)).toEqual([])
  })
})
