// The update check's answers are built once per release and mandatory (issue 30): the same bytes for every device but the device's own path segment, and new bytes when the release changes.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { createTestContext, type TestContext } from '../../test-support'
import { createMiniApp, createTestUser, upload, uploadForm, type TestUser } from '../../test-fixtures'

const appId = 'com.example.answers'
const access = '/api/mini-apps/access'
let context: TestContext
let owner: TestUser
let miniAppId = ''

const text = async (path: string) => {
  const response = await context.app.handle(new Request(`http://localhost${path}`))
  expect(response.status).toBe(200)
  const body = await response.text()
  expect(Number(response.headers.get('content-length'))).toBe(Buffer.byteLength(body))
  return body
}

async function release(version: string, json: Record<string, unknown> = {}): Promise<string> {
  const uploaded = await upload(context, owner.token, appId, uploadForm(appId, { version }))
  expect(uploaded.status).toBe(201)
  expect((await context.call('POST', `/api/mini-apps/${miniAppId}/versions/${uploaded.body.id}/publish`, { token: owner.token, json })).status).toBe(200)
  return uploaded.body.id
}

beforeAll(async () => {
  context = createTestContext()
  owner = await createTestUser(context)
  miniAppId = (await createMiniApp(context, owner.token, appId)).id
  await release('1.0.0')
})
afterAll(() => context.close())

test('a check without deviceId: the same bytes every time, the release install info inside; new bytes once a mandatory release follows', async () => {
  await release('1.1.0')
  const check = `${access}/apps/${appId}/update?platform=ios&currentVersion=1.0.0`
  const first = await text(check)
  expect(await text(check)).toBe(first)
  const install = JSON.parse(await text(`${access}/apps/${appId}/release/install`))
  expect(JSON.parse(first)).toEqual({ updateAvailable: true, mandatory: false, rollout: { percent: 100 }, install })
  await release('1.2.0', { mandatory: true })
  const next = JSON.parse(await text(check))
  expect(next).toMatchObject({ updateAvailable: true, mandatory: true, rollout: { percent: 100 }, install: { version: '1.2.0' } })
  expect(JSON.parse(await text(`${access}/apps/${appId}/update?platform=android&currentVersion=1.1.0`))).toEqual(next)
})

test('devices that get the same release: answers that differ only in the device path segment', async () => {
  const answer = (deviceId: string) => text(`${access}/apps/${appId}/update?platform=ios&currentVersion=1.0.0&deviceId=${encodeURIComponent(deviceId)}`)
  const first = await answer('device-a')
  expect(first).toContain('/devices/device-a/release/')
  for (const deviceId of ['device-b', 'device:c.1', 'd']) {
    expect(await answer(deviceId)).toBe(first.replaceAll('/devices/device-a/', `/devices/${encodeURIComponent(deviceId)}/`))
  }
})
