// A query parameter sent twice: the app's runtime routes read the first, as serve's native routes
// (native-routes.ts, the production path of the update check and install info) and the HEAD answers
// do, so one URL gets one answer whichever of them answers it. Elysia's own query kept the last.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { createTestContext } from '../../test-support'
import { createMiniApp, createTestUser, upload, uploadForm, type TestUser } from '../../test-fixtures'
import { nativeRoutesOf } from './test-runtime'

const context = createTestContext()
afterAll(() => context.close())
const access = '/api/mini-apps/access'
const appId = 'com.example.repeated'
let owner: TestUser
let versionId: string

const native = nativeRoutesOf(context.app)

beforeAll(async () => {
  owner = await createTestUser(context)
  const miniApp = await createMiniApp(context, owner.token, appId)
  versionId = (await upload(context, owner.token, appId, uploadForm(appId, { version: '1.0.0' }))).body.id
  expect((await context.call('POST', `/api/mini-apps/${miniApp.id}/versions/${versionId}/publish`, { token: owner.token, json: {} })).status).toBe(200)
})

/** status and code of the app's answer and of serve's native route for the same URL */
async function bothAnswers(path: string) {
  const app = await context.call('GET', path)
  const request = new Request(`http://localhost${path}`)
  const response = await native(request)!
  const nativeBody = await response.json()
  return { app: { status: app.status, code: app.body.code }, native: { status: response.status, code: nativeBody.code } }
}

test('the update check reads the first deviceId of two: an invalid first one is 400 INVALID_DEVICE_ID, as serve answers it', async () => {
  const answers = await bothAnswers(`${access}/apps/${appId}/update?platform=ios&currentVersion=0.9.0&deviceId=..&deviceId=device-1`)
  expect(answers.app).toEqual({ status: 400, code: 'INVALID_DEVICE_ID' })
  expect(answers.native).toEqual(answers.app)
})

test('release install reads the first channel of two: an unknown first one is 404 CHANNEL_NOT_FOUND, as serve answers it', async () => {
  const answers = await bothAnswers(`${access}/apps/${appId}/release/install?channel=nope&channel=stable`)
  expect(answers.app).toEqual({ status: 404, code: 'CHANNEL_NOT_FOUND' })
  expect(answers.native).toEqual(answers.app)
})

test("a version's install info reads the first token of two: an empty second one does not make it 401 TOKEN_REQUIRED", async () => {
  const path = `${access}/versions/${versionId}/install?token=${owner.token}&token=`
  const app = await context.call('GET', path)
  expect(app.status).toBe(200)
  expect(app.body.versionId).toBe(versionId)
  const request = new Request(`http://localhost${path}`)
  expect((await native(request)!).status).toBe(200)
})

test('a file download reads the first token of two, as its HEAD answer does', async () => {
  const path = `${access}/versions/${versionId}/manifest?token=${owner.token}&token=not-a-token`
  const get = await context.call('GET', path)
  const head = await context.app.handle(new Request(`http://localhost${path}`, { method: 'HEAD' }))
  expect({ get: get.status, head: head.status }).toEqual({ get: 200, head: 200 })
})
