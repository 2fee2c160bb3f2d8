// Kept from the attack on the landed binary (issue 29): the metrics token opens /api/metrics and nothing else, and no label can be injected.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createTestContext, type TestContext } from '../../test-support'
import { createMiniApp, createTestUser } from '../../test-fixtures'
import { labelValue } from './metrics'
import { parsePrometheusText } from './test-prometheus'

describe('labelValue: what could break out of a label is escaped', () => {
  const cases: [string, string][] = [
    ['plain', 'plain'],
    ['a"b', 'a\\"b'],
    ['a\\b', 'a\\\\b'],
    ['a\nb', 'a\\nb'],
    ['x"} 1\nminiship_fake{y="', 'x\\"} 1\\nminiship_fake{y=\\"'],
    ['\\"', '\\\\\\"'],
  ]
  for (const [raw, escaped] of cases) {
    test(JSON.stringify(raw), () => {
      expect(labelValue(raw)).toBe(escaped)
      // the escaped value parses back to the raw one inside a sample, and adds no sample
      const families = parsePrometheusText(`# TYPE t gauge\nt{v="${labelValue(raw)}"} 1\n`)
      expect(families.get('t')!.samples).toEqual([expect.objectContaining({ labels: { v: raw }, value: 1 })])
    })
  }
})

describe('the metrics token and what reaches the scrape', () => {
  const metricsToken = 'scrape-token-held-0123456789'
  let context: TestContext
  let member: { token: string }
  beforeAll(async () => {
    context = createTestContext({ metricsToken })
    member = await createTestUser(context)
  })
  afterAll(() => context.close())

  test('the metrics token opens /api/metrics and is refused everywhere else (401)', async () => {
    expect((await context.call('GET', '/api/metrics', { token: metricsToken })).status).toBe(200)
    for (const [method, path] of [['GET', '/api/auth/me'], ['GET', '/api/mini-apps'], ['GET', '/api/admin/users'], ['GET', '/api/auth/api-keys']] as const) {
      const res = await context.call(method, path, { token: metricsToken })
      expect({ path, status: res.status }).toEqual({ path, status: 401 })
    }
  })

  test('names a member controls (a miniapp name) never become labels: every line of the scrape is a comment or a miniship_ sample', async () => {
    const hostile = 'x"} 1\nminiship_injected 1\n# '
    const res = await context.call('POST', '/api/mini-apps', { token: member.token, json: { appId: 'com.example.labels', name: hostile } })
    // the name is refused for its control character, or stored: either way the scrape stays clean
    expect([201, 400]).toContain(res.status)
    await createMiniApp(context, member.token, 'com.example.labels2')
    const scraped = await context.call('GET', '/api/metrics', { token: metricsToken })
    expect(scraped.text).not.toContain('miniship_injected')
    // every line is a comment or a sample of one of ours
    for (const line of scraped.text.trimEnd().split('\n')) expect({ line, ok: line.startsWith('# ') || /^miniship_[a-z_]+(\{[^\n]*\})? \S+$/.test(line) }).toEqual({ line, ok: true })
  })
})
