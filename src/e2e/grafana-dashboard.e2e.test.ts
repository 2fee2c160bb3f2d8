// docs/grafana-dashboard.json queries only what /api/metrics really answers: every metric name and
// every label value its expressions select exists in a scrape of the binary after some traffic.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { parsePrometheusText, type Sample } from '../modules/system/test-prometheus'
import { FIXTURE_APP_ID, startConsoleFixture, type ConsoleFixture } from './console-fixture'

const dashboardPath = join(import.meta.dir, '..', '..', 'docs', 'grafana-dashboard.json')

interface Panel {
  title: string
  type: string
  targets?: { expr: string }[]
  panels?: Panel[]
}

/** Every PromQL expression of the dashboard, with the title of its panel. */
async function expressions(): Promise<{ panel: string; expr: string }[]> {
  const dashboard = (await Bun.file(dashboardPath).json()) as { panels: Panel[] }
  const all: { panel: string; expr: string }[] = []
  const visit = (panels: Panel[]) => {
    for (const panel of panels) {
      for (const target of panel.targets ?? []) all.push({ panel: panel.title, expr: target.expr })
      if (panel.panels) visit(panel.panels)
    }
  }
  visit(dashboard.panels)
  return all
}

/** `name{label="v", other=~"a|b"}` selectors of an expression (names without braces have no matchers). */
function selectors(expr: string): { name: string; matchers: { label: string; op: string; value: string }[] }[] {
  const found = []
  for (const match of expr.matchAll(/\b(miniship_[a-z0-9_]+)(\{([^}]*)\})?/g)) {
    const matchers = [...(match[3] ?? '').matchAll(/(\w+)\s*(=~|!=|!~|=)\s*"([^"]*)"/g)].map((m) => ({ label: m[1]!, op: m[2]!, value: m[3]! }))
    found.push({ name: match[1]!, matchers })
  }
  return found
}

describe('the Grafana dashboard', () => {
  let fixture: ConsoleFixture
  let samples: Sample[]

  beforeAll(async () => {
    fixture = await startConsoleFixture()
    // what host apps do: ask what to install, check for an update, download the files
    const info = await fixture.api('GET', `/api/mini-apps/access/apps/${FIXTURE_APP_ID}/release/install?platform=ios&deviceId=device-z`)
    expect(info.status).toBe(200)
    const urls = [info.body.bundles?.ios, info.body.manifestUrl, info.body.assetsUrl?.ios].filter((u): u is string => typeof u === 'string')
    expect(urls.length).toBe(3)
    for (const url of urls) {
      const file = await fetch(new URL(url, `${fixture.base}/api/`))
      expect(file.status).toBe(200)
      await file.arrayBuffer()
    }
    expect((await fixture.api('GET', `/api/mini-apps/access/apps/${FIXTURE_APP_ID}/update?platform=ios&currentVersion=1.0.0&deviceId=device-z`)).status).toBe(200)
    expect((await fixture.api('GET', `/api/mini-apps/access/apps/com.example.none/update?platform=ios&currentVersion=1.0.0`)).status).toBe(404)
    const failed = [{ appId: FIXTURE_APP_ID, versionId: (await fixture.api('GET', `/api/mini-apps/${fixture.shop!.id}/workspace`, { token: fixture.token })).body.versions[0].id, platform: 'android', event: 'failed', deviceId: 'device-y' }]
    expect((await fixture.api('POST', '/api/mini-apps/access/events', { json: { events: failed } })).status).toBe(202)
    const scrape = await fixture.api('GET', '/api/metrics', { token: fixture.token })
    expect(scrape.status).toBe(200)
    samples = [...parsePrometheusText(scrape.body as string).values()].flatMap((family) => family.samples)
  }, 120_000)

  afterAll(() => fixture?.stop())

  test('it is a dashboard with panels that query miniship metrics', async () => {
    const all = await expressions()
    expect(all.length).toBeGreaterThan(15)
    for (const { expr } of all) expect(selectors(expr).length).toBeGreaterThan(0)
  })

  test('every metric it queries is in a real /api/metrics answer, with every label value it selects', async () => {
    const missing: string[] = []
    for (const { panel, expr } of await expressions()) {
      for (const { name, matchers } of selectors(expr)) {
        const ofName = samples.filter((sample) => sample.name === name)
        if (ofName.length === 0) {
          missing.push(`${panel}: ${name} is not in /api/metrics`)
          continue
        }
        for (const { label, op, value } of matchers) {
          if (op === '!=' || op === '!~') continue
          const wanted = op === '=' ? [value] : value.split('|')
          for (const one of wanted) {
            if (!ofName.some((sample) => sample.labels[label] === one)) missing.push(`${panel}: no ${name} sample has ${label}="${one}"`)
          }
        }
      }
    }
    expect(missing).toEqual([])
  })

  test('the selectors of an expression are read as PromQL writes them', () => {
    expect(selectors('histogram_quantile(0.95, sum by (le) (rate(miniship_http_request_duration_seconds_bucket{group=~"update_check|release_file"}[5m])))')).toEqual([
      { name: 'miniship_http_request_duration_seconds_bucket', matchers: [{ label: 'group', op: '=~', value: 'update_check|release_file' }] },
    ])
    expect(selectors('sum(miniship_active_devices) / miniship_mini_apps{a!="b"}')).toEqual([
      { name: 'miniship_active_devices', matchers: [] },
      { name: 'miniship_mini_apps', matchers: [{ label: 'a', op: '!=', value: 'b' }] },
    ])
  })
})
