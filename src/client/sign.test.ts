// `miniship sign`: the CLI run as a user runs it, against the real app on a temp data directory.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { generateKeyPairSync } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { jsonDocument, runCli } from '../cli/test-run'
import { createTestContext, tempDir, type TestContext } from '../test-support'
import { createMiniApp, createTestUser, upload, uploadForm, type TestUser } from '../test-fixtures'
import { keyIdOf } from '../modules/signing/keys'

const appId = 'com.example.resign'
let context: TestContext
let server: ReturnType<typeof Bun.serve>
let owner: TestUser
let miniAppId: string
const dir = tempDir('miniship-sign-')

beforeAll(async () => {
  context = createTestContext()
  owner = await createTestUser(context)
  miniAppId = (await createMiniApp(context, owner.token, appId)).id
  expect((await upload(context, owner.token, appId, uploadForm(appId, { version: '1.0.0' }))).status).toBe(201)
  server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: (request) => context.app.handle(request) })
})
afterAll(() => {
  server.stop(true)
  context.close()
})

const cli = (args: string[]) => runCli(args, { env: { MINISHIP_TOKEN: owner.token, MINISHIP_SERVER: `http://127.0.0.1:${server.port}` } })

/** A key the app trusts: its id and the file holding its private half. */
async function trustedKey(name: string): Promise<{ keyId: string; file: string }> {
  const pair = generateKeyPairSync('ed25519')
  const raw = Buffer.from(pair.publicKey.export({ format: 'jwk' }).x!, 'base64url')
  expect((await context.call('POST', `/api/mini-apps/${miniAppId}/signing-keys`, { token: owner.token, json: { name, publicKey: raw.toString('base64') } })).status).toBe(201)
  const file = join(dir, `${name.replace(/\W/g, '-')}.pem`)
  writeFileSync(file, pair.privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 })
  return { keyId: keyIdOf(raw), file }
}

describe('miniship sign over a signature made by another key', () => {
  test('still trusted: warns SIGNATURE_REPLACED (stderr and --json), naming the key host apps may pin; the same key again, or a revoked one replaced, says nothing', async () => {
    const laptop = await trustedKey('laptop')
    const ci = await trustedKey('ci')
    const first = jsonDocument(await cli(['sign', '1.0.0', '--app', appId, '--sign-key', laptop.file, '--json']))
    expect(first).toMatchObject({ version: '1.0.0', signature: { keyId: laptop.keyId }, warnings: [] })

    // it said only "Signed … with" the new key
    const replaced = await cli(['sign', '1.0.0', '--app', appId, '--sign-key', ci.file])
    expect(replaced.exitCode).toBe(0)
    expect(replaced.stdout).toStartWith(`Signed ${appId} 1.0.0 (build `)
    expect(replaced.stderr).toContain(`warning: 1.0.0 was signed by the key ${laptop.keyId} ("laptop"), still trusted: this signature replaces that one, and host apps that trust only ${laptop.keyId} will refuse 1.0.0 from now on (SIGNATURE_REPLACED)`)

    const same = jsonDocument(await cli(['sign', '1.0.0', '--app', appId, '--sign-key', ci.file, '--json']))
    expect(same).toMatchObject({ signature: { keyId: ci.keyId }, warnings: [] })

    const back = jsonDocument(await cli(['sign', '1.0.0', '--app', appId, '--sign-key', laptop.file, '--json']))
    expect(back).toMatchObject({ signature: { keyId: laptop.keyId }, warnings: [{ code: 'SIGNATURE_REPLACED', message: expect.stringContaining(`signed by the key ${ci.keyId} ("ci"), still trusted`) }] })

    // signing again after a revocation is what signing again is for
    expect((await context.call('DELETE', `/api/mini-apps/${miniAppId}/signing-keys/${laptop.keyId}`, { token: owner.token })).status).toBe(200)
    const afterRevoke = await cli(['sign', '1.0.0', '--app', appId, '--sign-key', ci.file, '--json'])
    expect(afterRevoke.stderr).not.toContain('SIGNATURE_REPLACED')
    expect(jsonDocument(afterRevoke)).toMatchObject({ signature: { keyId: ci.keyId }, warnings: [] })
  })
})
