// `miniship push --publish --json` against a stand-in server: what a CI script reads when the upload is taken and the publish refused.
import { afterAll, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { jsonDocument, runCli } from '../cli/test-run'
import { tempDir } from '../test-support'
import { pushBuildFolder, standInServer } from './test-push'

const root = tempDir('miniship-push-')
const uploaded = { id: 'v-1', miniAppId: 'app-1', version: '1.0.0', buildNumber: 7, status: 'DRAFT', releaseType: 'RELEASE', createdAt: '2026-11-22T10:00:00.000Z', publishedAt: null, warnings: [] }
let uploads = 0
const server = standInServer((path, request) => {
  if (path === '/api/auth/me' && request.headers.get('authorization') === 'Bearer msk_readonly') {
    return Response.json({ id: 'u-1', email: 'ci@example.com', displayName: 'CI', role: 'USER', apiKey: { name: 'ci-read', prefix: 'msk_read', scopes: ['read'], miniAppIds: null } })
  }
  if (path === '/api/mini-apps/by-app-id/com.example.shop/versions/upload') {
    uploads++
    return Response.json(uploaded, { status: 201 })
  }
  if (path === '/api/mini-apps/app-1/versions/v-1/publish') return Response.json({ statusCode: 409, error: 'Conflict', code: 'ROLLOUT_PAUSED', message: 'The channel is paused' }, { status: 409 })
  return undefined
})
const buildFolder = (name: string) => pushBuildFolder(root, name)

afterAll(() => {
  server.stop(true)
  rmSync(root, { recursive: true, force: true })
})

test('the publish refused after the upload: the error, and what was uploaded so the script can publish it', async () => {
  const dir = buildFolder('build')
  const run = await runCli(['push', dir, '--app', 'com.example.shop', '--version', '1.0.0', '--publish', '--json', '--server', `http://127.0.0.1:${server.port}`], { env: { MINISHIP_TOKEN: 'msk_test' } })
  expect(run.exitCode).toBe(1)
  expect(jsonDocument(run)).toEqual({
    error: { statusCode: 409, code: 'ROLLOUT_PAUSED', message: 'The channel is paused' },
    uploaded: { id: 'v-1', version: '1.0.0', buildNumber: 7, status: 'DRAFT', warnings: [] },
  })
  expect(run.stderr).toContain('com.example.shop 1.0.0 was uploaded (DRAFT); publish it: miniship publish com.example.shop 1.0.0')
})

test('an API key without the upload scope is refused before a byte of the build is sent (SCOPE_REQUIRED, exit 1)', async () => {
  const dir = buildFolder('build-scope')
  const before = uploads
  const run = await runCli(['push', dir, '--app', 'com.example.shop', '--version', '1.0.1', '--json', '--server', `http://127.0.0.1:${server.port}`], { env: { MINISHIP_TOKEN: 'msk_readonly' } })
  expect(run.exitCode).toBe(1)
  expect(jsonDocument(run)).toEqual({ error: { statusCode: 403, code: 'SCOPE_REQUIRED', message: 'This needs an API key with the "upload" scope; key msk_read… has "read"', hint: 'miniship push needs an API key with the "upload" scope; nothing was sent' } })
  expect(uploads).toBe(before)
  // worded as the server's refusal of the upload would be
  expect(run.stderr).toContain('(SCOPE_REQUIRED, HTTP 403); miniship push needs an API key with the "upload" scope; nothing was sent')
})
