// `miniship keys revoke`: the CLI run as a user runs it, against the real app on a temp data directory.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { generateKeyPairSync } from 'node:crypto'
import { jsonDocument, runCli } from '../cli/test-run'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createTestContext, tempDir, type TestContext } from '../test-support'
import { createMiniApp, createTestUser, upload, uploadForm, type TestUser } from '../test-fixtures'
import { keyIdOf } from '../modules/signing/keys'

const appId = 'com.example.revoke'
let context: TestContext
let server: ReturnType<typeof Bun.serve>
let owner: TestUser
let miniAppId: string

beforeAll(async () => {
  context = createTestContext()
  owner = await createTestUser(context)
  miniAppId = (await createMiniApp(context, owner.token, appId)).id
  server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: (request) => context.app.handle(request) })
})
afterAll(() => {
  server.stop(true)
  context.close()
})

const cli = (args: string[]) => runCli(args, { env: { MINISHIP_TOKEN: owner.token, MINISHIP_SERVER: `http://127.0.0.1:${server.port}` } })

async function trustedKey(name: string): Promise<string> {
  const raw = Buffer.from(generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }).x!, 'base64url')
  expect((await context.call('POST', `/api/mini-apps/${miniAppId}/signing-keys`, { token: owner.token, json: { name, publicKey: raw.toString('base64') } })).status).toBe(201)
  return keyIdOf(raw)
}

describe('miniship keys revoke', () => {
  test('a key revoked already: says so and that nothing changed (as keys require and rollout --resume do), not "Revoked …" again; --json says changed', async () => {
    const keyId = await trustedKey('old laptop')
    const first = await cli(['keys', 'revoke', '--app', appId, keyId])
    expect(first.exitCode).toBe(0)
    expect(first.stdout).toStartWith(`Revoked ${keyId} ("old laptop") of ${appId} at `)
    const again = await cli(['keys', 'revoke', '--app', appId, keyId])
    expect(again.exitCode).toBe(0)
    expect(again.stdout).toStartWith(`${keyId} ("old laptop") of ${appId} was revoked already, at `)
    expect(again.stdout).toEndWith('; nothing changed.\n')
    const json = jsonDocument(await cli(['keys', 'revoke', '--app', appId, keyId, '--json']))
    expect(json).toMatchObject({ keyId, name: 'old laptop', changed: false })
    const other = await trustedKey('second')
    expect(jsonDocument(await cli(['keys', 'revoke', '--app', appId, other, '--json']))).toMatchObject({ keyId: other, changed: true })
  })
})

describe('miniship keys revoke of a key that signed what devices get now', () => {
  test('prints the server\'s LIVE_RELEASE_KEY_REVOKED warning on stderr, and in --json warnings', async () => {
    const pair = generateKeyPairSync('ed25519')
    const raw = Buffer.from(pair.publicKey.export({ format: 'jwk' }).x!, 'base64url')
    expect((await context.call('POST', `/api/mini-apps/${miniAppId}/signing-keys`, { token: owner.token, json: { name: 'release laptop', publicKey: raw.toString('base64') } })).status).toBe(201)
    const keyFile = join(tempDir('miniship-revoke-'), 'release.pem')
    writeFileSync(keyFile, pair.privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 })
    const uploaded = await upload(context, owner.token, appId, uploadForm(appId, { version: '3.0.0' }))
    expect(uploaded.status).toBe(201)
    expect((await cli(['sign', '3.0.0', '--app', appId, '--sign-key', keyFile])).exitCode).toBe(0)
    expect((await context.call('POST', `/api/mini-apps/${miniAppId}/versions/${uploaded.body.id}/publish`, { token: owner.token, json: {} })).status).toBe(200)
    const run = await cli(['keys', 'revoke', '--app', appId, keyIdOf(raw), '--json'])
    expect(run.exitCode).toBe(0)
    const message = `3.0.0 (live on stable, complete 100 %) was signed by this key: host apps that no longer trust it will refuse it; sign 3.0.0 again with a current key (miniship sign 3.0.0 --app ${appId} --sign-key FILE)`
    expect(jsonDocument(run)).toMatchObject({ keyId: keyIdOf(raw), changed: true, warnings: [{ code: 'LIVE_RELEASE_KEY_REVOKED', message }] })
    expect(run.stderr).toContain(`warning: ${message} (LIVE_RELEASE_KEY_REVOKED)`)
  })
})
