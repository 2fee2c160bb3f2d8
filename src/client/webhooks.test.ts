// `miniship webhooks deliveries`: its table says what the console's Webhooks section says, its times as every other CLI line writes them.
import { expect, test } from 'bun:test'
import { deliveryLines, type Delivery } from './webhooks'

const delivery = (status: string, responseStatus: number | null, error: string | null): Delivery => ({
  id: `d-${status}`,
  event: 'release.published',
  status,
  attempts: status === 'failed' ? 6 : 1,
  responseStatus,
  error,
  createdAt: '2026-11-27T14:59:42.990Z',
  updatedAt: '2026-11-27T14:59:42.990Z',
})

test("a delivery's status is in the console's words: Pending (retrying), Delivered, Failed", () => {
  const lines = deliveryLines([delivery('pending', 500, 'the receiver answered 500'), delivery('delivered', 200, null), delivery('failed', null, 'no answer within 10 s')])
  expect(lines[0]).toMatch(/^TIME +EVENT +STATUS +ATTEMPTS +ANSWER$/)
  expect(lines.slice(1).map((line) => line.split(/ {2,}/)[2])).toEqual(['Pending (retrying)', 'Delivered', 'Failed'])
  for (const line of lines.slice(1)) expect(line).not.toMatch(/ (pending|delivered|failed) /)
})

test('its time is written as a person reads it, in UTC (--json keeps the ISO string)', () => {
  const [, line] = deliveryLines([delivery('delivered', 200, null)])
  expect(line).toStartWith('2026-11-27 14:59 UTC  release.published')
  expect(line).not.toContain('T14:59:42')
})

test('no deliveries: one line', () => {
  expect(deliveryLines([])).toEqual(['No deliveries yet.'])
})
