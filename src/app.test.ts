import { describe, expect, test, afterAll } from 'bun:test'
import { createTestContext } from './test-support'

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

  test('openapi document lists the health route', async () => {
    const res = await context.call('GET', '/api/openapi.json')
    expect(res.status).toBe(200)
    expect(res.body.openapi).toBe('3.0.3')
    expect(res.body.paths['/api/health'].get).toBeDefined()
  })
})
