// docs/grafana-dashboard.json names what its series count as /api/metrics' HELP text does.
import { expect, test } from 'bun:test'
import { join } from 'node:path'

const dashboardPath = join(import.meta.dir, '..', '..', '..', 'docs', 'grafana-dashboard.json')

test('the rejected device events series does not say unknown versions are refused: they are counted, in the other row (decisions §13)', async () => {
  const dashboard = (await Bun.file(dashboardPath).json()) as { panels: { targets?: { expr: string; legendFormat?: string }[] }[] }
  const rejected = dashboard.panels.flatMap((panel) => panel.targets ?? []).filter((target) => target.expr.includes('miniship_device_events_rejected_total'))
  expect(rejected.length).toBeGreaterThan(0)
  for (const target of rejected) {
    expect(target.legendFormat).not.toMatch(/version/)
    expect(target.legendFormat).toMatch(/app/)
    expect(target.legendFormat).toMatch(/channel/)
  }
})
