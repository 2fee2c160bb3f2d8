// Another process holding SQLite's write lock: writes fail fast as 503 DATABASE_BUSY, health says degraded, nothing freezes.
import { describe, expect, test, afterAll, beforeAll } from 'bun:test'
import { Database } from 'bun:sqlite'
import { createTestContext, createUser, type TestUser } from '../test-support'
import { createMiniApp } from '../test-fixtures'
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
