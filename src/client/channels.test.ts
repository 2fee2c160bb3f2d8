// `miniship channels ls` and `miniship status` against a stand-in server: one channel in each state, described in the same words (decisions §13).
import { afterAll, expect, test } from 'bun:test'
import { runCli } from '../cli/test-run'

const release = (versionId: string, version: string, rolloutPercent: number, paused = false) => ({ versionId, version, rolloutPercent, paused, hostVersionRange: null, mandatory: false, releasedAt: '2026-11-22T10:00:00.000Z' })
const previous = release('v-1', '1.0.0', 100)
const channels = [
  { name: 'stable', state: 'reverted', release: release('v-2', '1.1.0', 0), previousRelease: previous },
  { name: 'beta', state: 'rolling-out', release: release('v-2', '1.1.0', 10), previousRelease: previous },
  { name: 'qa', state: 'paused', release: release('v-2', '1.1.0', 30, true), previousRelease: previous },
  { name: 'dev', state: 'complete', release: release('v-2', '1.1.0', 100), previousRelease: previous },
  { name: 'empty', state: null, release: null, previousRelease: null },
]
const miniApp = { id: 'app-1', appId: 'com.example.shop', name: 'Shop', currentExperienceVersionId: null, currentReviewVersionId: null, currentReleaseVersionId: 'v-2' }
const server = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  fetch(request) {
    const path = new URL(request.url).pathname
    if (path === '/api/mini-apps') return Response.json([miniApp])
    if (path === '/api/mini-apps/app-1/channels') return Response.json({ channels })
    if (path === '/api/mini-apps/app-1/workspace') return Response.json({ miniApp, versions: [], channels, nextCursor: null })
    if (request.method === 'DELETE' && path === '/api/mini-apps/app-1/channels/nope') return Response.json({ statusCode: 404, error: 'Not Found', code: 'CHANNEL_NOT_FOUND', message: 'There is no channel "nope"; create it first (channels are named like stable or beta-testers)' }, { status: 404 })
    return Response.json({ statusCode: 404, error: 'Not Found', code: 'NOT_FOUND', message: path }, { status: 404 })
  },
})
afterAll(() => server.stop(true))

test('channels ls says of every state what status (and the console) says', async () => {
  const options = { env: { MINISHIP_TOKEN: 'msk_test', MINISHIP_SERVER: `http://127.0.0.1:${server.port}` } }
  const [listed, status] = await Promise.all([runCli(['channels', 'ls', '--app', 'com.example.shop'], options), runCli(['status', 'com.example.shop'], options)])
  expect(listed.exitCode).toBe(0)
  expect(status.exitCode).toBe(0)
  const described = (text: string, name: string) => new RegExp(`^\\s*(?:channel )?${name}\\s+(.*)$`, 'm').exec(text)?.[1]
  for (const channel of channels) expect({ name: channel.name, words: described(listed.stdout, channel.name) }).toEqual({ name: channel.name, words: described(status.stdout, channel.name) })
  expect(described(listed.stdout, 'stable')).toBe('1.1.0 reverted 0 %. Every device gets 1.0.0, those on 1.1.0 too.')
  expect(listed.stdout).not.toContain('the others get 1.0.0\n')
})

test('channels create --help and docs/releasing.md state the server’s rule for a channel name (lower-case letters only)', async () => {
  const { channelNamePattern } = await import('../modules/channels/service')
  // the rule the words below describe; if the server's changes, so must they
  expect(channelNamePattern.source).toBe('^[a-z][a-z0-9-]{0,31}$')
  const help = (await runCli(['channels', 'create', '--help'])).stdout.replace(/\s+/g, ' ')
  expect(help).toContain('a lower-case letter, then lower-case letters, digits or "-", 32 characters at most')
  const { readFileSync } = await import('node:fs')
  const { join } = await import('node:path')
  const releasing = readFileSync(join(import.meta.dir, '..', '..', 'docs', 'releasing.md'), 'utf8').replace(/\s+/g, ' ')
  expect(releasing).toContain('a lower-case letter, then lower-case letters, digits or `-`, 32 characters at most')
})

test('channels rm of a channel the app does not have says there is nothing to remove and how to list them, not "create it first"', async () => {
  const options = { env: { MINISHIP_TOKEN: 'msk_test', MINISHIP_SERVER: `http://127.0.0.1:${server.port}` } }
  const run = await runCli(['channels', 'rm', 'nope', '--app', 'com.example.shop'], options)
  expect(run.exitCode).toBe(1)
  expect(run.stderr).not.toContain('create it first')
  expect(run.stderr).toContain('com.example.shop has no channel "nope" (CHANNEL_NOT_FOUND), so there is nothing to remove; miniship channels ls --app com.example.shop lists them')
  const json = await runCli(['channels', 'rm', 'nope', '--app', 'com.example.shop', '--json'], options)
  expect(json.exitCode).toBe(1)
  expect(JSON.parse(json.stdout)).toMatchObject({ error: { code: 'CHANNEL_NOT_FOUND', statusCode: 404 } })
})
