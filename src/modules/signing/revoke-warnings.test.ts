// Revoking a key warns of the versions it signed that devices get now (LIVE_RELEASE_KEY_REVOKED), over HTTP on a real SQLite file.
import { afterAll, expect, test } from 'bun:test'
import { generateKeyPairSync, sign } from 'node:crypto'
import { createTestContext } from '../../test-support'
import { buildStatement } from '../../sdk/statement'
import { createMiniApp, createTestUser, upload, uploadForm } from '../../test-fixtures'

const context = createTestContext()
afterAll(() => context.close())
const appId = 'com.example.revokelive'

function generateKey() {
  const pair = generateKeyPairSync('ed25519')
  const raw = Buffer.from(pair.publicKey.export({ format: 'jwk' }).x!, 'base64url')
  return { privateKey: pair.privateKey, publicKey: raw.toString('base64'), keyId: new Bun.CryptoHasher('sha256').update(raw).digest('hex').slice(0, 16) }
}

/** An upload of `version` signed by `key` over the statement of its own files. */
async function signedForm(key: ReturnType<typeof generateKey>, version: string): Promise<FormData> {
  const form = uploadForm(appId, { version })
  const digests: Record<string, string> = {}
  for (const [name, value] of form.entries()) if (typeof value !== 'string') digests[name] = new Bun.CryptoHasher('sha256').update(new Uint8Array(await (value as Blob).arrayBuffer())).digest('hex')
  form.append('signatureKeyId', key.keyId)
  form.append('signature', sign(null, Buffer.from(buildStatement(appId, version, digests), 'utf8'), key.privateKey).toString('base64'))
  return form
}

test('a revoke warns of each version the key signed that devices get now, saying where as versions ls does; a replaced one, another key\'s, or a second revoke warn of nothing', async () => {
  const owner = await createTestUser(context)
  const miniAppId = (await createMiniApp(context, owner.token, appId)).id as string
  const laptop = generateKey()
  const ci = generateKey()
  for (const [key, name] of [[laptop, 'laptop'], [ci, 'ci']] as const) {
    expect((await context.call('POST', `/api/mini-apps/${miniAppId}/signing-keys`, { token: owner.token, json: { name, publicKey: key.publicKey } })).status).toBe(201)
  }
  expect((await context.call('POST', `/api/mini-apps/${miniAppId}/channels`, { token: owner.token, json: { name: 'beta' } })).status).toBe(201)
  const ids: Record<string, string> = {}
  for (const [version, key] of [['1.0.0', laptop], ['1.1.0', laptop], ['1.2.0', laptop], ['2.0.0', ci], ['2.1.0', ci]] as const) {
    const res = await upload(context, owner.token, appId, await signedForm(key, version))
    expect(res.status).toBe(201)
    ids[version] = res.body.id
  }
  const publish = async (version: string, json: Record<string, unknown>) => expect((await context.call('POST', `/api/mini-apps/${miniAppId}/versions/${ids[version]}/publish`, { token: owner.token, json })).status).toBe(200)
  // stable: 1.0.0, replaced by 1.1.0 complete, then 2.0.0 (another key) at 30 %: devices outside it get 1.1.0
  await publish('1.0.0', {})
  await publish('1.1.0', {})
  await publish('2.0.0', { rolloutPercent: 30 })
  // beta: 1.2.0, then 2.1.0 (another key) complete: 1.2.0 reads "replaced on beta", no device gets it
  await publish('1.2.0', { channel: 'beta' })
  await publish('2.1.0', { channel: 'beta' })

  const revoked = await context.call('DELETE', `/api/mini-apps/${miniAppId}/signing-keys/${laptop.keyId}`, { token: owner.token })
  expect(revoked.status).toBe(200)
  expect(revoked.body).toMatchObject({ keyId: laptop.keyId, revokedAt: expect.any(String) })
  // 1.0.0 and 1.2.0 are replaced: no device gets them, so nothing to say of them
  expect(revoked.body.warnings).toEqual([
    { code: 'LIVE_RELEASE_KEY_REVOKED', message: `1.1.0 (live on stable for the devices outside the rollout of 2.0.0) was signed by this key: host apps that no longer trust it will refuse it; sign 1.1.0 again with a current key (miniship sign 1.1.0 --app ${appId} --sign-key FILE)` },
  ])
  // revoked already: nothing changed, nothing to warn of
  const again = await context.call('DELETE', `/api/mini-apps/${miniAppId}/signing-keys/${laptop.keyId}`, { token: owner.token })
  expect([again.status, again.body.warnings]).toEqual([200, []])
  // 2.0.0 is live, but signed by the other key: revoking a key with nothing live warns of nothing
  const unused = generateKey()
  expect((await context.call('POST', `/api/mini-apps/${miniAppId}/signing-keys`, { token: owner.token, json: { name: 'unused', publicKey: unused.publicKey } })).status).toBe(201)
  expect((await context.call('DELETE', `/api/mini-apps/${miniAppId}/signing-keys/${unused.keyId}`, { token: owner.token })).body.warnings).toEqual([])
  const ciRevoked = await context.call('DELETE', `/api/mini-apps/${miniAppId}/signing-keys/${ci.keyId}`, { token: owner.token })
  expect(ciRevoked.body.warnings).toEqual([
    { code: 'LIVE_RELEASE_KEY_REVOKED', message: expect.stringMatching(/^2\.0\.0 \(live on stable, rolling-out 30 %\) was signed by this key/) },
    { code: 'LIVE_RELEASE_KEY_REVOKED', message: expect.stringMatching(/^2\.1\.0 \(live on beta, complete 100 %\) was signed by this key/) },
  ])
})
