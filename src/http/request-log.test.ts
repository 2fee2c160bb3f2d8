import { expect, test } from 'bun:test'
import { createLogSink, redactedPath, withRequestLog } from './request-log'

test('query strings are redacted', () => {
  const table: [string, string][] = [
    ['http://x/api/health', '/api/health'],
    ['http://x', '/'],
    ['http://x:3001/a?token=secret', '/a?token=[redacted]'],
    ['http://x/a?token=secret&platform=ios', '/a?token=[redacted]&platform=[redacted]'],
    ['http://x/a?flag&token=eyJ.a.b', '/a?flag=[redacted]&token=[redacted]'],
    ['http://x/a?', '/a'],
    ['http://x/a?token=s#frag', '/a?token=[redacted]'],
    ['http://x/api/auth/cli/sessions/ABCD-1234', '/api/auth/cli/sessions/[redacted]'],
    ['http://x/api/auth/cli/sessions/ABCD-1234/approve', '/api/auth/cli/sessions/[redacted]/approve'],
    ['http://x/api/auth/cli/sessions', '/api/auth/cli/sessions'],
  ]
  for (const [url, path] of table) expect(redactedPath(url)).toBe(path)
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

test('the log sink writes whole lines in batches and everything on flush', async () => {
  const writes: string[] = []
  const sink = createLogSink((chunk) => writes.push(chunk), 10)
  sink.log('one')
  sink.log('two')
  expect(writes).toEqual([])
  await Bun.sleep(30)
  expect(writes).toEqual(['one\ntwo\n'])
  sink.log('three')
  sink.flush()
  expect(writes).toEqual(['one\ntwo\n', 'three\n'])
  sink.log('x'.repeat(70 * 1024))
  expect(writes).toHaveLength(3)
})
