// `--app <appId>` on every command that acts on one miniapp (status, publish, rollback, rollout, as versions ls): the same
// requests and output as the app id given as the first word, the same help line, and the same usage errors before any request.
import { afterAll, beforeEach, describe, expect, test } from 'bun:test'
import { jsonDocument, runCli } from '../cli/test-run'

const released = { versionId: 'v-1', version: '1.0.0', rolloutPercent: 100, paused: false, hostVersionRange: null, mandatory: false, releasedAt: '2026-11-22T10:00:00.000Z' }
const stable = { name: 'stable', state: 'complete', release: released, previousRelease: null }
let requests: string[] = []
beforeEach(() => {
  requests = []
})

const server = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  fetch(request) {
    const path = new URL(request.url).pathname
    requests.push(`${request.method} ${path}`)
    if (path === '/api/mini-apps') return Response.json([{ id: 'app-1', appId: 'com.example.shop', name: 'Shop', currentExperienceVersionId: null, currentReviewVersionId: null, currentReleaseVersionId: 'v-1' }])
    if (path === '/api/mini-apps/app-1/workspace') {
      return Response.json({
        miniApp: { id: 'app-1', appId: 'com.example.shop', name: 'Shop', currentExperienceVersionId: null, currentReviewVersionId: null, currentReleaseVersionId: 'v-1' },
        versions: [
          { id: 'v-2', version: '1.1.0', buildNumber: 2, status: 'DRAFT', channel: 'stable' },
          { id: 'v-1', version: '1.0.0', buildNumber: 1, status: 'PUBLISHED', channel: 'stable' },
        ],
        channels: [stable],
        releaseHistory: [],
        nextCursor: null,
      })
    }
    if (path === '/api/mini-apps/app-1/versions/v-2/publish') return Response.json({ id: 'v-2', version: '1.1.0', buildNumber: 2, status: 'PUBLISHED', channel: 'stable' })
    if (path === '/api/mini-apps/app-1/rollback') return Response.json({ miniApp: { id: 'app-1', appId: 'com.example.shop' }, version: { id: 'v-1', version: '1.0.0', buildNumber: 1, status: 'PUBLISHED', channel: 'stable' } })
    if (path === '/api/mini-apps/app-1/channels') return Response.json({ channels: [stable] })
    if (path === '/api/mini-apps/app-1/channels/stable/rollout') return Response.json({ ...stable, state: 'paused', release: { ...released, paused: true } })
    return Response.json({ statusCode: 404, error: 'Not Found', code: 'NOT_FOUND', message: path }, { status: 404 })
  },
})
afterAll(() => server.stop(true))
const cli = (args: string[]) => runCli(args, { env: { MINISHIP_TOKEN: 'msk_test', MINISHIP_SERVER: `http://127.0.0.1:${server.port}` } })

/** each command with the app id as its first word, and the same with --app */
const table: [string, string[], string[]][] = [
  ['status', ['status', 'com.example.shop'], ['status', '--app', 'com.example.shop']],
  ['publish', ['publish', 'com.example.shop', '1.1.0'], ['publish', '--app', 'com.example.shop', '1.1.0']],
  ['rollback', ['rollback', 'com.example.shop', '1.0.0'], ['rollback', '1.0.0', '--app', 'com.example.shop']],
  ['rollout', ['rollout', 'com.example.shop', '--pause'], ['rollout', '--pause', '--app', 'com.example.shop']],
]

describe('--app names the app, as the first word does: same requests, same output', () => {
  for (const [name, positional, option] of table) {
    test(name, async () => {
      const byWord = await cli(positional)
      const wordRequests = requests
      requests = []
      const byOption = await cli(option)
      expect(byOption.stderr).toBe('')
      expect(byOption.exitCode).toBe(0)
      expect(byOption.stdout).toBe(byWord.stdout)
      expect(requests).toEqual(wordRequests)
      expect(requests.length).toBeGreaterThan(1)
      // the word and --app may both be given when they agree
      expect((await cli([...positional, '--app', 'com.example.shop'])).exitCode).toBe(0)
    })
  }
})

describe('usage errors (exit 2, code USAGE) before any request', () => {
  const cases: [string, string[], string][] = [
    ['two different app ids', ['publish', 'com.example.shop', '1.1.0', '--app', 'com.example.other'], 'two app ids: com.example.shop and --app com.example.other; give one'],
    ['two different app ids (rollout)', ['rollout', 'com.example.shop', '--pause', '--app', 'com.example.other'], 'two app ids'],
    ['no app at all', ['status'], "missing required argument 'appId' (or --app <appId>)"],
    ['no version after --app', ['rollback', '--app', 'com.example.shop'], "missing required argument 'version'"],
    ['no version after the app id', ['publish', 'com.example.shop'], "missing required argument 'version'"],
    ['one word too many', ['publish', 'com.example.shop', '1.1.0', 'extra'], 'too many arguments'],
  ]
  for (const [what, args, message] of cases) {
    test(what, async () => {
      const run = await cli([...args, '--json'])
      expect(run.exitCode).toBe(2)
      expect(jsonDocument(run)).toEqual({ error: { code: 'USAGE', message: expect.stringContaining(message) } })
      expect(run.stderr).toContain(message)
      expect(requests).toEqual([])
    })
  }
})

test('--help words the app id and --app as versions ls does, and shows the version as required', async () => {
  const helps = await Promise.all([['versions', 'ls'], ['status'], ['publish'], ['rollback'], ['rollout']].map(async (command) => (await runCli([...command, '--help'], { env: { COLUMNS: '200' } })).stdout))
  for (const help of helps) {
    expect(help).toMatch(/\n {2}appId +the app id \(or --app\)\n/)
    expect(help).toMatch(/\n {2}--app <appId> +the app id, e\.g\. com\.example\.shop\n/)
  }
  expect(helps.map((help) => help.split('\n')[0])).toEqual([
    'Usage: miniship versions ls [options] [appId]',
    'Usage: miniship status [options] [appId]',
    'Usage: miniship publish [options] [appId] <version>',
    'Usage: miniship rollback [options] [appId] <version>',
    'Usage: miniship rollout [options] [appId]',
  ])
})
