// Draft download links name the grant they were handed out on (a user, and the API key if one asked) and stop working when that
// authority ends (decisions §18): the key revoked, the user disabled or removed from the miniapp; published links name nobody.
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

  test('a link handed to a user who is then disabled: install info and files answer 401 TOKEN_REVOKED, and stay refused once re-enabled', async () => {
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

    // the authority it was handed out on ended: enabling the account again does not bring old links back
    await setStatus(tester, 'ACTIVE')
    expect((await context.call('GET', pathOf(draftLink))).body.code).toBe('TOKEN_REVOKED')
    expect((await context.call('GET', bundle)).body.code).toBe('TOKEN_REVOKED')
    // a link asked for now works
    const fresh = await context.call('GET', `/api/mini-apps/${miniAppId}/workspace`, { token: await testerToken() })
    const freshLink = (fresh.body.accessLinks as { versionId: string; installUrl: string }[]).find((entry) => entry.versionId === draftId)!.installUrl
    expect((await context.call('GET', pathOf(freshLink))).status).toBe(200)
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

describe('links bound to the grant that issued them (decisions §18)', () => {
  let counter = 0
  /** A fresh member of the miniapp (each case ends someone's authority for good). */
  async function newMember(): Promise<TestUser> {
    const member = await createUser(context, { email: `member-${++counter}@example.test` })
    expect((await context.call('POST', `/api/mini-apps/${miniAppId}/members`, { token: owner.token, json: { email: member.user.email, role: 'DEVELOPER' } })).status).toBe(201)
    return member
  }
  async function readKey(member: TestUser): Promise<{ id: string; key: string }> {
    const res = await context.call('POST', '/api/auth/api-keys', { token: member.token, json: { name: 'runtime links', scopes: ['read'] } })
    expect(res.status).toBe(201)
    return { id: res.body.id, key: res.body.key }
  }
  /** The draft's install info asked with `token` (an access token or an API key), and the file URLs it hands out. */
  async function draftLinks(token: string): Promise<string[]> {
    const info = await context.call('GET', `${access}/versions/${draftId}/install?token=${encodeURIComponent(token)}`)
    expect(info.status).toBe(200)
    return [info.body.bundles.android, info.body.manifestUrl, info.body.assetsUrl.ios].map(pathOf)
  }
  /** The draft's access link from the workspace asked with `token`. */
  async function workspaceLink(token: string): Promise<string> {
    const workspace = await context.call('GET', `/api/mini-apps/${miniAppId}/workspace`, { token })
    expect(workspace.status).toBe(200)
    return pathOf((workspace.body.accessLinks as { versionId: string; installUrl: string }[]).find((entry) => entry.versionId === draftId)!.installUrl)
  }
  async function expectWorking(paths: string[]) {
    for (const path of paths) expect({ path, status: (await context.call('GET', path)).status }).toEqual({ path, status: 200 })
  }
  async function expectRefused(paths: string[]) {
    for (const path of paths) {
      const res = await context.call('GET', path)
      expect({ path, status: res.status, code: res.body.code }).toEqual({ path, status: 401, code: 'TOKEN_REVOKED' })
    }
  }
  const removeMember = async (member: TestUser) => expect((await context.call('DELETE', `/api/mini-apps/${miniAppId}/members/${member.user.id}`, { token: owner.token })).status).toBe(200)

  test('a link handed out through an API key names the key and its owner; it works, and stops (401 TOKEN_REVOKED) once the key is revoked', async () => {
    const member = await newMember()
    const key = await readKey(member)
    const links = [...(await draftLinks(key.key)), await workspaceLink(key.key)]
    expect(decodeJwt(tokenOf(`http://x${links[0]}`))).toMatchObject({ vid: draftId, uid: member.user.id, ug: 0, kid: key.id })
    await expectWorking(links)
    expect((await context.call('DELETE', `/api/auth/api-keys/${key.id}`, { token: member.token })).status).toBe(200)
    await expectRefused(links)
    // the owner's own links (no key) are untouched by the key's end
    await expectWorking(await draftLinks(member.token))
  })

  test("a key's links stop when its owner is disabled", async () => {
    const member = await newMember()
    const links = await draftLinks((await readKey(member)).key)
    await expectWorking(links)
    await setStatus(member, 'DISABLED')
    await expectRefused(links)
  })

  test("a key's links, and the owner's own, stop when the owner is removed from the miniapp, and stay refused if added again", async () => {
    const member = await newMember()
    const viaKey = await draftLinks((await readKey(member)).key)
    const own = [...(await draftLinks(member.token)), await workspaceLink(member.token)]
    await expectWorking([...viaKey, ...own])
    await removeMember(member)
    await expectRefused([...viaKey, ...own])
    expect((await context.call('POST', `/api/mini-apps/${miniAppId}/members`, { token: owner.token, json: { email: member.user.email, role: 'DEVELOPER' } })).status).toBe(201)
    await expectRefused([...viaKey, ...own])
    await expectWorking(await draftLinks(member.token))
  })

  test('a user-issued link stops when that user leaves; the published version\'s link (nobody\'s) keeps working', async () => {
    const member = await newMember()
    const own = await draftLinks(member.token)
    const published = await context.call('GET', `${access}/versions/${publishedId}/install?token=${encodeURIComponent(member.token)}`)
    const publishedFile = pathOf(published.body.bundles.ios)
    expect(decodeJwt(tokenOf(published.body.bundles.ios)).uid).toBeUndefined()
    await expectWorking([...own, publishedFile])
    await removeMember(member)
    await expectRefused(own)
    await expectWorking([publishedFile])
  })

  test('a link from before grant generations (uid, no ug) holds at generation 0 and ends as the others do', async () => {
    const member = await newMember()
    const { SignJWT } = await import('jose')
    const legacy = await new SignJWT({ purpose: 'download', vid: draftId, uid: member.user.id })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setExpirationTime(Math.floor(context.now.value / 1000) + 3600)
      .sign(context.dataDir.secret)
    const path = `${access}/versions/${draftId}/manifest?token=${legacy}`
    await expectWorking([path])
    await removeMember(member)
    await expectRefused([path])
  })
})
