// Draft download links name the user they were handed to and stop working when that user is disabled; published links stay user-less.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { decodeJwt } from 'jose'
import { createTestContext, createUser, type TestUser } from '../../test-support'
import { createMiniApp, upload, uploadForm } from '../../test-fixtures'

const context = createTestContext()
afterAll(() => context.close())
const access = '/api/mini-apps/access'
const appId = 'com.example.drafts'

let admin: TestUser
let owner: TestUser
let tester: TestUser
let miniAppId: string
let draftId: string
let publishedId: string

const tokenOf = (url: string) => new URL(url).searchParams.get('token')!
const pathOf = (url: string) => {
  const parsed = new URL(url)
  return parsed.pathname + parsed.search
}
const setStatus = async (user: TestUser, status: 'ACTIVE' | 'DISABLED') => {
  const res = await context.call('PATCH', `/api/admin/users/${user.user.id}`, { token: admin.token, json: { status } })
  expect(res.status).toBe(200)
}
/** The tester's own access token changes when disabling bumps its version; sign in again when active. */
async function testerToken(): Promise<string> {
  const res = await context.call('POST', '/api/auth/login', { json: { email: tester.user.email, password: tester.password } })
  expect(res.status).toBe(200)
  return res.body.accessToken
}

beforeAll(async () => {
  admin = await createUser(context, { email: 'admin@example.test', role: 'ADMIN' })
  owner = await createUser(context, { email: 'owner@example.test' })
  tester = await createUser(context, { email: 'tester@example.test' })
  miniAppId = (await createMiniApp(context, owner.token, appId)).id
  expect((await context.call('POST', `/api/mini-apps/${miniAppId}/members`, { token: owner.token, json: { email: tester.user.email, role: 'DEVELOPER' } })).status).toBe(201)
  const published = await upload(context, owner.token, appId, uploadForm(appId, { version: '1.0.0' }))
  publishedId = published.body.id
  expect((await context.call('POST', `/api/mini-apps/${miniAppId}/versions/${publishedId}/publish`, { token: owner.token, json: {} })).status).toBe(200)
  draftId = (await upload(context, owner.token, appId, uploadForm(appId, { version: '1.1.0' }))).body.id
})

describe('draft download links', () => {
  test("the workspace's draft link names the viewer; the published one names nobody", async () => {
    const workspace = await context.call('GET', `/api/mini-apps/${miniAppId}/workspace`, { token: tester.token })
    expect(workspace.status).toBe(200)
    const link = (versionId: string) => workspace.body.accessLinks.find((entry: { versionId: string }) => entry.versionId === versionId).installUrl as string
    expect(decodeJwt(tokenOf(link(draftId)))).toMatchObject({ purpose: 'download', vid: draftId, uid: tester.user.id })
    const publishedClaims = decodeJwt(tokenOf(link(publishedId)))
    expect(publishedClaims.uid).toBeUndefined()
    expect(publishedClaims.exp).toBeUndefined()
  })

  test('a link handed to a user who is then disabled: install info and files answer 401 TOKEN_REVOKED; working again once re-enabled', async () => {
    const workspace = await context.call('GET', `/api/mini-apps/${miniAppId}/workspace`, { token: await testerToken() })
    const links = workspace.body.accessLinks as { versionId: string; installUrl: string }[]
    const draftLink = links.find((entry) => entry.versionId === draftId)!.installUrl
    const publishedLink = links.find((entry) => entry.versionId === publishedId)!.installUrl
    const info = await context.call('GET', pathOf(draftLink))
    expect(info.status).toBe(200)
    const bundle = pathOf(info.body.bundles.android)
    expect((await context.call('GET', bundle)).status).toBe(200)

    await setStatus(tester, 'DISABLED')
    for (const path of [pathOf(draftLink), bundle]) {
      const res = await context.call('GET', path)
      expect({ path, status: res.status, code: res.body.code }).toEqual({ path, status: 401, code: 'TOKEN_REVOKED' })
    }
    // the published version's link is nobody's: it keeps working (and stays the same string)
    expect((await context.call('GET', pathOf(publishedLink))).status).toBe(200)

    await setStatus(tester, 'ACTIVE')
    expect((await context.call('GET', pathOf(draftLink))).status).toBe(200)
    expect((await context.call('GET', bundle)).status).toBe(200)
  })

  test("install info asked with a user's access token hands out a draft token naming that user", async () => {
    const token = await testerToken()
    const info = await context.call('GET', `${access}/versions/${draftId}/install?token=${encodeURIComponent(token)}`)
    expect(info.status).toBe(200)
    const download = tokenOf(info.body.bundleUrl)
    expect(decodeJwt(download)).toMatchObject({ vid: draftId, uid: tester.user.id })
    const manifest = pathOf(info.body.manifestUrl)
    expect((await context.call('GET', manifest)).status).toBe(200)
    await setStatus(tester, 'DISABLED')
    try {
      const res = await context.call('GET', manifest)
      expect({ status: res.status, code: res.body.code }).toEqual({ status: 401, code: 'TOKEN_REVOKED' })
    } finally {
      await setStatus(tester, 'ACTIVE')
    }
  })
})
