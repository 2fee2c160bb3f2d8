// /api/metrics: who may scrape, and a Prometheus text-format parser (promtool is not available here) over real output.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createTestContext, type TestContext } from '../../test-support'
import { createMiniApp, createTestUser, upload, uploadForm } from '../../test-fixtures'
import { resolveUrl } from '../runtime/test-runtime'
import { latencyBuckets, routeGroupOf, type RouteGroup } from './metrics'
import { parsePrometheusText } from './test-prometheus'

describe('the parser itself', () => {
  test('accepts good text and refuses the usual mistakes', () => {
    const good = '# HELP a_total A.\n# TYPE a_total counter\na_total{x="1",y="q\\"uote"} 3\n# TYPE h histogram\nh_bucket{le="1"} 1\nh_bucket{le="+Inf"} 2\nh_sum 3.5\nh_count 2\n'
    const families = parsePrometheusText(good)
    expect(families.get('a_total')!.samples[0]!.labels).toEqual({ x: '1', y: 'q"uote' })
    const bad = [
      'a 1',
      '# TYPE a gauge\na 1\na 2\n',
      '# TYPE a gauge\na{x=1} 1\n',
      '# TYPE a gauge\na one\n',
      'a 1\n',
      '# TYPE a counter\na -1\n',
      '# TYPE a gauge\n# TYPE b gauge\nb 1\na 1\n',
      '# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_sum 1\nh_count 1\n',
      '# TYPE h histogram\nh_bucket{le="1"} 1\nh_sum 1\nh_count 1\n',
    ]
    for (const text of bad) expect(() => parsePrometheusText(text)).toThrow()
  })
})

test('route groups by path', () => {
  const cases: [string, RouteGroup][] = [
    ['http://h/api/mini-apps/access/apps/com.x/release/install', 'install_info'],
    ['http://h/api/mini-apps/access/versions/v1/install?token=t', 'install_info'],
    ['http://h/api/mini-apps/access/apps/com.x/update?platform=ios', 'update_check'],
    ['http://h/api/mini-apps/access/apps/com.x/release/bundles/ios', 'release_file'],
    ['http://h/api/mini-apps/access/versions/v1/bundles/ios?token=t', 'version_file'],
    ['http://h/api/mini-apps/access/events', 'events'],
    ['http://h/api/mini-apps/by-app-id/com.x/versions/upload', 'upload'],
    ['http://h/api/mini-apps', 'mini_apps'],
    ['http://h/api/mini-apps/m1/insights?days=3', 'mini_apps'],
    ['http://h/api/auth/login', 'auth'],
    ['http://h/api/admin/users', 'admin'],
    ['http://h/api/health', 'health'],
    ['http://h/api/metrics', 'metrics'],
    ['http://h/api/openapi.json', 'api_other'],
    ['http://h/', 'console'],
    ['http://h/chunk-abc.js', 'console'],
    ['/api/mini-apps/access/apps/com.x/update?platform=ios', 'update_check'],
  ]
  for (const [url, group] of cases) expect(routeGroupOf(url), url).toBe(group)
})

describe('GET /api/metrics', () => {
  const metricsToken = 'scrape-token-0123456789'
  let context: TestContext
  let admin: { token: string }
  let member: { token: string }
  beforeAll(async () => {
    context = createTestContext({ metricsToken })
    admin = await createTestUser(context, { role: 'ADMIN' })
    member = await createTestUser(context)
    await createMiniApp(context, member.token, 'com.example.metrics')
    const uploaded = await upload(context, member.token, 'com.example.metrics', uploadForm('com.example.metrics', { version: '1.0.0', bundleIos: 'b'.repeat(300) }))
    const second = await upload(context, member.token, 'com.example.metrics', uploadForm('com.example.metrics', { version: '1.1.0' }))
    const miniAppId = uploaded.body.miniAppId
    await context.call('POST', `/api/mini-apps/${miniAppId}/versions/${uploaded.body.id}/publish`, { token: member.token, json: {} })
    const info = (await context.call('GET', '/api/mini-apps/access/apps/com.example.metrics/release/install')).body
    await (await context.app.handle(new Request(resolveUrl('http://localhost/api', info.bundles.ios)))).arrayBuffer()
    await context.call('POST', '/api/mini-apps/access/events', { json: { events: [{ appId: 'com.example.metrics', versionId: uploaded.body.id, platform: 'ios', event: 'launched', deviceId: 'd1' },
      // d1 on the second version too: a miniapp's devices are the union of its versions', not their sum
      { appId: 'com.example.metrics', versionId: second.body.id, platform: 'ios', event: 'launched', deviceId: 'd1' },
      { appId: 'com.example.metrics', versionId: second.body.id, platform: 'ios', event: 'launched', deviceId: 'd2' }, { appId: 'nope', versionId: 'nope', platform: 'ios', event: 'failed' }] } })
    // what the request log hands over under `serve` (app.handle alone bypasses it)
    const { requestMetrics } = context.app.store
    requestMetrics.observe(new Request('http://h/api/mini-apps/access/apps/com.example.metrics/release/install'), 'http://h/api/mini-apps/access/apps/com.example.metrics/release/install', 200, 0.0004)
    requestMetrics.observe(new Request('http://h/api/mini-apps/access/apps/com.example.metrics/release/install'), 'http://h/api/mini-apps/access/apps/com.example.metrics/release/install', 200, 0.003)
    requestMetrics.observe(new Request('http://h/api/mini-apps/access/apps/com.example.metrics/release/install'), 'http://h/api/mini-apps/access/apps/com.example.metrics/release/install', 404, 20)
    requestMetrics.observe(new Request('http://h/api/mini-apps/by-app-id/com.example.metrics/versions/upload', { method: 'POST', headers: { 'content-length': '12345' } }), 'http://h/api/mini-apps/by-app-id/com.example.metrics/versions/upload', 201, 1.5)
  })
  afterAll(() => context.close())

  const scrape = (token?: string) => context.call('GET', '/api/metrics', { token })

  test('only administrators and the metrics token may scrape', async () => {
    const anonymous = await scrape()
    expect(anonymous.status).toBe(401)
    expect(anonymous.body.code).toBe('AUTH_REQUIRED')
    const wrong = await scrape('scrape-token-wrong-wrong')
    expect(wrong.status).toBe(401)
    expect(wrong.body.code).toBe('INVALID_TOKEN')
    const notAdmin = await scrape(member.token)
    expect(notAdmin.status).toBe(403)
    expect(notAdmin.body.code).toBe('ADMIN_REQUIRED')
    expect((await scrape(admin.token)).status).toBe(200)
    const byToken = await scrape(metricsToken)
    expect(byToken.status).toBe(200)
    expect(byToken.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8')
  })

  test('the text parses clean and carries what the issue lists', async () => {
    const families = parsePrometheusText((await scrape(metricsToken)).text)
    const value = (name: string, labels: Record<string, string> = {}) =>
      [...families.values()].flatMap((family) => family.samples).find((sample) => sample.name === name && Object.entries(labels).every(([key, text]) => sample.labels[key] === text))?.value
    expect(value('miniship_http_requests_total', { group: 'install_info', status_class: '2xx' })).toBe(2)
    expect(value('miniship_http_requests_total', { group: 'install_info', status_class: '4xx' })).toBe(1)
    expect(value('miniship_http_requests_total', { group: 'console', status_class: '5xx' })).toBe(0)
    const bucket = (le: string) => value('miniship_http_request_duration_seconds_bucket', { group: 'install_info', status_class: '2xx', le })
    expect(bucket('0.0005')).toBe(1)
    expect(bucket('0.0025')).toBe(1)
    expect(bucket('0.005')).toBe(2)
    expect(bucket('+Inf')).toBe(2)
    expect(value('miniship_http_request_duration_seconds_bucket', { group: 'install_info', status_class: '4xx', le: String(latencyBuckets.at(-1)) })).toBe(0)
    expect(value('miniship_http_request_duration_seconds_count', { group: 'install_info', status_class: '4xx' })).toBe(1)
    expect(value('miniship_uploads_total')).toBe(1)
    expect(value('miniship_upload_bytes_total')).toBe(12345)
    expect(value('miniship_downloads_total', { kind: 'bundleIos' })).toBe(1)
    expect(value('miniship_download_bytes_total', { kind: 'bundleIos' })).toBe(300)
    expect(value('miniship_install_info_total')).toBe(1)
    expect(value('miniship_device_events_total', { event: 'launched' })).toBe(3)
    expect(value('miniship_device_events_rejected_total')).toBe(1)
    expect(value('miniship_active_devices', { app_id: 'com.example.metrics' })).toBe(2)
    expect(value('miniship_versions', { status: 'PUBLISHED' })).toBe(1)
    expect(value('miniship_versions', { status: 'DRAFT' })).toBe(1)
    expect(value('miniship_versions', { status: 'IN_REVIEW' })).toBe(0)
    expect(value('miniship_database_bytes')).toBeGreaterThan(0)
    // two versions: four bundles and two manifests (each carries its version), the same two assets zips stored once
    expect(value('miniship_blob_files')).toBe(8)
    expect(value('miniship_blob_bytes')).toBeGreaterThan(300)
    expect(families.get('miniship_http_request_duration_seconds')!.type).toBe('histogram')
  })
})
