// `miniship rollout --resume` against a stand-in server: what it says, and whether it asks the server to change anything, for each state.
import { afterAll, beforeEach, expect, test } from 'bun:test'
import { jsonDocument, runCli } from '../cli/test-run'

const release = (rolloutPercent: number, paused = false) => ({ versionId: 'v-2', version: '1.1.0', rolloutPercent, paused, hostVersionRange: null, mandatory: false, releasedAt: '2026-11-22T10:00:00.000Z' })
const previousRelease = { ...release(100), versionId: 'v-1', version: '1.0.0' }
let stable: { name: string; state: string; release: ReturnType<typeof release>; previousRelease: typeof previousRelease }
let patches: unknown[] = []
beforeEach(() => {
  patches = []
})

const server = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  async fetch(request) {
    const path = new URL(request.url).pathname
    if (path === '/api/mini-apps') return Response.json([{ id: 'app-1', appId: 'com.example.shop', name: 'Shop', currentExperienceVersionId: null, currentReviewVersionId: null, currentReleaseVersionId: 'v-2' }])
    if (path === '/api/mini-apps/app-1/channels') return Response.json({ channels: [stable] })
    if (path === '/api/mini-apps/app-1/channels/stable/rollout' && request.method === 'PATCH') {
      patches.push(await request.json())
      stable = { ...stable, state: 'rolling-out', release: release(stable.release.rolloutPercent) }
      return Response.json(stable)
    }
    return Response.json({ statusCode: 404, error: 'Not Found', code: 'NOT_FOUND', message: path }, { status: 404 })
  },
})
afterAll(() => server.stop(true))
const resume = (...more: string[]) => runCli(['rollout', 'com.example.shop', '--resume', ...more], { env: { MINISHIP_TOKEN: 'msk_test', MINISHIP_SERVER: `http://127.0.0.1:${server.port}` } })

test('a paused release is resumed', async () => {
  stable = { name: 'stable', state: 'paused', release: release(30, true), previousRelease }
  const run = await resume()
  expect(run.exitCode).toBe(0)
  expect(run.stdout).toBe('com.example.shop stable: 1.1.0 rolling-out 30 %.\n')
  expect(patches).toEqual([{ paused: false }])
})

test('a release that is not paused: says there is nothing to resume, exit 0, and asks for no change', async () => {
  stable = { name: 'stable', state: 'rolling-out', release: release(10), previousRelease }
  const run = await resume()
  expect(run.exitCode).toBe(0)
  expect(run.stdout).toBe('com.example.shop stable: 1.1.0 is not paused (rolling-out 10 %); nothing to resume.\n')
  expect(jsonDocument(await resume('--json'))).toMatchObject({ name: 'stable', state: 'rolling-out', resumed: false, changed: false, warnings: [] })
  expect(patches).toEqual([])
})

test('a reverted release: refused like --pause of one (exit 1, ROLLOUT_REVERTED)', async () => {
  stable = { name: 'stable', state: 'reverted', release: release(0), previousRelease }
  const run = await resume('--json')
  expect(run.exitCode).toBe(1)
  expect(jsonDocument(run)).toEqual({ error: { code: 'ROLLOUT_REVERTED', message: expect.stringContaining('1.1.0 is reverted (0 %), not paused: nothing to resume') } })
  expect(patches).toEqual([])
})

const pause = (...more: string[]) => runCli(['rollout', 'com.example.shop', '--pause', ...more], { env: { MINISHIP_TOKEN: 'msk_test', MINISHIP_SERVER: `http://127.0.0.1:${server.port}` } })

test('--pause of a release already paused (by the release guard): says who paused it and why, that nothing changed and the --reason given was not recorded; asks for no change', async () => {
  // the server keeps the first pause's reason: a second pause changes nothing, so "paused 30 %." alone read as if the reason was kept
  stable = { name: 'stable', state: 'paused', release: { ...release(30, true), pausedBy: 'release-guard', pauseReason: null } as ReturnType<typeof release>, previousRelease }
  const run = await pause('--reason', 'crash on Android 9')
  expect(run.exitCode).toBe(0)
  expect(run.stdout).toBe('com.example.shop stable: 1.1.0 is already paused (paused 30 %) by release-guard; nothing changed, and --reason was not recorded.\n')
  expect(jsonDocument(await pause('--json'))).toMatchObject({ name: 'stable', state: 'paused', paused: false, changed: false, warnings: [] })
  expect(patches).toEqual([])
})

test('--pause of a release rolling out pauses it', async () => {
  stable = { name: 'stable', state: 'rolling-out', release: release(30), previousRelease }
  const run = await pause('--reason', 'suspect', '--json')
  expect(run.exitCode).toBe(0)
  expect(jsonDocument(run)).toMatchObject({ name: 'stable', paused: true, changed: true })
  expect(patches).toEqual([{ paused: true, reason: 'suspect' }])
})

test('a reverted release, in text: the refusal names its code, as every refusal does', async () => {
  stable = { name: 'stable', state: 'reverted', release: release(0), previousRelease }
  const run = await resume()
  expect(run.exitCode).toBe(1)
  expect(run.stderr).toContain('roll it out again with --percent N (ROLLOUT_REVERTED)')
})

const rollout = (...more: string[]) => runCli(['rollout', 'com.example.shop', ...more], { env: { MINISHIP_TOKEN: 'msk_test', MINISHIP_SERVER: `http://127.0.0.1:${server.port}` } })

test('--percent N where the release already is at N, or --revert of a reverted one: says nothing changed (as --pause and --resume do) and asks for no change; a real change says changed', async () => {
  // it printed "1.1.0 rolling-out 50 %." as after a real change
  stable = { name: 'stable', state: 'rolling-out', release: release(50), previousRelease }
  const same = await rollout('--percent', '50')
  expect(same.exitCode).toBe(0)
  expect(same.stdout).toBe('com.example.shop stable: 1.1.0 is already rolling-out 50 %; nothing changed.\n')
  expect(jsonDocument(await rollout('--percent', '50', '--json'))).toMatchObject({ name: 'stable', changed: false, warnings: [] })
  stable = { name: 'stable', state: 'reverted', release: release(0), previousRelease }
  expect((await rollout('--revert')).stdout).toBe('com.example.shop stable: 1.1.0 is already reverted 0 %; nothing changed.\n')
  expect(patches).toEqual([])
  // a paused release at that percent: the server answers (409 ROLLOUT_PAUSED: resume first)
  stable = { name: 'stable', state: 'paused', release: release(50, true), previousRelease }
  await rollout('--percent', '50')
  expect(patches).toEqual([{ rolloutPercent: 50 }])
  stable = { name: 'stable', state: 'rolling-out', release: release(50), previousRelease }
  expect(jsonDocument(await rollout('--percent', '60', '--json'))).toMatchObject({ name: 'stable', changed: true })
  expect(patches).toEqual([{ rolloutPercent: 50 }, { rolloutPercent: 60 }])
})
