// Names people read in the console (miniapp, display, signing key and API key names) must show something, and every
// text limit counts characters as people do: an emoji is one character, not two UTF-16 units.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { generateKeyPairSync } from 'node:crypto'
import { createTestContext, createUser, type TestUser } from '../test-support'
import { createMiniApp, upload, uploadForm } from '../test-fixtures'

const context = createTestContext()
afterAll(() => context.close())

let admin: TestUser
let owner: TestUser
let miniAppId: string
const appId = 'com.example.names'
beforeAll(async () => {
  admin = await createUser(context, { email: 'admin@example.test', role: 'ADMIN' })
  owner = await createUser(context, { email: 'owner@example.test' })
  miniAppId = (await createMiniApp(context, owner.token, appId)).id
})

let created = 0

function publicKey(): string {
  const pair = generateKeyPairSync('ed25519')
  return Buffer.from(pair.publicKey.export({ format: 'jwk' }).x!, 'base64url').toString('base64')
}

/** Every endpoint that takes a name, sending `name` in its name field. */
const nameEndpoints: [string, (name: string) => Promise<{ status: number; body: any }>, string][] = [
  ['miniapp create', (name) => context.call('POST', '/api/mini-apps', { token: owner.token, json: { appId: `com.example.n${++created}`, name } }), 'name'],
  ['miniapp PATCH', (name) => context.call('PATCH', `/api/mini-apps/${miniAppId}`, { token: owner.token, json: { name } }), 'name'],
  ['register', (name) => context.call('POST', '/api/auth/register', { json: { email: `r${Math.random().toString(36).slice(2)}@example.test`, password: 'secret-1', displayName: name } }), 'displayName'],
  ['admin user create', (name) => context.call('POST', '/api/admin/users', { token: admin.token, json: { email: `a${Math.random().toString(36).slice(2)}@example.test`, password: 'secret-1', displayName: name } }), 'displayName'],
  ['admin user PATCH', (name) => context.call('PATCH', `/api/admin/users/${owner.user.id}`, { token: admin.token, json: { displayName: name } }), 'displayName'],
  ['signing key add', (name) => context.call('POST', `/api/mini-apps/${miniAppId}/signing-keys`, { token: owner.token, json: { name, publicKey: publicKey() } }), 'name'],
  ['API key create', (name) => context.call('POST', '/api/auth/api-keys', { token: owner.token, json: { name, scopes: ['read'] } }), 'name'],
]

const invisible: [string, string][] = [
  ['a zero-width space', '\u200B'],
  ['zero-width non-joiner and joiner', '\u200C\u200D'],
  ['a word joiner', '\u2060\u2060'],
  ['a byte order mark between zero-width spaces', '\u200B\uFEFF\u200B'],
  ['combining marks alone', '\u0301\u0308'],
  ['a Hangul filler', '\u3164'],
  ['a soft hyphen and a variation selector', '\u00AD\uFE0F'],
  ['spaces around a zero-width space', '  \u200B  '],
]

describe('a name with no visible character', () => {
  for (const [endpoint, send, field] of nameEndpoints) {
    for (const [what, name] of invisible) {
      test(`${endpoint}, ${what}: 400 VALIDATION_ERROR (as a blank name) saying it has nothing visible`, async () => {
        const res = await send(name)
        expect({ status: res.status, code: res.body.code, field: res.body.details?.[0]?.field }).toEqual({ status: 400, code: 'VALIDATION_ERROR', field })
        expect(res.body.message).toContain('visible character')
        expect(res.body.details[0].message).toContain('visible character')
      })
    }
    test(`${endpoint}: a blank name keeps the same code`, async () => {
      const res = await send('   ')
      expect({ status: res.status, code: res.body.code, field: res.body.details?.[0]?.field }).toEqual({ status: 400, code: 'VALIDATION_ERROR', field })
    })
  }

  test('invisible characters inside a visible name stay allowed (emoji sequences use the joiner)', async () => {
    for (const [endpoint, send] of nameEndpoints) {
      const res = await send('Team 👩\u200D💻 e\u0301')
      expect({ endpoint, accepted: res.status < 300 }).toEqual({ endpoint, accepted: true })
    }
  })
})

describe('text limits count characters (code points), not UTF-16 units', () => {
  const rocket = '🚀' // two UTF-16 units, one character
  for (const [endpoint, send, field] of nameEndpoints) {
    test(`${endpoint}: a name of 100 emoji is accepted, 101 is 400 VALIDATION_ERROR`, async () => {
      const accepted = await send(rocket.repeat(100))
      expect({ endpoint, status: accepted.status < 300 }).toEqual({ endpoint, status: true })
      const refused = await send(rocket.repeat(101))
      expect({ status: refused.status, code: refused.body.code, field: refused.body.details?.[0]?.field }).toEqual({ status: 400, code: 'VALIDATION_ERROR', field })
      expect(refused.body.details[0].message).toContain('100 characters')
    })
  }

  test('miniapp description: 2000 emoji accepted, 2001 refused', async () => {
    const accepted = await context.call('PATCH', `/api/mini-apps/${miniAppId}`, { token: owner.token, json: { description: rocket.repeat(2000) } })
    expect(accepted.status).toBe(200)
    expect(accepted.body.description).toBe(rocket.repeat(2000))
    const refused = await context.call('PATCH', `/api/mini-apps/${miniAppId}`, { token: owner.token, json: { description: rocket.repeat(2001) } })
    expect({ status: refused.status, code: refused.body.code, field: refused.body.details?.[0]?.field }).toEqual({ status: 400, code: 'VALIDATION_ERROR', field: 'description' })
  })

  test('upload changelog: 10000 emoji accepted, 10001 refused; publish notes: 2000 accepted, 2001 refused', async () => {
    const accepted = await upload(context, owner.token, appId, uploadForm(appId, { version: '1.0.0', changelog: rocket.repeat(10_000) }))
    expect(accepted.status).toBe(201)
    expect(accepted.body.changelog).toBe(rocket.repeat(10_000))
    const refused = await upload(context, owner.token, appId, uploadForm(appId, { version: '1.0.1', changelog: rocket.repeat(10_001) }))
    expect({ status: refused.status, code: refused.body.code, field: refused.body.details?.[0]?.field }).toEqual({ status: 400, code: 'VALIDATION_ERROR', field: 'changelog' })
    expect(refused.body.message).toBe('changelog must be at most 10000 characters')

    const tooLong = await context.call('POST', `/api/mini-apps/${miniAppId}/versions/${accepted.body.id}/publish`, { token: owner.token, json: { notes: rocket.repeat(2001) } })
    expect({ status: tooLong.status, code: tooLong.body.code, field: tooLong.body.details?.[0]?.field }).toEqual({ status: 400, code: 'VALIDATION_ERROR', field: 'notes' })
    const published = await context.call('POST', `/api/mini-apps/${miniAppId}/versions/${accepted.body.id}/publish`, { token: owner.token, json: { notes: rocket.repeat(2000) } })
    expect(published.status).toBe(200)
  })

  test('a lone surrogate (no character at all) is refused like a control character', async () => {
    const res = await context.call('PATCH', `/api/mini-apps/${miniAppId}`, { token: owner.token, body: '{"name":"Shop \\ud800"}', headers: { 'content-type': 'application/json' } })
    expect({ status: res.status, code: res.body.code, field: res.body.details?.[0]?.field }).toEqual({ status: 400, code: 'VALIDATION_ERROR', field: 'name' })
  })
})
