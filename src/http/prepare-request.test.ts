import { describe, expect, test } from 'bun:test'
import { prepareRequest } from './prepare-request'
import { AppError } from './errors'

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
