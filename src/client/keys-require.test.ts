// `miniship keys require on|off` and the requirement `keys ls` shows: the CLI run as a user runs it, against the real app on a temp data directory.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { generateKeyPairSync } from 'node:crypto'
import { and, eq } from 'drizzle-orm'
import { jsonDocument, runCli } from '../cli/test-run'
import { createTestContext, type TestContext } from '../test-support'
import { createMiniApp, createTestUser, upload, uploadForm, type TestUser } from '../test-fixtures'
import { auditLogs, miniApps } from '../db/schema'

const appId = 'com.example.require'
const refused = 'unsigned uploads are refused, and an unsigned version cannot be published or rolled back to'
const noKey = `${appId} requires signed versions and trusts no signing key: nothing can be uploaded, published or rolled back to until an owner or an administrator adds one (miniship keys generate, then miniship keys add --app ${appId} FILE)`

let context: TestContext
let server: ReturnType<typeof Bun.serve>
let owner: TestUser
let developer: TestUser
let miniAppId: string
/** every request the CLI made, as "METHOD /path" */
let requests: string[] = []

beforeAll(async () => {
  context = createTestContext()
  owner = await createTestUser(context)
  developer = await createTestUser(context)
  miniAppId = (await createMiniApp(context, owner.token, appId)).id
  expect((await context.call('POST', `/api/mini-apps/${miniAppId}/members`, { token: owner.token, json: { email: developer.email, role: 'DEVELOPER' } })).status).toBe(201)
  server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch: (request) => {
      requests.push(`${request.method} ${new URL(request.url).pathname}`)
      return context.app.handle(request)
    },
  })
})
afterAll(() => {
  server.stop(true)
  context.close()
})
beforeEach(() => {
  requests = []
})

const cli = (args: string[], token = owner.token) => runCli(args, { env: { MINISHIP_TOKEN: token, MINISHIP_SERVER: `http://127.0.0.1:${server.port}` } })
const row = () => context.dataDir.db.select().from(miniApps).where(eq(miniApps.id, miniAppId)).get()!
const updatesAudited = () => context.dataDir.db.select().from(auditLogs).where(and(eq(auditLogs.action, 'miniapp.update'), eq(auditLogs.targetId, miniAppId))).all().length
const patches = () => requests.filter((request) => request.startsWith('PATCH '))

describe('miniship keys require', () => {
  test('on, while the miniapp trusts no key: turned on (audited), one line says what that means, and a warning that nothing can be uploaded until a key is added', async () => {
    const audited = updatesAudited()
    const run = await cli(['keys', 'require', '--app', appId, 'on'])
    expect(run.exitCode).toBe(0)
    expect(run.stdout).toBe(`${appId} requires signed versions now: ${refused} (sign it first: miniship sign VERSION --app ${appId} --sign-key FILE).\n`)
    expect(run.stderr).toBe(`warning: ${noKey} (NO_TRUSTED_KEY)\n`)
    expect(row().requireSignature).toBe(true)
    expect(updatesAudited()).toBe(audited + 1)
    expect(patches()).toEqual([`PATCH /api/mini-apps/${miniAppId}`])
    // what the line and the warning say is what the server does
    const unsigned = await upload(context, owner.token, appId, uploadForm(appId, { version: '1.0.0' }))
    expect([unsigned.status, unsigned.body.code]).toEqual([422, 'SIGNATURE_REQUIRED'])
  })

  test('keys ls says it is on, in the console\'s words, and warns as keys require does that no key is trusted; --json has requireSignature and the warning', async () => {
    const run = await cli(['keys', 'ls', '--app', appId])
    expect(run.exitCode).toBe(0)
    expect(run.stdout).toBe(`Require signed versions: on (${refused})\n`)
    expect(run.stderr).toBe(`warning: ${noKey} (NO_TRUSTED_KEY)\n`)
    expect(jsonDocument(await cli(['keys', 'ls', '--app', appId, '--json']))).toEqual({ requireSignature: true, keys: [], warnings: [{ code: 'NO_TRUSTED_KEY', message: noKey }] })
  })

  test('on again: "nothing changed", exit 0, nothing written or audited (--json: changed false); the warning stays while no key is trusted', async () => {
    const audited = updatesAudited()
    const before = row()
    context.advance(60_000)
    const run = await cli(['keys', 'require', '--app', appId, 'on'])
    expect(run.exitCode).toBe(0)
    expect(run.stdout).toBe(`${appId} already requires signed versions; nothing changed.\n`)
    expect(run.stderr).toContain('(NO_TRUSTED_KEY)')
    expect(jsonDocument(await cli(['keys', 'require', '--app', appId, 'on', '--json']))).toEqual({ appId, requireSignature: true, changed: false, warnings: [{ code: 'NO_TRUSTED_KEY', message: noKey }] })
    // asked all the same, so the server checks who asks (see the next test); a PATCH that changes nothing writes nothing
    expect(patches()).toEqual([`PATCH /api/mini-apps/${miniAppId}`, `PATCH /api/mini-apps/${miniAppId}`])
    expect(updatesAudited()).toBe(audited)
    expect(row()).toEqual(before)
  })

  test('a developer (not an owner) is refused as the server refuses: exit 1, OWNER_REQUIRED; nothing changes; asking for what is already set is refused the same way (the exit code says what the caller may do, not what the setting is)', async () => {
    const message = 'Only owners of this miniapp and administrators may change requireSignature'
    const same = await cli(['keys', 'require', '--app', appId, 'on'], developer.token)
    expect([same.exitCode, same.stdout, same.stderr]).toEqual([1, '', `miniship: ${message} (OWNER_REQUIRED, HTTP 403)\n`])
    const run = await cli(['keys', 'require', '--app', appId, 'off'], developer.token)
    expect(run.exitCode).toBe(1)
    expect(run.stdout).toBe('')
    expect(run.stderr).toBe(`miniship: ${message} (OWNER_REQUIRED, HTTP 403)\n`)
    const json = await cli(['keys', 'require', '--app', appId, 'off', '--json'], developer.token)
    expect(json.exitCode).toBe(1)
    expect(jsonDocument(json)).toEqual({ error: { statusCode: 403, code: 'OWNER_REQUIRED', message } })
    expect(row().requireSignature).toBe(true)
  })

  test('off, then off again; on with a trusted key warns of nothing; keys ls shows the setting and the key (--json shapes)', async () => {
    const off = await cli(['keys', 'require', '--app', appId, 'off', '--json'])
    expect(off.exitCode).toBe(0)
    expect(jsonDocument(off)).toEqual({ appId, requireSignature: false, changed: true, warnings: [] })
    expect(off.stderr).toBe('')
    expect(row().requireSignature).toBe(false)
    const text = await cli(['keys', 'require', '--app', appId, 'on'])
    expect(text.exitCode).toBe(0)
    const offText = await cli(['keys', 'require', '--app', appId, 'off'])
    expect(offText.stdout).toBe(`${appId} no longer requires signed versions: unsigned versions are accepted again.\n`)
    const again = await cli(['keys', 'require', '--app', appId, 'off'])
    expect(again.exitCode).toBe(0)
    expect(again.stdout).toBe(`${appId} already accepts unsigned versions; nothing changed.\n`)
    expect(requests.filter((request) => request.startsWith('PATCH ')).length).toBe(4)

    const pair = generateKeyPairSync('ed25519')
    const publicKey = Buffer.from(pair.publicKey.export({ format: 'jwk' }).x!, 'base64url').toString('base64')
    const key = (await context.call('POST', `/api/mini-apps/${miniAppId}/signing-keys`, { token: owner.token, json: { name: 'release laptop', publicKey } })).body
    const listed = await cli(['keys', 'ls', '--app', appId])
    expect(listed.stdout).toStartWith(`Require signed versions: off (unsigned versions are accepted; miniship keys require --app ${appId} on refuses them)\n${key.keyId}  trusted`)
    expect(jsonDocument(await cli(['keys', 'ls', '--app', appId, '--json']))).toEqual({ requireSignature: false, keys: [key], warnings: [] })

    const on = await cli(['keys', 'require', '--app', appId, 'on', '--json'])
    expect(jsonDocument(on)).toEqual({ appId, requireSignature: true, changed: true, warnings: [] })
    expect(on.stderr).toBe('')
    expect((await cli(['keys', 'ls', '--app', appId])).stdout).toStartWith(`Require signed versions: on (${refused})\n${key.keyId}  trusted`)
  })

  test('a word other than on or off is bad usage (exit 2) naming both; nothing is asked of the server', async () => {
    const run = await cli(['keys', 'require', '--app', appId, 'yes'])
    expect(run.exitCode).toBe(2)
    expect(run.stderr).toBe('miniship: keys require takes on or off, got "yes"\n')
    const json = await cli(['keys', 'require', '--app', appId, 'true', '--json'])
    expect(json.exitCode).toBe(2)
    expect(jsonDocument(json)).toEqual({ error: { code: 'USAGE', message: 'keys require takes on or off, got "true"' } })
    const missing = await cli(['keys', 'require', '--app', appId])
    expect(missing.exitCode).toBe(2)
    expect(missing.stderr).toContain("missing required argument 'on|off'")
    expect(requests).toEqual([])
  })

  test('--help names on|off and has examples', async () => {
    const help = await runCli(['keys', 'require', '--help'])
    expect(help.exitCode).toBe(0)
    expect(help.stdout).toStartWith('Usage: miniship keys require [options] <on|off>\n')
    expect(help.stdout).toContain('Examples:\n  $ miniship keys require --app com.example.shop on\n')
    expect((await runCli(['keys', '--help'])).stdout).toContain('$ miniship keys require --app com.example.shop on')
  })
})
