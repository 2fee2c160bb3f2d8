// The release mirror's install.json carries a signed release's signature (decisions §14), against s3rver.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { generateKeyPairSync, sign } from 'node:crypto'
import { createTestContext, type TestContext } from '../../test-support'
import { createMiniApp, createTestUser, upload, uploadForm } from '../../test-fixtures'
import { startTestS3, type TestS3 } from '../../storage/test-s3'
import { buildStatement } from '../../sdk/statement'

let s3: TestS3
let context: TestContext
beforeAll(async () => {
  s3 = await startTestS3()
  context = createTestContext({ storage: { ...s3.config('signed'), recorded: { owner: 'test-signed' } }, mirrorReleases: true, cdnUrl: 'https://cdn.example.com' })
})
afterAll(() => {
  context.close()
  s3.close()
})

/** install.json as the CDN would serve it, once the mirror has written `versionId` (the job queue writes it after the answer). */
async function mirroredInstall(appId: string, versionId: string): Promise<Record<string, unknown>> {
  for (let attempt = 0; attempt < 100; attempt++) {
    // the mirror is written by the job queue after the change has answered: run what is queued first
    await context.app.store.jobs.drain()
    const response = await fetch(s3.publicUrl(`signed/releases/${appId}/stable/install.json`))
    if (response.status === 200) {
      const info = (await response.json()) as Record<string, unknown>
      if (info.versionId === versionId) return info
    } else await response.arrayBuffer()
    await Bun.sleep(50)
  }
  throw new Error(`install.json never named ${versionId}`)
}

test('a signed release\'s install.json carries { algorithm, keyId, statement, value }; an unsigned one has no signature field', async () => {
  const owner = await createTestUser(context)
  const appId = 'com.example.mirrored'
  const miniApp = await createMiniApp(context, owner.token, appId)
  const pair = generateKeyPairSync('ed25519')
  const raw = Buffer.from(pair.publicKey.export({ format: 'jwk' }).x!, 'base64url')
  const added = await context.call('POST', `/api/mini-apps/${miniApp.id}/signing-keys`, { token: owner.token, json: { name: 'ci', publicKey: raw.toString('base64') } })
  expect(added.status).toBe(201)

  const unsigned = await upload(context, owner.token, appId, uploadForm(appId, { version: '1.0.0' }))
  expect((await context.call('POST', `/api/mini-apps/${miniApp.id}/versions/${unsigned.body.id}/publish`, { token: owner.token, json: {} })).status).toBe(200)
  const first = await mirroredInstall(appId, unsigned.body.id)
  expect('signature' in first).toBe(false)
  // install info of a release carries its host range, null for any (decisions §17), on the CDN too
  expect(first.hostVersionRange).toBeNull()

  const second = await upload(context, owner.token, appId, uploadForm(appId, { version: '1.1.0' }))
  const statement = buildStatement(appId, '1.1.0', Object.fromEntries(Object.entries(second.body.files as Record<string, { sha256: string }>).map(([kind, file]) => [kind, file.sha256])))
  const value = sign(null, Buffer.from(statement), pair.privateKey).toString('base64')
  expect((await context.call('POST', `/api/mini-apps/${miniApp.id}/versions/${second.body.id}/signature`, { token: owner.token, json: { keyId: added.body.keyId, signature: value } })).status).toBe(200)
  expect((await context.call('POST', `/api/mini-apps/${miniApp.id}/versions/${second.body.id}/publish`, { token: owner.token, json: { hostVersionRange: '>=1.0.0' } })).status).toBe(200)
  const info = await mirroredInstall(appId, second.body.id)
  expect(info.signature).toEqual({ algorithm: 'ed25519', keyId: added.body.keyId, statement, value })
  expect(info.hostVersionRange).toBe('>=1.0.0')
})
