// Kept from the attack on the landed binary (issue 29): 20 release changes sent at once leave the channel, its history and the audit log telling the same story.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { createTestContext } from '../../test-support'
import { createMiniApp, createTestUser, upload, uploadForm, type TestUser } from '../../test-fixtures'

const context = createTestContext()
afterAll(() => context.close())
const appId = 'com.example.concurrent'
let owner: TestUser
let miniAppId: string
const ids: Record<string, string> = {}

beforeAll(async () => {
  owner = await createTestUser(context)
  miniAppId = (await createMiniApp(context, owner.token, appId)).id
  for (const version of ['1.0.0', '1.1.0', '1.2.0']) ids[version] = (await upload(context, owner.token, appId, uploadForm(appId, { version }))).body.id
  for (const [version, json] of [['1.0.0', {}], ['1.1.0', {}], ['1.2.0', { rolloutPercent: 10 }]] as const) {
    expect((await context.call('POST', `/api/mini-apps/${miniAppId}/versions/${ids[version]}/publish`, { token: owner.token, json })).status).toBe(200)
  }
})

test('20 concurrent rollout changes and rollbacks: every answer is one committed change, each audit entry follows the one before, and the channel ends as the last one says', async () => {
  const db = context.dataDir.db.$client
  const auditBefore = (db.query("SELECT count(*) AS n FROM audit_logs WHERE action IN ('channel.rollout', 'version.rollback')").get() as { n: number }).n
  const historyBefore = (db.query("SELECT count(*) AS n FROM release_history WHERE action IN ('ROLLOUT', 'ROLLBACK')").get() as { n: number }).n
  const changes = Array.from({ length: 20 }, (_, index) =>
    index % 7 === 6
      ? context.call('POST', `/api/mini-apps/${miniAppId}/rollback`, { token: owner.token, json: { targetVersionId: ids['1.1.0'], channel: 'stable' } })
      : context.call('PATCH', `/api/mini-apps/${miniAppId}/channels/stable/rollout`, { token: owner.token, json: { rolloutPercent: 5 * (index + 1) } }),
  )
  const answers = await Promise.all(changes)
  // a rollback may find nothing newer to roll back from, or a rollout nothing mid-way: a clean 409, never a 500
  for (const answer of answers) expect([200, 409]).toContain(answer.status)
  const committed = answers.filter((answer) => answer.status === 200).length
  expect(committed).toBeGreaterThan(10)

  const audit = db.query("SELECT action, metadata FROM audit_logs WHERE action IN ('channel.rollout', 'version.rollback') ORDER BY rowid").all() as { action: string; metadata: string }[]
  const history = db.query("SELECT action, version, rollout_percent AS percent FROM release_history WHERE action IN ('ROLLOUT', 'ROLLBACK') ORDER BY rowid").all() as { action: string; version: string; percent: number }[]
  expect(audit.length - auditBefore).toBe(committed)
  expect(history.length - historyBefore).toBe(committed)

  // each rollout entry's previous percent is what the entry before it left (no lost update)
  const entries = audit.slice(auditBefore).map((row) => ({ action: row.action, ...(JSON.parse(row.metadata) as { rolloutPercent?: number; previousPercent?: number; version?: string }) }))
  let percent: number | null = 10
  for (const entry of entries) {
    if (entry.action === 'channel.rollout') {
      if (percent !== null) expect(entry.previousPercent).toBe(percent)
      percent = entry.rolloutPercent!
    } else percent = null // a rollback makes another release the newest
  }
  const channels = await context.call('GET', `/api/mini-apps/${miniAppId}/channels`, { token: owner.token })
  const stable = channels.body.channels.find((channel: { name: string }) => channel.name === 'stable')
  const last = history.at(-1)!
  expect(stable.release.version).toBe(last.version)
  expect(stable.release.rolloutPercent).toBe(last.percent)
  // and what a device is answered agrees with the channel record
  const install = await context.call('GET', `/api/mini-apps/access/apps/${appId}/release/install`)
  if (last.percent === 100) expect(install.body.version).toBe(last.version)
})
