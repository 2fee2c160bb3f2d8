// The console's Webhooks section (a miniapp's settings) in chromium against the binary: add (secret once), send a test, deliveries, delete.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { createHmac } from 'node:crypto'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import type { Server } from 'bun'
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core'
import { hasChromium, launchChromium, PageWatch, screenshot } from './browser-support'
import { callApi, runBinary, startBinary, tempDir, type RunningBinary } from './support'

const OWNER = { email: 'owner@example.com', password: 'owner-password-1' }

let dir: string
let server: RunningBinary
let browser: Browser
let receiver: Server<undefined>
let miniAppId: string
const watch = new PageWatch()
const received: { headers: Headers; body: string }[] = []

beforeAll(async () => {
  if (!hasChromium) return
  dir = tempDir('miniship-webhooks-console-')
  const dataDir = join(dir, 'data')
  expect((await runBinary(['init', '--data-dir', dataDir])).exitCode).toBe(0)
  expect((await runBinary(['create-admin', '--data-dir', dataDir, '--email', OWNER.email, '--password-stdin'], { stdin: `${OWNER.password}\n` })).exitCode).toBe(0)
  receiver = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(request) {
      received.push({ headers: request.headers, body: await request.text() })
      return new Response('ok')
    },
  })
  server = await startBinary({ dataDir, args: ['--rate-limit', 'off', '--webhooks-allow-private'] })
  const login = await callApi(server.baseUrl, 'POST', '/api/auth/login', { json: OWNER })
  miniAppId = (await callApi(server.baseUrl, 'POST', '/api/mini-apps', { token: login.body.accessToken, json: { appId: 'com.example.hooked', name: 'Hooked' } })).body.id
  browser = await launchChromium()
}, 120_000)

afterAll(async () => {
  await browser?.close()
  if (server) await server.stop()
  receiver?.stop(true)
  if (dir) rmSync(dir, { recursive: true, force: true })
})

/** The owner signed in, on the miniapp's Settings page with no webhook yet. */
async function ownerOnSettings(viewport: { width: number; height: number }): Promise<{ context: BrowserContext; page: Page; tid: (id: string) => Locator }> {
  const context = await browser.newContext({ viewport })
  watch.attach(context)
  const page: Page = await context.newPage()
  const tid = (id: string) => page.getByTestId(id)
  await page.goto(`${server.baseUrl}/`)
  await tid('signin-form').locator('[name=email]').fill(OWNER.email)
  await tid('signin-form').locator('[name=password]').fill(OWNER.password)
  await tid('signin-submit').click()
  await page.waitForFunction(() => (localStorage.getItem('miniship.token') ?? sessionStorage.getItem('miniship.token')) !== null)
  await page.goto(`${server.baseUrl}/apps/${miniAppId}/settings`)
  await tid('webhooks-empty').waitFor()
  return { context, page, tid }
}

test.skipIf(!hasChromium)('an owner adds a webhook, copies its secret (shown once), sends a test, reads its deliveries and deletes it', async () => {
  const { context, page, tid } = await ownerOnSettings({ width: 1280, height: 900 })

  const form = tid('add-webhook-form')
  await form.locator('[name=url]').fill(`http://127.0.0.1:${receiver.port}/hook`)
  await form.locator('input[value="version.uploaded"]').uncheck()
  await tid('add-webhook-submit').click()
  const secret = (await tid('new-webhook-secret').textContent()) ?? ''
  expect(secret).toStartWith('whsec_')
  const item = page.locator('li[data-testid^="webhook-"]')
  await item.waitFor()
  expect(await item.textContent()).toContain('release.published, release.rolled_back, rollout.changed, rollout.paused')
  const id = ((await item.getAttribute('data-testid')) ?? '').slice('webhook-'.length)
  await screenshot(page, 'webhooks-added')

  await tid(`webhook-test-${id}`).click()
  const deliveries = tid(`webhook-deliveries-${id}`)
  for (let i = 0; i < 40 && !((await deliveries.textContent()) ?? '').includes('Delivered'); i++) {
    await Bun.sleep(250)
    await tid(`webhook-show-deliveries-${id}`).click()
  }
  expect(await deliveries.textContent()).toContain('Delivered')
  expect(await deliveries.textContent()).toContain('HTTP 200')
  expect(received).toHaveLength(1)
  expect(received[0]!.headers.get('x-miniship-event')).toBe('webhook.test')
  expect(received[0]!.headers.get('x-miniship-signature')).toBe(`sha256=${createHmac('sha256', secret).update(received[0]!.body).digest('hex')}`)
  await screenshot(page, 'webhooks-deliveries')

  // shown once: after a reload the secret is nowhere on the page
  await page.reload()
  await page.locator(`[data-testid="webhook-${id}"]`).waitFor()
  expect(await page.content()).not.toContain(secret)

  await tid(`webhook-delete-${id}`).click()
  const dialog = page.locator('dialog[open]')
  await dialog.waitFor()
  await dialog.getByTestId('confirm-ok').click()
  await tid('webhooks-empty').waitFor()
  expect(watch.takeProblems()).toEqual([])
  await context.close()
}, 120_000)

test.skipIf(!hasChromium)('a webhook deleted right after it was added takes its secret off the page with it', async () => {
  const { context, page, tid } = await ownerOnSettings({ width: 1280, height: 800 })

  await tid('add-webhook-form').locator('[name=url]').fill(`http://127.0.0.1:${receiver.port}/gone`)
  await tid('add-webhook-submit').click()
  const secret = (await tid('new-webhook-secret').textContent()) ?? ''
  expect(secret).toStartWith('whsec_')
  const item = page.locator('li[data-testid^="webhook-"]')
  await item.waitFor()
  const id = ((await item.getAttribute('data-testid')) ?? '').slice('webhook-'.length)

  await tid(`webhook-delete-${id}`).click()
  const dialog = page.locator('dialog[open]')
  await dialog.waitFor()
  await dialog.getByTestId('confirm-ok').click()
  await tid('webhooks-empty').waitFor()
  // "copy it now" for a webhook that no longer exists would be wrong
  expect(await tid('new-webhook-secret').count()).toBe(0)
  expect(await page.content()).not.toContain(secret)
  expect(watch.takeProblems()).toEqual([])
  await context.close()
}, 120_000)
