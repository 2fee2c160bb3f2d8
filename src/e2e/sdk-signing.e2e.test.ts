// Signed releases end to end on the compiled binary: a key the miniapp trusts (POST …/signing-keys), versions pushed
// with `miniship push --sign-key` (and without), and the update client (miniship/sdk, fileStorage, the global fetch)
// that pins keys: it installs what the server serves signed by its key, refuses another key's (SIGNATURE_INVALID)
// and an unsigned release (SIGNATURE_REQUIRED), keeping what it runs.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { generateKeyPairSync } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createUpdater, UpdateError, type Updater } from '../sdk/index'
import { fileStorage } from '../sdk/node'
import { buildZip } from '../test-fixtures'
import { callApi, runBinary, startBinary, tempDir, type RunningBinary } from './support'

const appId = 'shop'
let dir: string
let server: RunningBinary
let env: Record<string, string>
let token: string
let shopId: string

/** An Ed25519 key pair as a developer makes it: the private key a PKCS#8 PEM file for `push --sign-key`, the public one raw, base64. */
function keyPair(name: string): { file: string; publicKey: string } {
  const pair = generateKeyPairSync('ed25519')
  const file = join(dir, `${name}.pem`)
  writeFileSync(file, pair.privateKey.export({ format: 'pem', type: 'pkcs8' }) as string, { mode: 0o600 })
  return { file, publicKey: Buffer.from(pair.publicKey.export({ format: 'jwk' }).x!, 'base64url').toString('base64') }
}

function buildFolder(version: string): string {
  const folder = join(dir, `build-${version}`)
  mkdirSync(folder, { recursive: true })
  writeFileSync(join(folder, 'main.ios.jsbundle'), `console.log("ios ${version}")`)
  writeFileSync(join(folder, 'main.android.bundle'), `console.log("android ${version}")`)
  writeFileSync(join(folder, 'app.json'), JSON.stringify({ appId, name: 'Shop', version, pages: { home: 'Home' } }))
  writeFileSync(join(folder, 'assets-ios.zip'), buildZip([{ name: 'assets/logo.png', content: `png ${version}` }]))
  writeFileSync(join(folder, 'assets-android.zip'), buildZip([{ name: 'drawable-mdpi/logo.png', content: 'png' }]))
  return folder
}

/** `miniship push FOLDER --publish`, signed with `signKey` when given; answers the push's JSON. */
async function push(version: string, signKey?: string) {
  const result = await runBinary(['push', buildFolder(version), '--app', appId, '--version', version, ...(signKey ? ['--sign-key', signKey] : []), '--publish', '--json'], { env, cwd: dir })
  if (result.exitCode !== 0) throw new Error(`push ${version} failed (${result.exitCode}): ${result.stdout}\n${result.stderr}`)
  return JSON.parse(result.stdout)
}

/** A device: the update client on its own directory, the global fetch, pinning `trustedKeys`. */
function device(name: string, trustedKeys: string[]): { updater: Updater; root: string } {
  const root = join(dir, 'devices', name)
  return { root, updater: createUpdater({ serverUrl: `${server.baseUrl}/api`, appId, platform: 'ios', deviceId: name, storage: fileStorage(root), trustedKeys }) }
}

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise
  } catch (error) {
    expect(error).toBeInstanceOf(UpdateError)
    return (error as UpdateError).code
  }
  return 'resolved'
}

/** the version directories on the device's disk */
const versionDirs = (root: string) => (existsSync(join(root, 'versions')) ? readdirSync(join(root, 'versions')).sort() : [])

let trusted: { file: string; publicKey: string }
let other: { file: string; publicKey: string }

beforeAll(async () => {
  dir = tempDir('miniship-sdk-signing-e2e-')
  // an administrator made as an operator does (a fresh server takes no self-registration before one exists)
  const dataDir = join(dir, 'data')
  const created = await runBinary(['create-admin', '--data-dir', dataDir, '--email', 'signer@example.test', '--password-stdin'], { stdin: 'signer-password\n' })
  expect(created.exitCode).toBe(0)
  server = await startBinary({ dataDir, args: ['--rate-limit', 'off'] })
  const login = await callApi(server.baseUrl, 'POST', '/api/auth/login', { json: { email: 'signer@example.test', password: 'signer-password' } })
  expect(login.status).toBe(200)
  token = login.body.accessToken
  shopId = (await callApi(server.baseUrl, 'POST', '/api/mini-apps', { token, json: { appId, name: 'Shop' } })).body.id
  env = { XDG_CONFIG_HOME: join(dir, 'config'), MINISHIP_SERVER: server.baseUrl, MINISHIP_TOKEN: token }
  trusted = keyPair('release')
  other = keyPair('someone-else')
  const added = await callApi(server.baseUrl, 'POST', `/api/mini-apps/${shopId}/signing-keys`, { token, json: { name: 'release laptop', publicKey: trusted.publicKey } })
  expect(added.status).toBe(201)
}, 120_000)

afterAll(async () => {
  if (server) expect(await server.stop()).toBe(0)
  rmSync(dir, { recursive: true, force: true })
})

describe('the update client verifies the server’s signatures', () => {
  test('an unsigned release: a client pinning keys refuses it with SIGNATURE_REQUIRED and writes no version', async () => {
    const pushed = await push('1.0.0')
    expect(pushed.version.signature).toBeNull()
    const { updater, root } = device('phone-unsigned', [trusted.publicKey])
    await updater.start()
    const update = (await updater.check())!
    expect(update.version).toBe('1.0.0')
    expect(update.install.signature).toBeUndefined()
    expect(await codeOf(updater.download(update))).toBe('SIGNATURE_REQUIRED')
    expect(updater.current()).toBeNull()
    expect(versionDirs(root)).toEqual([])
  }, 60_000)

  test('pushed with --sign-key: installed under the trusted key, from the server’s own signature, onto the device’s disk', async () => {
    const pushed = await push('1.1.0', trusted.file)
    expect(pushed.version.signature).toMatchObject({ keyName: 'release laptop' })
    const { updater, root } = device('phone-trusted', [other.publicKey, trusted.publicKey])
    await updater.start()
    const update = (await updater.check())!
    expect(update.version).toBe('1.1.0')
    expect(update.install.signature).toMatchObject({ algorithm: 'ed25519', keyId: pushed.version.signature.keyId })
    const current = await updater.download(update)
    expect(current).toMatchObject({ version: '1.1.0', versionId: pushed.version.id })
    expect(current.bundle.startsWith(root)).toBe(true)
    expect(readFileSync(current.bundle, 'utf8')).toBe('console.log("ios 1.1.0")')
    expect(JSON.parse(readFileSync(current.manifest, 'utf8'))).toMatchObject({ appId, version: '1.1.0' })
    // the embedded version on screen started well: that confirms nothing downloaded since (it never ran)
    await updater.markReady()
    // a restart of the app finds the same version on disk and runs it, pending until it shows its first screen
    const again = device('phone-trusted', [trusted.publicKey]).updater
    expect((await again.start()).current).toMatchObject({ version: '1.1.0', pending: true })
    await again.markReady()
    expect((await device('phone-trusted', [trusted.publicKey]).updater.start()).current).toMatchObject({ version: '1.1.0', pending: false })
    expect(await again.check()).toBeNull()
  }, 60_000)

  test('a client pinning another key refuses the signed release with SIGNATURE_INVALID and writes no version', async () => {
    const { updater, root } = device('phone-other-key', [other.publicKey])
    await updater.start()
    const update = (await updater.check())!
    expect(update.version).toBe('1.1.0')
    expect(await codeOf(updater.download(update))).toBe('SIGNATURE_INVALID')
    expect(updater.current()).toBeNull()
    expect(versionDirs(root)).toEqual([])
  }, 60_000)

  test('an unsigned release after a signed one: SIGNATURE_REQUIRED, and the device keeps the signed version it runs', async () => {
    const pushed = await push('1.2.0')
    expect(pushed.version.signature).toBeNull()
    const { updater, root } = device('phone-trusted', [trusted.publicKey])
    expect((await updater.start()).current!.version).toBe('1.1.0')
    const before = versionDirs(root)
    const update = (await updater.check())!
    expect(update.version).toBe('1.2.0')
    expect(await codeOf(updater.download(update))).toBe('SIGNATURE_REQUIRED')
    expect(updater.current()!.version).toBe('1.1.0')
    expect(readFileSync(updater.current()!.bundle, 'utf8')).toBe('console.log("ios 1.1.0")')
    expect(versionDirs(root)).toEqual(before)
  }, 60_000)
})
