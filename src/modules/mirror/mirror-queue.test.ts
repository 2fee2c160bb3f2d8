// The release mirror runs from the job queue (decisions §18): a bucket that accepts and never answers holds no release change.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createTestContext, type TestContext } from '../../test-support'
import { createMiniApp, createTestUser, upload, uploadForm, type TestUser } from '../../test-fixtures'
import { startTestS3, type TestS3 } from '../../storage/test-s3'
import { startFreezableProxy } from '../../storage/test-stall'


const until = async (what: string, condition: () => boolean | Promise<boolean>) => {
  for (let i = 0; i < 500; i++) {
    if (await condition()) return
    await Bun.sleep(20)
  }
  throw new Error(`timed out waiting for ${what}`)
}

describe('a frozen bucket', () => {
  let s3: TestS3
  let proxy: ReturnType<typeof startFreezableProxy>
  let context: TestContext
  let owner: TestUser
  let admin: TestUser
  let miniAppId: string
  const appId = 'com.example.frozen'
  beforeAll(async () => {
    s3 = await startTestS3()
    proxy = startFreezableProxy(s3.endpoint)
    const storage = { ...s3.config('frozen'), endpoint: proxy.endpoint, recorded: { owner: 'test-frozen' } }
    context = createTestContext({ storage, mirrorReleases: true, cdnUrl: 'https://cdn.example.com' }, { jobs: { attemptTimeoutMs: 1000, pollMs: 20 } })
    owner = await createTestUser(context)
    admin = await createTestUser(context, { role: 'ADMIN' })
    miniAppId = (await createMiniApp(context, owner.token, appId)).id
  })
  afterAll(async () => {
    await context.app.store.jobs.stop(1000)
    context.close()
    proxy.stop()
    await s3.close()
  })

  const installJson = () => fetch(s3.publicUrl(`frozen/releases/${appId}/stable/install.json`))
  const backlog = async () => (await context.call('GET', '/api/health', { token: admin.token })).body.jobs.byKind['release-mirror']

  test('publish answers while the mirror write stalls; the write waits in the queue, visibly, and lands when the bucket is back', async () => {
    const uploaded = await upload(context, owner.token, appId, uploadForm(appId, { version: '1.0.0' }))
    expect(uploaded.status).toBe(201)
    context.app.store.jobs.start()
    proxy.freeze()

    const published = await context.call('POST', `/api/mini-apps/${miniAppId}/versions/${uploaded.body.id}/publish`, { token: owner.token, json: {} })
    expect(published.status).toBe(200)
    // the answer came first; the worker then reached the bucket, which holds the write
    await until('the mirror write to reach the frozen bucket', () => proxy.held() > 0)
    // its attempt times out and the job waits for its retry, visible to an administrator
    await until('the attempt to time out', async () => (await backlog()).pending === 1)
    context.advance(60_000)
    const waiting = await backlog()
    expect(waiting).toMatchObject({ pending: 1, running: 0, failed: 0 })
    expect(waiting.oldestPendingSeconds).toBeGreaterThanOrEqual(60)
    // a probe (no token) and a caller who is no administrator get the plain answer
    for (const token of [undefined, owner.token, 'not-a-token']) {
      const plain = await context.call('GET', '/api/health', { token })
      expect(plain.status).toBe(200)
      expect(plain.body.jobs).toBeUndefined()
    }
    const metrics = (await context.call('GET', '/api/metrics', { token: admin.token })).text
    const gauge = (name: string) => Number(new RegExp(`^${name}\\{kind="release-mirror"\\} (\\d+)$`, 'm').exec(metrics)?.[1])
    expect(gauge('miniship_jobs_pending')).toBe(1)
    expect(gauge('miniship_jobs_oldest_pending_seconds')).toBeGreaterThanOrEqual(60)
    expect(gauge('miniship_jobs_failed')).toBe(0)
    expect(context.logs.some((line) => line.includes('background job failed') && line.includes('timed out'))).toBe(true)

    // rollout changes answer too while the bucket is frozen, and queue no second write for the channel
    const rollout = await context.call('PATCH', `/api/mini-apps/${miniAppId}/channels/stable/rollout`, { token: owner.token, json: { rolloutPercent: 100 } })
    expect(rollout.status).toBe(200)
    expect((await backlog()).pending).toBe(1)
    expect((await installJson()).status).toBe(404)

    proxy.thaw()
    // (on a slow machine a retry may time out too: time moves on, so the next one comes)
    await until('the mirror to be written', async () => (context.advance(60_000), (await backlog()).pending === 0 && (await installJson()).status === 200))
    expect((await (await installJson()).json()).versionId).toBe(uploaded.body.id)
    expect(await backlog()).toMatchObject({ pending: 0, running: 0, failed: 0 })
  }, 30_000)
})
