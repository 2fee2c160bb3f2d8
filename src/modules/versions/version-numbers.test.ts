// Version numbers too large to order: refused where they come in (upload, the device's currentVersion
// and hostVersion), and a release stored before that never turns the public update check into a 500.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { versions } from '../../db/schema'
import { eq } from 'drizzle-orm'
import { createTestContext } from '../../test-support'
import { createMiniApp, createTestUser, upload, uploadForm, type TestUser } from '../../test-fixtures'
import { decideRelease } from '../channels/decide'

const context = createTestContext()
afterAll(() => context.close())
const appId = 'com.example.numbers'
const huge = '99999999999999999999.0.0'
let owner: TestUser
let miniAppId = ''

beforeAll(async () => {
  owner = await createTestUser(context)
  miniAppId = (await createMiniApp(context, owner.token, appId)).id
  const first = await upload(context, owner.token, appId, uploadForm(appId, { version: '1.0.0' }))
  expect(first.status).toBe(201)
  const published = await context.call('POST', `/api/mini-apps/${miniAppId}/versions/${first.body.id}/publish`, { token: owner.token, json: { mandatory: true } })
  expect(published.status).toBe(200)
})

test('an upload whose number has more than 15 digits is 400 VALIDATION_ERROR on version, and stores nothing', async () => {
  const res = await upload(context, owner.token, appId, uploadForm(appId, { version: huge }))
  expect({ status: res.status, code: res.body.code, field: res.body.details?.[0]?.field }).toEqual({ status: 400, code: 'VALIDATION_ERROR', field: 'version' })
  expect(res.body.message).toContain('15 digits')
  expect(context.dataDir.db.select().from(versions).where(eq(versions.version, huge)).all()).toEqual([])
  // 15 digits is a version
  const largest = await upload(context, owner.token, appId, uploadForm(appId, { version: '999999999999999.0.0' }))
  expect(largest.status).toBe(201)
})

test('an update check or release install naming such a currentVersion is 400 VALIDATION_ERROR, not 500', async () => {
  for (const path of [`update?platform=ios&currentVersion=${huge}`, `release/install?currentVersion=${huge}`, `update?platform=ios&currentVersion=0.1.0&hostVersion=${huge}`]) {
    const res = await context.call('GET', `/api/mini-apps/access/apps/${appId}/${path}`)
    expect({ path, status: res.status, code: res.body.code }).toEqual({ path, status: 400, code: 'VALIDATION_ERROR' })
  }
})

test('a mandatory release stored with such a number before is still mandatory for a device that runs another version', () => {
  const releases = [{ versionId: 'b', version: huge, rolloutPercent: 100, hostVersionRange: null, mandatory: true }]
  expect(decideRelease(appId, releases, { currentVersion: '0.9.0' })).toMatchObject({ release: releases[0], mandatory: true })
})
