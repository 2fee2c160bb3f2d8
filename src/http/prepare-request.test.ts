import { describe, expect, test } from 'bun:test'
import { prepareRequest } from './prepare-request'
import { AppError } from './errors'
import { defaultRateLimits } from '../config'

const config = { jsonLimitBytes: 1024 }
const isUpload = (pathname: string) => pathname.endsWith('/upload')

function chunked(bytes: number): ReadableStream<Uint8Array> {
  let sent = 0
  return new ReadableStream({
    pull(controller) {
      if (sent >= bytes) return controller.close()
      const size = Math.min(300, bytes - sent)
      sent += size
      controller.enqueue(new Uint8Array(size).fill(0x61))
    },
  })
}

describe('bodies without a length', () => {
  test('a chunked JSON body within the limit is read and gets its length', async () => {
    const prepared = await prepareRequest(new Request('http://127.0.0.1:3001/api/auth/login', { method: 'POST', body: chunked(1000), headers: { 'content-type': 'application/json' } }), config, isUpload)
    expect(prepared.headers.get('content-length')).toBe('1000')
    expect((await prepared.arrayBuffer()).byteLength).toBe(1000)
    expect(prepared.headers.get('content-type')).toBe('application/json')
  })

  test('a chunked JSON body over the limit is 413 PAYLOAD_TOO_LARGE without reading it all', async () => {
    let pulled = 0
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled += 1
        controller.enqueue(new Uint8Array(512))
      },
    })
    const error = await Promise.resolve(prepareRequest(new Request('http://127.0.0.1:3001/api/auth/login', { method: 'POST', body: endless }), config, isUpload)).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(AppError)
    expect((error as AppError).status).toBe(413)
    expect((error as AppError).code).toBe('PAYLOAD_TOO_LARGE')
    expect(pulled).toBeLessThan(10)
  })

  test('the upload route and requests with a length are passed on untouched', () => {
    const upload = new Request('http://127.0.0.1:3001/api/mini-apps/by-app-id/a/versions/upload', { method: 'POST', body: chunked(5000) })
    expect(prepareRequest(upload, config, isUpload)).toBe(upload)
    const sized = new Request('http://127.0.0.1:3001/api/auth/login', { method: 'POST', body: 'x'.repeat(10), headers: { 'content-length': '10' } })
    expect(prepareRequest(sized, config, isUpload)).toBe(sized)
    const get = new Request('http://127.0.0.1:3001/api/health')
    expect(prepareRequest(get, config, isUpload)).toBe(get)
  })
})

test('a short Host gets a URL Elysia can split; the Host header is kept', () => {
  const table: [string, string][] = [
    ['http://nas/api/health', 'http://localhost/api/health'],
    ['http://pi/api/health?x=1', 'http://localhost/api/health?x=1'],
    ['http://a/', 'http://localhost/'],
    ['http://nas1/api/health', 'http://nas1/api/health'],
    ['http://nas:3001/api/health', 'http://nas:3001/api/health'],
  ]
  for (const [url, expected] of table) {
    const prepared = prepareRequest(new Request(url, { headers: { host: 'nas' } }), config, isUpload) as Request
    expect({ url, result: prepared.url }).toEqual({ url, result: expected })
    expect(prepared.headers.get('host')).toBe('nas')
  }
})

describe('the client address survives a rebuilt request', () => {
  test('clientAddress of the prepared request is the original peer, for a chunked body and a short Host', async () => {
    const { clientAddress } = await import('./client')
    const original = new Request('http://nas/api/auth/login', { method: 'POST', body: chunked(10), headers: { host: 'nas' } })
    const server = { requestIP: (request: Request) => (request === original ? { address: '203.0.113.9' } : null) }
    const prepared = await prepareRequest(original, config, isUpload)
    expect(prepared).not.toBe(original)
    expect(clientAddress(prepared, server, { trustProxy: false })).toBe('203.0.113.9')
  })

  test('through the app: two clients sending chunked bodies have their own rate-limit budgets', async () => {
    const { createTestContext } = await import('../test-support')
    const context = createTestContext({ rateLimit: true, rateLimits: { ...defaultRateLimits, login: 10, register: 1, cliSessionCreate: 10, cliSessionPoll: 60 } })
    try {
      // registration is open once an administrator exists (decisions §13)
      await (await import('../test-fixtures')).createTestUser(context, { role: 'ADMIN' })
      const addresses = new Map<Request, string>()
      context.app.server = { requestIP: (request: Request) => (addresses.has(request) ? { address: addresses.get(request)! } : null) } as unknown as typeof context.app.server
      const register = async (address: string, email: string) => {
        const body = new TextEncoder().encode(JSON.stringify({ email, password: 'secret-123' }))
        const stream = new ReadableStream<Uint8Array>({ start: (c) => (c.enqueue(body), c.close()) })
        const original = new Request('http://pi/api/auth/register', { method: 'POST', body: stream, headers: { host: 'pi', 'content-type': 'application/json' } })
        addresses.set(original, address)
        return context.app.handle(await prepareRequest(original, context.config, isUpload))
      }
      expect((await register('198.51.100.1', 'a@example.test')).status).toBe(201)
      expect((await register('198.51.100.1', 'b@example.test')).status).toBe(429)
      // another address is not locked out by the first one's budget
      expect((await register('198.51.100.2', 'c@example.test')).status).toBe(201)
    } finally {
      context.close()
    }
  })
})
