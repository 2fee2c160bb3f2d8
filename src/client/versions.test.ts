// `miniship versions ls` against a stand-in server: the app is named by --app, as channels ls, keys ls,
// webhooks ls and guard take it, or by the word after ls as before.
import { afterAll, expect, test } from 'bun:test'
import { runCli } from '../cli/test-run'

const server = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  fetch(request) {
    const path = new URL(request.url).pathname
    if (path === '/api/mini-apps') return Response.json([{ id: 'app-1', appId: 'com.example.shop', name: 'Shop', currentExperienceVersionId: null, currentReviewVersionId: null, currentReleaseVersionId: null }])
    if (path === '/api/mini-apps/app-1/workspace') return Response.json({ miniApp: { id: 'app-1', appId: 'com.example.shop' }, versions: [{ id: 'v-1', version: '1.0.0', buildNumber: 1, status: 'DRAFT', channel: 'stable' }], channels: [], releaseHistory: [], nextCursor: null })
    return Response.json({ statusCode: 404, error: 'Not Found', code: 'NOT_FOUND', message: path }, { status: 404 })
  },
})
afterAll(() => server.stop(true))
const versions = (...args: string[]) => runCli(['versions', 'ls', ...args], { env: { MINISHIP_TOKEN: 'msk_test', MINISHIP_SERVER: `http://127.0.0.1:${server.port}` } })

test('--app names the app, like the other commands that list an app’s things', async () => {
  const run = await versions('--app', 'com.example.shop')
  expect(run.stderr).toBe('')
  expect(run.exitCode).toBe(0)
  expect(run.stdout).toStartWith('1.0.0 ')
})

test('the app id after ls still works, and says the same', async () => {
  const [positional, option] = await Promise.all([versions('com.example.shop'), versions('--app', 'com.example.shop')])
  expect(positional.exitCode).toBe(0)
  expect(positional.stdout).toBe(option.stdout)
  expect((await versions('com.example.shop', '--app', 'com.example.shop')).exitCode).toBe(0)
})

test('no app, or two different ones, is a usage error (exit 2) before any request', async () => {
  const none = await versions('--json')
  expect(none.exitCode).toBe(2)
  expect(JSON.parse(none.stdout).error.code).toBe('USAGE')
  expect(none.stderr).toContain("missing required argument 'appId' (or --app <appId>)")
  const two = await versions('com.example.shop', '--app', 'com.example.other')
  expect(two.exitCode).toBe(2)
  expect(two.stderr).toContain('two app ids')
})
