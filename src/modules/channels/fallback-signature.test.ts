// A pause, a revert or a lowered percent whose fallback release today's signature rules refuse (§14: unsigned while signatures
// are required, or signed by a key revoked since) still happens, and its answer and `miniship rollout` warn (FALLBACK_UNSIGNED,
// FALLBACK_KEY_REVOKED): over HTTP and the real CLI against the app on a temp data directory.
import { describe, expect, test } from 'bun:test'
import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto'
import { createMiniApp, servedTestApp, upload, uploadForm } from '../../test-fixtures'
import { buildStatement } from '../../sdk/statement'
import { jsonDocument } from '../../cli/test-run'
import { eq } from 'drizzle-orm'
import { auditLogs, webhookDeliveries } from '../../db/schema'
import { rolloutBucket } from './decide'

const served = servedTestApp()

const cli = served.cli

interface TestKey {
  privateKey: KeyObject
  publicKey: string
  keyId: string
}
function generateKey(): TestKey {
  const pair = generateKeyPairSync('ed25519')
  const raw = Buffer.from(pair.publicKey.export({ format: 'jwk' }).x!, 'base64url')
  return { privateKey: pair.privateKey, publicKey: raw.toString('base64'), keyId: new Bun.CryptoHasher('sha256').update(raw).digest('hex').slice(0, 16) }
}

/** A miniapp whose stable channel has `1.0.0` at 100 % (signed by `oldKey`, or not) and `1.1.0` (signed by `newKey`) at 30 % (or `rolloutPercent`). */
async function setUp(appId: string, options: { fallbackKey: TestKey | null; requireSignature: boolean; rolloutPercent?: number }) {
  const miniAppId = (await createMiniApp(served.context, served.owner.token, appId)).id as string
  const newKey = generateKey()
  const keys = [newKey, ...(options.fallbackKey ? [options.fallbackKey] : [])]
  for (const [index, key] of keys.entries()) {
    expect((await served.context.call('POST', `/api/mini-apps/${miniAppId}/signing-keys`, { token: served.owner.token, json: { name: index === 0 ? 'new laptop' : 'old laptop', publicKey: key.publicKey } })).status).toBe(201)
  }
  const uploadVersion = async (version: string, key: TestKey | null) => {
    const form = uploadForm(appId, { version })
    if (key) {
      const digests: Record<string, string> = {}
      for (const [name, value] of form.entries()) if (typeof value !== 'string') digests[name] = new Bun.CryptoHasher('sha256').update(new Uint8Array(await (value as Blob).arrayBuffer())).digest('hex')
      form.append('signatureKeyId', key.keyId)
      form.append('signature', sign(null, Buffer.from(buildStatement(appId, version, digests)), key.privateKey).toString('base64'))
    }
    const res = await upload(served.context, served.owner.token, appId, form)
    expect(res.status).toBe(201)
    return res.body.id as string
  }
  const publish = async (versionId: string, rolloutPercent: number) =>
    expect((await served.context.call('POST', `/api/mini-apps/${miniAppId}/versions/${versionId}/publish`, { token: served.owner.token, json: { rolloutPercent } })).status).toBe(200)
  await publish(await uploadVersion('1.0.0', options.fallbackKey), 100)
  const newest = await uploadVersion('1.1.0', newKey)
  await publish(newest, options.rolloutPercent ?? 30)
  if (options.requireSignature) expect((await served.context.call('PATCH', `/api/mini-apps/${miniAppId}`, { token: served.owner.token, json: { requireSignature: true } })).status).toBe(200)
  const rollout = async (json: Record<string, unknown>) => {
    const res = await served.context.call('PATCH', `/api/mini-apps/${miniAppId}/channels/stable/rollout`, { token: served.owner.token, json })
    expect(res.status).toBe(200)
    return res.body as { state: string; warnings: { code: string; message: string }[] }
  }
  /** what a device that runs 1.1.0 and sends its deviceId is offered now: 1.1.0 kept, or the fallback */
  const offeredTo = async (deviceId: string) => {
    const res = await served.context.call('GET', `/api/mini-apps/access/apps/${appId}/update?platform=ios&currentVersion=1.1.0&deviceId=${deviceId}`)
    expect(res.status).toBe(200)
    return res.body.updateAvailable ? (res.body.install.version as string) : '1.1.0'
  }
  /** a device whose bucket for 1.1.0 is at least `low` and below `high` */
  const deviceBetween = (low: number, high: number) => {
    for (let index = 0; ; index++) {
      const bucket = rolloutBucket(appId, newest, `device-${index}`)
      if (bucket >= low && bucket < high) return `device-${index}`
    }
  }
  return { miniAppId, rollout, offeredTo, deviceBetween }
}

const unsignedPause = (appId: string) =>
  `Devices on stable that do not run 1.1.0 fall back to 1.0.0, which is not signed: host apps that require signatures will refuse it; sign it (miniship sign 1.0.0 --app ${appId} --sign-key FILE)`
const unsignedLowered = (appId: string, percent: number) =>
  `Devices on stable outside the new ${percent} % fall back to 1.0.0, which is not signed: host apps that require signatures will refuse it; sign it (miniship sign 1.0.0 --app ${appId} --sign-key FILE)`
const unsignedRevert = (appId: string) =>
  `Devices on stable, those on 1.1.0 too, fall back to 1.0.0, which is not signed: host apps that require signatures will refuse it; sign it (miniship sign 1.0.0 --app ${appId} --sign-key FILE)`

describe('a pause, a revert or a lowered percent that sends devices back to a release signature rules refuse', () => {
  test('unsigned while signatures are required: paused all the same, and the answer warns FALLBACK_UNSIGNED; a pause again changes nothing and warns of nothing; the revert warns in its own words', async () => {
    const appId = 'com.example.fallback.unsigned'
    const app = await setUp(appId, { fallbackKey: null, requireSignature: true })
    const paused = await app.rollout({ paused: true, reason: 'crash spike' })
    expect(paused.state).toBe('paused')
    expect(paused.warnings).toEqual([{ code: 'FALLBACK_UNSIGNED', message: unsignedPause(appId) }])
    expect((await app.rollout({ paused: true })).warnings).toEqual([])
    const reverted = await app.rollout({ rolloutPercent: 0 })
    expect(reverted.state).toBe('reverted')
    expect(reverted.warnings).toEqual([{ code: 'FALLBACK_UNSIGNED', message: unsignedRevert(appId) }])
    // raising it again sends nobody back: nothing to warn of
    expect((await app.rollout({ rolloutPercent: 30 })).warnings).toEqual([])
  })

  test("a person's pause and revert: their rollout.paused and rollout.changed deliveries and audit entries carry the answer's warnings", async () => {
    const appId = 'com.example.fallback.hooks'
    const app = await setUp(appId, { fallbackKey: null, requireSignature: true })
    const hook = await served.context.call('POST', `/api/mini-apps/${app.miniAppId}/webhooks`, { token: served.owner.token, json: { url: 'https://93.184.216.34/json', events: ['rollout.paused', 'rollout.changed'] } })
    expect(hook.status).toBe(201)
    expect((await app.rollout({ paused: true })).warnings).toEqual([{ code: 'FALLBACK_UNSIGNED', message: unsignedPause(appId) }])
    expect((await app.rollout({ rolloutPercent: 0 })).warnings).toEqual([{ code: 'FALLBACK_UNSIGNED', message: unsignedRevert(appId) }])
    const delivered = served.context.dataDir.db.select({ event: webhookDeliveries.event, body: webhookDeliveries.body }).from(webhookDeliveries).where(eq(webhookDeliveries.webhookId, hook.body.id)).all()
    expect(delivered.map((delivery) => [delivery.event, JSON.parse(delivery.body).data.warnings])).toEqual([
      ['rollout.paused', [{ code: 'FALLBACK_UNSIGNED', message: unsignedPause(appId) }]],
      ['rollout.changed', [{ code: 'FALLBACK_UNSIGNED', message: unsignedRevert(appId) }]],
    ])
    const audited = served.context.dataDir.db.select({ action: auditLogs.action, metadata: auditLogs.metadata }).from(auditLogs).all().filter((entry) => JSON.parse(entry.metadata).appId === appId && entry.action.startsWith('channel.'))
    expect(audited.map((entry) => [entry.action, JSON.parse(entry.metadata).warnings?.[0]?.code])).toEqual([
      ['channel.pause', 'FALLBACK_UNSIGNED'],
      ['channel.rollout', 'FALLBACK_UNSIGNED'],
    ])
  })

  test('a lower percent sends the adopters outside it back to the unsigned fallback: lowered all the same, and the answer warns FALLBACK_UNSIGNED in its own words; raising it warns of nothing', async () => {
    const appId = 'com.example.fallback.lowered'
    const app = await setUp(appId, { fallbackKey: null, requireSignature: true, rolloutPercent: 90 })
    const adopter = app.deviceBetween(5, 90)
    expect(await app.offeredTo(adopter)).toBe('1.1.0')
    const lowered = await app.rollout({ rolloutPercent: 5 })
    expect(lowered).toMatchObject({ state: 'rolling-out', release: { rolloutPercent: 5 } })
    expect(lowered.warnings).toEqual([{ code: 'FALLBACK_UNSIGNED', message: unsignedLowered(appId, 5) }])
    // what it says is what happened: the adopter, running 1.1.0, is offered unsigned 1.0.0
    expect(await app.offeredTo(adopter)).toBe('1.0.0')
    // raising it sends nobody back; the same percent again changes nothing
    expect((await app.rollout({ rolloutPercent: 50 })).warnings).toEqual([])
    expect((await app.rollout({ rolloutPercent: 50 })).warnings).toEqual([])
    expect((await app.rollout({ rolloutPercent: 20 })).warnings).toEqual([{ code: 'FALLBACK_UNSIGNED', message: unsignedLowered(appId, 20) }])
    // from complete (100 %) down is lowering too
    expect((await app.rollout({ rolloutPercent: 100 })).warnings).toEqual([])
    expect((await app.rollout({ rolloutPercent: 99 })).warnings).toEqual([{ code: 'FALLBACK_UNSIGNED', message: unsignedLowered(appId, 99) }])
  })

  test('signed by a key revoked since: FALLBACK_KEY_REVOKED, naming the key and the way out (also where signatures are not required: a publish of it is refused either way)', async () => {
    const appId = 'com.example.fallback.revoked'
    const oldKey = generateKey()
    const app = await setUp(appId, { fallbackKey: oldKey, requireSignature: false })
    expect((await served.context.call('DELETE', `/api/mini-apps/${app.miniAppId}/signing-keys/${oldKey.keyId}`, { token: served.owner.token })).status).toBe(200)
    const paused = await app.rollout({ paused: true })
    expect(paused.state).toBe('paused')
    expect(paused.warnings).toEqual([
      {
        code: 'FALLBACK_KEY_REVOKED',
        message: `Devices on stable that do not run 1.1.0 fall back to 1.0.0, which was signed by the key "old laptop" (${oldKey.keyId}), revoked since: host apps that no longer trust that key will refuse it; sign 1.0.0 again with a current key (miniship sign 1.0.0 --app ${appId} --sign-key FILE)`,
      },
    ])
  })

  test('a fallback that signature rules accept, or an unsigned one where signatures are not required: no warning', async () => {
    const signed = await setUp('com.example.fallback.signed', { fallbackKey: generateKey(), requireSignature: true })
    expect((await signed.rollout({ rolloutPercent: 10 })).warnings).toEqual([])
    expect((await signed.rollout({ paused: true })).warnings).toEqual([])
    expect((await signed.rollout({ rolloutPercent: 0 })).warnings).toEqual([])
    const optional = await setUp('com.example.fallback.optional', { fallbackKey: null, requireSignature: false })
    expect((await optional.rollout({ rolloutPercent: 0 })).warnings).toEqual([])
  })

  test('miniship rollout --pause and --revert print the warning on stderr, and with --json as a warning entry', async () => {
    const appId = 'com.example.fallback.cli'
    await setUp(appId, { fallbackKey: null, requireSignature: true })
    const pause = await cli(['rollout', appId, '--pause'])
    expect(pause.exitCode).toBe(0)
    expect(pause.stdout).toBe(`${appId} stable: 1.1.0 paused 30 %.\n`)
    expect(pause.stderr).toBe(`warning: ${unsignedPause(appId)} (FALLBACK_UNSIGNED)\n`)
    const revert = await cli(['rollout', appId, '--revert', '--json'])
    expect(revert.exitCode).toBe(0)
    expect(jsonDocument(revert)).toMatchObject({ name: 'stable', state: 'reverted', warnings: [{ code: 'FALLBACK_UNSIGNED', message: unsignedRevert(appId) }] })
    expect(revert.stderr).toBe(`warning: ${unsignedRevert(appId)} (FALLBACK_UNSIGNED)\n`)
  }, 30_000)

  test('every --json result of miniship rollout carries warnings: a pause and a pause again (nothing changed), a resume and a resume again, the same percent again', async () => {
    const appId = 'com.example.fallback.cli.shapes'
    await setUp(appId, { fallbackKey: null, requireSignature: true })
    const json = async (...flags: string[]) => {
      const run = await cli(['rollout', appId, ...flags, '--json'])
      expect(run.exitCode).toBe(0)
      return jsonDocument(run) as Record<string, unknown>
    }
    expect(await json('--pause')).toMatchObject({ state: 'paused', paused: true, warnings: [{ code: 'FALLBACK_UNSIGNED', message: unsignedPause(appId) }] })
    // already paused: the CLI answers from the channel as it is, with no change to warn of
    expect(await json('--pause')).toMatchObject({ state: 'paused', paused: false, warnings: [] })
    expect(await json('--resume')).toMatchObject({ state: 'rolling-out', resumed: true, warnings: [] })
    expect(await json('--resume')).toMatchObject({ state: 'rolling-out', resumed: false, warnings: [] })
    expect(await json('--percent', '30')).toMatchObject({ state: 'rolling-out', warnings: [] })
  }, 30_000)

  test('miniship rollout --percent lower than before prints the warning on stderr, and with --json as a warning entry', async () => {
    const appId = 'com.example.fallback.cli.lowered'
    await setUp(appId, { fallbackKey: null, requireSignature: true, rolloutPercent: 90 })
    const lowered = await cli(['rollout', appId, '--percent', '5'])
    expect(lowered.exitCode).toBe(0)
    expect(lowered.stdout).toBe(`${appId} stable: 1.1.0 rolling-out 5 %.\n`)
    expect(lowered.stderr).toBe(`warning: ${unsignedLowered(appId, 5)} (FALLBACK_UNSIGNED)\n`)
    const json = await cli(['rollout', appId, '--percent', '2', '--json'])
    expect(json.exitCode).toBe(0)
    expect(jsonDocument(json)).toMatchObject({ name: 'stable', state: 'rolling-out', warnings: [{ code: 'FALLBACK_UNSIGNED', message: unsignedLowered(appId, 2) }] })
    const raised = await cli(['rollout', appId, '--percent', '40', '--json'])
    expect(raised.stderr).toBe('')
    expect(jsonDocument(raised)).toMatchObject({ state: 'rolling-out', warnings: [] })
  }, 30_000)
})
