// Insights over HTTP: counting install info and downloads, device events, active devices, the report and its rules.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { statSync } from 'node:fs'
import { createTestContext, type TestContext } from '../../test-support'
import { defaultRateLimits, type Config } from '../../config'
import { createMiniApp, createTestUser, upload, uploadForm, type TestUser } from '../../test-fixtures'
import { resolveUrl } from '../runtime/test-runtime'
import { createTokenService } from '../auth/tokens'
import { deviceRetentionDays, failureMessageLimit, failuresPerVersion } from './service'

const access = '/api/mini-apps/access'
const day = 86_400_000

interface Setup {
  context: TestContext
  owner: TestUser
  miniAppId: string
  appId: string
}

/** A member whose token outlives the days these tests move the clock by (createTestUser's lasts an hour). */
async function longLivedUser(context: TestContext, role: 'ADMIN' | 'USER' = 'USER'): Promise<TestUser> {
  const user = await createTestUser(context, { role })
  const tokens = createTokenService(context.dataDir.secret, () => context.now.value, 365 * 86_400)
  return { ...user, token: await tokens.signAccess({ id: user.id, role, tokenVersion: 1 }) }
}

async function setUp(overrides: Partial<Config> = {}, appId = 'com.example.insights'): Promise<Setup> {
  const context = createTestContext(overrides)
  const owner = await longLivedUser(context)
  const miniApp = await createMiniApp(context, owner.token, appId)
  return { context, owner, miniAppId: miniApp.id, appId }
}

async function publishedVersion(setup: Setup, version: string, bundleIos?: string) {
  const res = await upload(setup.context, setup.owner.token, setup.appId, uploadForm(setup.appId, { version, bundleIos }))
  if (res.status !== 201) throw new Error(`upload failed: ${res.status} ${res.text}`)
  const published = await setup.context.call('POST', `/api/mini-apps/${setup.miniAppId}/versions/${res.body.id}/publish`, { token: setup.owner.token, json: {} })
  if (published.status !== 200) throw new Error(`publish failed: ${published.status} ${published.text}`)
  return res.body as { id: string; version: string; files: Record<string, { size: number; sha256: string }> }
}

async function fetchUrl(context: TestContext, url: string, init: { method?: string; headers?: Record<string, string> } = {}) {
  const response = await context.app.handle(new Request(resolveUrl('http://localhost/api', url), { method: init.method ?? 'GET', headers: init.headers }))
  await response.arrayBuffer()
  return response
}

const report = (setup: Setup, query = '', token = setup.owner.token) => setup.context.call('GET', `/api/mini-apps/${setup.miniAppId}/insights${query}`, { token })
const sendEvents = (context: TestContext, events: unknown[], headers: Record<string, string> = {}) => context.call('POST', `${access}/events`, { json: { events }, headers })
/** Every device hash the sketches hold (each version and day's, exact below 2,048 devices: 22 characters each). */
const storedHashes = (client: TestContext['dataDir']['db']['$client']) =>
  client
    .query<{ hashes: string | null }, []>('SELECT hashes FROM insight_device_sketches')
    .all()
    .flatMap((row) => (row.hashes ?? '').match(/.{22}/g) ?? [])
const versionOn = (body: { days: { day: string; versions: { versionId: string }[] }[] }, dayText: string, versionId: string) =>
  body.days.find((entry) => entry.day === dayText)?.versions.find((entry) => entry.versionId === versionId) as Record<string, any> | undefined

describe('a probe of the first byte before a download', () => {
  let setup: Setup
  beforeAll(async () => {
    setup = await setUp({}, 'com.example.probe')
  })
  afterAll(() => setup.context.close())

  test('bytes=0-0 then the whole file is one download; the probe\'s byte is in the bytes; bytes=0-1 is a download', async () => {
    const { context } = setup
    const version = await publishedVersion(setup, '1.0.0', 'x'.repeat(1000))
    const info = (await context.call('GET', `${access}/apps/${setup.appId}/release/install`)).body
    const probe = await fetchUrl(context, info.bundles.ios, { headers: { range: 'bytes=0-0' } })
    expect({ status: probe.status, range: probe.headers.get('content-range') }).toEqual({ status: 206, range: 'bytes 0-0/1000' })
    expect((await fetchUrl(context, info.bundles.ios)).status).toBe(200)
    const totals = context.app.store.insights.counters.totals
    expect({ downloads: totals.downloads.bundleIos, bytes: totals.downloadBytes.bundleIos }).toEqual({ downloads: 1, bytes: 1 + 1000 })
    expect(versionOn((await report(setup)).body, '2026-11-22', version.id)).toMatchObject({ downloads: { ios: 1, android: 0 } })
    // more than the first byte from byte 0 is the start of a download fetched in parts
    expect((await fetchUrl(context, info.bundles.ios, { headers: { range: 'bytes=0-1' } })).status).toBe(206)
    expect({ downloads: totals.downloads.bundleIos, bytes: totals.downloadBytes.bundleIos }).toEqual({ downloads: 2, bytes: 1 + 1000 + 2 })
    // a probe, then the rest from byte 1 (a client that keeps the probe's byte): one download
    expect((await fetchUrl(context, info.bundles.ios, { headers: { range: 'bytes=0-0' } })).status).toBe(206)
    const rest = await fetchUrl(context, info.bundles.ios, { headers: { range: 'bytes=1-' } })
    expect({ status: rest.status, range: rest.headers.get('content-range') }).toEqual({ status: 206, range: 'bytes 1-999/1000' })
    expect({ downloads: totals.downloads.bundleIos, bytes: totals.downloadBytes.bundleIos }).toEqual({ downloads: 3, bytes: 1 + 1000 + 2 + 1 + 999 })
  })
})

describe('counting install info and downloads', () => {
  let setup: Setup
  let version: Awaited<ReturnType<typeof publishedVersion>>
  beforeAll(async () => {
    setup = await setUp()
    version = await publishedVersion(setup, '1.0.0', 'x'.repeat(1000))
  })
  afterAll(() => setup.context.close())

  test('N install requests and M downloads show as exactly N and M; a resumed download counts once; HEAD, 304 and ranges after byte 0 are no download', async () => {
    const { context } = setup
    const installs = 7
    let info: any
    for (let i = 0; i < installs; i++) {
      const res = i % 2 ? await context.call('GET', `${access}/apps/${setup.appId}/release/install`) : await context.call('GET', `${access}/versions/${version.id}/install?token=${setup.owner.token}`)
      expect(res.status).toBe(200)
      info = res.body
    }
    const iosDownloads = 5
    const androidDownloads = 3
    for (let i = 0; i < iosDownloads - 2; i++) expect((await fetchUrl(context, info.bundles.ios)).status).toBe(200)
    // a download cancelled after its 200 began, then resumed where it stopped: one download, counted at its 200
    const cancelled = await context.app.handle(new Request(resolveUrl('http://localhost/api', info.bundles.ios)))
    expect(cancelled.status).toBe(200)
    await cancelled.body!.cancel()
    const resumed = await fetchUrl(context, info.bundles.ios, { headers: { range: 'bytes=900-' } })
    expect(resumed.status).toBe(206)
    // the whole file asked for as a range from byte 0 is a download too
    const fromStart = await fetchUrl(context, info.bundles.ios, { headers: { range: 'bytes=0-' } })
    expect(fromStart.status).toBe(206)
    for (let i = 0; i < androidDownloads; i++) expect((await fetchUrl(context, info.bundles.android)).status).toBe(200)
    // none of these is a download: a part after byte 0 (a resume, or a later segment), HEAD, 304
    const middle = await fetchUrl(context, info.bundles.ios, { headers: { range: 'bytes=10-99' } })
    expect(middle.status).toBe(206)
    expect((await fetchUrl(context, info.bundles.ios, { method: 'HEAD' })).status).toBe(200)
    expect((await fetchUrl(context, info.bundles.ios, { headers: { 'if-none-match': `"${version.files.bundleIos!.sha256}"` } })).status).toBe(304)
    // other files count in the metrics' per-kind figures, not as `downloads`
    expect((await fetchUrl(context, info.assetsUrl.ios)).status).toBe(200)
    expect((await fetchUrl(context, info.manifestUrl)).status).toBe(200)

    const res = await report(setup)
    expect(res.status).toBe(200)
    const today = '2026-11-22'
    expect(res.body.to).toBe(today)
    expect(res.body.from).toBe('2026-10-24')
    expect(res.body.days).toHaveLength(30)
    const row = versionOn(res.body, today, version.id)!
    expect(row).toMatchObject({ versionId: version.id, version: '1.0.0', installs, downloads: { ios: iosDownloads, android: androidDownloads }, failures: 0, activeDevices: 0 })
    expect(res.body.totals).toMatchObject({ installs, downloads: { ios: iosDownloads, android: androidDownloads }, failures: 0, activeDevices: 0 })
    const totals = context.app.store.insights.counters.totals
    expect(totals.downloads).toEqual({ bundleIos: iosDownloads, bundleAndroid: androidDownloads, manifest: 1, assetsIos: 1, assetsAndroid: 0 })
    // bytes: every byte answered (the cancelled 200's included), the 100-byte resume, the 90-byte middle range
    expect(totals.downloadBytes.bundleIos).toBe(5 * 1000 + 100 + 90)

    // a second report counts nothing twice: the flush added the counts once
    const again = await report(setup)
    expect(versionOn(again.body, today, version.id)).toMatchObject({ installs, downloads: { ios: iosDownloads, android: androidDownloads } })
  })

  test('counts land on the UTC day they happened; the window follows ?days=', async () => {
    const { context } = setup
    context.advance(day)
    expect((await context.call('GET', `${access}/apps/${setup.appId}/release/install`)).status).toBe(200)
    const res = await report(setup, '?days=2')
    expect(res.body.days.map((entry: { day: string }) => entry.day)).toEqual(['2026-11-22', '2026-11-23'])
    expect(versionOn(res.body, '2026-11-23', version.id)).toMatchObject({ installs: 1 })
    expect(versionOn(res.body, '2026-11-22', version.id)).toMatchObject({ installs: 7 })
    expect((await report(setup, '?days=1')).body.totals.installs).toBe(1)
    // the same version's counts filed under a channel it never had show nothing
    expect((await report(setup, '?channel=beta')).body.totals.installs).toBe(0)
    expect((await report(setup, '?channel=stable')).body.totals.installs).toBe(8)
  })

  test('bad queries and callers: 400 with details, 401, 404 for someone who cannot see the miniapp', async () => {
    for (const query of ['?days=0', '?days=91', '?days=abc', '?days=Infinity', '?days=0x10', '?days=1.5', '?days=-1', '?days=', '?channel=Beta!']) {
      const res = await report(setup, query)
      expect(res.status).toBe(400)
      expect(res.body.code).toBe('VALIDATION_ERROR')
      expect(res.body.details[0].field, query).toBe(query.startsWith('?days') ? 'days' : 'channel')
    }
    const anonymous = await setup.context.call('GET', `/api/mini-apps/${setup.miniAppId}/insights`)
    expect(anonymous.status).toBe(401)
    expect(anonymous.body.code).toBe('AUTH_REQUIRED')
    const stranger = await longLivedUser(setup.context)
    const hidden = await report(setup, '', stranger.token)
    expect(hidden.status).toBe(404)
    expect(hidden.body.code).toBe('MINI_APP_NOT_FOUND')
    const admin = await longLivedUser(setup.context, 'ADMIN')
    expect((await report(setup, '', admin.token)).status).toBe(200)
  })
})

describe('device events', () => {
  let setup: Setup
  let first: Awaited<ReturnType<typeof publishedVersion>>
  let second: Awaited<ReturnType<typeof publishedVersion>>
  let otherAppVersion: { id: string }
  beforeAll(async () => {
    setup = await setUp()
    first = await publishedVersion(setup, '1.0.0')
    second = await publishedVersion(setup, '1.1.0')
    const other: Setup = { ...setup, appId: 'com.example.other', miniAppId: (await createMiniApp(setup.context, setup.owner.token, 'com.example.other')).id }
    otherAppVersion = await publishedVersion(other, '9.0.0')
  })
  afterAll(() => setup.context.close())

  const event = (overrides: Record<string, unknown> = {}) => ({ appId: setup.appId, versionId: second.id, platform: 'ios', event: 'launched', ...overrides })

  test('each event counts on its own (decisions §13): unknown versions (and another app\'s) in the one `other` row, unknown apps and channels refused by index', async () => {
    const res = await sendEvents(setup.context, [
      event({ deviceId: 'device-a' }),
      event({ deviceId: 'device-b', platform: 'android', event: 'installed' }),
      event({ deviceId: 'device-a' }),
      event({ versionId: first.id, deviceId: 'device-c', event: 'rolled_back' }),
      event({ versionId: 'no-such-version' }),
      event({ appId: 'com.example.nothing' }),
      event({ versionId: otherAppVersion.id }),
      event({ versionId: undefined, version: '1.0.0', deviceId: 'device-d' }),
      event({ versionId: undefined, version: '7.7.7-made-up' }),
      event({ channel: 'made-up' }),
      event({ platform: 'windows' }),
    ])
    expect(res.status).toBe(202)
    expect(res.body).toEqual({
      accepted: 8,
      rejected: 3,
      counted: true,
      errors: [
        { index: 5, code: 'MINI_APP_NOT_FOUND', message: expect.any(String) },
        { index: 9, code: 'CHANNEL_NOT_FOUND', message: expect.stringContaining('made-up') },
        { index: 10, code: 'VALIDATION_ERROR', message: expect.stringContaining('events.10.platform') },
      ],
    })
    const body = (await report(setup)).body
    expect(versionOn(body, '2026-11-22', second.id)).toMatchObject({ launched: 2, installed: 1, activeDevices: 2 })
    expect(versionOn(body, '2026-11-22', first.id)).toMatchObject({ rolledBack: 1, launched: 1, activeDevices: 2 })
    const other = body.days.find((day: { day: string }) => day.day === '2026-11-22').versions.find((version: { versionId: string | null }) => version.versionId === null)
    expect(other).toMatchObject({ versionId: null, version: 'other', launched: 3 })
    expect(body.totals.activeDevices).toBe(4)
    // rows only for what the server knows: the app's versions and its one `other` row, of stable
    const client = setup.context.dataDir.db.$client
    expect(client.query<{ n: number }, []>("SELECT count(*) AS n FROM insight_counts WHERE version_id NOT IN (SELECT id FROM versions) AND version_id NOT LIKE 'other:%'").get()!.n).toBe(0)
    expect(client.query<{ channel: string }, []>('SELECT DISTINCT channel FROM insight_counts').all()).toEqual([{ channel: 'stable' }])
    expect(setup.context.app.store.insights.counters.totals.rejectedEvents).toBe(3)
    // a stream of made-up versions adds no row
    const before = client.query<{ n: number }, []>('SELECT count(*) AS n FROM insight_counts').get()!.n
    await sendEvents(setup.context, Array.from({ length: 100 }, (_, index) => event({ versionId: undefined, version: `9.9.${index}` })))
    setup.context.app.store.insights.flush()
    expect(client.query<{ n: number }, []>('SELECT count(*) AS n FROM insight_counts').get()!.n).toBe(before)
  })

  test('device ids are stored only as a keyed hash, never as sent', async () => {
    const deviceId = 'sent-device-id-1234'
    expect((await sendEvents(setup.context, [event({ deviceId })])).status).toBe(202)
    setup.context.app.store.insights.flush()
    const client = setup.context.dataDir.db.$client
    const hashes = storedHashes(client)
    expect(hashes.length).toBeGreaterThan(0)
    for (const hash of hashes) {
      expect(hash).not.toContain(deviceId)
      expect(hash).not.toContain('device-a')
      expect(hash).toMatch(/^[A-Za-z0-9_-]{22}$/)
    }
    // nothing anywhere in the database holds the id as sent
    const dump = client.query<{ value: string }, []>("SELECT group_concat(coalesce(hashes, '') || version_id || day, '|') AS value FROM insight_device_sketches").get()!.value
    expect(dump).not.toContain(deviceId)
    // the key is a file of the data directory only its owner reads
    expect(statSync(setup.context.dataDir.paths.insightsKey).mode & 0o777).toBe(0o600)
  })

  test('failures: counted, their messages cut to length, the last few kept per version and channel, newest first', async () => {
    const long = 'boom '.repeat(200)
    const events = Array.from({ length: failuresPerVersion + 5 }, (_, index) => event({ event: 'failed', message: index === failuresPerVersion + 4 ? long : `failure ${index}`, at: '2026-11-22T09:00:00.000Z' }))
    expect((await sendEvents(setup.context, events)).body).toEqual({ accepted: failuresPerVersion + 5, rejected: 0, errors: [], counted: true })
    const body = (await report(setup)).body
    expect(versionOn(body, '2026-11-22', second.id)!.failures).toBe(failuresPerVersion + 5)
    expect(body.recentFailures).toHaveLength(20)
    expect(body.recentFailures[0]).toEqual({ versionId: second.id, version: '1.1.0', platform: 'ios', channel: 'stable', message: long.slice(0, failureMessageLimit), at: '2026-11-22T09:00:00.000Z' })
    expect(body.recentFailures[1].message).toBe(`failure ${failuresPerVersion + 3}`)
    const kept = setup.context.dataDir.db.$client.query<{ n: number }, [string]>('SELECT count(*) AS n FROM insight_failures WHERE version_id = ?').get(second.id)!.n
    expect(kept).toBe(failuresPerVersion)
    // an `at` in the future is not believed
    await sendEvents(setup.context, [event({ event: 'failed', message: 'from the future', at: '2030-01-01T00:00:00Z' })])
    expect((await report(setup)).body.recentFailures[0]).toMatchObject({ message: 'from the future', at: '2026-11-22T10:00:00.000Z' })
  })

  test('a failure message is cut to 500 characters (code points), as every text limit: never inside an emoji, and emoji count one each', async () => {
    // 301 characters in 601 UTF-16 units: kept whole; 'x' + 600 emoji: 500 characters, the last emoji whole
    const short = `x${'🔥'.repeat(300)}`
    const long = `x${'🔥'.repeat(600)}`
    await sendEvents(setup.context, [event({ event: 'failed', message: short }), event({ event: 'failed', message: long })])
    const [newest, before] = (await report(setup)).body.recentFailures as { message: string }[]
    expect(before!.message).toBe(short)
    expect(newest!.message).toBe(`x${'🔥'.repeat(499)}`)
  })

  test('a bad event is refused on its own with VALIDATION_ERROR naming its field; a bad body is 400', async () => {
    const refused: [Record<string, unknown>, string][] = [
      [event({ platform: 'windows' }), 'events.1.platform'],
      [event({ event: 'exploded' }), 'events.1.event'],
      [event({ appId: undefined }), 'events.1.appId'],
      [event({ at: 'yesterday' }), 'events.1.at'],
      [event({ versionId: undefined }), 'events.1.version'],
      [event({ channel: 'Not A Channel' }), 'events.1.channel'],
    ]
    // a deviceId of the wrong form is refused with its own code (decisions §18)
    const longId = await sendEvents(setup.context, [event(), event({ deviceId: 'd'.repeat(201) })])
    expect(longId.body.errors).toEqual([{ index: 1, code: 'INVALID_DEVICE_ID', message: expect.stringMatching(/^events\.1\.deviceId/) }])
    for (const [bad, field] of refused) {
      const res = await sendEvents(setup.context, [event(), bad])
      expect({ field, status: res.status, body: res.body }).toEqual({ field, status: 202, body: { accepted: 1, rejected: 1, errors: [{ index: 1, code: 'VALIDATION_ERROR', message: expect.stringMatching(new RegExp(`^${field.replace('.', '\\.')}`)) }], counted: true } })
    }
    const cases: [unknown, string][] = [
      [{ events: [] }, 'events'],
      [{}, 'events'],
    ]
    for (const [body, field] of cases) {
      const res = await setup.context.call('POST', `${access}/events`, { json: body })
      expect(res.status).toBe(400)
      expect(res.body.code).toBe('VALIDATION_ERROR')
      expect(res.body.details.map((detail: { field: string }) => detail.field)).toContain(field)
    }
    // not a list at all
    const notList = await setup.context.call('POST', `${access}/events`, { json: { events: 42 } })
    expect(notList.status).toBe(400)
    expect(notList.body.code).toBe('VALIDATION_ERROR')
    expect(notList.body.details[0].field).toStartWith('events')
    const notJson = await setup.context.call('POST', `${access}/events`, { body: '{"events": [', headers: { 'content-type': 'application/json' } })
    expect(notJson.status).toBe(400)
    expect(notJson.body.code).toBe('INVALID_JSON')
  })

  test('101 events are 400; 100 are accepted', async () => {
    const tooMany = await sendEvents(setup.context, Array.from({ length: 101 }, () => event()))
    expect(tooMany.status).toBe(400)
    expect(tooMany.body.code).toBe('VALIDATION_ERROR')
    expect(tooMany.body.details[0].field).toBe('events')
    const hundred = await sendEvents(setup.context, Array.from({ length: 100 }, () => event()))
    expect(hundred.status).toBe(202)
    expect(hundred.body).toEqual({ accepted: 100, rejected: 0, errors: [], counted: true })
  })

  test('a body over 64 KB is 413 PAYLOAD_TOO_LARGE before it is read', async () => {
    const body = JSON.stringify({ events: [event({ message: 'x'.repeat(70 * 1024) })] })
    const res = await setup.context.call('POST', `${access}/events`, { body, headers: { 'content-type': 'application/json', 'content-length': String(body.length) } })
    expect(res.status).toBe(413)
    expect(res.body.code).toBe('PAYLOAD_TOO_LARGE')
    expect(res.body.message).toContain('64 KB')
  })
})

test('events are rate-limited per client address: 429 with Retry-After', async () => {
  const setup = await setUp({ rateLimit: true, trustProxy: true, rateLimits: { ...defaultRateLimits, events: 3 } })
  try {
    const version = await publishedVersion(setup, '1.0.0')
    const one = [{ appId: setup.appId, versionId: version.id, platform: 'android', event: 'launched' }]
    for (let i = 0; i < 3; i++) expect((await sendEvents(setup.context, one, { 'x-forwarded-for': '203.0.113.7' })).status).toBe(202)
    const limited = await sendEvents(setup.context, one, { 'x-forwarded-for': '203.0.113.7' })
    expect(limited.status).toBe(429)
    expect(limited.body.code).toBe('RATE_LIMITED')
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0)
    // a bad body from the same address is limited too, and another address is not
    const bad = await setup.context.call('POST', `${access}/events`, { json: { events: 'x' }, headers: { 'x-forwarded-for': '203.0.113.7' } })
    expect(bad.status).toBe(429)
    expect((await sendEvents(setup.context, one, { 'x-forwarded-for': '203.0.113.8' })).status).toBe(202)
    setup.context.advance(61_000)
    expect((await sendEvents(setup.context, one, { 'x-forwarded-for': '203.0.113.7' })).status).toBe(202)
  } finally {
    setup.context.close()
  }
})

test('adoption: the current release’s share of the devices seen on the latest day', async () => {
  const setup = await setUp()
  try {
    const old = await publishedVersion(setup, '1.0.0')
    const current = await publishedVersion(setup, '2.0.0')
    const events = [
      ...['a', 'b', 'c'].map((device) => ({ appId: setup.appId, versionId: current.id, platform: 'ios', event: 'launched', deviceId: device })),
      { appId: setup.appId, versionId: old.id, platform: 'android', event: 'launched', deviceId: 'd' },
    ]
    expect((await sendEvents(setup.context, events)).body).toEqual({ accepted: 4, rejected: 0, errors: [], counted: true })
    let body = (await report(setup)).body
    expect(body.adoption).toEqual({ versionId: current.id, share: 0.75, day: '2026-11-22', devices: 4 })
    // the next day nobody has been seen yet: the share is still the latest day's
    setup.context.advance(day)
    body = (await report(setup)).body
    expect(body.adoption).toEqual({ versionId: current.id, share: 0.75, day: '2026-11-22', devices: 4 })
    // a device that moved from the old version to the current one counts once on that day
    await sendEvents(setup.context, [events[3]!, { ...events[3]!, versionId: current.id }])
    body = (await report(setup)).body
    expect(body.adoption).toEqual({ versionId: current.id, share: 1, day: '2026-11-23', devices: 1 })
    expect(body.totals.activeDevices).toBe(4)
  } finally {
    setup.context.close()
  }
})

test('an app without any data answers every day empty, no adoption, no failures', async () => {
  const setup = await setUp()
  try {
    const body = (await report(setup, '?days=7')).body
    expect(body.days).toHaveLength(7)
    expect(body.days.every((entry: { versions: unknown[] }) => entry.versions.length === 0)).toBe(true)
    expect(body.totals).toEqual({ downloads: { ios: 0, android: 0 }, installInfoRequests: 0, installs: 0, installed: 0, launched: 0, failures: 0, rolledBack: 0, activeDevices: 0, updateChecks: 0 })
    expect(body.adoption).toEqual({ versionId: null, share: 0, day: null, devices: 0 })
    expect(body.recentFailures).toEqual([])
  } finally {
    setup.context.close()
  }
})

test('active devices are kept 90 days: the prune drops older days; a deleted draft’s rows went to the other row, which the prune keeps', async () => {
  const setup = await setUp()
  try {
    const version = await publishedVersion(setup, '1.0.0')
    await sendEvents(setup.context, [{ appId: setup.appId, versionId: version.id, platform: 'ios', event: 'launched', deviceId: 'old-device' }])
    const draft = await upload(setup.context, setup.owner.token, setup.appId, uploadForm(setup.appId, { version: '1.1.0' }))
    await sendEvents(setup.context, [{ appId: setup.appId, versionId: draft.body.id, platform: 'ios', event: 'failed', deviceId: 'x', message: 'm' }])
    const { insights } = setup.context.app.store
    insights.flush()
    expect((await setup.context.call('DELETE', `/api/mini-apps/${setup.miniAppId}/versions/${draft.body.id}`, { token: setup.owner.token })).status).toBe(200)
    const count = (table: string) => setup.context.dataDir.db.$client.query<{ n: number }, []>(`SELECT count(*) AS n FROM ${table}`).get()!.n
    // the draft's count, devices and failure were moved to the other row when it was deleted
    expect(insights.prune()).toEqual({ deviceDays: 0, orphans: 0, compacted: 0 })
    expect(count('insight_device_sketches')).toBe(2)
    // a row of a version deleted before its rows were moved (an older server) is still pruned
    setup.context.dataDir.db.$client.run("INSERT INTO insight_failures (version_id, mini_app_id, platform, message, at) VALUES ('gone-version', ?, 'ios', 'm', '2026-11-22T10:00:00.000Z')", [setup.miniAppId])
    expect(insights.prune().orphans).toBe(1)
    setup.context.advance((deviceRetentionDays - 1) * day)
    expect(insights.prune().deviceDays).toBe(0)
    setup.context.advance(day)
    expect(insights.prune().deviceDays).toBe(2)
    expect(count('insight_device_sketches')).toBe(0)
    // the counts themselves stay
    expect(count('insight_counts')).toBe(2)
  } finally {
    setup.context.close()
  }
})

test('with --insights off nothing is counted, and the events answer says so (counted: false); the release guard still hears them', async () => {
  const setup = await setUp({ insights: false })
  try {
    const version = await publishedVersion(setup, '1.0.0')
    const info = (await setup.context.call('GET', `${access}/apps/${setup.appId}/release/install`)).body
    expect((await fetchUrl(setup.context, info.bundles.ios)).status).toBe(200)
    const sent = await sendEvents(setup.context, [
      { appId: setup.appId, versionId: version.id, platform: 'ios', event: 'launched', deviceId: 'd' },
      { appId: setup.appId, versionId: version.id, platform: 'ios', event: 'launched', channel: 'made-up' },
    ])
    expect(sent.status).toBe(202)
    // each event is still checked (the guard reads the valid ones); none is counted in insights or metrics
    expect(sent.body).toEqual({ accepted: 1, rejected: 1, errors: [{ index: 1, code: 'CHANNEL_NOT_FOUND', message: expect.any(String) }], counted: false })
    const body = (await report(setup)).body
    expect(body.totals).toEqual({ downloads: { ios: 0, android: 0 }, installInfoRequests: 0, installs: 0, installed: 0, launched: 0, failures: 0, rolledBack: 0, activeDevices: 0, updateChecks: 0 })
    expect(body.recentFailures).toEqual([])

    // the guard pauses a failing rollout whether or not insights are on
    const next = await upload(setup.context, setup.owner.token, setup.appId, uploadForm(setup.appId, { version: '1.1.0' }))
    expect((await setup.context.call('PATCH', `/api/mini-apps/${setup.miniAppId}/channels/stable`, { token: setup.owner.token, json: { guard: { enabled: true, minDevices: 2 } } })).status).toBe(200)
    expect((await setup.context.call('POST', `/api/mini-apps/${setup.miniAppId}/versions/${next.body.id}/publish`, { token: setup.owner.token, json: { rolloutPercent: 50 } })).status).toBe(200)
    const failing = await sendEvents(setup.context, ['x', 'y'].map((deviceId) => ({ appId: setup.appId, versionId: next.body.id, platform: 'ios', event: 'failed', deviceId })))
    expect(failing.body).toMatchObject({ accepted: 2, counted: false })
    setup.context.app.store.insights.flush()
    const channels = await setup.context.call('GET', `/api/mini-apps/${setup.miniAppId}/channels`, { token: setup.owner.token })
    expect(channels.body.channels.find((channel: { name: string }) => channel.name === 'stable')).toMatchObject({ state: 'paused', release: { pausedBy: 'release-guard' } })
    expect((await report(setup)).body.recentFailures).toEqual([])
  } finally {
    setup.context.close()
  }
})

test('update checks count per platform and channel, and their device ids make active devices, whether or not an update is offered', async () => {
  const setup = await setUp()
  try {
    const old = await publishedVersion(setup, '1.0.0')
    const current = await publishedVersion(setup, '1.1.0')
    const check = (platform: string, currentVersion: string, deviceId?: string) =>
      setup.context.call('GET', `${access}/apps/${setup.appId}/update?platform=${platform}&currentVersion=${currentVersion}${deviceId ? `&deviceId=${deviceId}` : ''}`)
    const offered = await check('ios', '1.0.0', 'phone-1')
    expect(offered.status).toBe(200)
    expect(offered.body.updateAvailable).toBe(true)
    const upToDate = await check('android', '1.1.0', 'phone-2')
    expect(upToDate.body).toEqual({ updateAvailable: false })
    await check('android', '1.1.0', 'phone-2')
    await check('android', '1.1.0')
    // a bad check is not counted
    expect((await check('windows', '1.0.0', 'phone-3')).status).toBe(400)
    // release install with a device id counts the device too
    expect((await setup.context.call('GET', `${access}/apps/${setup.appId}/release/install?deviceId=phone-4`)).status).toBe(200)
    const body = (await report(setup)).body
    // every check is filed under the version the device runs; a version that is no release in the `other` row (decisions §13)
    expect(versionOn(body, '2026-11-22', current.id)).toMatchObject({ updateChecks: 3, installs: 1, activeDevices: 2 })
    expect(versionOn(body, '2026-11-22', old.id)).toMatchObject({ updateChecks: 1, activeDevices: 1 })
    expect((await check('ios', '0.9.0', 'phone-5')).body.updateAvailable).toBe(true)
    expect(body.totals.updateChecks).toBe(4)
    expect(setup.context.app.store.insights.counters.totals.updateChecks).toBe(5)
    const after = (await report(setup)).body
    expect(after.totals).toMatchObject({ updateChecks: 5, activeDevices: 4 })
    expect(after.days.at(-1).versions.at(-1)).toMatchObject({ versionId: null, version: 'other', updateChecks: 1, activeDevices: 1 })
    const platforms = setup.context.dataDir.db.$client
      .query<{ platform: string; checks: number }, []>('SELECT platform, sum(update_checks) AS checks FROM insight_counts GROUP BY platform ORDER BY platform')
      .all()
    expect(platforms).toEqual([{ platform: 'android', checks: 3 }, { platform: 'ios', checks: 2 }, { platform: 'unknown', checks: 0 }])
  } finally {
    setup.context.close()
  }
})

test("the update check's downloads count under the device's channel; a made-up channel in a URL counts under stable and still downloads", async () => {
  const setup = await setUp({}, 'com.example.pinned')
  try {
    const { context } = setup
    expect((await context.call('POST', `/api/mini-apps/${setup.miniAppId}/channels`, { token: setup.owner.token, json: { name: 'beta' } })).status).toBe(201)
    const version = await publishedVersion(setup, '1.0.0')
    expect((await context.call('POST', `/api/mini-apps/${setup.miniAppId}/versions/${version.id}/publish`, { token: setup.owner.token, json: { channel: 'beta' } })).status).toBe(200)
    const offered = async (channel: string) => {
      const res = await context.call('GET', `${access}/apps/${setup.appId}/update?platform=ios&currentVersion=0.1.0&deviceId=phone-1&channel=${channel}`)
      expect(res.body.install.versionId).toBe(version.id)
      return res.body.install
    }
    const beta = await offered('beta')
    expect(beta.bundles.ios).toEndWith('&channel=beta')
    const stable = await offered('stable')
    expect(stable.bundles.ios).not.toContain('channel=')
    expect((await fetchUrl(context, beta.bundles.ios)).status).toBe(200)
    expect((await fetchUrl(context, beta.bundles.android)).status).toBe(200)
    expect((await fetchUrl(context, beta.bundles.android, { method: 'HEAD' })).status).toBe(200)
    expect((await fetchUrl(context, stable.bundles.ios)).status).toBe(200)
    for (const madeUp of ['nope', 'Bad!', '', 'a'.repeat(300)]) {
      expect((await fetchUrl(context, `${stable.bundles.android}&channel=${encodeURIComponent(madeUp)}`)).status).toBe(200)
    }
    await report(setup)
    const rows = context.dataDir.db.$client
      .query<{ channel: string; platform: string; downloads: number }, []>('SELECT channel, platform, downloads FROM insight_counts WHERE downloads > 0 ORDER BY channel, platform')
      .all()
    expect(rows).toEqual([
      { channel: 'beta', platform: 'android', downloads: 1 },
      { channel: 'beta', platform: 'ios', downloads: 1 },
      { channel: 'stable', platform: 'android', downloads: 4 },
      { channel: 'stable', platform: 'ios', downloads: 1 },
    ])
  } finally {
    setup.context.close()
  }
})

test('many devices at once: each stored once per version and day as HMAC-SHA256 with insights.key, whatever the flushes', async () => {
  const setup = await setUp()
  try {
    const version = await publishedVersion(setup, '1.0.0')
    // several flushes' worth, counted exactly (below the sketch's 2,048)
    const deviceIds = Array.from({ length: 1250 }, (_, index) => `fleet-device-${index}`)
    const send = (ids: string[]) => sendEvents(setup.context, ids.map((deviceId) => ({ appId: setup.appId, versionId: version.id, platform: 'ios', event: 'launched', deviceId })))
    for (let start = 0; start < deviceIds.length; start += 100) expect((await send(deviceIds.slice(start, start + 100))).status).toBe(202)
    const { insights } = setup.context.app.store
    insights.flush()
    // the same devices again, and some new ones: only the new ones are added
    await send(deviceIds.slice(0, 100))
    await send(['late-device-1', 'late-device-2'])
    insights.flush()
    const client = setup.context.dataDir.db.$client
    const stored = storedHashes(client)
    expect(stored).toHaveLength(1252)
    const key = (await Bun.file(setup.context.dataDir.paths.insightsKey).text()).trim()
    const { createHmac } = await import('node:crypto')
    const expected = (deviceId: string) => createHmac('sha256', key).update(deviceId).digest('base64url').slice(0, 22)
    expect(new Set(stored)).toEqual(new Set([...deviceIds, 'late-device-1', 'late-device-2'].map(expected)))
    expect((await report(setup)).body.totals.activeDevices).toBe(1252)
  } finally {
    setup.context.close()
  }
})

test('past 2,048 devices of a version and day the count is estimated within about 1 %, and devices seen again add nothing', async () => {
  const setup = await setUp()
  try {
    const first = await publishedVersion(setup, '1.0.0')
    const second = await publishedVersion(setup, '1.1.0')
    const send = async (versionId: string, ids: string[]) => {
      for (let start = 0; start < ids.length; start += 100) {
        const batch = ids.slice(start, start + 100).map((deviceId) => ({ appId: setup.appId, versionId, platform: 'android', event: 'launched', deviceId }))
        expect((await sendEvents(setup.context, batch)).status).toBe(202)
      }
    }
    const fleet = Array.from({ length: 3000 }, (_, index) => `fleet-${index}`)
    await send(first.id, fleet)
    const { insights } = setup.context.app.store
    insights.flush()
    // the second version: 500 of the same devices and 500 others (exact, below the limit)
    await send(second.id, [...fleet.slice(0, 500), ...Array.from({ length: 500 }, (_, index) => `other-${index}`)])
    insights.flush()
    const within = (value: number, expected: number) => expect(Math.abs(value - expected) / expected).toBeLessThan(0.025)
    const body = (await report(setup)).body
    const today = body.days.at(-1).day
    const devicesOf = (answer: typeof body, versionId: string) => versionOn(answer, today, versionId)!.activeDevices
    within(devicesOf(body, first.id), 3000)
    expect(devicesOf(body, second.id)).toBe(1000)
    within(body.totals.activeDevices, 3500)
    // the first version's sketch is registers now: no hash of a device in it, 16,384 bytes
    const rows = setup.context.dataDir.db.$client.query<{ versionId: string; hashes: string | null; registers: Uint8Array | null }, []>('SELECT version_id AS versionId, hashes, registers FROM insight_device_sketches').all()
    const ofFirst = rows.find((row) => row.versionId === first.id)!
    expect(ofFirst.hashes).toBeNull()
    expect(ofFirst.registers).toHaveLength(16384)
    // the whole fleet again: the same estimate
    await send(first.id, fleet)
    insights.flush()
    const again = (await report(setup)).body
    expect(devicesOf(again, first.id)).toBe(devicesOf(body, first.id))
    expect(again.totals.activeDevices).toBe(body.totals.activeDevices)
  } finally {
    setup.context.close()
  }
})
