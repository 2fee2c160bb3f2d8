import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { generateKeyPairSync, sign, verify, createPublicKey, type KeyObject } from 'node:crypto'
import { readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { createTestContext } from '../../test-support'
import { auditLogs, versions } from '../../db/schema'
import { buildStatement } from '../../sdk/statement'
import { createMiniApp, createTestUser, upload, uploadForm, type TestUser, type UploadParts } from '../../test-fixtures'

const context = createTestContext()
afterAll(() => context.close())
const access = '/api/mini-apps/access'

let owner: TestUser
let developer: TestUser
let stranger: TestUser
let miniAppId: string
const appId = 'com.example.signed'

/** A key made outside our code, as a developer's `openssl` or node would. */
interface TestKey {
  privateKey: KeyObject
  publicKey: string
  raw: Buffer
  keyId: string
}
function generateKey(): TestKey {
  const pair = generateKeyPairSync('ed25519')
  const raw = Buffer.from(pair.publicKey.export({ format: 'jwk' }).x!, 'base64url')
  return { privateKey: pair.privateKey, publicKey: raw.toString('base64'), raw, keyId: new Bun.CryptoHasher('sha256').update(raw).digest('hex').slice(0, 16) }
}
const signText = (key: TestKey, text: string) => sign(null, Buffer.from(text, 'utf8'), key.privateKey).toString('base64')
const sha256 = (data: string | Uint8Array) => new Bun.CryptoHasher('sha256').update(data).digest('hex')

async function formDigests(form: FormData): Promise<Record<string, string>> {
  const digests: Record<string, string> = {}
  for (const [name, value] of form.entries()) if (typeof value !== 'string') digests[name] = sha256(new Uint8Array(await (value as Blob).arrayBuffer()))
  return digests
}

/** A form for `version` signed by `key` over the statement of its own files (the manifest names the version, so it is stored as sent). */
async function signedForm(key: TestKey, version: string, options: { parts?: UploadParts; statementAppId?: string; statementVersion?: string; keyId?: string } = {}): Promise<FormData> {
  const form = uploadForm(appId, { version, ...options.parts })
  const statement = buildStatement(options.statementAppId ?? appId, options.statementVersion ?? version, await formDigests(form))
  form.append('signatureKeyId', options.keyId ?? key.keyId)
  form.append('signature', signText(key, statement))
  return form
}

function blobFiles(): string[] {
  const found: string[] = []
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name)
      if (statSync(path).isDirectory()) walk(path)
      else found.push(path)
    }
  }
  walk(context.dataDir.paths.blobs)
  return found.sort()
}
const versionCount = () => context.dataDir.db.select().from(versions).all().length

/** A refused upload leaves no version row, no blob it created, nothing in tmp/. */
async function expectUploadRefused(form: FormData, status: number, code: string) {
  const rows = versionCount()
  const blobs = blobFiles()
  const res = await upload(context, owner.token, appId, form)
  expect({ status: res.status, code: res.body.code }).toEqual({ status, code })
  expect(versionCount()).toBe(rows)
  expect(blobFiles()).toEqual(blobs)
  expect(readdirSync(context.dataDir.paths.tmp)).toEqual([])
  return res
}

const addKey = (key: TestKey, name = 'release laptop', token = owner.token) => context.call('POST', `/api/mini-apps/${miniAppId}/signing-keys`, { token, json: { name, publicKey: key.publicKey } })
const revokeKey = (keyId: string, token = owner.token) => context.call('DELETE', `/api/mini-apps/${miniAppId}/signing-keys/${keyId}`, { token })
const publish = (versionId: string, json: unknown = {}) => context.call('POST', `/api/mini-apps/${miniAppId}/versions/${versionId}/publish`, { token: owner.token, json })
const signLater = (versionId: string, keyId: string, signature: string, token = owner.token) =>
  context.call('POST', `/api/mini-apps/${miniAppId}/versions/${versionId}/signature`, { token, json: { keyId, signature } })
const setRequireSignature = (value: boolean, token = owner.token) => context.call('PATCH', `/api/mini-apps/${miniAppId}`, { token, json: { requireSignature: value } })

async function versionInstall(versionId: string) {
  const res = await context.call('GET', `${access}/versions/${versionId}/install?token=${owner.token}`)
  expect(res.status).toBe(200)
  return res.body
}

/** What every device-side check of decisions §14 does: node's and WebCrypto's Ed25519 over the statement's exact bytes. */
async function expectVerifies(signature: { algorithm: string; keyId: string; statement: string; value: string }, key: TestKey) {
  expect(signature.algorithm).toBe('ed25519')
  expect(signature.keyId).toBe(key.keyId)
  const bytes = Buffer.from(signature.statement, 'utf8')
  const value = Buffer.from(signature.value, 'base64')
  expect(verify(null, bytes, createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: key.raw.toString('base64url') }, format: 'jwk' }), value)).toBe(true)
  const imported = await crypto.subtle.importKey('raw', new Uint8Array(key.raw), { name: 'Ed25519' }, false, ['verify'])
  expect(await crypto.subtle.verify('Ed25519', imported, new Uint8Array(value), new Uint8Array(bytes))).toBe(true)
}

let laptop: TestKey
beforeAll(async () => {
  owner = await createTestUser(context)
  developer = await createTestUser(context)
  stranger = await createTestUser(context)
  miniAppId = (await createMiniApp(context, owner.token, appId)).id
  const added = await context.call('POST', `/api/mini-apps/${miniAppId}/members`, { token: owner.token, json: { email: developer.email, role: 'DEVELOPER' } })
  expect(added.status).toBe(201)
  laptop = generateKey()
})

describe('trusted signing keys (decisions §14)', () => {
  test('an owner adds a key: 201 with keyId, name, publicKey, createdAt, revokedAt null; members list it; audited', async () => {
    const res = await addKey(laptop)
    expect(res.status).toBe(201)
    expect(res.body).toEqual({ keyId: laptop.keyId, name: 'release laptop', publicKey: laptop.publicKey, createdAt: new Date(context.now.value).toISOString(), revokedAt: null })
    const listed = await context.call('GET', `/api/mini-apps/${miniAppId}/signing-keys`, { token: developer.token })
    expect(listed.status).toBe(200)
    expect(listed.body).toEqual([res.body])
    const audit = context.dataDir.db.select().from(auditLogs).all().filter((row) => row.action === 'miniapp.signing_key.add')
    expect(audit.map((row) => JSON.parse(row.metadata).keyId)).toEqual([laptop.keyId])
  })

  test('the same key twice is 409 SIGNING_KEY_EXISTS', async () => {
    const res = await addKey(laptop, 'again')
    expect({ status: res.status, code: res.body.code }).toEqual({ status: 409, code: 'SIGNING_KEY_EXISTS' })
  })

  test.each([
    ['not base64', 'not a key!'],
    ['31 bytes', Buffer.alloc(31, 1).toString('base64')],
    ['33 bytes', Buffer.alloc(33, 1).toString('base64')],
    ['64 bytes (a private key pasted)', Buffer.alloc(64, 1).toString('base64')],
    ['empty', ''],
    ['151 bytes (204 characters)', Buffer.alloc(151, 1).toString('base64')],
    ['an RSA public key in PEM', `-----BEGIN PUBLIC KEY-----\n${Buffer.alloc(550, 7).toString('base64').replace(/.{64}/g, '$&\n')}\n-----END PUBLIC KEY-----\n`],
  ])('a public key that is %s is 400 INVALID_PUBLIC_KEY', async (_what, publicKey) => {
    const res = await context.call('POST', `/api/mini-apps/${miniAppId}/signing-keys`, { token: owner.token, json: { name: 'bad', publicKey } })
    expect({ status: res.status, code: res.body.code }).toEqual({ status: 400, code: 'INVALID_PUBLIC_KEY' })
  })

  test.each([
    ['', 'is empty'],
    ['   ', 'is empty'],
    [`-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA${Buffer.alloc(32, 9).toString('base64')}\n-----END PUBLIC KEY-----\n`, 'is a PEM file, not the base64 of the raw key (miniship keys add FILE reads a PEM file)'],
    [Buffer.from('fb'.repeat(32), 'hex').toString('base64url') + '=', 'is base64url; write it in standard base64 (+ and / for - and _, padded with =)'],
  ])('a public key %j says what is wrong with it: %s (400 INVALID_PUBLIC_KEY)', async (publicKey, why) => {
    const res = await context.call('POST', `/api/mini-apps/${miniAppId}/signing-keys`, { token: owner.token, json: { name: 'mixed up', publicKey } })
    expect({ status: res.status, code: res.body.code, details: res.body.details }).toEqual({ status: 400, code: 'INVALID_PUBLIC_KEY', details: [{ field: 'publicKey', message: why }] })
  })

  // 32 bytes that are no key a generator makes. Under a small-order key anyone forges a signature that
  // node, WebCrypto and noble all accept, for any statement: R = the base point, S = 1 (checked below).
  const identityPoint = Buffer.alloc(32)
  identityPoint[0] = 1
  test.each([
    ['the identity point (small order: anyone can sign)', identityPoint.toString('base64')],
    ['all zeros (a point of order 4)', Buffer.alloc(32).toString('base64')],
    ['the point of order 2', Buffer.from('ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f', 'hex').toString('base64')],
    ['not on the curve (y ≥ p)', Buffer.alloc(32, 0xff).toString('base64')],
    ['no point of the curve (x² has no root)', Buffer.from('a3b8a8c2e1be4ee3c2aaa1d7d1f2c5d7e0de1e5b29d43ba48c7fd1a6b1e0b5d5', 'hex').toString('base64')],
    ['a real key plus the point of order 2 (mixed order)', Buffer.from('968854effe1b317e49dbf1c14daf8f1538999171cba4e941c59e78575314573c', 'hex').toString('base64')],
  ])('a public key that is %s is 400 INVALID_PUBLIC_KEY', async (_what, publicKey) => {
    const res = await context.call('POST', `/api/mini-apps/${miniAppId}/signing-keys`, { token: owner.token, json: { name: 'weak', publicKey } })
    expect({ status: res.status, code: res.body.code }).toEqual({ status: 400, code: 'INVALID_PUBLIC_KEY' })
  })

  test('why a small-order key is refused: a signature anyone makes verifies under it for every statement', () => {
    const forged = Buffer.concat([Buffer.from('5866666666666666666666666666666666666666666666666666666666666666', 'hex'), Buffer.from([1]), Buffer.alloc(31)])
    const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: identityPoint.toString('base64url') }, format: 'jwk' })
    expect(verify(null, Buffer.from(buildStatement(appId, '9.9.9', {})), key, forged)).toBe(true)
  })

  test('a developer may not add or revoke keys (403 OWNER_REQUIRED); a stranger sees no miniapp (404)', async () => {
    const other = generateKey()
    expect((await addKey(other, 'dev', developer.token)).body.code).toBe('OWNER_REQUIRED')
    expect((await revokeKey(laptop.keyId, developer.token)).body.code).toBe('OWNER_REQUIRED')
    const res = await addKey(other, 'stranger', stranger.token)
    expect({ status: res.status, code: res.body.code }).toEqual({ status: 404, code: 'MINI_APP_NOT_FOUND' })
    expect((await context.call('GET', `/api/mini-apps/${miniAppId}/signing-keys`, { token: stranger.token })).status).toBe(404)
  })

  test('revoking keeps the key with revokedAt set (audited); an unknown keyId is 404 SIGNING_KEY_NOT_FOUND; a revoked key cannot be added again', async () => {
    const doomed = generateKey()
    expect((await addKey(doomed, 'doomed')).status).toBe(201)
    context.advance(1000)
    const res = await revokeKey(doomed.keyId)
    expect(res.status).toBe(200)
    expect(res.body.revokedAt).toBe(new Date(context.now.value).toISOString())
    const listed = await context.call('GET', `/api/mini-apps/${miniAppId}/signing-keys`, { token: owner.token })
    expect(listed.body.find((key: { keyId: string }) => key.keyId === doomed.keyId).revokedAt).toBe(res.body.revokedAt)
    expect(context.dataDir.db.select().from(auditLogs).all().some((row) => row.action === 'miniapp.signing_key.revoke' && JSON.parse(row.metadata).keyId === doomed.keyId)).toBe(true)
    const unknown = await revokeKey('0123456789abcdef')
    expect({ status: unknown.status, code: unknown.body.code }).toEqual({ status: 404, code: 'SIGNING_KEY_NOT_FOUND' })
    expect((await addKey(doomed, 'back')).body.code).toBe('SIGNING_KEY_EXISTS')
  })
})

describe('signed uploads', () => {
  test('a signed upload stores the statement of its stored files; every install info carries the signature, which node and WebCrypto accept', async () => {
    const form = await signedForm(laptop, '1.0.0')
    const res = await upload(context, owner.token, appId, form)
    expect(res.status).toBe(201)
    const digests = Object.fromEntries(Object.entries(res.body.files as Record<string, { sha256: string }>).map(([kind, file]) => [kind, file.sha256]))
    const statement = buildStatement(appId, '1.0.0', digests)
    expect(res.body.signature).toMatchObject({ algorithm: 'ed25519', keyId: laptop.keyId, keyName: 'release laptop', keyRevokedAt: null, statement })
    const perVersion = await versionInstall(res.body.id)
    expect(perVersion.signature).toEqual({ algorithm: 'ed25519', keyId: laptop.keyId, statement, value: res.body.signature.value })
    await expectVerifies(perVersion.signature, laptop)
    expect((await publish(res.body.id)).status).toBe(200)
    const release = await context.call('GET', `${access}/apps/${appId}/release/install`)
    expect(release.body.signature).toEqual(perVersion.signature)
    const update = await context.call('GET', `${access}/apps/${appId}/update?platform=ios&currentVersion=0.9.0&deviceId=d1`)
    expect(update.body.updateAvailable).toBe(true)
    expect(update.body.install.signature).toEqual(perVersion.signature)
    await expectVerifies(update.body.install.signature, laptop)
    // the digests in the statement are of the bytes served
    for (const [kind, path] of [['bundleIos', 'bundles/ios'], ['manifest', 'manifest'], ['assetsAndroid', 'assets/android']] as const) {
      const served = await context.app.handle(new Request(`http://localhost${access}/versions/${res.body.id}/${path}?token=${owner.token}`))
      expect(sha256(new Uint8Array(await served.arrayBuffer()))).toBe(JSON.parse(statement).files[kind])
    }
  })

  test('an unsigned version carries no signature field anywhere', async () => {
    const res = await upload(context, owner.token, appId, uploadForm(appId, { version: '1.0.1' }))
    expect(res.status).toBe(201)
    expect(res.body.signature).toBeNull()
    expect('signature' in (await versionInstall(res.body.id))).toBe(false)
  })

  test('the manifest as the server rewrites it (§9) is what is signed: a signature over the manifest as sent is refused', async () => {
    const manifest = JSON.stringify({ appId, name: 'No version', pages: { index: 'pages/index' } })
    const asSent = await signedForm(laptop, '1.0.2', { parts: { manifest } })
    await expectUploadRefused(asSent, 422, 'SIGNATURE_INVALID')
    // the CLI's way: the manifest built with the version, so what is sent is what is stored
    const rewritten = JSON.stringify({ ...JSON.parse(manifest), version: '1.0.2' }, null, 2) + '\n'
    const res = await upload(context, owner.token, appId, await signedForm(laptop, '1.0.2', { parts: { manifest: rewritten } }))
    expect(res.status).toBe(201)
    expect(res.body.signature.keyId).toBe(laptop.keyId)
  })

  test('a tampered file, a statement for another app or version, a malformed signature: 422 SIGNATURE_INVALID, nothing stored', async () => {
    const tampered = await signedForm(laptop, '1.1.0')
    const files = uploadForm(appId, { version: '1.1.0', bundleIos: 'console.log("evil")' })
    tampered.set('bundleIos', files.get('bundleIos') as File)
    await expectUploadRefused(tampered, 422, 'SIGNATURE_INVALID')
    await expectUploadRefused(await signedForm(laptop, '1.1.0', { statementAppId: 'com.example.other' }), 422, 'SIGNATURE_INVALID')
    await expectUploadRefused(await signedForm(laptop, '1.1.0', { statementVersion: '1.0.9' }), 422, 'SIGNATURE_INVALID')
    const short = await signedForm(laptop, '1.1.0')
    short.set('signature', Buffer.alloc(63, 1).toString('base64'))
    await expectUploadRefused(short, 422, 'SIGNATURE_INVALID')
  })

  test('a key the miniapp does not trust is 422 SIGNING_KEY_UNKNOWN; a revoked one 422 SIGNING_KEY_REVOKED; nothing stored', async () => {
    const unknown = generateKey()
    const refused = await expectUploadRefused(await signedForm(unknown, '1.2.0'), 422, 'SIGNING_KEY_UNKNOWN')
    // where to add it, in the words the console uses (its Signing card sits on the Settings tab; there is no Signing tab)
    expect(refused.body.message).toBe(`The miniapp trusts no signing key ${unknown.keyId}; add it first (miniship keys add, or the console's Settings › Signing)`)
    // a key another mini app trusts is unknown here
    const elsewhere = generateKey()
    const otherApp = await createMiniApp(context, owner.token, 'com.example.elsewhere')
    expect((await context.call('POST', `/api/mini-apps/${otherApp.id}/signing-keys`, { token: owner.token, json: { name: 'other app', publicKey: elsewhere.publicKey } })).status).toBe(201)
    await expectUploadRefused(await signedForm(elsewhere, '1.2.0'), 422, 'SIGNING_KEY_UNKNOWN')
    const revoked = generateKey()
    expect((await addKey(revoked, 'old laptop')).status).toBe(201)
    expect((await revokeKey(revoked.keyId)).status).toBe(200)
    await expectUploadRefused(await signedForm(revoked, '1.2.0'), 422, 'SIGNING_KEY_REVOKED')
  })

  test('signatureKeyId without signature (or the reverse) is 400 VALIDATION_ERROR naming the missing field', async () => {
    const form = uploadForm(appId, { version: '1.3.0' })
    form.append('signatureKeyId', laptop.keyId)
    const res = await expectUploadRefused(form, 400, 'VALIDATION_ERROR')
    expect(res.body.details).toEqual([{ field: 'signature', message: expect.any(String) }])
    expect(res.body.message).toBe('signature is required with signatureKeyId: send both (or neither for an unsigned version)')
    const reverse = uploadForm(appId, { version: '1.3.0' })
    reverse.append('signature', 'c2ln')
    const refused = await expectUploadRefused(reverse, 400, 'VALIDATION_ERROR')
    expect(refused.body.message).toBe('signatureKeyId is required with signature: send both (or neither for an unsigned version)')
  })

  test('re-uploading a signed draft unsigned drops its signature (its files changed)', async () => {
    const signed = await upload(context, owner.token, appId, await signedForm(laptop, '1.4.0'))
    expect(signed.body.signature).not.toBeNull()
    const again = await upload(context, owner.token, appId, uploadForm(appId, { version: '1.4.0', bundleIos: 'console.log("rebuilt")' }))
    expect(again.status).toBe(201)
    expect(again.body.signature).toBeNull()
    expect('signature' in (await versionInstall(again.body.id))).toBe(false)
  })
})

describe('signing later, requireSignature, revoked keys at publish', () => {
  test('POST …/signature signs an uploaded version; the cached install info carries it at once; bad signatures are refused with their codes', async () => {
    const res = await upload(context, owner.token, appId, uploadForm(appId, { version: '2.0.0' }))
    const versionId = res.body.id
    expect('signature' in (await versionInstall(versionId))).toBe(false)
    expect((await publish(versionId)).status).toBe(200)
    const before = await context.call('GET', `${access}/apps/${appId}/release/install`)
    expect('signature' in before.body).toBe(false)
    const statement = buildStatement(appId, '2.0.0', Object.fromEntries(Object.entries(res.body.files as Record<string, { sha256: string }>).map(([k, f]) => [k, f.sha256])))
    const wrong = await signLater(versionId, laptop.keyId, signText(laptop, statement.replace('2.0.0', '2.0.1')))
    expect({ status: wrong.status, code: wrong.body.code }).toEqual({ status: 422, code: 'SIGNATURE_INVALID' })
    const unknown = await signLater(versionId, '00000000000000aa', signText(laptop, statement))
    expect({ status: unknown.status, code: unknown.body.code }).toEqual({ status: 422, code: 'SIGNING_KEY_UNKNOWN' })
    context.advance(1000)
    const signed = await signLater(versionId, laptop.keyId, signText(laptop, statement))
    expect(signed.status).toBe(200)
    expect(signed.body.signature).toMatchObject({ keyId: laptop.keyId, keyName: 'release laptop', statement })
    const after = await context.call('GET', `${access}/apps/${appId}/release/install`)
    expect(after.body.signature).toEqual({ algorithm: 'ed25519', keyId: laptop.keyId, statement, value: signed.body.signature.value })
    expect((await versionInstall(versionId)).signature.statement).toBe(statement)
    await expectVerifies(after.body.signature, laptop)
    expect(context.dataDir.db.select().from(auditLogs).all().some((row) => row.action === 'version.sign' && row.targetId === versionId)).toBe(true)
  })

  test('requireSignature: owners only (403 OWNER_REQUIRED for a developer), audited, in the miniapp record', async () => {
    const refused = await setRequireSignature(true, developer.token)
    expect({ status: refused.status, code: refused.body.code }).toEqual({ status: 403, code: 'OWNER_REQUIRED' })
    const unsigned = await upload(context, owner.token, appId, uploadForm(appId, { version: '3.0.0' }))
    expect(unsigned.status).toBe(201)
    const res = await setRequireSignature(true)
    expect(res.status).toBe(200)
    expect(res.body.requireSignature).toBe(true)
    expect(context.dataDir.db.select().from(auditLogs).all().some((row) => row.action === 'miniapp.update' && JSON.parse(row.metadata).requireSignature === true)).toBe(true)

    // an unsigned upload, and the publish of the unsigned version uploaded before: 422 SIGNATURE_REQUIRED
    await expectUploadRefused(uploadForm(appId, { version: '3.0.1' }), 422, 'SIGNATURE_REQUIRED')
    const publishRefused = await publish(unsigned.body.id)
    expect({ status: publishRefused.status, code: publishRefused.body.code }).toEqual({ status: 422, code: 'SIGNATURE_REQUIRED' })
    // the command it names runs as printed (miniship sign needs --app)
    expect(publishRefused.body.message).toContain(`miniship sign 3.0.0 --app ${appId} --sign-key FILE`)
    // signed later, it publishes; a signed upload goes through
    const statement = buildStatement(appId, '3.0.0', Object.fromEntries(Object.entries(unsigned.body.files as Record<string, { sha256: string }>).map(([k, f]) => [k, f.sha256])))
    expect((await signLater(unsigned.body.id, laptop.keyId, signText(laptop, statement))).status).toBe(200)
    expect((await publish(unsigned.body.id)).status).toBe(200)
    expect((await upload(context, owner.token, appId, await signedForm(laptop, '3.0.2'))).status).toBe(201)
    expect((await setRequireSignature(false)).body.requireSignature).toBe(false)
  })

  test('a version signed by a key revoked since is not published (422 SIGNING_KEY_REVOKED)', async () => {
    const soonRevoked = generateKey()
    expect((await addKey(soonRevoked, 'ci key')).status).toBe(201)
    const res = await upload(context, owner.token, appId, await signedForm(soonRevoked, '4.0.0'))
    expect(res.status).toBe(201)
    expect((await revokeKey(soonRevoked.keyId)).status).toBe(200)
    const refused = await publish(res.body.id)
    expect({ status: refused.status, code: refused.body.code }).toEqual({ status: 422, code: 'SIGNING_KEY_REVOKED' })
    // the way out, as a command that runs as printed (it said only "sign with a current key")
    expect(refused.body.message).toEndWith(`; sign 4.0.0 again with a current key (miniship sign 4.0.0 --app ${appId} --sign-key FILE)`)
    const workspace = await context.call('GET', `/api/mini-apps/${miniAppId}/workspace`, { token: owner.token })
    const listed = workspace.body.versions.find((v: { id: string }) => v.id === res.body.id)
    expect(listed.signature).toMatchObject({ keyId: soonRevoked.keyId, keyName: 'ci key', keyRevokedAt: expect.any(String) })
  })

  test('a rollback is a publish too: to an unsigned version under requireSignature 422 SIGNATURE_REQUIRED, to one signed by a revoked key 422 SIGNING_KEY_REVOKED; the channel keeps its release', async () => {
    const rollback = (targetVersionId: string) => context.call('POST', `/api/mini-apps/${miniAppId}/rollback`, { token: owner.token, json: { targetVersionId, notes: 'back' } })
    const served = async () => (await context.call('GET', `${access}/apps/${appId}/release/install`)).body.version
    const unsigned = await upload(context, owner.token, appId, uploadForm(appId, { version: '5.0.0' }))
    expect((await publish(unsigned.body.id)).status).toBe(200)
    const rotatedOut = generateKey()
    expect((await addKey(rotatedOut, 'old laptop')).status).toBe(201)
    const byRotatedOut = await upload(context, owner.token, appId, await signedForm(rotatedOut, '5.1.0'))
    expect((await publish(byRotatedOut.body.id)).status).toBe(200)
    const current = await upload(context, owner.token, appId, await signedForm(laptop, '5.2.0'))
    expect((await publish(current.body.id)).status).toBe(200)
    expect((await revokeKey(rotatedOut.keyId)).status).toBe(200)
    expect((await setRequireSignature(true)).status).toBe(200)

    // pinned devices would refuse both: the server can see it, so it serves neither
    const toUnsigned = await rollback(unsigned.body.id)
    expect({ status: toUnsigned.status, code: toUnsigned.body.code }).toEqual({ status: 422, code: 'SIGNATURE_REQUIRED' })
    expect(toUnsigned.body.message).toContain(`miniship sign 5.0.0 --app ${appId} --sign-key FILE`)
    const toRevoked = await rollback(byRotatedOut.body.id)
    expect({ status: toRevoked.status, code: toRevoked.body.code }).toEqual({ status: 422, code: 'SIGNING_KEY_REVOKED' })
    expect(toRevoked.body.message).toContain(`miniship sign 5.1.0 --app ${appId} --sign-key FILE`)
    expect(await served()).toBe('5.2.0')

    // signed with a current key, both may be rolled back to
    for (const [record, version] of [[unsigned.body, '5.0.0'], [byRotatedOut.body, '5.1.0']] as const) {
      const statement = buildStatement(appId, version, Object.fromEntries(Object.entries(record.files as Record<string, { sha256: string }>).map(([k, f]) => [k, f.sha256])))
      expect((await signLater(record.id, laptop.keyId, signText(laptop, statement))).status).toBe(200)
      expect((await rollback(record.id)).status).toBe(200)
      expect(await served()).toBe(version)
    }
    expect((await setRequireSignature(false)).status).toBe(200)
  })
})
