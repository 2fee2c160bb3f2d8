// Signed releases on the compiled binary (issue 27): keys generate → keys add → push --sign-key → publish → verify; a blob changed on the server's disk is named by verify.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { chmodSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createPrivateKey, createPublicKey, sign } from 'node:crypto'
import { callApi, runBinary, startBinary, tempDir, type RunningBinary, setUpFirstAdmin } from './support'
import { buildZip } from '../test-fixtures'
import { blobPath } from '../storage'
import { buildStatement } from '../sdk/statement'

let dir: string
let server: RunningBinary
let env: Record<string, string>
let token: string
let shopId: string

const cli = (args: string[]) => runBinary(args, { env, cwd: dir })

/** A build folder whose app.json names no version: the server would rewrite it (§9), so push must sign the rewritten one. */
function buildFolder(name: string, bundle: string): string {
  const folder = join(dir, name)
  mkdirSync(folder, { recursive: true })
  writeFileSync(join(folder, 'main.ios.jsbundle'), bundle)
  writeFileSync(join(folder, 'main.android.bundle'), `android ${bundle}`)
  writeFileSync(join(folder, 'app.json'), JSON.stringify({ appId: 'shop', name: 'Shop', pages: { home: 'Home' } }))
  writeFileSync(join(folder, 'assets-ios.zip'), buildZip([{ name: 'assets/logo.png', content: 'png' }]))
  writeFileSync(join(folder, 'assets-android.zip'), buildZip([{ name: 'drawable-mdpi/logo.png', content: 'png' }]))
  return folder
}

beforeAll(async () => {
  dir = tempDir('miniship-signing-e2e-')
  server = await startBinary({ dataDir: join(dir, 'data') })
  // register opens once the first administrator exists (decisions §13)
  await setUpFirstAdmin(server)
  const registered = await callApi(server.baseUrl, 'POST', '/api/auth/register', { json: { email: 'signer@example.test', password: 'signer-password', displayName: 'Signer' } })
  token = registered.body.accessToken
  shopId = (await callApi(server.baseUrl, 'POST', '/api/mini-apps', { token, json: { appId: 'shop', name: 'Shop' } })).body.id
  env = { XDG_CONFIG_HOME: join(dir, 'config'), MINISHIP_SERVER: server.baseUrl, MINISHIP_TOKEN: token }
}, 120_000)

afterAll(async () => {
  if (server) await server.stop()
  rmSync(dir, { recursive: true, force: true })
})

describe('signed releases with the miniship CLI', () => {
  let publicKey: string
  let keyId: string
  const keyFile = () => join(dir, 'release.pem')

  test('keys generate writes a PKCS#8 PEM, mode 0600, prints the public key, keyId and the next command; never overwrites', async () => {
    const result = await cli(['keys', 'generate', '--out', keyFile()])
    expect(result.exitCode).toBe(0)
    expect(statSync(keyFile()).mode & 0o777).toBe(0o600)
    const pem = readFileSync(keyFile(), 'utf8')
    expect(pem).toStartWith('-----BEGIN PRIVATE KEY-----')
    const raw = Buffer.from(createPublicKey(createPrivateKey(pem)).export({ format: 'jwk' }).x!, 'base64url')
    publicKey = raw.toString('base64')
    keyId = new Bun.CryptoHasher('sha256').update(raw).digest('hex').slice(0, 16)
    expect(result.stdout).toContain(publicKey)
    expect(result.stdout).toContain(keyId)
    expect(result.stdout).toContain('miniship keys add --app APPID')
    const again = await cli(['keys', 'generate', '--out', keyFile(), '--json'])
    expect(again.exitCode).toBe(2)
    expect(again.stderr).toContain('never overwritten')
    expect(readFileSync(keyFile(), 'utf8')).toBe(pem)
  })

  test('keys add (from the PEM file) and keys ls --json', async () => {
    const added = await cli(['keys', 'add', '--app', 'shop', keyFile(), '--name', 'release laptop', '--json'])
    expect(added.exitCode).toBe(0)
    expect(JSON.parse(added.stdout)).toMatchObject({ keyId, name: 'release laptop', publicKey, revokedAt: null })
    const listed = await cli(['keys', 'ls', '--app', 'shop', '--json'])
    expect(JSON.parse(listed.stdout).keys.map((key: { keyId: string }) => key.keyId)).toEqual([keyId])
  })

  test('push --sign-key --publish, then verify: every check passes', async () => {
    const pushed = await cli(['push', buildFolder('build-1.0.0', 'console.log("1.0.0")'), '--app', 'shop', '--version', '1.0.0', '--sign-key', keyFile(), '--publish', '--json'])
    expect(pushed.stderr).not.toContain('miniship:')
    expect(pushed.exitCode).toBe(0)
    const answer = JSON.parse(pushed.stdout)
    expect(answer.version.signature).toMatchObject({ keyId, keyName: 'release laptop' })
    expect(answer.published.status).toBe('PUBLISHED')
    expect(answer.warnings.map((warning: { code: string }) => warning.code)).toContain('MANIFEST_VERSION_SET')
    const verified = await cli(['verify', '--app', 'shop', '--public-key', publicKey, '--json'])
    expect(verified.exitCode).toBe(0)
    const report = JSON.parse(verified.stdout)
    expect(report.ok).toBe(true)
    expect(report.checks.map((check: { check: string }) => check.check)).toEqual(['signature', 'statement', 'bundleIos', 'bundleAndroid', 'manifest', 'assetsIos', 'assetsAndroid'])
    // install info read from a given address (a CDN's install.json), without naming a server
    const fromUrl = await runBinary(['verify', '--app', 'shop', '--public-key', publicKey, '--install-url', `${server.baseUrl}/api/mini-apps/access/apps/shop/release/install`, '--json'], { env: { XDG_CONFIG_HOME: join(dir, 'config') }, cwd: dir })
    expect(fromUrl.exitCode).toBe(0)
    expect(JSON.parse(fromUrl.stdout).ok).toBe(true)
    const human = await cli(['verify', '--app', 'shop', '--public-key', keyFile(), '--platform', 'ios'])
    expect(human.exitCode).toBe(0)
    expect(human.stdout).toContain('Verified')
  }, 60_000)

  test('verify with another key says the signature check failed', async () => {
    const other = join(dir, 'other.pem')
    expect((await cli(['keys', 'generate', '--out', other])).exitCode).toBe(0)
    const result = await cli(['verify', '--app', 'shop', '--public-key', other])
    expect(result.exitCode).toBe(1)
    expect(result.stdout).toMatch(/FAIL signature/)
    expect(result.stderr).toContain('verification failed: signature')
  })

  test('sign VERSION signs an uploaded version; its signature verifies with node', async () => {
    const pushed = await cli(['push', buildFolder('build-1.1.0', 'console.log("1.1.0")'), '--app', 'shop', '--version', '1.1.0', '--json'])
    expect(pushed.exitCode).toBe(0)
    expect(JSON.parse(pushed.stdout).version.signature).toBeNull()
    const signed = await cli(['sign', '1.1.0', '--app', 'shop', '--sign-key', keyFile(), '--json'])
    expect(signed.stderr).not.toContain('miniship:')
    expect(signed.exitCode).toBe(0)
    const record = JSON.parse(signed.stdout)
    const files = record.files as Record<string, { sha256: string }>
    const statement = buildStatement('shop', '1.1.0', Object.fromEntries(Object.entries(files).map(([kind, file]) => [kind, file.sha256])))
    expect(record.signature.statement).toBe(statement)
    // the server hands out exactly what this key makes: Ed25519 is deterministic
    expect(record.signature.value).toBe(sign(null, Buffer.from(statement), createPrivateKey(readFileSync(keyFile(), 'utf8'))).toString('base64'))
  })

  test('a blob changed in the data directory: verify names the file that fails', async () => {
    const workspace = await callApi(server.baseUrl, 'GET', `/api/mini-apps/${shopId}/workspace`, { token })
    const released = workspace.body.versions.find((v: { version: string }) => v.version === '1.0.0')
    const path = blobPath({ blobs: join(dir, 'data', 'blobs') }, released.files.bundleAndroid.sha256)
    chmodSync(path, 0o644)
    const bytes = readFileSync(path)
    bytes[0] = bytes[0]! ^ 1 // same size, other content
    writeFileSync(path, bytes)
    const result = await cli(['verify', '--app', 'shop', '--public-key', publicKey])
    expect(result.exitCode).toBe(1)
    expect(result.stdout).toMatch(/FAIL bundleAndroid/)
    expect(result.stdout).toMatch(/ok {3}bundleIos/)
    expect(result.stderr).toContain('verification failed: bundleAndroid')
  })

  test('keys revoke; then push --sign-key is refused with what to do', async () => {
    const revoked = await cli(['keys', 'revoke', '--app', 'shop', keyId, '--json'])
    expect(revoked.exitCode).toBe(0)
    expect(JSON.parse(revoked.stdout).revokedAt).toEqual(expect.any(String))
    // --json keeps the ISO string; the lines a person reads say "revoked 2026-11-27 14:59 UTC"
    expect(JSON.parse((await cli(['keys', 'ls', '--app', 'shop', '--json'])).stdout).keys.find((key: { keyId: string }) => key.keyId === keyId).revokedAt).toMatch(/T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
    expect((await cli(['keys', 'ls', '--app', 'shop'])).stdout).toMatch(/revoked \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC /)
    const refused = await cli(['push', buildFolder('build-1.2.0', 'console.log("1.2.0")'), '--app', 'shop', '--version', '1.2.0', '--sign-key', keyFile()])
    expect(refused.exitCode).toBe(1)
    expect(refused.stderr).toContain('SIGNING_KEY_REVOKED')
    expect(refused.stderr).toContain('miniship keys generate')
  }, 60_000)

  test('keys require on, now that no key is trusted: set, with the NO_TRUSTED_KEY warning; keys ls says so; an unsigned push is refused', async () => {
    const on = await cli(['keys', 'require', '--app', 'shop', 'on', '--json'])
    expect(on.exitCode).toBe(0)
    expect(JSON.parse(on.stdout)).toMatchObject({ appId: 'shop', requireSignature: true, changed: true, warnings: [{ code: 'NO_TRUSTED_KEY' }] })
    expect(on.stderr).toContain('nothing can be uploaded, published or rolled back to until an owner or an administrator adds one')
    expect((await cli(['keys', 'ls', '--app', 'shop'])).stdout).toStartWith('Require signed versions: on (')
    const refused = await cli(['push', buildFolder('build-1.3.0', 'console.log("1.3.0")'), '--app', 'shop', '--version', '1.3.0'])
    expect(refused.exitCode).toBe(1)
    expect(refused.stderr).toContain('shop requires signed versions; push with --sign-key FILE')
  }, 60_000)

  test('every new command has --help with an example', async () => {
    for (const args of [['keys'], ['keys', 'generate'], ['keys', 'add'], ['keys', 'ls'], ['keys', 'revoke'], ['keys', 'require'], ['sign'], ['verify'], ['push']]) {
      const result = await cli([...args, '--help'])
      expect(result.exitCode).toBe(0)
      expect(result.stdout).toMatch(/Examples?:\n {2}\$ miniship /)
    }
  })
})
