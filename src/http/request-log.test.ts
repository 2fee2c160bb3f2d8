import { expect, test } from 'bun:test'
import { redactedPath, withRequestLog } from './request-log'

test('query strings are redacted', () => {
  const table: [string, string][] = [
    ['http://x/api/health', '/api/health'],
    ['http://x/a?token=secret', '/a?token=[redacted]'],
    ['http://x/a?token=secret&platform=ios', '/a?token=[redacted]&platform=[redacted]'],
  ]
  for (const [url, path] of table) expect(redactedPath(new URL(url))).toBe(path)
})

test('every response gets X-Request-Id and one JSON log line without the token', async () => {
  const lines: string[] = []
  const handler = withRequestLog(() => new Response('hello', { status: 201, headers: { 'content-length': '5' } }), (line) => lines.push(line))
  const response = await handler(new Request('http://x/api/thing?token=eyJ.secret.value'), null)
  const id = response.headers.get('x-request-id')
  expect(id).toBeTruthy()
  expect(lines).toHaveLength(1)
  const entry = JSON.parse(lines[0]!)
  expect(entry).toMatchObject({ method: 'GET', path: '/api/thing?token=[redacted]', status: 201, bytes: 5, requestId: id })
  expect(typeof entry.durationMs).toBe('number')
  expect(lines[0]).not.toContain('secret')
})

test('a sane incoming X-Request-Id is kept, a hostile one replaced', async () => {
  const handler = withRequestLog(() => new Response('ok'), () => {})
  const kept = await handler(new Request('http://x/', { headers: { 'x-request-id': 'abc-123' } }), null)
  expect(kept.headers.get('x-request-id')).toBe('abc-123')
  const replaced = await handler(new Request('http://x/', { headers: { 'x-request-id': 'a b;<script>' } }), null)
  expect(replaced.headers.get('x-request-id')).not.toBe('a b;<script>')
})
