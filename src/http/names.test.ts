// Names people read in the console (miniapp, display, signing key and API key names) must show something.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { generateKeyPairSync } from 'node:crypto'
import { createTestContext, createUser, type TestUser } from '../test-support'
import { createMiniApp } from '../test-fixtures'

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
