// An appId segment that is not valid percent-encoding (%ff, %, a lone surrogate %ED%A0%80) reaches the release-file paths as null: 400 like the other /apps/{appId}/ routes, never 500.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createTestContext } from '../../test-support'
import { createMiniApp, createTestUser, upload, uploadForm } from '../../test-fixtures'

const context = createTestContext()
afterAll(() => context.close())
const access = '/api/mini-apps/access'
const appId = 'com.example.undecodable'

beforeAll(async () => {
  const owner = await createTestUser(context)
  const miniApp = await createMiniApp(context, owner.token, appId)
  const versionId = (await upload(context, owner.token, appId, uploadForm(appId, { version: '1.0.0' }))).body.id
  expect((await context.call('POST', `/api/mini-apps/${miniApp.id}/versions/${versionId}/publish`, { token: owner.token, json: {} })).status).toBe(200)
})

const segments = ['%ff', '%', '%ED%A0%80', '%ED%A0%80com.example.undecodable']
const files = ['release/bundle', 'release/manifest', 'release/app.json', 'release/bundles/ios', 'release/assets/android', 'channels/stable/release/bundle', 'channels/stable/hosts/1.0.0/release/manifest', 'channels/stable/devices/d1/release/bundles/app.json']

describe('an undecodable appId on a release file path', () => {
  for (const segment of segments) {
    for (const file of files) {
      test(`GET ${segment}/${file} answers 400 VALIDATION_ERROR`, async () => {
        const res = await context.call('GET', `${access}/apps/${segment}/${file}`)
        expect(res.status).toBe(400)
        expect(res.body.code).toBe('VALIDATION_ERROR')
      })
    }
    test(`HEAD ${segment}/release/bundle answers 400`, async () => {
      const res = await context.app.handle(new Request(`http://localhost${access}/apps/${segment}/release/bundle`, { method: 'HEAD' }))
      expect(res.status).toBe(400)
    })
  }

  test('release install answers the same for the same segment', async () => {
    const res = await context.call('GET', `${access}/apps/%ff/release/install`)
    expect(res.status).toBe(400)
    expect(res.body.code).toBe('VALIDATION_ERROR')
  })

  test('the good appId still gets its release file', async () => {
    expect((await context.call('GET', `${access}/apps/${appId}/release/bundle`)).status).toBe(200)
  })
})
