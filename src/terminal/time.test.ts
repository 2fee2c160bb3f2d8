// The one way the CLI's human output writes a moment.
import { expect, test } from 'bun:test'
import { timeText } from './time'

test('an ISO moment reads "2026-11-27 14:59 UTC", whatever the zone it came in', () => {
  expect(timeText('2026-11-27T14:59:42.990Z')).toBe('2026-11-27 14:59 UTC')
  expect(timeText('2026-11-27T16:59:42+02:00')).toBe('2026-11-27 14:59 UTC')
  expect(timeText('2026-01-02T03:04:00.000Z')).toBe('2026-01-02 03:04 UTC')
})

test('a string that is no date is left as it is', () => {
  expect(timeText('soon')).toBe('soon')
})
