// Kept from the attack on the landed binary (issue 29): no cross-site request can act as a signed-in user. Credentials travel
// only in the Authorization header (never a cookie, so a browser attaches none on its own), writes take JSON only (a plain
// form cannot send it), and no CORS header lets another origin read an answer.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createTestContext, createUser, type TestUser } from '../test-support'

const context = createTestContext()
afterAll(() => context.close())
let user: TestUser
beforeAll(async () => {
  user = await createUser(context, { email: 'csrf@example.test' })
  // register is open only once an administrator exists (decisions §13)
  await createUser(context, { email: 'admin@example.test', role: 'ADMIN' })
})

describe('cross-site requests', () => {
  test('signing in sets no cookie: there is nothing a browser would attach to another site\'s request', async () => {
    const login = await context.call('POST', '/api/auth/login', { json: { email: 'csrf@example.test', password: user.password } })
    expect(login.status).toBe(200)
    expect(login.headers.get('set-cookie')).toBeNull()
    const register = await context.call('POST', '/api/auth/register', { json: { email: 'csrf2@example.test', password: 'correct horse' } })
    expect(register.status).toBe(201)
    expect(register.headers.get('set-cookie')).toBeNull()
  })

  test('a cookie is never read as a credential: 401 AUTH_REQUIRED', async () => {
    for (const cookie of [`token=${user.token}`, `accessToken=${user.token}`, `authorization=Bearer ${user.token}`]) {
      const res = await context.call('POST', '/api/mini-apps', { json: { appId: 'com.example.csrf', name: 'CSRF' }, headers: { cookie } })
      expect({ cookie: cookie.split('=')[0], status: res.status, code: res.body.code }).toEqual({ cookie: cookie.split('=')[0], status: 401, code: 'AUTH_REQUIRED' })
    }
  })

  // the three content types a cross-site <form> (or a fetch without a preflight) may send
  const simpleTypes = ['application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'text/plain']
  for (const type of simpleTypes) {
    test(`a JSON route sent ${type.split(';')[0]} answers 415 UNSUPPORTED_MEDIA_TYPE and changes nothing`, async () => {
      const res = await context.call('POST', '/api/mini-apps', { body: 'appId=com.example.csrf&name=CSRF', headers: { 'content-type': type, authorization: `Bearer ${user.token}` } })
      expect({ status: res.status, code: res.body.code }).toEqual({ status: 415, code: 'UNSUPPORTED_MEDIA_TYPE' })
      const list = await context.call('GET', '/api/mini-apps', { token: user.token })
      expect(JSON.stringify(list.body)).not.toContain('com.example.csrf')
    })
  }

  test('no CORS: neither a preflight nor a request from another origin is given Access-Control-Allow-Origin', async () => {
    const origin = 'https://evil.example'
    const preflight = await context.app.handle(
      new Request('http://localhost/api/mini-apps', { method: 'OPTIONS', headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' } }),
    )
    expect(preflight.headers.get('access-control-allow-origin')).toBeNull()
    expect(preflight.headers.get('access-control-allow-headers')).toBeNull()
    const read = await context.app.handle(new Request('http://localhost/api/auth/me', { headers: { origin, authorization: `Bearer ${user.token}` } }))
    expect(read.headers.get('access-control-allow-origin')).toBeNull()
    expect(read.headers.get('access-control-allow-credentials')).toBeNull()
  })
})
