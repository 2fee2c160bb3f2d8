import { describe, expect, test, afterAll, beforeAll } from 'bun:test'
import { existsSync } from 'node:fs'
import { createTestContext } from '../../test-support'
import { blobPath } from '../../storage'
import { createTokenService } from '../auth/tokens'
import { nextStatus, refusals, transitions, versionStatuses, type VersionAction, type VersionStatus } from './lifecycle'
import { createMiniApp, createTestUser, upload, uploadForm, type TestUser } from '../../test-fixtures'

// What decisions §5 says, written out once more so a change to the table is a visible decision.
const expected: Record<VersionAction, Record<VersionStatus, string | null>> = {
  upload: { DRAFT: 'DRAFT', IN_REVIEW: 'DRAFT', PUBLISHED: null },
  review: { DRAFT: 'IN_REVIEW', IN_REVIEW: 'IN_REVIEW', PUBLISHED: null },
  // a published version may be released into another channel; the channel refuses a second release of it (409)
  publish: { DRAFT: 'PUBLISHED', IN_REVIEW: 'PUBLISHED', PUBLISHED: 'PUBLISHED' },
  rollback: { DRAFT: null, IN_REVIEW: null, PUBLISHED: 'PUBLISHED' },
  delete: { DRAFT: 'DELETED', IN_REVIEW: 'DELETED', PUBLISHED: null },
}

describe('the transition table', () => {
  for (const action of Object.keys(transitions) as VersionAction[]) {
    for (const status of versionStatuses) {
      test(`${action} from ${status} → ${expected[action][status] ?? 'refused (409)'}`, () => {
        expect(nextStatus(action, status) as string | null).toBe(expected[action][status] ?? null)
      })
    }
  }
})

const context = createTestContext()
afterAll(() => context.close())
let owner: TestUser
let developer: TestUser
let stranger: TestUser
let admin: TestUser
let miniAppId: string
let otherMiniAppId: string
const ids: Record<string, string> = {}

const post = (path: string, token: string, json?: unknown) => context.call('POST', path, { token, json })

beforeAll(async () => {
  owner = await createTestUser(context, { email: 'owner@example.test' })
  developer = await createTestUser(context, { email: 'dev@example.test' })
  stranger = await createTestUser(context, { email: 'stranger@example.test' })
  admin = await createTestUser(context, { email: 'admin@example.test', role: 'ADMIN' })
  miniAppId = (await createMiniApp(context, owner.token, 'team.app')).id
  otherMiniAppId = (await createMiniApp(context, stranger.token, 'other.app')).id
  const added = await post(`/api/mini-apps/${miniAppId}/members`, owner.token, { email: developer.email, role: 'DEVELOPER' })
  expect(added.status).toBe(201)
})

/** The status and code of a refused call, for one-line assertions. */
const outcome = (res: { status: number; body: { code?: string } }) => ({ status: res.status, code: res.body.code })

describe('review, publish, rollback and delete through HTTP', () => {
  test('upload 1.0.0: DRAFT, build 1, the experience version', async () => {
    const res = await upload(context, developer.token, 'team.app', uploadForm('team.app', { version: '1.0.0' }))
    expect(res.status).toBe(201)
    expect(res.body).toMatchObject({ status: 'DRAFT', buildNumber: 1 })
    ids['1.0.0'] = res.body.id
  })

  test('review: IN_REVIEW and the review version; again is allowed', async () => {
    const res = await post(`/api/mini-apps/${miniAppId}/versions/${ids['1.0.0']}/review`, developer.token)
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ id: ids['1.0.0'], status: 'IN_REVIEW' })
    const again = await post(`/api/mini-apps/${miniAppId}/versions/${ids['1.0.0']}/review`, developer.token)
    expect(again.status).toBe(200)
    const app = await context.call('GET', `/api/mini-apps/${miniAppId}`, { token: owner.token })
    expect(app.body.currentReviewVersionId).toBe(ids['1.0.0'])
  })

  test('review or publish of a version of another miniapp: 404', async () => {
    const foreign = await upload(context, stranger.token, 'other.app', uploadForm('other.app', { version: '1.0.0' }))
    ids.foreign = foreign.body.id
    expect(outcome(await post(`/api/mini-apps/${miniAppId}/versions/${ids.foreign}/review`, owner.token))).toEqual({ status: 404, code: 'VERSION_NOT_FOUND' })
    expect(outcome(await post(`/api/mini-apps/${miniAppId}/versions/${ids.foreign}/publish`, owner.token, {}))).toEqual({ status: 404, code: 'VERSION_NOT_FOUND' })
    expect(outcome(await post(`/api/mini-apps/${miniAppId}/versions/no-such-id/publish`, owner.token, {}))).toEqual({ status: 404, code: 'VERSION_NOT_FOUND' })
  })

  test('a non-member cannot review, publish, roll back or delete: 404 for the miniapp', async () => {
    expect(outcome(await post(`/api/mini-apps/${miniAppId}/versions/${ids['1.0.0']}/review`, stranger.token))).toEqual({ status: 404, code: 'MINI_APP_NOT_FOUND' })
    expect(outcome(await post(`/api/mini-apps/${miniAppId}/versions/${ids['1.0.0']}/publish`, stranger.token, {}))).toEqual({ status: 404, code: 'MINI_APP_NOT_FOUND' })
    expect(outcome(await post(`/api/mini-apps/${miniAppId}/rollback`, stranger.token, { targetVersionId: ids['1.0.0'] }))).toEqual({ status: 404, code: 'MINI_APP_NOT_FOUND' })
    expect(outcome(await context.call('DELETE', `/api/mini-apps/${miniAppId}/versions/${ids['1.0.0']}`, { token: stranger.token }))).toEqual({ status: 404, code: 'MINI_APP_NOT_FOUND' })
  })

  test('publish (no body): PUBLISHED, publishedAt, the release; the review pointer is cleared', async () => {
    context.advance(1000)
    const res = await context.call('POST', `/api/mini-apps/${miniAppId}/versions/${ids['1.0.0']}/publish`, { token: developer.token })
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ id: ids['1.0.0'], status: 'PUBLISHED', publishedAt: new Date(context.now.value).toISOString() })
    const app = await context.call('GET', `/api/mini-apps/${miniAppId}`, { token: owner.token })
    expect(app.body).toMatchObject({ currentReleaseVersionId: ids['1.0.0'], currentReviewVersionId: null })
  })

  test('publish twice: 409', async () => {
    expect(outcome(await post(`/api/mini-apps/${miniAppId}/versions/${ids['1.0.0']}/publish`, owner.token, { notes: 'again' }))).toEqual({ status: 409, code: 'VERSION_ALREADY_PUBLISHED' })
  })

  test('review of a published version: 409', async () => {
    expect(outcome(await post(`/api/mini-apps/${miniAppId}/versions/${ids['1.0.0']}/review`, owner.token))).toEqual({ status: 409, code: 'VERSION_ALREADY_PUBLISHED' })
  })

  test('upload 1.1.0 and publish it straight from DRAFT, with notes', async () => {
    context.advance(1000)
    const up = await upload(context, owner.token, 'team.app', uploadForm('team.app', { version: '1.1.0' }))
    expect(up.body).toMatchObject({ status: 'DRAFT', buildNumber: 2 })
    ids['1.1.0'] = up.body.id
    context.advance(1000)
    const res = await post(`/api/mini-apps/${miniAppId}/versions/${ids['1.1.0']}/publish`, owner.token, { notes: 'new checkout' })
    expect(res.status).toBe(200)
    expect(res.body.status).toBe('PUBLISHED')
  })

  test('rollback to the current release: 409', async () => {
    expect(outcome(await post(`/api/mini-apps/${miniAppId}/rollback`, owner.token, { targetVersionId: ids['1.1.0'] }))).toEqual({ status: 409, code: 'ALREADY_CURRENT_RELEASE' })
  })

  test('rollback to a draft: 409', async () => {
    const draft = await upload(context, owner.token, 'team.app', uploadForm('team.app', { version: '1.2.0' }))
    ids['1.2.0'] = draft.body.id
    expect(outcome(await post(`/api/mini-apps/${miniAppId}/rollback`, owner.token, { targetVersionId: ids['1.2.0'] }))).toEqual({ status: 409, code: 'VERSION_NOT_PUBLISHED' })
  })

  test('rollback to a version of another miniapp: 404; without targetVersionId: 400', async () => {
    expect(outcome(await post(`/api/mini-apps/${miniAppId}/rollback`, owner.token, { targetVersionId: ids.foreign }))).toEqual({ status: 404, code: 'VERSION_NOT_FOUND' })
    expect(outcome(await post(`/api/mini-apps/${miniAppId}/rollback`, owner.token, { notes: 'x' }))).toEqual({ status: 400, code: 'VALIDATION_ERROR' })
  })

  test('notes that are not text (or null) are 400 VALIDATION_ERROR saying what notes take, on rollback and publish', async () => {
    for (const path of [`/api/mini-apps/${miniAppId}/rollback`, `/api/mini-apps/${miniAppId}/versions/${ids['1.0.0']}/publish`]) {
      const res = await post(path, owner.token, { targetVersionId: ids['1.0.0'], notes: 5 })
      expect(outcome(res)).toEqual({ status: 400, code: 'VALIDATION_ERROR' })
      expect((res.body as { details?: unknown }).details).toEqual([{ field: 'notes', message: 'must be text of at most 2000 characters without control characters (line breaks and tabs are fine), or null' }])
    }
  })

  test('rollback to 1.0.0: answers { miniApp, version }; statuses do not change', async () => {
    context.advance(1000)
    const res = await post(`/api/mini-apps/${miniAppId}/rollback`, developer.token, { targetVersionId: ids['1.0.0'], notes: 'checkout broken' })
    expect(res.status).toBe(200)
    expect(res.body.miniApp).toMatchObject({ id: miniAppId, currentReleaseVersionId: ids['1.0.0'] })
    expect(res.body.version).toMatchObject({ id: ids['1.0.0'], status: 'PUBLISHED' })
  })

  test('delete of the live version: 409; of a published one: 409', async () => {
    expect(outcome(await context.call('DELETE', `/api/mini-apps/${miniAppId}/versions/${ids['1.0.0']}`, { token: owner.token }))).toEqual({ status: 409, code: 'VERSION_IS_LIVE' })
    expect(outcome(await context.call('DELETE', `/api/mini-apps/${miniAppId}/versions/${ids['1.1.0']}`, { token: owner.token }))).toEqual({ status: 409, code: 'VERSION_PUBLISHED' })
  })

  test('delete a draft: its unshared files go, the experience pointer moves to the newest remaining version', async () => {
    const up = await upload(context, owner.token, 'team.app', uploadForm('team.app', { version: '1.3.0', bundleIos: 'only in 1.3.0' }))
    ids['1.3.0'] = up.body.id
    const files = up.body.files as Record<string, { sha256: string }>
    await post(`/api/mini-apps/${miniAppId}/versions/${ids['1.3.0']}/review`, owner.token)
    const res = await context.call('DELETE', `/api/mini-apps/${miniAppId}/versions/${ids['1.3.0']}`, { token: owner.token })
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ success: true, versionId: ids['1.3.0'] })
    expect(existsSync(blobPath(context.dataDir.paths, files.bundleIos!.sha256))).toBe(false)
    // the archives are the same as every other version's: they stay
    expect(existsSync(blobPath(context.dataDir.paths, files.assetsIos!.sha256))).toBe(true)
    const app = await context.call('GET', `/api/mini-apps/${miniAppId}`, { token: owner.token })
    expect(app.body.currentExperienceVersionId).toBe(ids['1.2.0'])
    expect(app.body.currentReviewVersionId).toBe(ids['1.2.0'])
    expect(outcome(await context.call('DELETE', `/api/mini-apps/${miniAppId}/versions/${ids['1.3.0']}`, { token: owner.token }))).toEqual({ status: 404, code: 'VERSION_NOT_FOUND' })
  })

  test('an admin who is not a member may manage the miniapp', async () => {
    const res = await post(`/api/mini-apps/${miniAppId}/versions/${ids['1.2.0']}/review`, admin.token)
    expect(res.status).toBe(200)
  })

  test('the workspace: versions newest first with files, release history newest first, access links', async () => {
    const res = await context.call('GET', `/api/mini-apps/${miniAppId}/workspace`, { token: developer.token })
    expect(res.status).toBe(200)
    const { miniApp, versions, releaseHistory, accessLinks } = res.body
    expect(miniApp.id).toBe(miniAppId)
    expect(versions.map((v: { version: string }) => v.version)).toEqual(['1.2.0', '1.1.0', '1.0.0'])
    expect(versions[0].files.bundleIos).toEqual({ size: expect.any(Number), sha256: expect.stringMatching(/^[0-9a-f]{64}$/) })
    expect(versions[0].createdBy).toEqual({ id: owner.id, email: owner.email, displayName: owner.displayName })
    expect(releaseHistory.map((h: { action: string; version: string }) => `${h.action} ${h.version}`)).toEqual(['ROLLBACK 1.0.0', 'PUBLISH 1.1.0', 'PUBLISH 1.0.0'])
    expect(releaseHistory[0]).toMatchObject({ versionId: ids['1.0.0'], previousVersionId: ids['1.1.0'], notes: 'checkout broken', actor: { id: developer.id, email: developer.email } })
    expect(releaseHistory[2]).toMatchObject({ previousVersionId: null, notes: null, actor: { id: developer.id } })
    expect(accessLinks.map((l: { version: string }) => l.version)).toEqual(['1.2.0', '1.1.0', '1.0.0'])
    const tokens = createTokenService(context.dataDir.secret, () => context.now.value, 3600)
    for (const link of accessLinks as { versionId: string; installUrl: string }[]) {
      const url = new URL(link.installUrl, 'http://localhost')
      expect(url.pathname).toBe(`/api/mini-apps/access/versions/${link.versionId}/install`)
      const verified = await tokens.verify(url.searchParams.get('token')!)
      expect(verified).toMatchObject({ ok: true, kind: 'download', claims: { vid: link.versionId } })
      const published = link.versionId !== ids['1.2.0']
      // published: no expiry (cacheable); others: expire after the configured time
      expect(verified.ok && verified.kind === 'download' && verified.claims.exp).toBe(published ? undefined : Math.floor((context.now.value + context.config.downloadTokenTtlSeconds * 1000) / 1000))
    }
  })

  test('the workspace says what the caller is: a developer may not manage members, an owner and an admin may', async () => {
    const asDeveloper = await context.call('GET', `/api/mini-apps/${miniAppId}/workspace`, { token: developer.token })
    expect(asDeveloper.body.viewer).toEqual({ memberRole: 'DEVELOPER', isAdmin: false, canManageMembers: false })
    const asOwner = await context.call('GET', `/api/mini-apps/${miniAppId}/workspace`, { token: owner.token })
    expect(asOwner.body.viewer).toEqual({ memberRole: 'OWNER', isAdmin: false, canManageMembers: true })
    const asAdmin = await context.call('GET', `/api/mini-apps/${miniAppId}/workspace`, { token: admin.token })
    expect(asAdmin.body.viewer).toEqual({ memberRole: null, isAdmin: true, canManageMembers: true })
  })

  test('the workspace of a miniapp the caller cannot see: 404', async () => {
    expect(outcome(await context.call('GET', `/api/mini-apps/${otherMiniAppId}/workspace`, { token: owner.token }))).toEqual({ status: 404, code: 'MINI_APP_NOT_FOUND' })
  })

  test('the audit log has each step', () => {
    const rows = context.dataDir.db.$client.query('SELECT action, actor_email AS actor FROM audit_logs ORDER BY created_at, id').all() as { action: string; actor: string }[]
    const actions = new Set(rows.map((row) => row.action))
    for (const action of ['miniapp.create', 'miniapp.member.add', 'version.upload', 'version.review', 'version.publish', 'version.rollback', 'version.delete']) expect(actions).toContain(action)
    expect(rows.find((row) => row.action === 'version.rollback')!.actor).toBe(developer.email)
  })
})

describe('install links with a public URL', () => {
  const withPublicUrl = createTestContext({ publicUrl: 'https://apps.example.com/api' })
  afterAll(() => withPublicUrl.close())

  test('are full URLs on the public URL', async () => {
    const user = await createTestUser(withPublicUrl)
    const app = await createMiniApp(withPublicUrl, user.token, 'public.app')
    const up = await upload(withPublicUrl, user.token, 'public.app', uploadForm('public.app'))
    const res = await withPublicUrl.call('GET', `/api/mini-apps/${app.id}/workspace`, { token: user.token })
    expect(res.body.accessLinks[0].installUrl).toStartWith(`https://apps.example.com/api/mini-apps/access/versions/${up.body.id}/install?token=`)
  })
})

describe('every cell the table refuses is a 409 over HTTP, with the refusal code of its action', () => {
  const refusing = createTestContext()
  afterAll(() => refusing.close())
  const appId = 'refusals.app'
  let user: TestUser
  let miniApp: string
  /** a version in each status; PUBLISHED is not the live release (deleting that one is VERSION_IS_LIVE) */
  const inStatus = {} as Record<VersionStatus, { id: string; version: string }>

  const uploadAs = async (version: string) => {
    const res = await upload(refusing, user.token, appId, uploadForm(appId, { version }))
    expect(res.status).toBe(201)
    return { id: res.body.id as string, version }
  }
  const act = (id: string) => `/api/mini-apps/${miniApp}/versions/${id}`
  /** Performs `action` on the version through HTTP, as a client would. */
  const perform: Record<VersionAction, (target: { id: string; version: string }) => Promise<{ status: number; body: { code?: string } }>> = {
    upload: (target) => upload(refusing, user.token, appId, uploadForm(appId, { version: target.version, bundleIos: 'a new build' })),
    review: (target) => refusing.call('POST', `${act(target.id)}/review`, { token: user.token }),
    publish: (target) => refusing.call('POST', `${act(target.id)}/publish`, { token: user.token, json: {} }),
    rollback: (target) => refusing.call('POST', `/api/mini-apps/${miniApp}/rollback`, { token: user.token, json: { targetVersionId: target.id } }),
    delete: (target) => refusing.call('DELETE', act(target.id), { token: user.token }),
  }

  beforeAll(async () => {
    user = await createTestUser(refusing)
    miniApp = (await createMiniApp(refusing, user.token, appId)).id
    inStatus.PUBLISHED = await uploadAs('1.0.0')
    expect((await perform.publish(inStatus.PUBLISHED)).status).toBe(200)
    const live = await uploadAs('1.1.0')
    expect((await perform.publish(live)).status).toBe(200)
    inStatus.IN_REVIEW = await uploadAs('2.0.0')
    expect((await perform.review(inStatus.IN_REVIEW)).status).toBe(200)
    inStatus.DRAFT = await uploadAs('2.1.0')
  })

  for (const action of Object.keys(expected) as VersionAction[]) {
    for (const status of versionStatuses) {
      if (expected[action][status] !== null) continue
      test(`${action} of a ${status} version → 409 ${refusals[action].code}`, async () => {
        const res = await perform[action](inStatus[status])
        expect({ status: res.status, code: res.body.code }).toEqual({ status: 409, code: refusals[action].code })
        const workspace = await refusing.call('GET', `/api/mini-apps/${miniApp}/workspace`, { token: user.token })
        const row = workspace.body.versions.find((version: { id: string }) => version.id === inStatus[status].id)
        expect(row?.status).toBe(status)
      })
    }
  }

  test('the refused cells are the five decisions §5 names', () => {
    const refused = (Object.keys(expected) as VersionAction[]).flatMap((action) => versionStatuses.filter((status) => expected[action][status] === null).map((status) => `${action} ${status}`))
    expect(refused).toEqual(['upload PUBLISHED', 'review PUBLISHED', 'rollback DRAFT', 'rollback IN_REVIEW', 'delete PUBLISHED'])
  })
})
