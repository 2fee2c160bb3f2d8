// The experience install (decisions §9) does not tell someone without a valid member token whether a miniapp exists
// (decisions §5): an unknown appId answers every missing or bad token exactly as a miniapp that is not public does.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createTestContext, type TestContext } from '../../test-support'
import { createMiniApp, createTestUser, upload, uploadForm, type TestUser } from '../../test-fixtures'
import { createTokenService } from '../auth/tokens'

const access = '/api/mini-apps/access'
const existing = 'com.example.hidden'
const unknown = 'com.example.nosuch'
let context: TestContext
let owner: TestUser
let stranger: TestUser
let expiredToken: string
let downloadToken: string

beforeAll(async () => {
  context = createTestContext()
  owner = await createTestUser(context)
  stranger = await createTestUser(context)
  await createMiniApp(context, owner.token, existing)
  expect((await upload(context, owner.token, existing, uploadForm(existing, { version: '1.0.0' }))).status).toBe(201)
  const install = await context.call('GET', `${access}/apps/${existing}/experience/install?token=${owner.token}`)
  expect(install.status).toBe(200)
  downloadToken = new URL(install.body.bundleUrl).searchParams.get('token')!
  // an access token of the owner, signed two lifetimes ago
  const past = createTokenService(context.dataDir.secret, () => context.now.value - 2 * context.config.tokenTtlSeconds * 1000, context.config.tokenTtlSeconds)
  expiredToken = await past.signAccess({ id: owner.id, role: 'USER', tokenVersion: 1 })
})
afterAll(() => context.close())

/** The whole answer, with the appId the request named put back to one placeholder. */
async function answer(appId: string, query: string) {
  const res = await context.call('GET', `${access}/apps/${appId}/experience/install${query}`)
  return { status: res.status, body: JSON.parse(res.text.split(appId).join('<appId>')) as Record<string, unknown> }
}

describe('the experience install of an existing and an unknown miniapp, without a valid member token', () => {
  const cases: [string, () => string, number, string][] = [
    ['no token', () => '', 401, 'EXPERIENCE_NOT_PUBLIC'],
    ['an empty token', () => '?token=', 401, 'EXPERIENCE_NOT_PUBLIC'],
    ['a token that is no token', () => '?token=not-a-token', 401, 'INVALID_TOKEN'],
    ['an expired access token', () => `?token=${expiredToken}`, 401, 'TOKEN_EXPIRED'],
    ['a download token (not an access token)', () => `?token=${downloadToken}`, 401, 'INVALID_TOKEN'],
    ['an API key that does not exist', () => `?token=msk_${'a'.repeat(40)}`, 401, 'INVALID_API_KEY'],
    ["a stranger's valid token", () => `?token=${stranger.token}`, 404, 'MINI_APP_NOT_FOUND'],
  ]
  for (const [what, query, status, code] of cases) {
    test(`${what}: ${status} ${code} for both, the same body`, async () => {
      const forExisting = await answer(existing, query())
      const forUnknown = await answer(unknown, query())
      expect({ status: forExisting.status, code: forExisting.body.code }).toEqual({ status, code })
      expect(forUnknown).toEqual(forExisting)
    })
  }

  test('a member still gets the install info, and a public experience is answered without a token', async () => {
    expect((await context.call('GET', `${access}/apps/${existing}/experience/install?token=${owner.token}`)).status).toBe(200)
  })
})
