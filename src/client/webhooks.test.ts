// `miniship webhooks deliveries`: its table says what the console's Webhooks section says, its times as every other CLI line writes them.
import { expect, test } from 'bun:test'
import { deliveryLines, explainWebhookNotFound, type Delivery } from './webhooks'
import { CliError } from './http'
import { jsonDocument, runCli } from '../cli/test-run'

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
  // one not tried yet is waiting for its first attempt, not retrying
  const [, waiting] = deliveryLines([{ ...delivery('pending', null, null), attempts: 0 }])
  expect(waiting!.split(/ {2,}/)[2]).toBe('Pending')
})

test('its time is written as a person reads it, in UTC (--json keeps the ISO string)', () => {
  const [, line] = deliveryLines([delivery('delivered', 200, null)])
  expect(line).toStartWith('2026-11-27 14:59 UTC  release.published')
  expect(line).not.toContain('T14:59:42')
})

test('no deliveries: one line', () => {
  expect(deliveryLines([])).toEqual(['No deliveries yet.'])
})

test('a webhook id the app does not have says where the ids are (it said only "… not found in this miniapp")', () => {
  const body = { statusCode: 404, code: 'WEBHOOK_NOT_FOUND', message: 'Webhook nope not found in this miniapp' }
  const refused = new CliError(1, 'Webhook nope not found in this miniapp (WEBHOOK_NOT_FOUND, HTTP 404)', body)
  let thrown: CliError | undefined
  try {
    explainWebhookNotFound(refused, 'com.example.shop')
  } catch (error) {
    thrown = error as CliError
  }
  expect(thrown?.message).toBe('Webhook nope not found in this miniapp (WEBHOOK_NOT_FOUND, HTTP 404); miniship webhooks ls --app com.example.shop lists its webhooks')
  expect(thrown?.exitCode).toBe(1)
  // the server's error, and the hint the text adds (--json prints it)
  expect(thrown?.body).toEqual({ ...body, hint: 'miniship webhooks ls --app com.example.shop lists its webhooks' })
  const other = new CliError(1, 'other', { code: 'MINI_APP_NOT_FOUND', message: 'x' })
  expect(() => explainWebhookNotFound(other, 'com.example.shop')).toThrow(other)
})

test('webhooks create with a bad --events is bad usage before any request: not signed in, or the server down, is not what it is told', async () => {
  for (const env of [{}, { MINISHIP_TOKEN: 'msk_test' }] as Record<string, string>[]) {
    const run = await runCli(['webhooks', 'create', '--app', 'com.example.shop', '--url', 'https://ci.example.com/hook', '--events', 'release.publish', '--server', 'http://127.0.0.1:9', '--json'], { env })
    expect(run.exitCode).toBe(2)
    expect(jsonDocument(run)).toEqual({ error: { code: 'USAGE', message: expect.stringContaining('--events must list one or more of version.uploaded') } })
  }
})
