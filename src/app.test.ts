import { describe, expect, test, afterAll } from 'bun:test'
import { createTestContext } from './test-support'
import { createMiniApp, createTestUser } from './test-fixtures'

const context = createTestContext()
afterAll(() => context.close())

describe('foundation HTTP behaviour', () => {
  test('health answers ok with version and uptime', async () => {
    const res = await context.call('GET', '/api/health')
    expect(res.status).toBe(200)
    expect(res.body.status).toBe('ok')
    expect(typeof res.body.version).toBe('string')
    expect(Number.isInteger(res.body.uptimeSeconds)).toBe(true)
  })

  test('an unknown route is 404 in the error shape', async () => {
    const res = await context.call('GET', '/api/nope')
    expect(res.status).toBe(404)
    expect(res.body).toMatchObject({ statusCode: 404, error: 'Not Found', code: 'ROUTE_NOT_FOUND' })
    expect(typeof res.body.message).toBe('string')
  })

  // a browser's Accept on a navigation
  const browserAccept = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8'

  test('a browser opening an unknown console address gets the console\'s not-found page: 404, HTML, a link home, the console\'s headers', async () => {
    for (const path of ['/nowhere', '/register', '/apps-typo/x?y=1']) {
      const res = await context.call('GET', path, { headers: { accept: browserAccept } })
      expect(res.status).toBe(404)
      expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8')
      expect(res.text).toContain('<h1>Page not found</h1>')
      expect(res.text).toContain('<a href="/apps">Go to the miniapps</a>')
      expect(res.text).not.toContain('ROUTE_NOT_FOUND')
      expect(res.headers.get('content-security-policy')).toContain("script-src 'self'")
      expect(res.headers.get('content-security-policy')).toContain("frame-ancestors 'none'")
      expect(res.headers.get('x-frame-options')).toBe('DENY')
      expect(res.headers.get('x-content-type-options')).toBe('nosniff')
      expect(res.headers.get('referrer-policy')).toBe('no-referrer')
    }
  })

  test('API clients and anything under /api/ keep the JSON 404, a browser included', async () => {
    const cases: [string, string, Record<string, string>][] = [
      ['GET', '/api/nope', { accept: browserAccept }],
      ['GET', '/api', { accept: browserAccept }],
      ['GET', '/nowhere', {}],
      ['GET', '/nowhere', { accept: 'application/json' }],
      ['GET', '/nowhere', { accept: '*/*' }],
      ['POST', '/nowhere', { accept: browserAccept }],
    ]
    for (const [method, path, headers] of cases) {
      const res = await context.call(method, path, { headers })
      expect(res.status).toBe(404)
      expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8')
      expect(res.body).toMatchObject({ statusCode: 404, error: 'Not Found', code: 'ROUTE_NOT_FOUND' })
    }
  })

  test('openapi document lists the health route', async () => {
    const res = await context.call('GET', '/api/openapi.json')
    expect(res.status).toBe(200)
    // 3.1: its schemas are TypeBox's JSON Schema, with `type: 'null'` for nullable fields and `const` for
    // literals, which OpenAPI 3.0 does not have (a 3.0 reader refuses `type: 'null'`)
    expect(res.body.openapi).toBe('3.1.0')
    expect(res.body.paths['/api/auth/api-keys'].get.responses['200'].content['application/json'].schema.properties.apiKeys.items.properties.expiresAt.anyOf).toContainEqual({ type: 'null' })
    expect(res.body.paths['/api/health'].get).toBeDefined()
    // with the schema of its answer (200 ok or degraded, 503 unavailable) like any route that declares one
    expect(res.body.paths['/api/health'].get.responses['200'].content['application/json'].schema.required).toEqual(['status', 'version', 'uptimeSeconds'])
    expect(res.body.paths['/api/health'].get.responses['503']).toBeDefined()
    // GET /api/info too, with the schema of its answer (the console and the CLI read it)
    expect(res.body.paths['/api/info'].get.responses['200'].content['application/json'].schema.required).toEqual(['version', 'setupRequired', 'registration', 'passwordMinLength', 'uploadLimitBytes'])
  })
})

describe('error shape for bad requests', () => {
  test('malformed JSON is 400 INVALID_JSON', async () => {
    const res = await context.call('POST', '/api/auth/login', { body: '{"email": ', headers: { 'content-type': 'application/json' } })
    expect(res.status).toBe(400)
    expect(res.body).toMatchObject({ statusCode: 400, error: 'Bad Request', code: 'INVALID_JSON' })
  })

  test('a JSON route given text/plain is 415', async () => {
    const res = await context.call('POST', '/api/auth/login', { body: 'email=a', headers: { 'content-type': 'text/plain' } })
    expect(res.status).toBe(415)
    expect(res.body).toMatchObject({ statusCode: 415, code: 'UNSUPPORTED_MEDIA_TYPE' })
  })

  test('the upload route given JSON is 415', async () => {
    const res = await context.call('POST', '/api/mini-apps/by-app-id/demo/versions/upload', { json: {} })
    expect(res.status).toBe(415)
    expect(res.body.code).toBe('UNSUPPORTED_MEDIA_TYPE')
  })

  test('a declared JSON body over the limit is 413 before it is read', async () => {
    const res = await context.call('POST', '/api/auth/login', { body: 'x', headers: { 'content-type': 'application/json', 'content-length': String(2 * 1024 * 1024) } })
    expect(res.status).toBe(413)
    expect(res.body).toMatchObject({ statusCode: 413, code: 'PAYLOAD_TOO_LARGE' })
  })

  test('an unknown method on a known path is 404 in the error shape', async () => {
    const res = await context.call('DELETE', '/api/health')
    expect(res.status).toBe(404)
    expect(res.body.code).toBe('ROUTE_NOT_FOUND')
  })
})

describe('health', () => {
  test('503 when the database is not usable', async () => {
    const broken = createTestContext()
    broken.dataDir.db.$client.close()
    const res = await broken.call('GET', '/api/health')
    expect(res.status).toBe(503)
    expect(res.body.status).toBe('unavailable')
    broken.close = () => {}
  })
})

describe('a JSON body is an object', () => {
  test('an array, a string, a number, a boolean or null is 400 VALIDATION_ERROR (field body), after authentication', async () => {
    for (const raw of ['[]', '"s"', '5', 'true', 'null']) {
      const res = await context.call('PATCH', '/api/mini-apps/whatever', { body: raw, headers: { 'content-type': 'application/json' }, token: 'garbage' })
      expect([raw, res.status, res.body.code]).toEqual([raw, 401, 'INVALID_TOKEN'])
    }
    const owner = await createTestUser(context)
    const app = await createMiniApp(context, owner.token, 'shape.app')
    for (const [raw, shape] of [['[]', 'an array'], ['"s"', 'a string'], ['5', 'a number'], ['true', 'a boolean'], ['null', 'null']] as const) {
      const res = await context.call('PATCH', `/api/mini-apps/${app.id}`, { body: raw, headers: { 'content-type': 'application/json' }, token: owner.token })
      expect([raw, res.status, res.body.code]).toEqual([raw, 400, 'VALIDATION_ERROR'])
      if (raw !== 'null') expect(res.body).toMatchObject({ message: `The request body must be a JSON object (got ${shape})`, details: [{ field: 'body', message: 'must be a JSON object' }] })
    }
    // an object, and no body at all where none is needed, still work
    expect((await context.call('PATCH', `/api/mini-apps/${app.id}`, { json: { name: 'Renamed' }, token: owner.token })).status).toBe(200)
    expect((await context.call('POST', `/api/mini-apps/${app.id}/versions/nope/review`, { token: owner.token })).body.code).toBe('VERSION_NOT_FOUND')
  })
})

describe('the guard runs before body validation', () => {
  test('no token and a bad body is 401, not 400', async () => {
    const res = await context.call('POST', '/api/mini-apps', { json: { appId: 1 } })
    expect(res.status).toBe(401)
    expect(res.body.code).toBe('AUTH_REQUIRED')
  })

  test('no token and an appId in a miniapp PATCH is 401, not 400', async () => {
    const res = await context.call('PATCH', '/api/mini-apps/whatever', { json: { appId: 'renamed' } })
    expect(res.status).toBe(401)
    expect(res.body.code).toBe('AUTH_REQUIRED')
  })

  test('a garbage token and a bad body on an admin route is 401', async () => {
    const res = await context.call('POST', '/api/admin/users', { json: {}, token: 'garbage' })
    expect(res.status).toBe(401)
    expect(res.body.code).toBe('INVALID_TOKEN')
  })
})

test('openapi marks the routes that need a Bearer token, and only those', async () => {
  const { body } = await context.call('GET', '/api/openapi.json')
  expect(body.paths['/api/auth/me'].get.security).toEqual([{ bearer: [] }])
  expect(body.paths['/api/admin/users'].get.security).toEqual([{ bearer: [] }])
  expect(body.paths['/api/health'].get.security).toEqual([])
  // the metrics route takes an administrator's Bearer (or the metrics token): anonymous is 401 AUTH_REQUIRED
  expect(body.paths['/api/metrics'].get.security).toEqual([{ bearer: [] }])
  expect((await context.call('GET', '/api/metrics')).body.code).toBe('AUTH_REQUIRED')
  expect(body.paths['/api/auth/login'].post.security).toEqual([])
  expect(body.paths['/api/mini-apps/access/versions/{versionId}/install'].get.security).toEqual([])
  expect(body.paths['/api/mini-apps/by-app-id/{appId}/versions/upload'].post.security).toEqual([{ bearer: [] }])
  // and which of them an API key may call: by scope, or not at all (403 SCOPE_REQUIRED)
  expect(body.paths['/api/mini-apps/by-app-id/{appId}/versions/upload'].post.description).toBe('API keys with the "upload" scope may call this too')
  expect(body.paths['/api/mini-apps/{miniAppId}/webhooks'].get.description).toBe('Signed-in accounts only: API keys answer 403 SCOPE_REQUIRED')
})

test('the data directory keeps its secrets to its owner: database and secret are mode 0600', async () => {
  const { statSync } = await import('node:fs')
  for (const file of [context.dataDir.paths.database, context.dataDir.paths.secret]) {
    expect({ file, mode: (statSync(file).mode & 0o777).toString(8) }).toEqual({ file, mode: '600' })
  }
})
