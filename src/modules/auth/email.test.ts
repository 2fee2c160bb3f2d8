// Email addresses with an internationalised domain (user@bücher.example) are addresses: accepted and kept in
// their punycode form, so the Unicode and the xn-- spelling are one account; what is refused says what is accepted.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createTestContext, createUser, type TestUser } from '../../test-support'
import { createMiniApp } from '../../test-fixtures'
import { normaliseEmail } from './service'

const context = createTestContext()
afterAll(() => context.close())

let admin: TestUser
beforeAll(async () => {
  admin = await createUser(context, { email: 'admin@example.test', role: 'ADMIN' })
})

describe('normaliseEmail', () => {
  const table: [string, string | null][] = [
    ['user@bücher.example', 'user@xn--bcher-kva.example'],
    ['  User@Bücher.Example ', 'user@xn--bcher-kva.example'],
    ['user@xn--bcher-kva.example', 'user@xn--bcher-kva.example'],
    ['kim@例え.テスト', 'kim@xn--r8jz45g.xn--zckzah'],
    ['admin@localhost', 'admin@localhost'],
    ['jörg@example.com', null],
    ['user@bücher example', null],
    ['user@bücher.example/x', null],
    ['user@bü@cher.example', null],
    ['user@bücher..example', null],
    ['user@', null],
  ]
  for (const [raw, expected] of table) {
    test(`${JSON.stringify(raw)} → ${JSON.stringify(expected)}`, () => expect(normaliseEmail(raw)).toBe(expected))
  }
})

describe('over HTTP', () => {
  test('register with an international domain: 201, stored as punycode; login works with either spelling', async () => {
    const registered = await context.call('POST', '/api/auth/register', { json: { email: 'user@bücher.example', password: 'secret-1' } })
    expect(registered.status).toBe(201)
    expect(registered.body.email).toBe('user@xn--bcher-kva.example')
    for (const email of ['user@bücher.example', 'USER@BÜCHER.EXAMPLE', 'user@xn--bcher-kva.example']) {
      const login = await context.call('POST', '/api/auth/login', { json: { email, password: 'secret-1' } })
      expect({ email, status: login.status }).toEqual({ email, status: 200 })
    }
    const again = await context.call('POST', '/api/auth/register', { json: { email: 'user@xn--bcher-kva.example', password: 'secret-1' } })
    expect(again.status).toBe(409)
  })

  test('admin create with an international domain: 201; members are found by the Unicode spelling', async () => {
    const created = await context.call('POST', '/api/admin/users', { token: admin.token, json: { email: 'dev@müller.example', password: 'secret-1' } })
    expect(created.status).toBe(201)
    expect(created.body.email).toBe('dev@xn--mller-kva.example')
    const miniApp = await createMiniApp(context, admin.token, 'com.example.idn')
    const added = await context.call('POST', `/api/mini-apps/${miniApp.id}/members`, { token: admin.token, json: { email: 'Dev@Müller.example', role: 'DEVELOPER' } })
    expect(added.status).toBe(201)
    expect(added.body.email).toBe('dev@xn--mller-kva.example')
  })

  test('a non-ASCII part before the @: 400 VALIDATION_ERROR saying that part must be ASCII', async () => {
    const res = await context.call('POST', '/api/auth/register', { json: { email: 'jörg@example.com', password: 'secret-1' } })
    expect({ status: res.status, code: res.body.code, field: res.body.details?.[0]?.field }).toEqual({ status: 400, code: 'VALIDATION_ERROR', field: 'email' })
    expect(res.body.details[0].message).toContain('before the @')
    expect(res.body.details[0].message).toContain('ASCII')
  })

  test('not an address at all: 400 VALIDATION_ERROR naming the accepted form, international domains included', async () => {
    const res = await context.call('POST', '/api/admin/users', { token: admin.token, json: { email: 'user@bücher example', password: 'secret-1' } })
    expect({ status: res.status, code: res.body.code, field: res.body.details?.[0]?.field }).toEqual({ status: 400, code: 'VALIDATION_ERROR', field: 'email' })
    expect(res.body.details[0].message).toContain('alice@example.com')
    expect(res.body.details[0].message).toContain('bücher.example')
  })
})
