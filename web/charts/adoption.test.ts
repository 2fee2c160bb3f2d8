// The adoption chart's numbers: shares per day, stacking order, empty days and the empty state.
import { expect, test } from 'bun:test'
import { adoptionSeries, adoptionShape, percent, stackedShares } from './adoption'

const version = (versionId: string, activeDevices: number) => ({ versionId, version: versionId.replace('v', '1.'), activeDevices })

test('shares per day sum to 1 on days with devices, 0 on days without; versions stack in order of first appearance', () => {
  const series = adoptionSeries({
    days: [
      { day: '2026-11-20', versions: [version('v0', 30), version('v1', 10)] },
      { day: '2026-11-21', versions: [] },
      { day: '2026-11-22', versions: [version('v2', 5), version('v1', 15), version('v0', 0)] },
    ],
    adoption: { versionId: 'v1', share: 0.75 },
  })
  expect(series.days).toEqual(['2026-11-20', '2026-11-21', '2026-11-22'])
  expect(series.versions.map((entry) => entry.versionId)).toEqual(['v0', 'v1', 'v2'])
  expect(series.shares).toEqual([
    [0.75, 0, 0],
    [0.25, 0, 0.75],
    [0, 0, 0.25],
  ])
  expect(series.empty).toBe(false)
})

test('no device on any day is the empty state', () => {
  expect(adoptionSeries({ days: [{ day: '2026-11-22', versions: [version('v0', 0)] }], adoption: { versionId: null, share: 0 } })).toMatchObject({ versions: [], empty: true })
  expect(adoptionSeries({ days: [], adoption: { versionId: null, share: 0 } }).empty).toBe(true)
})

test('with the day\'s distinct devices (decisions §13) the shares are of that one denominator, and the other row has a place', () => {
  // 10 devices seen; 8 ran 1.1 and 3 ran 1.0 that day (one moved), 1 ran a version that is no release
  const series = adoptionSeries({
    days: [{ day: '2026-11-22', devices: 10, versions: [version('v1', 8), version('v0', 3), { versionId: null, version: 'other', activeDevices: 1 }] }],
    adoption: { versionId: 'v1', share: 0.8, devices: 10 },
  })
  expect(series.versions.map((entry) => entry.versionId)).toEqual(['v1', 'v0', null])
  expect(series.shares).toEqual([[0.8], [0.3], [0.1]])
})

test('one day with devices is drawn as bars from that day on (an area would be a sliver); two or more as areas over the whole range', () => {
  const report = (devicesPerDay: number[]) => ({
    days: devicesPerDay.map((devices, day) => ({ day: `2026-11-${String(day + 1).padStart(2, '0')}`, versions: devices ? [version('v0', devices), version('v1', 1)] : [] })),
    adoption: { versionId: 'v1', share: 0.1 },
  })
  const last = Array.from({ length: 30 }, (_, day) => (day === 29 ? 9 : 0))
  expect(adoptionShape(adoptionSeries(report(last)))).toEqual({ shape: 'bars', from: 29 })
  expect(adoptionShape(adoptionSeries(report([0, 0, 4, 0, 0])))).toEqual({ shape: 'bars', from: 2 })
  expect(adoptionShape(adoptionSeries(report([7])))).toEqual({ shape: 'bars', from: 0 })
  expect(adoptionShape(adoptionSeries(report([0, 3, 0, 5])))).toEqual({ shape: 'areas', from: 0 })
})

test('a day whose shares add up to more than 1 (devices that moved versions count twice) is stacked to 100 %, not past it', () => {
  // what a README fleet run gives: all 864 devices checked on 1.0.0, 87 of them then installed 1.1.0
  const series = adoptionSeries({
    days: [
      { day: '2026-11-26', devices: 10, versions: [version('v0', 8), version('v1', 2)] },
      { day: '2026-11-27', devices: 864, versions: [version('v0', 864), version('v1', 87)] },
    ],
    adoption: { versionId: 'v1', share: 87 / 864, devices: 864 },
  })
  expect(series.shares.map((shares) => shares[1])).toEqual([1, 87 / 864])
  const heights = stackedShares(series)
  const top = (day: number) => heights.reduce((sum, shares) => sum + shares[day]!, 0)
  expect(top(1)).toBeCloseTo(1, 10)
  expect(heights[0]![1]! / heights[1]![1]!).toBeCloseTo(864 / 87, 10)
  // a day that adds up to 1 or less is drawn as it is
  expect(heights.map((shares) => shares[0])).toEqual([0.8, 0.2])
})

test('shares are written "83 %", with a space, like every other percentage in the console and the CLI', () => {
  expect(percent(0.834)).toBe('83 %')
  expect(percent(0)).toBe('0 %')
  expect(percent(1)).toBe('100 %')
})
