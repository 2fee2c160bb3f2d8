// decisions §18: a deviceId is 1–200 characters of [A-Za-z0-9._:-], not "." or ".."; every endpoint that takes one answers 400 INVALID_DEVICE_ID otherwise.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createTestContext } from '../../test-support'
import { createMiniApp, createTestUser, upload, uploadForm } from '../../test-fixtures'

const context = createTestContext()
afterAll(() => context.close())
const access = '/api/mini-apps/access'
const appId = 'com.example.devices'
let versionId: string

beforeAll(async () => {
  const owner = await createTestUser(context)
  const miniApp = await createMiniApp(context, owner.token, appId)
  versionId = (await upload(context, owner.token, appId, uploadForm(appId, { version: '1.0.0' }))).body.id
  expect((await context.call('POST', `/api/mini-apps/${miniApp.id}/versions/${versionId}/publish`, { token: owner.token, json: {} })).status).toBe(200)
})

/** Every place a device sends its id: as a query parameter, in a device-scoped path, in an event. */
const endpoints: [string, (id: string) => Promise<{ status: number; body: { code?: string } }>][] = [
  ['the update check', (id) => context.call('GET', `${access}/apps/${appId}/update?platform=ios&currentVersion=0.9.0&deviceId=${encodeURIComponent(id)}`)],
  ['release install', (id) => context.call('GET', `${access}/apps/${appId}/release/install?deviceId=${encodeURIComponent(id)}`)],
  ['release install on a channel', (id) => context.call('GET', `${access}/apps/${appId}/release/install?channel=stable&deviceId=${encodeURIComponent(id)}`)],
  ['a device-scoped release file', (id) => context.call('GET', `${access}/apps/${appId}/channels/stable/devices/${encodeURIComponent(id)}/release/bundles/ios`)],
  ['a device-scoped derived manifest', (id) => context.call('GET', `${access}/apps/${appId}/channels/stable/devices/${encodeURIComponent(id)}/release/bundles/app.json`)],
  // events are judged one by one (decisions §13): a refused id is that event's error, with the same code
  ['device events', async (id) => {
    const res = await context.call('POST', `${access}/events`, { json: { events: [{ appId, versionId, platform: 'ios', event: 'launched', deviceId: id }] } })
    const refusal = (res.body.errors as { code: string }[] | undefined)?.[0]
    return res.status === 202 && refusal ? { status: 400, body: { code: refusal.code } } : res
  }],
]

const accepted = ['phone-1', '0192f0aa-0000-7000-8000-000000000001', 'AbC_09.x:y-z', '.hidden', 'a..b', '...', 'x'.repeat(200), 'q83vEjRWeJA']
const refused = ['.', '..', 'x'.repeat(201), 'a/b', 'a b', 'q83v+jRW/JA=', 'a%2Fb', 'é', 'a\u0000b', 'a\nb', '<script>']
/** "." and ".." cannot be put in a path at all: URL parsing resolves them (which is why they are refused where they are accepted) */
const unsendableInPath = new Set(['.', '..'])

describe('accepted deviceIds', () => {
  for (const [where, send] of endpoints) {
    test(`${where} takes each`, async () => {
      for (const id of accepted) {
        const res = await send(id)
        expect({ id, status: res.status }).toEqual({ id, status: where === 'device events' ? 202 : 200 })
      }
    })
  }
})

describe('refused deviceIds: 400 INVALID_DEVICE_ID', () => {
  for (const [where, send] of endpoints) {
    test(`${where} refuses each`, async () => {
      for (const id of refused) {
        if (where.includes('device-scoped') && unsendableInPath.has(id)) continue
        const res = await send(id)
        expect({ id, status: res.status, code: res.body.code }).toEqual({ id, status: 400, code: 'INVALID_DEVICE_ID' })
      }
    })
  }

  test('an empty deviceId is refused everywhere: a query parameter (with or without "="), an event field, an empty path segment', async () => {
    for (const [where, send] of endpoints) {
      const res = await send('')
      expect({ where, status: res.status, code: res.body.code }).toEqual({ where, status: 400, code: 'INVALID_DEVICE_ID' })
    }
    for (const path of [`${access}/apps/${appId}/update?platform=ios&currentVersion=0.9.0&deviceId`, `${access}/apps/${appId}/release/install?deviceId`]) {
      for (const method of ['GET', 'HEAD'] as const) {
        const res = await context.call(method, path)
        expect({ path, method, status: res.status, code: method === 'HEAD' ? 'INVALID_DEVICE_ID' : res.body.code }).toEqual({ path, method, status: 400, code: 'INVALID_DEVICE_ID' })
      }
    }
  })

  test('a bad deviceId refuses its own event of a batch, by index; the others are accepted', async () => {
    const res = await context.call('POST', `${access}/events`, {
      json: { events: [{ appId, versionId, platform: 'ios', event: 'launched', deviceId: 'fine' }, { appId, versionId, platform: 'ios', event: 'launched', deviceId: '..' }] },
    })
    expect(res.status).toBe(202)
    expect(res.body).toEqual({ accepted: 1, rejected: 1, errors: [{ index: 1, code: 'INVALID_DEVICE_ID', message: expect.stringContaining('events.1.deviceId') }], counted: true })
  })
})
