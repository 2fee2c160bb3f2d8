// Paging of what grows with the data (issue 15): the workspace's versions and the admin's user list.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createTestContext, type TestContext } from '../../test-support'
import { createMiniApp, createTestUser, upload, uploadForm, type TestUser } from '../../test-fixtures'

let context: TestContext
let owner: TestUser
let admin: TestUser
let miniAppId = ''
const appId = 'com.example.paged'
const outcome = (res: { status: number; body: { code?: string } }) => ({ status: res.status, code: res.body?.code })

beforeAll(async () => {
  context = createTestContext()
  owner = await createTestUser(context)
  admin = await createTestUser(context, { role: 'ADMIN' })
  miniAppId = (await createMiniApp(context, owner.token, appId)).id
  for (let index = 1; index <= 7; index++) {
    const res = await upload(context, owner.token, appId, uploadForm(appId, { version: `1.0.${index}` }))
    if (res.status !== 201) throw new Error(res.text)
    if (index % 3 === 0) await context.call('POST', `/api/mini-apps/${miniAppId}/versions/${res.body.id}/publish`, { token: owner.token, json: {} })
  }
})
afterAll(() => context.close())

describe('workspace paging', () => {
  test('pages of 3, newest first, with an access link per version of the page only, until nextCursor is null', async () => {
    const seen: string[] = []
    let cursor: string | null = null
    let pages = 0
    do {
      const query: string = `?limit=3${cursor ? `&cursor=${cursor}` : ''}`
      const res = await context.call('GET', `/api/mini-apps/${miniAppId}/workspace${query}`, { token: owner.token })
      expect(res.status).toBe(200)
      expect(res.body.accessLinks.map((link: { versionId: string }) => link.versionId)).toEqual(res.body.versions.map((version: { id: string }) => version.id))
      seen.push(...res.body.versions.map((version: { version: string }) => version.version))
      cursor = res.body.nextCursor
      pages++
    } while (cursor)
    expect(pages).toBe(3)
    expect(seen).toEqual(['1.0.7', '1.0.6', '1.0.5', '1.0.4', '1.0.3', '1.0.2', '1.0.1'])
  })

  test('the default page is 50 and status filters', async () => {
    const all = await context.call('GET', `/api/mini-apps/${miniAppId}/workspace`, { token: owner.token })
    expect(all.body.versions.length).toBe(7)
    expect(all.body.nextCursor).toBeNull()
    const published = await context.call('GET', `/api/mini-apps/${miniAppId}/workspace?status=PUBLISHED`, { token: owner.token })
    expect(published.body.versions.map((version: { version: string }) => version.version)).toEqual(['1.0.6', '1.0.3'])
  })

  test('bad paging input: 400 VALIDATION_ERROR', async () => {
    for (const query of ['?limit=0', '?limit=201', '?limit=x', '?cursor=abc', '?status=LIVE']) {
      expect({ query, ...outcome(await context.call('GET', `/api/mini-apps/${miniAppId}/workspace${query}`, { token: owner.token })) }).toEqual({ query, status: 400, code: 'VALIDATION_ERROR' })
    }
  })

  test('a limit that is not a whole number, or out of range, is 400 VALIDATION_ERROR naming limit (not 500, not "property")', async () => {
    for (const query of ['?limit=1.5', '?limit=-1', '?limit=%20', '?limit=0', '?limit=201']) {
      const res = await context.call('GET', `/api/mini-apps/${miniAppId}/workspace${query}`, { token: owner.token })
      expect({ query, ...outcome(res), details: res.body.details }).toEqual({ query, status: 400, code: 'VALIDATION_ERROR', details: [{ field: 'limit', message: 'must be a whole number from 1 to 200' }] })
    }
  })
})

describe('admin user paging', () => {
  test('pages of 2 walk every user once, oldest first', async () => {
    for (let index = 0; index < 3; index++) await createTestUser(context)
    const everyone = (await context.call('GET', '/api/admin/users?userLimit=1000', { token: admin.token })).body.users.map((user: { id: string }) => user.id)
    expect(everyone.length).toBe(5)
    const seen: string[] = []
    let cursor: string | null = null
    do {
      const query: string = `?userLimit=2${cursor ? `&userCursor=${cursor}` : ''}`
      const res = await context.call('GET', `/api/admin/users${query}`, { token: admin.token })
      expect(res.status).toBe(200)
      expect(res.body.users.length).toBeLessThanOrEqual(2)
      seen.push(...res.body.users.map((user: { id: string }) => user.id))
      cursor = res.body.usersNextCursor
    } while (cursor)
    expect(seen).toEqual(everyone)
  })

  test('bad paging input: 400 VALIDATION_ERROR', async () => {
    for (const query of ['?userLimit=0', '?userLimit=1001', '?userCursor=nonsense']) {
      expect({ query, ...outcome(await context.call('GET', `/api/admin/users${query}`, { token: admin.token })) }).toEqual({ query, status: 400, code: 'VALIDATION_ERROR' })
    }
  })
})
