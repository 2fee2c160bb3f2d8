// Table test of what the downloads chart plots.
import { describe, expect, test } from 'bun:test'
import { downloadSeries } from './series'

const entry = (versionId: string, activeDevices: number, ios = 0, android = 0) => ({ versionId, version: versionId.replace('v', ''), downloads: { ios, android }, installs: 0, failures: 0, activeDevices })

const insights = {
  days: [
    { day: '2026-11-20', versions: [entry('v1.0.0', 10, 3, 1), entry('v1.1.0', 0, 0, 0), entry('v0.9.0', 2)] },
    { day: '2026-11-21', versions: [entry('v1.0.0', 6, 1, 1), entry('v1.1.0', 5, 4, 2), entry('v0.8.0', 1)] },
    { day: '2026-11-22', versions: [] },
  ],
}

describe('downloadSeries', () => {
  test('iOS and Android summed over versions, per day', () => {
    expect(downloadSeries(insights)).toEqual([
      { name: 'iOS', values: [3, 5, 0] },
      { name: 'Android', values: [1, 3, 0] },
    ])
  })
})
