// The guard against the fleet simulator (scripts/simulate-fleet.ts) over real HTTP: a release failing on 20 % of devices is paused, one failing on 2 % is not.
import { describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { createMiniApp, servedTestApp, upload, uploadForm } from '../../test-fixtures'

const simulator = join(import.meta.dir, '../../../scripts/simulate-fleet.ts')

const served = servedTestApp()

/** 1.0.0 complete, 1.1.0 rolling out to 50 % with the guard on at its defaults (5 %, 20 devices). */
async function rollingOut(appId: string): Promise<string> {
  const miniAppId = (await createMiniApp(served.context, served.owner.token, appId)).id
  const ids: string[] = []
  for (const version of ['1.0.0', '1.1.0']) ids.push((await upload(served.context, served.owner.token, appId, uploadForm(appId, { version }))).body.id)
  await served.context.call('POST', `/api/mini-apps/${miniAppId}/versions/${ids[0]}/publish`, { token: served.owner.token, json: {} })
  expect((await served.context.call('PATCH', `/api/mini-apps/${miniAppId}/channels/stable`, { token: served.owner.token, json: { guard: { enabled: true } } })).status).toBe(200)
  await served.context.call('POST', `/api/mini-apps/${miniAppId}/versions/${ids[1]}/publish`, { token: served.owner.token, json: { rolloutPercent: 50 } })
  return miniAppId
}

/** The simulator's devices run the update client: a failing one crash-loops the new version and reports rolled_back. */
async function simulate(appId: string, failRate: number): Promise<{ installed: number; rolledBack: number; eventsPending: number }> {
  const child = Bun.spawn(
    [process.execPath, simulator, '--server', served.url, '--app', appId, '--devices', '600', '--rounds', '4', '--interval', '0', '--check-share', '1', '--fail-rate', String(failRate), '--json'],
    { stdout: 'pipe', stderr: 'pipe' },
  )
  const [out, err, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited])
  if (code !== 0) throw new Error(`simulate-fleet exited ${code}: ${err}`)
  return JSON.parse(out.trim().split('\n').at(-1)!)
}

async function stable(miniAppId: string) {
  const res = await served.context.call('GET', `/api/mini-apps/${miniAppId}/channels`, { token: served.owner.token })
  return res.body.channels.find((channel: { name: string }) => channel.name === 'stable')
}

describe('the fleet simulator against the guard', () => {
  test('20 % of devices failing: paused by the release guard', async () => {
    const miniAppId = await rollingOut('com.example.fleet.bad')
    const run = await simulate('com.example.fleet.bad', 0.2)
    expect(run.rolledBack).toBeGreaterThan(20)
    expect(run.eventsPending).toBe(0)
    served.context.app.store.insights.flush()
    const channel = await stable(miniAppId)
    expect(channel).toMatchObject({ state: 'paused', release: { version: '1.1.0', pausedBy: 'release-guard' } })
    expect(channel.guard.trip.failureRate).toBeGreaterThan(0.1)
  }, 120_000)

  test('2 % of devices failing: still rolling out', async () => {
    const miniAppId = await rollingOut('com.example.fleet.good')
    const run = await simulate('com.example.fleet.good', 0.02)
    expect(run.installed).toBeGreaterThan(200)
    served.context.app.store.insights.flush()
    const channel = await stable(miniAppId)
    expect(channel).toMatchObject({ state: 'rolling-out', guard: { trip: null } })
    expect(channel.guard.lastCheck.totalDevices).toBeGreaterThan(200)
    expect(channel.guard.lastCheck.failureRate).toBeLessThan(0.05)
  }, 120_000)
})
