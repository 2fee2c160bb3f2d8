// What the text adds after a refusal (the command that lists what exists, the scopes a command takes) is in --json's error too, as `hint`: the CLI against the real app on a temp data directory.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { generateKeyPairSync } from 'node:crypto'
import { rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { jsonDocument, runCli } from '../cli/test-run'
import { createTestContext, tempDir, type TestContext } from '../test-support'
import { createMiniApp, createTestUser, upload, uploadForm, type TestUser } from '../test-fixtures'
import { pushBuildFolder } from './test-push'

let context: TestContext
let server: ReturnType<typeof Bun.serve>
let owner: TestUser
let miniAppId: string
const root = tempDir('miniship-json-hints-')
const env = (token = owner.token) => ({ MINISHIP_TOKEN: token, MINISHIP_SERVER: `http://127.0.0.1:${server.port}` })

beforeAll(async () => {
  context = createTestContext()
  server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: (request) => context.app.handle(request) })
  owner = await createTestUser(context)
  miniAppId = (await createMiniApp(context, owner.token, 'com.example.hints')).id
})
afterAll(() => {
  server.stop(true)
  context.close()
  rmSync(root, { recursive: true, force: true })
})

/** The --json error document, and the text run's stderr: the hint is what the text says after the message. */
async function refusal(args: string[], environment = env()) {
  const json = await runCli([...args, '--json'], { env: environment })
  const text = await runCli(args, { env: environment })
  expect(json.exitCode).toBe(1)
  const error = (jsonDocument(json) as { error: { code: string; hint?: string } }).error
  expect(error.hint).toBeString()
  expect(text.stderr.trim()).toEndWith(`; ${error.hint}`)
  return error
}

test('an unknown miniapp, version, channel or webhook: --json names where to look, as the text does', async () => {
  // the message is the text's own words
  expect(await refusal(['status', 'com.example.nope'])).toMatchObject({ code: 'MINI_APP_NOT_FOUND', message: expect.stringMatching(/^no miniapp com\.example\.nope that you can see on http:\/\/127\.0\.0\.1:\d+\/api$/), hint: 'miniship apps lists them' })
  expect(await refusal(['publish', 'com.example.hints', '9.9.9'])).toMatchObject({ code: 'VERSION_NOT_FOUND', hint: 'miniship versions ls com.example.hints lists them' })
  expect(await refusal(['channels', 'rm', 'nope', '--app', 'com.example.hints'])).toMatchObject({ code: 'CHANNEL_NOT_FOUND', hint: 'miniship channels ls --app com.example.hints lists them' })
  expect(await refusal(['webhooks', 'rm', '01a21eff-0ed2-75bb-89fa-cc465aa3154d', '--app', 'com.example.hints'])).toMatchObject({ code: 'WEBHOOK_NOT_FOUND', hint: 'miniship webhooks ls --app com.example.hints lists its webhooks' })
})

test('push to a channel the app lacks: --json says how to create it, as the text does', async () => {
  const build = pushBuildFolder(root, 'channel')
  expect(await refusal(['push', build, '--app', 'com.example.hints', '--version', '1.0.0', '--channel', 'nightly'])).toMatchObject({
    code: 'CHANNEL_NOT_FOUND',
    hint: 'create it first: miniship channels create nightly --app com.example.hints',
  })
})

test('sign and push with a key the app does not trust, then with a revoked one: --json says what to do, as the text does', async () => {
  const pair = generateKeyPairSync('ed25519')
  const publicKey = Buffer.from(pair.publicKey.export({ format: 'jwk' }).x!, 'base64url').toString('base64')
  const keyFile = join(root, 'release.pem')
  writeFileSync(keyFile, pair.privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 })
  expect((await upload(context, owner.token, 'com.example.hints', uploadForm('com.example.hints', { version: '2.0.0' }))).status).toBe(201)
  const build = pushBuildFolder(root, 'signed')
  const sign = ['sign', '2.0.0', '--app', 'com.example.hints', '--sign-key', keyFile]
  const push = ['push', build, '--app', 'com.example.hints', '--version', '2.1.0', '--sign-key', keyFile]
  const trustIt = `trust it first: miniship keys add --app com.example.hints ${publicKey} --name NAME`
  expect(await refusal(sign)).toMatchObject({ code: 'SIGNING_KEY_UNKNOWN', hint: trustIt })
  expect(await refusal(push)).toMatchObject({ code: 'SIGNING_KEY_UNKNOWN', hint: trustIt })
  const key = (await context.call('POST', `/api/mini-apps/${miniAppId}/signing-keys`, { token: owner.token, json: { name: 'old laptop', publicKey } })).body
  expect((await context.call('DELETE', `/api/mini-apps/${miniAppId}/signing-keys/${key.keyId}`, { token: owner.token })).status).toBe(200)
  const newKey = `${keyFile} holds a revoked key: miniship keys generate makes a new one`
  expect(await refusal(sign)).toMatchObject({ code: 'SIGNING_KEY_REVOKED', hint: newKey })
  expect(await refusal(push)).toMatchObject({ code: 'SIGNING_KEY_REVOKED', hint: newKey })
})

test('a push over the upload limit, refused before it is sent: --json says who raises the limit, as the text does', async () => {
  const small = createTestContext({ uploadLimitBytes: 1024 })
  const smallServer = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: (request) => small.app.handle(request) })
  try {
    const smallOwner = await createTestUser(small)
    await createMiniApp(small, smallOwner.token, 'com.example.hints')
    const build = pushBuildFolder(root, 'big')
    writeFileSync(join(build, 'main.ios.jsbundle'), 'x'.repeat(4096))
    const refused = await refusal(['push', build, '--app', 'com.example.hints', '--version', '3.0.0'], { MINISHIP_TOKEN: smallOwner.token, MINISHIP_SERVER: `http://127.0.0.1:${smallServer.port}` })
    expect(refused).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', hint: 'an operator raises the limit with --upload-limit-mb (env MINISHIP_UPLOAD_LIMIT_MB)' })
  } finally {
    smallServer.stop(true)
    small.close()
  }
})
