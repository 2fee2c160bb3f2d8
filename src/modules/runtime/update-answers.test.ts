// The update check's answers are built once per release, channel and mandatory (issue 30): the same bytes for every device that gets the same release, naming that version's own files (version-pinned URLs), and new bytes when the release changes.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { createTestContext, type TestContext } from '../../test-support'
import { createMiniApp, createTestUser, upload, uploadForm, type TestUser } from '../../test-fixtures'
import { servedFiles } from './test-runtime'

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

test('a check without deviceId: the same bytes every time, the version-pinned install info of the release inside; new bytes once a mandatory release follows', async () => {
  const second = await release('1.1.0')
  const check = `${access}/apps/${appId}/update?platform=ios&currentVersion=1.0.0`
  const first = await text(check)
  expect(await text(check)).toBe(first)
  const released = JSON.parse(await text(`${access}/apps/${appId}/release/install`))
  // the version's own install info (its links, its download token that never expires), with the release's host range
  const token = new URL(released.bundleUrl).searchParams.get('token')
  const pinned = JSON.parse(first).install
  const own = JSON.parse(await text(`${access}/versions/${second}/install?token=${new URL(pinned.bundleUrl).searchParams.get('token')}`))
  expect(JSON.parse(first)).toEqual({ updateAvailable: true, mandatory: false, rollout: { percent: 100 }, install: { ...own, hostVersionRange: null } })
  expect(pinned.bundleUrl).toBe(`http://localhost/api/mini-apps/access/versions/${second}/bundles/ios?token=${new URL(pinned.bundleUrl).searchParams.get('token')}`)
  expect(pinned.bundleUrl).not.toContain(token)
  // everything but the URLs is the release install info
  const { bundleUrl: _a, bundles: _b, assetsUrl: _c, manifestUrl: _d, ...facts } = released
  expect(pinned).toMatchObject(facts)
  await release('1.2.0', { mandatory: true })
  const next = JSON.parse(await text(check))
  expect(next).toMatchObject({ updateAvailable: true, mandatory: true, rollout: { percent: 100 }, install: { version: '1.2.0' } })
  expect(JSON.parse(await text(`${access}/apps/${appId}/update?platform=android&currentVersion=1.1.0`))).toEqual(next)
})

test('devices that get the same release: the same bytes for each, whatever their deviceId', async () => {
  const answer = (deviceId: string) => text(`${access}/apps/${appId}/update?platform=ios&currentVersion=1.0.0&deviceId=${encodeURIComponent(deviceId)}`)
  const first = await answer('device-a')
  expect(first).not.toContain('device-a')
  expect(JSON.parse(first).install.version).toBe('1.2.0')
  for (const deviceId of ['device-b', 'device:c.1', 'd', 'a'.repeat(200)]) expect(await answer(deviceId)).toBe(first)
})

test("each file URL of an answer downloads the offered version's file: its size and sha256", async () => {
  const answer = JSON.parse(await text(`${access}/apps/${appId}/update?platform=ios&currentVersion=1.0.0&deviceId=phone-1`))
  const { served, listed } = await servedFiles((request) => context.app.handle(request), answer.install)
  expect(served).toEqual(listed)
})
