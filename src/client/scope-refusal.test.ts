// A key refused for a scope it lacks is told so in one wording, naming the scope needed, whether the server refuses
// the request or `push` refuses it before sending the build: against the real app on a temp data directory.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { generateKeyPairSync } from 'node:crypto'
import { rmSync } from 'node:fs'
import { jsonDocument, runCli } from '../cli/test-run'
import { createTestContext, tempDir, type TestContext } from '../test-support'
import { createMiniApp, createTestUser, uploadForm } from '../test-fixtures'
import { pushBuildFolder } from './test-push'

let context: TestContext
let server: ReturnType<typeof Bun.serve>
let readKey: { key: string; prefix: string }
const root = tempDir('miniship-scope-')

beforeAll(async () => {
  context = createTestContext()
  server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: (request) => context.app.handle(request) })
  const owner = await createTestUser(context)
  await createMiniApp(context, owner.token, 'com.example.shop')
  const created = await context.call('POST', '/api/auth/api-keys', { token: owner.token, json: { name: 'ci-read', scopes: ['read'] } })
  expect(created.status).toBe(201)
  readKey = created.body
})
afterAll(() => {
  server.stop(true)
  context.close()
  rmSync(root, { recursive: true, force: true })
})

test('push refuses a key without "upload" in the words the server refuses the upload with', async () => {
  const refused = await context.call('POST', '/api/mini-apps/by-app-id/com.example.shop/versions/upload', { token: readKey.key, body: uploadForm('com.example.shop') })
  expect([refused.status, refused.body.code]).toEqual([403, 'SCOPE_REQUIRED'])
  expect(refused.body.message).toBe(`This needs an API key with the "upload" scope; key ${readKey.prefix}… has "read"`)

  const run = await runCli(['push', pushBuildFolder(root, 'build'), '--app', 'com.example.shop', '--version', '1.0.0', '--json'], { env: { MINISHIP_TOKEN: readKey.key, MINISHIP_SERVER: `http://127.0.0.1:${server.port}` } })
  expect(run.exitCode).toBe(1)
  expect(jsonDocument(run)).toEqual({ error: { statusCode: 403, code: 'SCOPE_REQUIRED', message: refused.body.message, hint: 'miniship push needs an API key with the "upload" scope; nothing was sent' } })
  expect(run.stderr).toContain(`${refused.body.message} (SCOPE_REQUIRED, HTTP 403); miniship push needs an API key with the "upload" scope; nothing was sent`)
})

test('a request the server refuses for a scope reaches the CLI in those words (rollout --pause: "release")', async () => {
  const run = await runCli(['rollout', 'com.example.shop', '--pause', '--json'], { env: { MINISHIP_TOKEN: readKey.key, MINISHIP_SERVER: `http://127.0.0.1:${server.port}` } })
  expect(run.exitCode).toBe(1)
  // the server's words, and what the text adds: every scope the command takes
  expect(jsonDocument(run)).toEqual({ error: { statusCode: 403, code: 'SCOPE_REQUIRED', message: `This needs an API key with the "release" scope; key ${readKey.prefix}… has "read"`, hint: 'miniship rollout needs an API key with the "read" and "release" scopes' } })
})

test('what no API key may do (keys add), with MINISHIP_TOKEN holding a key: says to unset it, since a saved sign-in is not used while it is set', async () => {
  const publicKey = Buffer.from(generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }).x!, 'base64url').toString('base64')
  const run = await runCli(['keys', 'add', '--app', 'com.example.shop', publicKey, '--name', 'laptop', '--json'], { env: { MINISHIP_TOKEN: readKey.key, MINISHIP_SERVER: `http://127.0.0.1:${server.port}` } })
  expect(run.exitCode).toBe(1)
  // it said only "sign in with an account (miniship login)", which changes nothing while MINISHIP_TOKEN is set
  expect(jsonDocument(run)).toMatchObject({
    error: { code: 'SCOPE_REQUIRED', message: 'API keys cannot do this (no scope allows it); sign in with an account (miniship login)', hint: 'MINISHIP_TOKEN holds an API key and is used before a saved sign-in: unset it, and miniship login (if you have not) to act as your account' },
  })
  const text = await runCli(['keys', 'add', '--app', 'com.example.shop', publicKey, '--name', 'laptop'], { env: { MINISHIP_TOKEN: readKey.key, MINISHIP_SERVER: `http://127.0.0.1:${server.port}` } })
  expect(text.stderr).toContain('(SCOPE_REQUIRED, HTTP 403); MINISHIP_TOKEN holds an API key and is used before a saved sign-in: unset it')
})
