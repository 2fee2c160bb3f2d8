// Publish and rollback notes and a pause's reason are shown in the console's History and the audit log: like
// every other free text (http/text.ts) they hold no control characters or bidi overrides.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { createTestContext } from '../../test-support'
import { releaseHistory } from '../../db/schema'
import { createMiniApp, createTestUser, upload, uploadForm, type TestUser } from '../../test-fixtures'

const context = createTestContext()
afterAll(() => context.close())
const appId = 'com.example.notes'
let owner: TestUser
let miniAppId = ''
const ids: string[] = []

beforeAll(async () => {
  owner = await createTestUser(context)
  miniAppId = (await createMiniApp(context, owner.token, appId)).id
  for (const version of ['1.0.0', '1.1.0']) ids.push((await upload(context, owner.token, appId, uploadForm(appId, { version }))).body.id)
})

const historyCount = () => context.dataDir.db.select().from(releaseHistory).all().length

test('publish notes with a terminal escape or a bidi override: 400 VALIDATION_ERROR on notes, nothing published', async () => {
  for (const notes of ['\u001b[2J\u001b[31mfixed', 'fixed \u202egnp.exe']) {
    const res = await context.call('POST', `/api/mini-apps/${miniAppId}/versions/${ids[0]}/publish`, { token: owner.token, json: { notes } })
    expect({ status: res.status, code: res.body.code, field: res.body.details?.[0]?.field }).toEqual({ status: 400, code: 'VALIDATION_ERROR', field: 'notes' })
  }
  expect(historyCount()).toBe(0)
  const fine = await context.call('POST', `/api/mini-apps/${miniAppId}/versions/${ids[0]}/publish`, { token: owner.token, json: { notes: 'إصلاحات 😀\nline two\tand a tab' } })
  expect(fine.status).toBe(200)
})

test('rollback notes and a pause reason are held to the same rule', async () => {
  expect((await context.call('POST', `/api/mini-apps/${miniAppId}/versions/${ids[1]}/publish`, { token: owner.token, json: { rolloutPercent: 50 } })).status).toBe(200)
  const before = historyCount()
  const pause = await context.call('PATCH', `/api/mini-apps/${miniAppId}/channels/stable/rollout`, { token: owner.token, json: { paused: true, reason: 'crash \u0007' } })
  expect({ status: pause.status, code: pause.body.code, field: pause.body.details?.[0]?.field }).toEqual({ status: 400, code: 'VALIDATION_ERROR', field: 'reason' })
  const rollback = await context.call('POST', `/api/mini-apps/${miniAppId}/rollback`, { token: owner.token, json: { targetVersionId: ids[0], notes: 'back \u2066' } })
  expect({ status: rollback.status, code: rollback.body.code, field: rollback.body.details?.[0]?.field }).toEqual({ status: 400, code: 'VALIDATION_ERROR', field: 'notes' })
  expect(historyCount()).toBe(before)
  expect((await context.call('PATCH', `/api/mini-apps/${miniAppId}/channels/stable/rollout`, { token: owner.token, json: { paused: true, reason: 'crash on Android 9 — ошибка' } })).status).toBe(200)
})
