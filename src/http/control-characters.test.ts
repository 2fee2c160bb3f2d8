// Names, descriptions and display names refuse control characters and bidi overrides on every endpoint that takes them.
import { describe, expect, test, afterAll, beforeAll } from 'bun:test'
import { createTestContext, createUser, type TestUser } from '../test-support'
import { createMiniApp, upload, uploadForm } from '../test-fixtures'

const context = createTestContext()
afterAll(() => context.close())

let admin: TestUser
let owner: TestUser
let miniAppId: string
beforeAll(async () => {
  admin = await createUser(context, { email: 'admin@example.test', role: 'ADMIN' })
  owner = await createUser(context, { email: 'owner@example.test' })
  miniAppId = (await createMiniApp(context, owner.token, 'com.example.text')).id
})

const hostile: [string, string][] = [
  ['NUL', 'Shop\u0000'],
  ['an escape sequence', 'Shop\u001b[2J'],
  ['DEL', 'Shop\u007f'],
  ['a C1 control', 'Shop\u0085'],
  ['a right-to-left override', 'Shop\u202Egpj.exe'],
  ['a bidi isolate', 'Shop\u2066x\u2069'],
]

function expectRefused(res: { status: number; body: { code: string; details?: { field: string }[] } }, field: string) {
  expect({ status: res.status, code: res.body.code, field: res.body.details?.[0]?.field }).toEqual({ status: 400, code: 'VALIDATION_ERROR', field })
}

describe('control characters are refused', () => {
  for (const [what, text] of hostile) {
    test(`miniapp create, name with ${what}`, async () => {
      expectRefused(await context.call('POST', '/api/mini-apps', { token: owner.token, json: { appId: 'com.example.x', name: text } }), 'name')
    })
    test(`miniapp create, description with ${what}`, async () => {
      expectRefused(await context.call('POST', '/api/mini-apps', { token: owner.token, json: { appId: 'com.example.x', name: 'ok', description: text } }), 'description')
    })
    test(`miniapp PATCH, name and description with ${what}`, async () => {
      expectRefused(await context.call('PATCH', `/api/mini-apps/${miniAppId}`, { token: owner.token, json: { name: text } }), 'name')
      expectRefused(await context.call('PATCH', `/api/mini-apps/${miniAppId}`, { token: owner.token, json: { description: text } }), 'description')
    })
    test(`register, displayName with ${what}`, async () => {
      expectRefused(await context.call('POST', '/api/auth/register', { json: { email: 'new@example.test', password: 'secret-1', displayName: text } }), 'displayName')
    })
    test(`admin user create and PATCH, displayName with ${what}`, async () => {
      expectRefused(await context.call('POST', '/api/admin/users', { token: admin.token, json: { email: 'n2@example.test', password: 'secret-1', displayName: text } }), 'displayName')
      expectRefused(await context.call('PATCH', `/api/admin/users/${owner.user.id}`, { token: admin.token, json: { displayName: text } }), 'displayName')
    })
    test(`upload, changelog with ${what}`, async () => {
      const res = await upload(context, owner.token, 'com.example.text', uploadForm('com.example.text', { version: '1.0.0', changelog: text }))
      expectRefused(res, 'changelog')
    })
  }
  test('a line break in a name is refused', async () => {
    expectRefused(await context.call('PATCH', `/api/mini-apps/${miniAppId}`, { token: owner.token, json: { name: 'two\nlines' } }), 'name')
  })
})

describe('what stays allowed', () => {
  test('line breaks and tabs in a description and a changelog; accents and emoji in names', async () => {
    const patched = await context.call('PATCH', `/api/mini-apps/${miniAppId}`, { token: owner.token, json: { name: 'Café 🚀', description: 'line one\n\tline two' } })
    expect(patched.status).toBe(200)
    expect(patched.body.description).toBe('line one\n\tline two')
    const uploaded = await upload(context, owner.token, 'com.example.text', uploadForm('com.example.text', { version: '1.0.1', changelog: 'fixed:\n\t- a bug' }))
    expect(uploaded.status).toBe(201)
    // multipart sends line breaks as CRLF
    expect(uploaded.body.changelog.replace(/\r\n/g, '\n')).toBe('fixed:\n\t- a bug')
    const renamed = await context.call('PATCH', `/api/admin/users/${owner.user.id}`, { token: admin.token, json: { displayName: 'Zoë' } })
    expect(renamed.status).toBe(200)
  })
})

// decisions §1: no 500 for bad input. A {miniAppId} that does not percent-decode reached the guard as null.
describe('a miniAppId segment that does not decode', () => {
  const paths = ['/api/mini-apps/%ff', '/api/mini-apps/%C0%AE/channels', '/api/mini-apps/%E0%A4%A/insights', '/api/mini-apps/%ff/workspace', '/api/mini-apps/%u0000/versions/x']
  test('is 401 without a token and 404 MINI_APP_NOT_FOUND with one, never 500', async () => {
    for (const path of paths) {
      for (const method of ['GET', 'POST', 'DELETE'] as const) {
        const anonymous = await context.call(method, path, method === 'POST' ? { json: {} } : {})
        expect({ path, method, status: anonymous.status }).toEqual({ path, method, status: anonymous.status === 404 ? 404 : 401 })
        const signed = await context.call(method, path, { token: owner.token, ...(method === 'POST' ? { json: {} } : {}) })
        expect({ path, method, status: signed.status < 500, code: signed.status === 404 ? signed.body.code : 'not 404' }).toEqual({ path, method, status: true, code: signed.status === 404 ? expect.stringMatching(/NOT_FOUND$/) : 'not 404' })
      }
      const read = await context.call('GET', path, { token: owner.token })
      expect({ path, status: read.status, code: read.body.code }).toEqual({ path, status: 404, code: path.endsWith('/x') ? expect.stringMatching(/NOT_FOUND$/) : 'MINI_APP_NOT_FOUND' })
    }
  })
})
