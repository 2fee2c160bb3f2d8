// Another process holding SQLite's write lock: writes fail fast as 503 DATABASE_BUSY, health says degraded, nothing freezes.
import { describe, expect, test, afterAll, beforeAll } from 'bun:test'
import { Database } from 'bun:sqlite'
import { createTestContext, createUser, type TestUser } from '../test-support'
import { createMiniApp, upload, uploadForm } from '../test-fixtures'
import { isDatabaseBusy } from '../db/open'

const context = createTestContext()
afterAll(() => context.close())

let owner: TestUser
let miniAppId: string
beforeAll(async () => {
  owner = await createUser(context, { email: 'owner@example.test' })
  miniAppId = (await createMiniApp(context, owner.token, 'com.example.busy')).id
})

/** A second connection, as another process would open it, holding the write lock until released. */
function holdWriteLock(): () => void {
  const other = new Database(context.dataDir.paths.database)
  other.exec('BEGIN IMMEDIATE')
  return () => {
    other.exec('ROLLBACK')
    other.close()
  }
}

describe('database busy', () => {
  test('a write while another connection holds the lock: 503 DATABASE_BUSY with Retry-After, then works once released', async () => {
    const release = holdWriteLock()
    try {
      const res = await context.call('PATCH', `/api/mini-apps/${miniAppId}`, { token: owner.token, json: { name: 'renamed' } })
      expect({ status: res.status, code: res.body.code }).toEqual({ status: 503, code: 'DATABASE_BUSY' })
      expect(res.headers.get('retry-after')).toBe('1')
      expect(res.body.message).not.toContain('SQLITE')
      // reads still answer
      const read = await context.call('GET', `/api/mini-apps/${miniAppId}`, { token: owner.token })
      expect(read.status).toBe(200)
      const created = await context.call('POST', '/api/mini-apps', { token: owner.token, json: { appId: 'com.example.other', name: 'x' } })
      expect({ status: created.status, code: created.body.code }).toEqual({ status: 503, code: 'DATABASE_BUSY' })
    } finally {
      release()
    }
    const res = await context.call('PATCH', `/api/mini-apps/${miniAppId}`, { token: owner.token, json: { name: 'renamed' } })
    expect(res.status).toBe(200)
  })

  test('a PATCH that changes nothing answers 200 while another connection holds the lock, and writes no audit entry', async () => {
    const before = (await context.call('GET', `/api/mini-apps/${miniAppId}`, { token: owner.token })).body
    const audited = () => (context.dataDir.db.$client.query("SELECT count(*) AS n FROM audit_logs WHERE action = 'miniapp.update'").get() as { n: number }).n
    const entries = audited()
    const release = holdWriteLock()
    try {
      for (const json of [{}, { name: before.name }, { name: ` ${before.name} `, description: before.description, iconUrl: before.iconUrl, experiencePublic: before.experiencePublic, requireSignature: before.requireSignature }]) {
        const res = await context.call('PATCH', `/api/mini-apps/${miniAppId}`, { token: owner.token, json })
        expect({ json, status: res.status }).toEqual({ json, status: 200 })
        expect(res.body).toEqual(before)
      }
      // a body that does change something still needs the lock
      const changed = await context.call('PATCH', `/api/mini-apps/${miniAppId}`, { token: owner.token, json: { name: before.name, description: 'new words' } })
      expect({ status: changed.status, code: changed.body.code }).toEqual({ status: 503, code: 'DATABASE_BUSY' })
    } finally {
      release()
    }
    expect(audited()).toBe(entries)
  })

  test('a rollout PATCH that changes nothing (same percent, resume when running, pause when paused) answers 200 while the lock is held: no audit entry, history row or delivery', async () => {
    const appId = 'com.example.busy-rollout'
    const id = (await createMiniApp(context, owner.token, appId)).id
    const versionIds: string[] = []
    for (const version of ['1.0.0', '1.1.0']) versionIds.push((await upload(context, owner.token, appId, uploadForm(appId, { version }))).body.id)
    expect((await context.call('POST', `/api/mini-apps/${id}/versions/${versionIds[0]}/publish`, { token: owner.token, json: {} })).status).toBe(200)
    expect((await context.call('POST', `/api/mini-apps/${id}/versions/${versionIds[1]}/publish`, { token: owner.token, json: { rolloutPercent: 30 } })).status).toBe(200)
    // a public address literal: accepted without resolving; the worker is not running, so deliveries stay queued and countable
    const hook = await context.call('POST', `/api/mini-apps/${id}/webhooks`, { token: owner.token, json: { url: 'https://93.184.216.34/hook', events: ['rollout.changed', 'rollout.paused'] } })
    expect(hook.status).toBe(201)
    const count = (sql: string) => (context.dataDir.db.$client.query(sql).get(id) as { n: number }).n
    const written = () => ({
      audit: count("SELECT count(*) AS n FROM audit_logs WHERE action LIKE 'channel.%' AND json_extract(metadata, '$.miniAppId') = ?"),
      history: count("SELECT count(*) AS n FROM release_history WHERE mini_app_id = ? AND action = 'ROLLOUT'"),
      deliveries: count('SELECT count(*) AS n FROM webhook_deliveries WHERE webhook_id IN (SELECT id FROM webhooks WHERE mini_app_id = ?)'),
    })
    const rollout = (json: Record<string, unknown>) => context.call('PATCH', `/api/mini-apps/${id}/channels/stable/rollout`, { token: owner.token, json })
    const stable = async () => (await context.call('GET', `/api/mini-apps/${id}/channels`, { token: owner.token })).body.channels.find((channel: { name: string }) => channel.name === 'stable')

    const noOps = async (bodies: Record<string, unknown>[], changes: Record<string, unknown>[]) => {
      const before = await stable()
      const entries = written()
      const release = holdWriteLock()
      const logged = context.logs.length
      try {
        for (const json of bodies) {
          const res = await rollout(json)
          expect({ json, status: res.status }).toEqual({ json, status: 200 })
          // the channel as it was, and no warning: nothing was paused or reverted
          expect(res.body).toEqual({ ...before, warnings: [] })
        }
        // nothing tried to write either (the release guard's count before a resume has nothing to count)
        expect(context.logs.slice(logged)).toEqual([])
        // a body that does change something still needs the lock
        for (const json of changes) {
          const res = await rollout(json)
          expect({ json, status: res.status, code: res.body.code }).toEqual({ json, status: 503, code: 'DATABASE_BUSY' })
        }
      } finally {
        release()
      }
      expect(written()).toEqual(entries)
      expect(await stable()).toEqual(before)
    }

    // rolling out at 30 %: the same percent and a resume change nothing; another percent, a pause do
    await noOps([{ rolloutPercent: 30 }, { paused: false }], [{ rolloutPercent: 40 }, { paused: true }])
    // a real change writes its audit entry, history row and delivery together
    const entries = written()
    const paused = await rollout({ paused: true, reason: 'crash reports' })
    expect({ status: paused.status, state: paused.body.state }).toEqual({ status: 200, state: 'paused' })
    expect(written()).toEqual({ audit: entries.audit + 1, history: entries.history + 1, deliveries: entries.deliveries + 1 })
    // paused: pausing again (another reason or none) changes nothing; resuming and reverting do
    await noOps([{ paused: true }, { paused: true, reason: 'still crashing' }], [{ paused: false }, { rolloutPercent: 0 }])
    // changing the percent while paused is still refused, lock or not
    const release = holdWriteLock()
    try {
      const refused = await rollout({ rolloutPercent: 50 })
      expect({ status: refused.status, code: refused.body.code }).toEqual({ status: 409, code: 'ROLLOUT_PAUSED' })
    } finally {
      release()
    }
  })

  test('a no-op rollout PATCH while devices of a channel of that name (this miniapp or another) wait to be counted: 200, and nothing tries to write', async () => {
    const ids: Record<string, { id: string; versionId: string }> = {}
    for (const appId of ['com.example.busy-quiet', 'com.example.busy-loud']) {
      const id = (await createMiniApp(context, owner.token, appId)).id
      const versionId = (await upload(context, owner.token, appId, uploadForm(appId, { version: '1.0.0' }))).body.id
      expect((await context.call('POST', `/api/mini-apps/${id}/versions/${versionId}/publish`, { token: owner.token, json: { rolloutPercent: 30 } })).status).toBe(200)
      ids[appId] = { id, versionId }
    }
    // devices of both miniapps' stable channels report; the guard counts them at the next flush
    for (const [appId, { versionId }] of Object.entries(ids)) {
      const events = ['a', 'b'].map((deviceId) => ({ appId, versionId, platform: 'ios', event: 'launched', channel: 'stable', deviceId }))
      expect((await context.call('POST', '/api/mini-apps/access/events', { json: { events } })).status).toBe(202)
    }
    const quiet = ids['com.example.busy-quiet']!.id
    const before = (await context.call('GET', `/api/mini-apps/${quiet}/channels`, { token: owner.token })).body
    const release = holdWriteLock()
    const logged = context.logs.length
    try {
      for (const json of [{ rolloutPercent: 30 }, { paused: false }]) {
        const res = await context.call('PATCH', `/api/mini-apps/${quiet}/channels/stable/rollout`, { token: owner.token, json })
        expect({ json, status: res.status }).toEqual({ json, status: 200 })
      }
      expect(context.logs.slice(logged)).toEqual([])
    } finally {
      release()
    }
    expect((await context.call('GET', `/api/mini-apps/${quiet}/channels`, { token: owner.token })).body).toEqual(before)
  })

  test('health: degraded (200) while the lock is held, ok after', async () => {
    const release = holdWriteLock()
    try {
      const res = await context.call('GET', '/api/health')
      expect(res.status).toBe(200)
      expect(res.body.status).toBe('degraded')
    } finally {
      release()
    }
    const res = await context.call('GET', '/api/health')
    expect({ status: res.status, body: res.body.status }).toEqual({ status: 200, body: 'ok' })
    // the health check gave the busy timeout back
    expect((context.dataDir.db.$client.query('PRAGMA busy_timeout').get() as { timeout: number }).timeout).toBe(250)
  })

  test('the busy error is recognised through a wrapper', () => {
    const busy = Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' })
    expect(isDatabaseBusy(busy)).toBe(true)
    expect(isDatabaseBusy(new Error('query failed', { cause: busy }))).toBe(true)
    expect(isDatabaseBusy(Object.assign(new Error('x'), { code: 'SQLITE_CONSTRAINT' }))).toBe(false)
  })
})
