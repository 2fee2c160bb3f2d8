// The console's release-guard badge and its settings input, as pure functions.
import { describe, expect, test } from 'bun:test'
import { guardBadge, percentFromRate, rateFromPercent } from './guard.ts'

const guard = {
  enabled: true,
  maxFailureRate: 0.05,
  minDevices: 20,
  lastCheck: { failedDevices: 13, totalDevices: 150, failureRate: 13 / 150, at: '2026-11-25T10:00:05.000Z' },
  trip: { failedDevices: 12, totalDevices: 140, failureRate: 12 / 140, maxFailureRate: 0.05, at: '2026-11-25T10:00:00.000Z' },
  heldAtFailedDevices: 12,
}
const release = { versionId: 'v', version: '1.1.0', rolloutPercent: 50, hostVersionRange: null, mandatory: false, releasedAt: '2026-11-25T09:00:00.000Z', releasedBy: null, pausedAt: null, pauseReason: null }
const channel = (paused: boolean, pausedBy: string | null, withGuard = true) => ({ name: 'stable', createdAt: '', previousRelease: null, release: { ...release, paused, pausedBy }, ...(withGuard ? { guard } : {}) })

describe('the badge of a release the guard paused', () => {
  test('names the numbers it paused with, not the later count', () => {
    expect(guardBadge(channel(true, 'release-guard'))).toBe('paused by the release guard: 12 of 140 devices failed (8.6 %) — threshold 5 %')
  })
  test('none when a person paused it, when it runs, or on a server without the guard', () => {
    expect(guardBadge(channel(true, 'owner@example.test'))).toBeNull()
    expect(guardBadge(channel(false, null))).toBeNull()
    expect(guardBadge(channel(true, 'release-guard', false))).toBeNull()
  })
})

describe('the failing-devices field is a percent', () => {
  const table: [string, number | null][] = [['5', 0.05], ['2.5', 0.025], ['2,5', 0.025], ['100', 1], ['0', null], ['101', null], ['', null], ['five', null]]
  for (const [text, rate] of table) test(`"${text}" → ${rate}`, () => expect(rateFromPercent(text)).toBe(rate))
})

describe('the field shows the rate as it is set, and saving it unchanged keeps it', () => {
  // a rate set with the CLI or the API (0.00125) read "0.13" with two decimals, and saving the dialog for another change set 0.13 %
  for (const rate of [0.05, 0.07, 0.025, 0.00125, 0.333, 1]) {
    test(`${rate}`, () => expect(rateFromPercent(percentFromRate(rate))).toBeCloseTo(rate, 15))
  }
  test('no float noise in what it shows', () => {
    expect(percentFromRate(0.07)).toBe('7')
    expect(percentFromRate(0.00125)).toBe('0.125')
  })
})
