// Table tests of the chart layout: axis tops, stacking order, shares, empty days.
import { describe, expect, test } from 'bun:test'
import { layoutBars, niceCeiling } from './bars'

describe('niceCeiling', () => {
  test.each([
    [0, 1],
    [-3, 1],
    [1, 1],
    [3, 5],
    [7, 10],
    [12, 20],
    [21, 25],
    [26, 50],
    [101, 200],
    [0.3, 0.5],
  ])('%p → %p', (value, expected) => {
    expect(niceCeiling(value)).toBeCloseTo(expected)
  })
})

describe('layoutBars', () => {
  test('stacks series bottom-up per day, scaled to a round top', () => {
    const layout = layoutBars(2, [{ name: 'ios', values: [3, 0] }, { name: 'android', values: [4, 8] }], 100, 100)
    expect(layout.max).toBe(10)
    const day0 = layout.rects.filter((r) => r.day === 0)
    expect(day0.map((r) => [r.series, r.y, r.height])).toEqual([
      [0, 70, 30],
      [1, 30, 40],
    ])
    // a zero value draws nothing
    expect(layout.rects.filter((r) => r.day === 1).map((r) => r.series)).toEqual([1])
    // columns are side by side within the width
    for (const r of layout.rects) expect(r.x + r.width).toBeLessThanOrEqual(100)
  })

  test('percent: each day is its own 100 %, a day without data draws nothing', () => {
    const layout = layoutBars(2, [{ name: '1.0.0', values: [1, 0] }, { name: '1.1.0', values: [3, 0] }], 10, 200, true)
    expect(layout.max).toBe(100)
    expect(layout.rects.map((r) => r.height)).toEqual([50, 150])
    expect(layout.rects.every((r) => r.day === 0)).toBe(true)
  })

  test('no days: no bars', () => {
    expect(layoutBars(0, [{ name: 'x', values: [] }], 100, 100).rects).toEqual([])
  })
})
