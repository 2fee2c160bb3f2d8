// The runtime's hot answers carry the request log's id, put in as they are built (issue 30), and no other answer carries a stale one.
import { afterAll, expect, test } from 'bun:test'
import type { BunRequest, Server } from 'bun'
import { createTestContext, createUser, type TestContext } from '../../test-support'
import { createMiniApp, upload, uploadForm } from '../../test-fixtures'
import { nativeInstallRoutes } from './native-routes'
import { withRequestLog } from '../../http/request-log'

const context = createTestContext()
afterAll(() => context.close())

/** serve's native routes of `app` under the request log (its lines into `lines`); asks one with a request as Bun hands it over */
function nativeAsk(app: TestContext, lines: string[]) {
  const routes = nativeInstallRoutes(
    { ...app.app.store.installAnswers, ...app.app.store.fileAnswers },
    (handler) => withRequestLog<Server<undefined>, BunRequest>(handler, (line) => lines.push(line), { keepIncomingId: false }),
    (line) => lines.push(line),
  ) as unknown as Record<string, { GET: (request: BunRequest, server: Server<undefined>) => Response | Promise<Response> }>
  const server = { requestIP: () => ({ address: '127.0.0.1', family: 'IPv4', port: 1 }) } as unknown as Server<undefined>
  return async (route: string, url: string, params: Record<string, string>) => {
    const request = Object.assign(new Request(url), { params }) as unknown as BunRequest
    return routes[route]!.GET(request, server)
  }
}

test('install info, release install and the update check answer with the X-Request-Id and length their log line names', async () => {
  const admin = await createUser(context, { email: 'ids@example.com', role: 'ADMIN' })
  const app = await createMiniApp(context, admin.token, 'com.example.ids')
  const version = (await upload(context, admin.token, 'com.example.ids', uploadForm('com.example.ids'))).body
  await context.call('POST', `/api/mini-apps/${app.id}/versions/${version.id}/publish`, { token: admin.token, json: {} })
  const info = (await context.call('GET', `/api/mini-apps/access/versions/${version.id}/install?token=${admin.token}`)).body
  const token = new URL(info.bundleUrl).searchParams.get('token')!
  const lines: string[] = []
  const ask = nativeAsk(context, lines)
  const answers = [
    await ask('/api/mini-apps/access/versions/:versionId/install', `http://localhost/api/mini-apps/access/versions/${version.id}/install?token=${token}`, { versionId: version.id }),
    await ask('/api/mini-apps/access/versions/:versionId/install', `http://localhost/api/mini-apps/access/versions/${version.id}/install?token=${token}`, { versionId: version.id }),
    await ask('/api/mini-apps/access/apps/:appId/release/install', 'http://localhost/api/mini-apps/access/apps/com.example.ids/release/install?deviceId=d-1', { appId: 'com.example.ids' }),
    await ask('/api/mini-apps/access/apps/:appId/update', 'http://localhost/api/mini-apps/access/apps/com.example.ids/update?platform=ios&currentVersion=0.9.0&deviceId=d-2', { appId: 'com.example.ids' }),
  ]
  expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 200])
  const logged = lines.map((line) => JSON.parse(line))
  const ids = new Set<string>()
  for (const [index, answer] of answers.entries()) {
    const body = await answer.arrayBuffer()
    expect(answer.headers.get('x-request-id')).toBe(logged[index].requestId)
    expect(logged[index].bytes).toBe(body.byteLength)
    ids.add(logged[index].requestId)
  }
  expect(ids.size).toBe(answers.length)
  // the same answer through the app (no request log): no id left over from the requests before
  const direct = await context.call('GET', `/api/mini-apps/access/versions/${version.id}/install?token=${token}`)
  expect(direct.status).toBe(200)
  expect(direct.headers.get('x-request-id')).toBeNull()
})

test('the S3 redirect carries the id its log line names, and a redirect made outside the log none', async () => {
  const { startTestS3 } = await import('../../storage/test-s3')
  const s3 = await startTestS3()
  const s3Context = createTestContext({ storage: { ...s3.config('ids'), recorded: { owner: 'test-ids' } }, s3Downloads: 'redirect' })
  try {
    const admin = await createUser(s3Context, { email: 'ids-s3@example.com', role: 'ADMIN' })
    const app = await createMiniApp(s3Context, admin.token, 'com.example.idss')
    const version = (await upload(s3Context, admin.token, 'com.example.idss', uploadForm('com.example.idss'))).body
    await s3Context.call('POST', `/api/mini-apps/${app.id}/versions/${version.id}/publish`, { token: admin.token, json: {} })
    const info = (await s3Context.call('GET', `/api/mini-apps/access/versions/${version.id}/install?token=${admin.token}`)).body
    const bundleUrl = new URL(info.bundleUrl)
    const lines: string[] = []
    const ask = nativeAsk(s3Context, lines)
    const redirects: Response[] = []
    for (let round = 0; round < 2; round++) {
      redirects.push(await ask('/api/mini-apps/access/versions/:versionId/bundles/:platform', `http://localhost${bundleUrl.pathname}${bundleUrl.search}`, { versionId: version.id, platform: 'ios' }))
    }
    const logged = lines.map((line) => JSON.parse(line))
    for (const [index, redirect] of redirects.entries()) {
      expect(redirect.status).toBe(302)
      expect(redirect.headers.get('location')).toContain('X-Amz-Signature')
      expect(redirect.headers.get('x-request-id')).toBe(logged[index].requestId)
      expect(logged[index]).toMatchObject({ status: 302, bytes: null })
    }
    expect(logged[0].requestId).not.toBe(logged[1].requestId)
    const direct = await s3Context.app.handle(new Request(`http://localhost${bundleUrl.pathname}${bundleUrl.search}`))
    expect(direct.status).toBe(302)
    expect(direct.headers.get('x-request-id')).toBeNull()
  } finally {
    s3Context.close()
    await s3.close()
  }
})

test('on the wire the native answers carry Content-Length, which Bun writes from the body (the cached headers leave it out), on a cache miss as on a cached answer', async () => {
  const lines: string[] = []
  const ask = nativeAsk(context, lines)
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    fetch: (request) => ask('/api/mini-apps/access/apps/:appId/update', request.url, { appId: 'com.example.ids' }),
  })
  try {
    // the first answer of this base URL is built after an await (a cache miss), the second at once
    for (const round of ['cache miss', 'cached']) {
      const answer = await fetch(`http://127.0.0.1:${server.port}/api/mini-apps/access/apps/com.example.ids/update?platform=ios&currentVersion=0.9.0&deviceId=d-3`)
      expect(answer.status, round).toBe(200)
      const length = Number(answer.headers.get('content-length'))
      expect(length, round).toBe(JSON.parse(lines.at(-1)!).bytes)
      expect((await answer.arrayBuffer()).byteLength, round).toBe(length)
      expect(length, round).toBeGreaterThan(100)
    }
  } finally {
    server.stop(true)
  }
})
