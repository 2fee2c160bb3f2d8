import { expect, test } from 'bun:test'
import { createLogSink, redactedPath, runningRequestId, toldLength, withRequestLog, type LogSink } from './request-log'

/** A sink whose chunks are kept as text (copied: the sink reuses its buffer). */
function textSink(flushMs?: number): { sink: LogSink; writes: string[] } {
  const writes: string[] = []
  return { sink: createLogSink((chunk) => writes.push(Buffer.from(chunk).toString()), flushMs), writes }
}

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
    // Bun's URL of a request whose Host is no host name is the path alone
    ['/api/mini-apps/access/apps/a/update?platform=ios', '/api/mini-apps/access/apps/a/update?platform=[redacted]'],
  ]
  for (const [url, path] of table) expect(redactedPath(url)).toBe(path)
})

test('every response gets X-Request-Id and one JSON log line without the token', async () => {
  const lines: string[] = []
  const handler = withRequestLog(() => new Response('hello', { status: 201, headers: { 'content-length': '5' } }), (line) => lines.push(line))
  const response = await handler(new Request('http://x/api/thing?token=eyJ.secret.value'), null)
  const id = response.headers.get('x-request-id')
  expect(id).toMatch(/^[0-9a-f]{12}-[0-9a-z]+$/)
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
  // replaced by one of our own: a per-process prefix and a counter, as when none was sent
  const generated = /^[0-9a-f]{12}-[0-9a-z]+$/
  const own = (await handler(new Request('http://x/'), null)).headers.get('x-request-id')!
  expect(own).toMatch(generated)
  for (const hostile of ['a b;<script>', 'x'.repeat(65), 'ünïcode', '', 'a"b', 'a\\b', 'line\tbreak']) {
    const replaced = (await handler(new Request('http://x/', { headers: { 'x-request-id': hostile } }), null)).headers.get('x-request-id')!
    expect({ hostile, replaced: generated.test(replaced) }).toEqual({ hostile, replaced: true })
    expect(replaced.split('-')[0]).toBe(own.split('-')[0]!)
    expect(replaced).not.toBe(own)
  }
})

test('the log sink writes whole lines in batches and everything on flush', async () => {
  const { sink, writes } = textSink(10)
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

test('through a sink, request lines are the same lines, in order with the other lines', async () => {
  const direct: string[] = []
  const { sink, writes } = textSink(10)
  const clock = () => Date.UTC(2026, 10, 23, 8, 30, 0, 250)
  const answer = () => new Response('hello', { status: 201, headers: { 'content-length': '5' } })
  const viaFunction = withRequestLog(answer, (line) => direct.push(line), { clock })
  const viaSink = withRequestLog(answer, sink, { clock })
  const request = () => new Request('http://x/api/thing?token=eyJ.secret.value', { headers: { 'x-request-id': 'same-id' } })
  await viaFunction(request(), null)
  sink.log('before')
  await viaSink(request(), null)
  sink.log('after')
  expect(writes).toEqual([])
  sink.flush()
  expect(writes).toHaveLength(1)
  const lines = writes[0]!.split('\n')
  expect(lines).toHaveLength(4)
  expect(lines[0]).toBe('before')
  expect(lines[2]).toBe('after')
  expect(lines[3]).toBe('')
  // the duration differs between the two requests; everything else is the same
  const withoutDuration = (line: string) => line.replace(/"durationMs":[0-9.]+/, '"durationMs":0')
  expect(withoutDuration(lines[1]!)).toBe(withoutDuration(direct[0]!))
  expect(JSON.parse(lines[1]!)).toMatchObject({ time: '2026-11-23T08:30:00.250Z', method: 'GET', path: '/api/thing?token=[redacted]', status: 201, bytes: 5, requestId: 'same-id' })
  expect(writes[0]).not.toContain('secret')
})

test('lines formatted in place in the buffer are the string lines byte for byte, valid JSON, for any URL', () => {
  const { sink, writes } = textSink()
  const at = Date.UTC(2026, 10, 25, 9, 0, 0, 7)
  const urls = [
    'http://x/api/health',
    'http://x',
    'http://x/',
    '/api/mini-apps/access/apps/a/update?platform=ios&currentVersion=1.0.0&deviceId=dev-1',
    'http://x:3001/a?token=secret',
    'http://x/a?flag&token=eyJ.a.b',
    'http://x/a?',
    'http://x/a?&',
    'http://x/a?&b',
    'http://x/a?a&&b=1&',
    'http://x/a?a==b&c=d=e',
    'http://x/a?token=s#frag',
    'http://x/a#f?token=s',
    'http://x/a?x=%22&y=ü',
    'http://x/api/auth/cli/sessions/ABCD-1234/approve?x=1',
    'http://x/p"q\\r?k"ey=v',
    'http://x/p\u0001?a=\u0002',
    'http://x/ünïcode/\u2028?ä=1',
    'http://x/\u007f',
    `http://x/long?${'k'.repeat(2000)}=v&token=${'t'.repeat(3000)}`,
    `http://x/${'p'.repeat(1020)}?a=b`,
    // the same path as the URL before with another query (its path's bytes are reused), then paths that only start alike
    '/api/mini-apps/access/apps/a/update?platform=ios&currentVersion=1.0.0&deviceId=dev-2',
    '/api/mini-apps/access/apps/a/update?platform=android&deviceId=dev-3&x',
    '/api/mini-apps/access/apps/a/updates?platform=ios',
    '/api/mini-apps/access/apps/a/update',
    '/api/mini-apps/access/apps/a/update?',
    '/api/mini-apps/access/apps/a/update?k"ey=1',
    '/api/mini-apps/access/apps/a/update?token=t#f',
    'http://x:3001/a?token=other',
    'http://y:3001/a?token=other',
    'http://x/api/auth/cli/sessions/ABCD-1234?x=1',
    'http://x/api/auth/cli/sessions/ABCD-1234?y=1',
  ]
  const durations = [0, 0.004, 0.005, 0.1, 0.12, 0.125, 1, 9.999, 10.5, 123456.78]
  const expected: string[] = []
  // each URL twice in a row (the second line reuses the first one's path bytes), then all once more
  for (const [index, url] of [...urls.flatMap((url) => [url, url]), ...urls].entries()) {
    const durationMs = durations[index % durations.length]!
    const bytes = index % 3 === 0 ? null : index * 1000
    // the times move by 37 ms a line, across seconds; the last few are far outside the usual years
    const time = index >= 90 ? [-1, 253402300800000, 0][index % 3]! : at + index * 37
    sink.request(time, index % 4 === 0 ? 'POST' : 'GET', url, 200 + index, bytes, durationMs, `id-${index}`)
    // the same fields through the string form
    const line = `{"time":"${new Date(time).toISOString()}","method":"${index % 4 === 0 ? 'POST' : 'GET'}","path":${JSON.stringify(redactedPath(url))},"status":${200 + index},"bytes":${bytes},"durationMs":${Math.round(durationMs * 100) / 100},"requestId":"id-${index}"}`
    expected.push(line)
  }
  sink.flush()
  const lines = writes.join('').split('\n')
  expect(lines.pop()).toBe('')
  expect(lines).toEqual(expected)
  for (const line of lines) expect(typeof JSON.parse(line).path).toBe('string')
  expect(lines.join('\n')).not.toContain('secret')
  expect(lines.join('\n')).not.toContain('ABCD-1234')
})

test('the sink writes once 64 KiB gather, and every line whole', () => {
  const { sink, writes } = textSink(60_000)
  let count = 0
  while (writes.length === 0) sink.request(0, 'GET', `http://x/api/mini-apps/access/apps/a/update?platform=ios&deviceId=${count}`, 200, 2680, 0.1, `id-${count++}`)
  expect(Buffer.byteLength(writes[0]!)).toBeGreaterThanOrEqual(64 * 1024)
  expect(Buffer.byteLength(writes[0]!)).toBeLessThan(64 * 1024 + 1024)
  expect(writes[0]!.endsWith('\n')).toBe(true)
  // lines are formatted a batch at a time: the rest of the batch waits in the buffer
  const firstLines = writes[0]!.split('\n').length - 1
  expect(firstLines).toBeLessThanOrEqual(count)
  expect(count - firstLines).toBeLessThan(256)
  sink.request(0, 'GET', 'http://x/after', 200, 1, 0.1, 'after')
  sink.flush()
  const all = writes.join('').split('\n')
  expect(all.pop()).toBe('')
  expect(all.map((line) => JSON.parse(line).requestId)).toEqual([...Array.from({ length: count }, (_, index) => `id-${index}`), 'after'])
})

test('lines kept as fields keep their order with text lines, and are written by the timer when no flush comes', async () => {
  const { sink, writes } = textSink(20)
  sink.request(0, 'GET', 'http://x/one', 200, 1, 0.1, 'one')
  sink.log('{"text":"between"}')
  sink.request(0, 'POST', 'http://x/two', 201, null, 2, 'two')
  expect(writes).toEqual([])
  await Bun.sleep(60)
  const lines = writes.join('').split('\n').filter(Boolean)
  expect(lines.map((line) => JSON.parse(line).requestId ?? JSON.parse(line).text)).toEqual(['one', 'between', 'two'])
  expect(JSON.parse(lines[2]!)).toMatchObject({ method: 'POST', status: 201, bytes: null, durationMs: 2 })
})

test("a line's time is the wall clock's, read from the monotonic clock", async () => {
  const { wallClockOf } = await import('./request-log')
  const wallAt = wallClockOf()
  for (let round = 0; round < 5; round++) {
    const before = Date.now()
    const at = wallAt(performance.now())
    const after = Date.now()
    expect(at).toBeGreaterThanOrEqual(before - 2)
    expect(at).toBeLessThanOrEqual(after + 2)
    expect(Number.isInteger(at)).toBe(true)
    await Bun.sleep(5)
  }
  // a reading a second past the last offset takes it again from Date.now (a wall-clock step shows within a second)
  const later = performance.now() + 1500
  expect(Math.abs(wallAt(later) - Date.now())).toBeLessThanOrEqual(2)
})

test('--access-log writes logs only requests other than GET and HEAD, off none; every request is observed and gets an id', async () => {
  for (const [lines, expected] of [['all', ['GET', 'HEAD', 'POST', 'DELETE']], ['writes', ['POST', 'DELETE']], ['off', []]] as const) {
    const logged: string[] = []
    let observed = 0
    const handler = withRequestLog(() => new Response('ok'), (line) => logged.push(JSON.parse(line).method), { lines, observe: () => observed++ })
    for (const method of ['GET', 'HEAD', 'POST', 'DELETE']) {
      const response = await handler(new Request('http://x/api/thing', { method }), null)
      expect(response.headers.get('x-request-id')).toBeTruthy()
    }
    expect({ lines, logged }).toEqual({ lines, logged: [...expected] })
    expect(observed).toBe(4)
  }
})

test('an answer built with the running request id and its length told is logged with them, and keeps its one id', async () => {
  const lines: string[] = []
  const seen: (string | null)[] = []
  const body = '{"ok":true}'
  const handler = withRequestLog(() => {
    const id = runningRequestId()
    seen.push(id)
    // the length told is believed: no header says it
    return toldLength(new Response(body, { headers: { 'x-request-id': id! } }), 4242, true)
  }, (line) => lines.push(line))
  const response = await handler(new Request('http://x/api/thing'), null)
  expect(seen[0]).toMatch(/^[0-9a-f]{12}-[0-9a-z]+$/)
  expect(response.headers.get('x-request-id')).toBe(seen[0]!)
  expect(JSON.parse(lines[0]!)).toMatchObject({ status: 200, bytes: 4242, requestId: seen[0] })
  // outside a handler, and in a handler's later continuation, there is no running request
  expect(runningRequestId()).toBeNull()
  const later = withRequestLog(async () => {
    await Bun.sleep(1)
    seen.push(runningRequestId())
    return new Response('x', { headers: { 'content-length': '1' } })
  }, (line) => lines.push(line))
  const answered = await later(new Request('http://x/api/later'), null)
  expect(seen[1]).toBeNull()
  expect(answered.headers.get('x-request-id')).toBe(JSON.parse(lines[1]!).requestId)
})

test('a length told for another response is not believed, and an answer without the id gets it set', async () => {
  const lines: string[] = []
  const other = toldLength(new Response('elsewhere'), 999, true)
  const handler = withRequestLog(() => new Response('hello', { headers: { 'content-length': '5' } }), (line) => lines.push(line))
  const response = await handler(new Request('http://x/api/thing'), null)
  expect(other.headers.get('x-request-id')).toBeNull()
  const entry = JSON.parse(lines[0]!)
  expect(entry.bytes).toBe(5)
  expect(response.headers.get('x-request-id')).toBe(entry.requestId)
})
