// `miniship publish` against a stand-in server: the line it prints writes the percent as the console and `status` do ("10 %").
import { afterAll, expect, test } from 'bun:test'
import { runCli } from '../cli/test-run'

const server = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  async fetch(request) {
    const path = new URL(request.url).pathname
    if (path === '/api/mini-apps') return Response.json([{ id: 'app-1', appId: 'com.example.shop', name: 'Shop', currentExperienceVersionId: null, currentReviewVersionId: null, currentReleaseVersionId: 'v-1' }])
    if (path === '/api/mini-apps/app-1/workspace') return Response.json({ miniApp: { id: 'app-1', appId: 'com.example.shop' }, versions: [{ id: 'v-2', version: '1.1.0', buildNumber: 2, status: 'DRAFT', channel: 'stable' }], nextCursor: null })
    if (path === '/api/mini-apps/app-1/versions/v-2/publish' && request.method === 'POST') return Response.json({ id: 'v-2', version: '1.1.0', buildNumber: 2, status: 'PUBLISHED', channel: 'stable' })
    return Response.json({ statusCode: 404, error: 'Not Found', code: 'NOT_FOUND', message: path }, { status: 404 })
  },
})
afterAll(() => server.stop(true))
const publish = (...flags: string[]) => runCli(['publish', 'com.example.shop', '1.1.0', ...flags], { env: { MINISHIP_TOKEN: 'msk_test', MINISHIP_SERVER: `http://127.0.0.1:${server.port}` } })

test('the rollout is written "10 %", as in the console, status and rollout', async () => {
  const run = await publish('--rollout', '10', '--mandatory')
  expect(run.exitCode).toBe(0)
  expect(run.stdout).toBe('Published com.example.shop 1.1.0 to stable (10 %, mandatory).\n')
})

test('without --rollout: 100 %', async () => {
  const run = await publish()
  expect(run.exitCode).toBe(0)
  expect(run.stdout).toBe('Published com.example.shop 1.1.0 to stable (100 %).\n')
})
