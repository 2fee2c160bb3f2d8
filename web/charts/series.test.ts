// Table tests of what the insights charts plot.
import { describe, expect, test } from 'bun:test'
import { adoptionSeries, downloadSeries } from './series'

const entry = (versionId: string, activeDevices: number, ios = 0, android = 0) => ({ versionId, version: versionId.replace('v', ''), downloads: { ios, android }, installs: 0, failures: 0, activeDevices })

const insights = {
  days: [
    { day: '2026-11-20', versions: [entry('v1.0.0', 10, 3, 1), entry('v1.1.0', 0, 0, 0), entry('v0.9.0', 2)] },
    { day: '2026-11-21', versions: [entry('v1.0.0', 6, 1, 1), entry('v1.1.0', 5, 4, 2), entry('v0.8.0', 1)] },
    { day: '2026-11-22', versions: [] },
  ],
}

describe('adoptionSeries', () => {
  test('the biggest versions by active devices first, one value per day', () => {
    expect(adoptionSeries(insights, 4)).toEqual([
      { name: '1.0.0', values: [10, 6, 0] },
      { name: '1.1.0', values: [0, 5, 0] },
      { name: '0.9.0', values: [2, 0, 0] },
      { name: '0.8.0', values: [0, 1, 0] },
    ])
  })

  test('beyond `biggest`, the rest is one "other" series', () => {
    expect(adoptionSeries(insights, 2)).toEqual([
      { name: '1.0.0', values: [10, 6, 0] },
      { name: '1.1.0', values: [0, 5, 0] },
      { name: 'other', values: [2, 1, 0] },
    ])
  })

  test('no active devices: nothing to plot', () => {
    expect(adoptionSeries({ days: [{ day: '2026-11-22', versions: [entry('v1', 0)] }] })).toEqual([])
  })
})

describe('downloadSeries', () => {
  test('iOS and Android summed over versions, per day', () => {
    expect(downloadSeries(insights)).toEqual([
      { name: 'iOS', values: [3, 5, 0] },
      { name: 'Android', values: [1, 3, 0] },
    ])
  })
})
