// Kept from the attack on the landed binary (issue 29): markup in names never runs. The API answers names only as JSON,
// the one server-rendered page (/setup) escapes what it echoes, and the console builds the DOM from text nodes, never HTML.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { createTestContext, createUser, type TestUser } from '../test-support'
import { upload, uploadForm } from '../test-fixtures'
import { createApp } from '../app'
import { createSetupGate } from '../modules/setup/service'

const payloads = ['<img src=x onerror=alert(1)>', '"><script>alert(1)</script>', "'><svg onload=alert(1)>", '</textarea><b>bold</b>']

describe('markup in names', () => {
  const context = createTestContext()
  afterAll(() => context.close())
  let owner: TestUser
  beforeAll(async () => {
    owner = await createUser(context, { email: 'xss@example.test' })
  })

  test('miniapp names, display names and changelogs are stored as given and answered only as JSON', async () => {
    for (const [index, payload] of payloads.entries()) {
      const appId = `com.example.xss${index}`
      const created = await context.call('POST', '/api/mini-apps', { token: owner.token, json: { appId, name: payload } })
      expect(created.status).toBe(201)
      expect(created.body.name).toBe(payload)
      expect(created.headers.get('content-type')).toStartWith('application/json')
      const version = await upload(context, owner.token, appId, uploadForm(appId, { version: '1.0.0', changelog: payload }))
      expect(version.status).toBe(201)
      const workspace = await context.call('GET', `/api/mini-apps/${created.body.id}/workspace`, { token: owner.token })
      expect(workspace.headers.get('content-type')).toStartWith('application/json')
      expect(workspace.body.miniApp.name).toBe(payload)
      expect(workspace.body.versions[0].changelog).toBe(payload)
    }
    const renamed = await context.call('PATCH', '/api/auth/me', { token: owner.token, json: { displayName: payloads[0] } })
    if (renamed.status === 200) expect(renamed.headers.get('content-type')).toStartWith('application/json')
  })

  test('an error that quotes what was sent is JSON too, never HTML', async () => {
    const res = await context.call('GET', `/api/mini-apps/access/apps/${encodeURIComponent(payloads[0]!)}/release/install`)
    expect(res.status).toBeGreaterThanOrEqual(400)
    expect(res.headers.get('content-type')).toStartWith('application/json')
  })
})

describe('the setup page echoes what was typed, escaped', () => {
  const context = createTestContext()
  afterAll(() => context.close())
  const gate = createSetupGate(context.dataDir.db)
  const app = createApp({ config: context.config, db: context.dataDir.db, paths: context.dataDir.paths, secret: context.dataDir.secret, clock: () => context.now.value, log: () => {}, setup: gate })

  test('a refused form (a short password) comes back with the email and display name as escaped text, not markup', async () => {
    const form = new URLSearchParams({ token: gate.token!, email: payloads[1]!, displayName: payloads[0]!, password: '123' })
    const res = await app.handle(new Request('http://localhost/setup', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: form.toString() }))
    expect(res.status).toBe(400)
    const html = await res.text()
    // the form is back with what was typed …
    expect(html).toContain('name="displayName"')
    expect(html).toContain('&#60;img src=x onerror=alert(1)&#62;')
    // … as text only
    expect(html).not.toContain('<img src=x')
    expect(html).not.toContain('<script>alert(1)')
    expect(html).toContain('value="&#34;&#62;&#60;script&#62;alert(1)&#60;/script&#62;"')
  })
})

describe('the console builds no HTML from strings', () => {
  const webRoot = join(import.meta.dir, '..', '..', 'web')
  const files = (dir: string): string[] =>
    readdirSync(dir).flatMap((name) => {
      const path = join(dir, name)
      return statSync(path).isDirectory() ? files(path) : /\.(ts|html)$/.test(name) && !name.endsWith('.test.ts') ? [path] : []
    })
  const sinks = [/\.innerHTML\s*=/, /\.outerHTML\s*=/, /insertAdjacentHTML\(/, /document\.write/, /\beval\(/, /new Function\(/, /javascript:/i, /setAttribute\(\s*['"]on/i, /\son[a-z]+=["']/i]
  test('no HTML sink, no eval, no inline handler in web/', () => {
    const found: string[] = []
    for (const file of files(webRoot)) {
      const text = readFileSync(file, 'utf8')
      for (const sink of sinks) if (sink.test(text)) found.push(`${file.slice(webRoot.length + 1)}: ${sink}`)
    }
    expect(found).toEqual([])
  })
})
