// The statements of the calls that must cost the same at 100k versions and 50k users as on an empty
// database (issue 30: workspace, install info, upload, delete, the device's update check, and the
// administrators' user list and audit log) find their rows through an index: none reads a whole table. SQLite picks its plan from the schema
// alone here (miniship never runs ANALYZE), so a small database shows the plan a large one gets;
// scripts/bench/scale.ts measures the time.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Database, type Statement } from 'bun:sqlite'
import { createTestContext, type TestContext } from '../test-support'
import { createMiniApp, createTestUser, upload, uploadForm } from '../test-fixtures'

/**
 * Every SQL text run while `recording`, watched on every statement bun:sqlite's prepare and query
 * hand out (drizzle's, and the ones services prepare once at start). `Database.run` is left alone:
 * only the daily prune and the queue's start use it.
 */
const executed = new Set<string>()
let recording = false
const watched = Symbol('watched')
const dataStatement = /^\s*(select|insert|update|delete|with)\b/i
const originals = { prepare: Database.prototype.prepare, query: Database.prototype.query }

function watch<T extends Statement>(statement: T, sql: string): T {
  const marked = statement as T & { [watched]?: true }
  // only statements that touch rows: bun's own BEGIN/COMMIT statements are left as they are
  if (marked[watched] || !dataStatement.test(sql)) return statement
  for (const method of ['get', 'all', 'values', 'run', 'iterate'] as const) {
    const original = statement[method] as (...args: unknown[]) => unknown
    ;(statement as unknown as Record<string, unknown>)[method] = (...args: unknown[]) => {
      if (recording) executed.add(sql)
      return original.apply(statement, args)
    }
  }
  marked[watched] = true
  return statement
}

beforeAll(() => {
  Database.prototype.prepare = function (this: Database, sql: string, ...rest: unknown[]) {
    return watch((originals.prepare as (...args: unknown[]) => Statement).call(this, sql, ...rest), sql)
  } as typeof Database.prototype.prepare
  Database.prototype.query = function (this: Database, sql: string, ...rest: unknown[]) {
    return watch((originals.query as (...args: unknown[]) => Statement).call(this, sql, ...rest), sql)
  } as typeof Database.prototype.query
})

afterAll(() => {
  Object.assign(Database.prototype, originals)
})

/** The plan of every statement that ran during `work`, one line per step. */
async function plansDuring(context: TestContext, work: () => Promise<unknown>): Promise<{ sql: string; plan: string[] }[]> {
  executed.clear()
  recording = true
  try {
    await work()
  } finally {
    recording = false
  }
  expect(executed.size).toBeGreaterThan(0)
  const client = context.dataDir.db.$client
  return [...executed].map((sql) => {
    // prepared and finalized here: left in the connection's query cache, these kept the app's
    // next transaction from committing ("SQL statements in progress", SQLITE_BUSY)
    const explain = originals.prepare.call(client, `EXPLAIN QUERY PLAN ${sql}`) as Statement
    const plan = (explain.all() as { detail: string }[]).map((row) => row.detail)
    explain.finalize()
    return { sql, plan }
  })
}

/** The full-table scans in the plans of what ran during `work`: `SCAN <table>` lines (a VALUES list or a constant row is not a table). */
async function scansDuring(context: TestContext, work: () => Promise<unknown>): Promise<{ sql: string; scan: string }[]> {
  return (await plansDuring(context, work)).flatMap(({ sql, plan }) =>
    plan.filter((detail) => /^SCAN /.test(detail) && !/^SCAN (CONSTANT ROW|\d+-ROW VALUES CLAUSE)/.test(detail)).map((scan) => ({ sql: sql.slice(0, 200), scan })),
  )
}

describe('the calls that must not grow with the data read through indexes', () => {
  let context: TestContext
  let token: string
  let miniAppId: string
  const appId = 'com.example.plans'
  const access = '/api/mini-apps/access'
  const versionIds: Record<string, string> = {}

  beforeAll(async () => {
    context = createTestContext()
    const owner = await createTestUser(context)
    token = owner.token
    miniAppId = (await createMiniApp(context, token, appId)).id
    for (const version of ['1.0.0', '1.1.0']) {
      const res = await upload(context, token, appId, uploadForm(appId, { version }))
      expect(res.status).toBe(201)
      versionIds[version] = res.body.id
    }
    expect((await context.call('POST', `/api/mini-apps/${miniAppId}/versions/${versionIds['1.0.0']}/publish`, { token, json: {} })).status).toBe(200)
  })

  afterAll(() => context.close())

  test('upload of a new version and of a replacement build', async () => {
    const scans = await scansDuring(context, async () => {
      expect((await upload(context, token, appId, uploadForm(appId, { version: '1.2.0' }))).status).toBe(201)
      expect((await upload(context, token, appId, uploadForm(appId, { version: '1.2.0', bundleIos: 'console.log("again")' }))).status).toBe(201)
    })
    expect(scans).toEqual([])
  })

  test('the workspace: first page, one version, the next page, filtered by status', async () => {
    const scans = await scansDuring(context, async () => {
      for (const query of ['', '?limit=1', '?limit=1&cursor=b3', '?status=PUBLISHED', '?status=DRAFT&limit=1', '?status=IN_REVIEW']) {
        expect((await context.call('GET', `/api/mini-apps/${miniAppId}/workspace${query}`, { token })).status).toBe(200)
      }
    })
    expect(scans).toEqual([])
  })

  test('a page filtered by status is found by status in the index, not by walking every version of the miniapp', async () => {
    const plans = await plansDuring(context, () => context.call('GET', `/api/mini-apps/${miniAppId}/workspace?status=PUBLISHED`, { token }))
    const page = plans.filter(({ sql }) => sql.includes('"versions"."status" = ?'))
    expect(page.length).toBe(1)
    expect(page[0]!.plan).toEqual(['SEARCH versions USING INDEX versions_mini_app_status_build (mini_app_id=? AND status=? AND build_number<?)'])
  })

  test('install info of a published version and of a draft, the release install and the update check', async () => {
    const links = (await context.call('GET', `/api/mini-apps/${miniAppId}/workspace`, { token })).body.accessLinks as { versionId: string; installUrl: string }[]
    const scans = await scansDuring(context, async () => {
      for (const version of ['1.0.0', '1.1.0']) {
        const url = new URL(links.find((link) => link.versionId === versionIds[version])!.installUrl)
        expect((await context.call('GET', url.pathname.replace(/^\/api/, '/api') + url.search)).status).toBe(200)
      }
      expect((await context.call('GET', `${access}/apps/${appId}/release/install`)).status).toBe(200)
      expect((await context.call('GET', `${access}/apps/${appId}/update?platform=ios&currentVersion=0.9.0&deviceId=plans-1`)).status).toBe(200)
    })
    expect(scans).toEqual([])
  })

  test('delete of a draft', async () => {
    const scans = await scansDuring(context, async () => {
      expect((await context.call('DELETE', `/api/mini-apps/${miniAppId}/versions/${versionIds['1.1.0']}`, { token })).status).toBe(200)
    })
    expect(scans).toEqual([])
  })

  test("the administrators' user list walks users_created_at in order, and its next page starts in it", async () => {
    const admin = await createTestUser(context, { role: 'ADMIN' })
    for (let index = 0; index < 3; index++) await createTestUser(context)
    const first = await plansDuring(context, () => context.call('GET', '/api/admin/users?userLimit=2', { token: admin.token }))
    const cursor = (await context.call('GET', '/api/admin/users?userLimit=2', { token: admin.token })).body.usersNextCursor
    expect(cursor).toEqual(expect.any(String))
    const next = await plansDuring(context, () => context.call('GET', `/api/admin/users?userLimit=2&userCursor=${cursor}`, { token: admin.token }))
    const usersPage = (plans: { sql: string; plan: string[] }[]) => plans.filter(({ sql }) => /from "users"/.test(sql) && /order by "users"."created_at"/.test(sql)).map(({ plan }) => plan)
    // an ordered walk that stops at the page's limit, not a read and sort of every user
    expect(usersPage(first)).toEqual([['SCAN users USING INDEX users_created_at']])
    expect(usersPage(next)).toEqual([['SEARCH users USING INDEX users_created_at ((created_at,id)>(?,?))']])
  })

  test("the audit log's pages walk audit_logs_created_at_id, newest first, and an older page starts in it", async () => {
    const admin = await createTestUser(context, { role: 'ADMIN' })
    const newest = (await context.call('GET', '/api/admin/users?auditLimit=2', { token: admin.token })).body.auditLogs.at(-1) as { createdAt: string; id: string }
    const first = await plansDuring(context, () => context.call('GET', '/api/admin/users?auditLimit=2', { token: admin.token }))
    const older = await plansDuring(context, () => context.call('GET', `/api/admin/users?auditLimit=2&auditBefore=${encodeURIComponent(newest.createdAt)}&auditBeforeId=${newest.id}`, { token: admin.token }))
    const auditPage = (plans: { sql: string; plan: string[] }[]) => plans.filter(({ sql }) => /from "audit_logs"/.test(sql)).map(({ plan }) => plan)
    expect(auditPage(first)).toEqual([['SCAN audit_logs USING INDEX audit_logs_created_at_id']])
    expect(auditPage(older)).toEqual([['SEARCH audit_logs USING INDEX audit_logs_created_at_id ((created_at,id)<(?,?))']])
  })

  test('a statement that reads a whole table is caught (the check itself works)', async () => {
    const scans = await scansDuring(context, async () => {
      context.dataDir.db.$client.query('SELECT count(*) FROM versions WHERE changelog IS NULL').get()
    })
    expect(scans.map((found) => found.scan)).toEqual(['SCAN versions'])
  })
})
