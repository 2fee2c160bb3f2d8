// The runtime's answers kept on the facts they were built from (issue 30) follow every change of those facts.
import { afterAll, expect, test } from 'bun:test'
import { createTestContext, createUser } from '../../test-support'
import { createMiniApp, upload, uploadForm } from '../../test-fixtures'

const context = createTestContext()
afterAll(() => context.close())

test('release install for a request naming no device follows publish, rollout and rollback at once', async () => {
  const admin = await createUser(context, { email: 'caches@example.com', role: 'ADMIN' })
  const app = await createMiniApp(context, admin.token, 'com.example.caches')
  const release = async () => {
    const answer = await context.call('GET', '/api/mini-apps/access/apps/com.example.caches/release/install')
    return answer.status === 200 ? answer.body.version : answer.body.code
  }
  expect(await release()).toBe('RELEASE_NOT_FOUND')
  const first = (await upload(context, admin.token, 'com.example.caches', uploadForm('com.example.caches', { version: '1.0.0' }))).body
  await context.call('POST', `/api/mini-apps/${app.id}/versions/${first.id}/publish`, { token: admin.token, json: {} })
  expect(await release()).toBe('1.0.0')
  expect(await release()).toBe('1.0.0')
  const second = (await upload(context, admin.token, 'com.example.caches', uploadForm('com.example.caches', { version: '1.1.0' }))).body
  await context.call('POST', `/api/mini-apps/${app.id}/versions/${second.id}/publish`, { token: admin.token, json: { rolloutPercent: 30 } })
  // mid-rollout, a request without a deviceId gets the release before it
  expect(await release()).toBe('1.0.0')
  const completed = await context.call('PATCH', `/api/mini-apps/${app.id}/channels/stable/rollout`, { token: admin.token, json: { rolloutPercent: 100 } })
  expect(completed.status).toBe(200)
  expect(await release()).toBe('1.1.0')
  const rolledBack = await context.call('POST', `/api/mini-apps/${app.id}/rollback`, { token: admin.token, json: { targetVersionId: first.id } })
  expect(rolledBack.status).toBe(200)
  expect(await release()).toBe('1.0.0')
  // a device naming itself is answered on its own, and the next anonymous request still gets the cached answer right
  const named = await context.call('GET', '/api/mini-apps/access/apps/com.example.caches/release/install?deviceId=dev-1')
  expect(named.body.bundleUrl).toContain('/devices/dev-1/')
  expect(await release()).toBe('1.0.0')
})

test('install info of a version read through its download token follows a rename of the miniapp', async () => {
  const admin = await createUser(context, { email: 'caches-rename@example.com', role: 'ADMIN' })
  const app = await createMiniApp(context, admin.token, 'com.example.renamed')
  const version = (await upload(context, admin.token, 'com.example.renamed', uploadForm('com.example.renamed'))).body
  await context.call('POST', `/api/mini-apps/${app.id}/versions/${version.id}/publish`, { token: admin.token, json: {} })
  const info = (await context.call('GET', `/api/mini-apps/access/versions/${version.id}/install?token=${admin.token}`)).body
  const token = new URL(info.bundleUrl).searchParams.get('token')!
  const name = async () => (await context.call('GET', `/api/mini-apps/access/versions/${version.id}/install?token=${token}`)).body.appName
  expect(await name()).toBe(info.appName)
  expect(await name()).toBe(info.appName)
  const renamed = await context.call('PATCH', `/api/mini-apps/${app.id}`, { token: admin.token, json: { name: 'Renamed app' } })
  expect(renamed.status).toBe(200)
  expect(await name()).toBe('Renamed app')
  // another version's token does not open this one, even right after this one's own token was let through
  const other = (await upload(context, admin.token, 'com.example.renamed', uploadForm('com.example.renamed', { version: '2.0.0' }))).body
  await context.call('POST', `/api/mini-apps/${app.id}/versions/${other.id}/publish`, { token: admin.token, json: {} })
  const otherInfo = (await context.call('GET', `/api/mini-apps/access/versions/${other.id}/install?token=${admin.token}`)).body
  const otherToken = new URL(otherInfo.bundleUrl).searchParams.get('token')!
  for (let round = 0; round < 2; round++) expect((await context.call('GET', `/api/mini-apps/access/versions/${other.id}/install?token=${otherToken}`)).status).toBe(200)
  for (const path of ['install', 'bundles/ios']) {
    const wrong = await context.call('GET', `/api/mini-apps/access/versions/${other.id}/${path}?token=${token}`)
    expect(wrong.status).toBe(403)
    expect(wrong.body.code).toBe('TOKEN_WRONG_VERSION')
  }
})
