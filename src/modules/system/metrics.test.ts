// /api/metrics: who may scrape, and a Prometheus text-format parser (promtool is not available here) over real output.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createTestContext, type TestContext } from '../../test-support'
import { createMiniApp, createTestUser, upload, uploadForm } from '../versions/test-fixtures'
import { resolveUrl } from '../runtime/test-runtime'
import { latencyBuckets, routeGroupOf, type RouteGroup } from './metrics'

interface Sample {
  name: string
  labels: Record<string, string>
  value: number
}

interface Family {
  name: string
  type: string
  help: string
  samples: Sample[]
}

/**
 * Parses text format 0.0.4 strictly enough to catch what promtool would: names and label syntax,
 * values, HELP/TYPE before samples, families not interleaved, no duplicate series, histograms with
 * cumulative buckets ending in +Inf equal to _count, and a final newline.
 */
export function parsePrometheusText(text: string): Map<string, Family> {
  if (!text.endsWith('\n')) throw new Error('the text must end with a newline')
  const families = new Map<string, Family>()
  const seenSeries = new Set<string>()
  let current: Family | null = null
  const familyOf = (sampleName: string): Family | undefined => {
    for (const suffix of ['', '_bucket', '_sum', '_count']) {
      if (suffix !== '' && !sampleName.endsWith(suffix)) continue
      const family = families.get(sampleName.slice(0, sampleName.length - suffix.length))
      if (family && (suffix === '' || family.type === 'histogram' || family.type === 'summary')) return family
    }
    return undefined
  }
  text
    .slice(0, -1)
    .split('\n')
    .forEach((line, index) => {
      const where = `line ${index + 1} "${line}"`
      if (line === '') throw new Error(`${where}: empty line`)
      const meta = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$/.exec(line)
      if (meta) {
        const [, kind, name, rest] = meta as unknown as [string, string, string, string]
        let family = families.get(name)
        if (!family) {
          if (current && current.samples.length === 0 && current.name !== name) throw new Error(`${where}: family ${current.name} has no samples`)
          family = { name, type: 'untyped', help: '', samples: [] }
          families.set(name, family)
        } else if (family !== current) throw new Error(`${where}: ${name} described twice`)
        if (family.samples.length > 0) throw new Error(`${where}: ${kind} after samples of ${name}`)
        if (kind === 'TYPE') {
          if (!['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(rest)) throw new Error(`${where}: unknown type`)
          family.type = rest
        } else family.help = rest
        current = family
        return
      }
      if (line.startsWith('#')) return
      const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: -?\d+)?$/.exec(line)
      if (!sample) throw new Error(`${where}: not a sample`)
      const [, name, labelText, valueText] = sample as unknown as [string, string, string | undefined, string]
      const labels: Record<string, string> = {}
      if (labelText !== undefined && labelText !== '') {
        const labelPattern = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"(,|$)/y
        let at = 0
        while (at < labelText.length) {
          labelPattern.lastIndex = at
          const match = labelPattern.exec(labelText)
          if (!match) throw new Error(`${where}: bad labels at ${at}`)
          if (match[1]! in labels) throw new Error(`${where}: label ${match[1]} twice`)
          labels[match[1]!] = match[2]!.replace(/\\n/g, '\n').replace(/\\(["\\])/g, '$1')
          at = labelPattern.lastIndex
          if (match[3] === '' && at < labelText.length) throw new Error(`${where}: bad labels`)
        }
      }
      const value = valueText === '+Inf' ? Infinity : valueText === '-Inf' ? -Infinity : valueText === 'NaN' ? NaN : Number(valueText)
      if (!/^(NaN|[+-]Inf|[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?)$/.test(valueText)) throw new Error(`${where}: bad value`)
      const family = familyOf(name)
      if (!family) throw new Error(`${where}: sample without HELP/TYPE`)
      if (family !== current) throw new Error(`${where}: ${family.name} interleaved with ${current?.name}`)
      const series = `${name}{${Object.entries(labels).sort().map(([key, text]) => `${key}=${text}`).join(',')}}`
      if (seenSeries.has(series)) throw new Error(`${where}: duplicate series`)
      seenSeries.add(series)
      if (family.type === 'counter' && (value < 0 || !family.name.endsWith('_total'))) throw new Error(`${where}: a counter must be ≥ 0 and named *_total`)
      family.samples.push({ name, labels, value })
    })
  for (const family of families.values()) {
    if (family.type !== 'histogram') continue
    const byLabels = new Map<string, Sample[]>()
    for (const sample of family.samples) {
      const { le: _le, ...rest } = sample.labels
      const key = JSON.stringify(rest)
      byLabels.set(key, [...(byLabels.get(key) ?? []), sample])
    }
    for (const [key, samples] of byLabels) {
      const buckets = samples.filter((sample) => sample.name.endsWith('_bucket'))
      const count = samples.find((sample) => sample.name.endsWith('_count'))
      if (!count || !samples.some((sample) => sample.name.endsWith('_sum'))) throw new Error(`${family.name}${key}: _sum or _count missing`)
      let previous = -Infinity
      let previousValue = 0
      for (const bucket of buckets) {
        const le = bucket.labels.le === '+Inf' ? Infinity : Number(bucket.labels.le)
        if (!(le > previous) || bucket.value < previousValue) throw new Error(`${family.name}${key}: buckets not cumulative and ordered`)
        previous = le
        previousValue = bucket.value
      }
      if (previous !== Infinity || previousValue !== count.value) throw new Error(`${family.name}${key}: the +Inf bucket must equal _count`)
    }
  }
  return families
}

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
    await upload(context, member.token, 'com.example.metrics', uploadForm('com.example.metrics', { version: '1.1.0' }))
    const miniAppId = uploaded.body.miniAppId
    await context.call('POST', `/api/mini-apps/${miniAppId}/versions/${uploaded.body.id}/publish`, { token: member.token, json: {} })
    const info = (await context.call('GET', '/api/mini-apps/access/apps/com.example.metrics/release/install')).body
    await (await context.app.handle(new Request(resolveUrl('http://localhost/api', info.bundles.ios)))).arrayBuffer()
    await context.call('POST', '/api/mini-apps/access/events', { json: { events: [{ appId: 'com.example.metrics', versionId: uploaded.body.id, platform: 'ios', event: 'launched', deviceId: 'd1' }, { appId: 'nope', versionId: 'nope', platform: 'ios', event: 'failed' }] } })
    // what the request log hands over under `serve` (app.handle alone bypasses it)
    const { requestMetrics } = context.app.store
    requestMetrics.observe(new Request('http://h/api/mini-apps/access/apps/com.example.metrics/release/install'), 200, 0.0004)
    requestMetrics.observe(new Request('http://h/api/mini-apps/access/apps/com.example.metrics/release/install'), 200, 0.003)
    requestMetrics.observe(new Request('http://h/api/mini-apps/access/apps/com.example.metrics/release/install'), 404, 20)
    requestMetrics.observe(new Request('http://h/api/mini-apps/by-app-id/com.example.metrics/versions/upload', { method: 'POST', headers: { 'content-length': '12345' } }), 201, 1.5)
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
    expect(value('miniship_device_events_total', { event: 'launched' })).toBe(1)
    expect(value('miniship_device_events_rejected_total')).toBe(1)
    expect(value('miniship_active_devices', { app_id: 'com.example.metrics' })).toBe(1)
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
