// Webhooks over HTTP (decisions §16): who may manage them, the address rule, signed deliveries to a real receiver, retries, restarts, slack.
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test'
import { createHmac } from 'node:crypto'
import { rmSync } from 'node:fs'
import type { Server } from 'bun'
import { Database } from 'bun:sqlite'
import { createApp } from '../../app'
import { openDataDir } from '../../data-dir'
import { createTestContext, type TestContext } from '../../test-support'
import { createMiniApp, createTestUser, upload, uploadForm, type TestUser } from '../../test-fixtures'
import { isPublicAddress, pinnedTarget } from './address'
import { createTokenService } from '../auth/tokens'
import { releaseGuardActor, slackText } from './service'
import { guardPauseText } from '../channels/guard-text'

interface Received {
  path: string
  headers: Headers
  body: string
}

/** A webhook receiver on 127.0.0.1 that records what it gets and answers with the statuses it is given (200 once they run out). */
function startReceiver() {
  const received: Received[] = []
  const statuses: number[] = []
  const server: Server<undefined> = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(request) {
      const url = new URL(request.url)
      received.push({ path: url.pathname, headers: request.headers, body: await request.text() })
      const status = statuses.shift() ?? 200
      if (status >= 300 && status < 400) return new Response(null, { status, headers: { location: `http://127.0.0.1:${server.port}/redirected` } })
      return new Response(status < 300 ? 'ok' : 'no', { status })
    },
  })
  return { url: (path = '/hook') => `http://127.0.0.1:${server.port}${path}`, port: server.port!, received, statuses, stop: () => server.stop(true) }
}

const hmac = (secret: string, body: string) => `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`

async function setUpApp(context: TestContext, appId = 'com.example.hooks') {
  const owner = await createTestUser(context)
  const miniApp = await createMiniApp(context, owner.token, appId)
  return { owner, miniAppId: miniApp.id as string, appId }
}

async function uploadVersion(context: TestContext, token: string, appId: string, version: string): Promise<string> {
  const res = await upload(context, token, appId, uploadForm(appId, { version }))
  if (res.status !== 201) throw new Error(`upload failed: ${res.status} ${res.text}`)
  return res.body.id
}

describe('the address rule', () => {
  const refused = [
    ['IPv4 loopback', 'http://127.0.0.1/hook'],
    ['IPv4 loopback, elsewhere in 127/8', 'http://127.8.9.10/hook'],
    ['IPv4 loopback written as one number', 'http://2130706433/hook'],
    ['private 10/8', 'http://10.1.2.3/hook'],
    ['private 172.16/12', 'http://172.31.255.1/hook'],
    ['private 192.168/16', 'https://192.168.0.10/hook'],
    ['link-local and the cloud metadata address', 'http://169.254.169.254/latest/meta-data/'],
    ['carrier-grade NAT 100.64/10', 'http://100.100.100.100/hook'],
    ['unspecified 0.0.0.0', 'http://0.0.0.0:3001/hook'],
    ['multicast', 'http://239.1.2.3/hook'],
    ['broadcast', 'http://255.255.255.255/hook'],
    ['IPv6 loopback ::1', 'http://[::1]:3001/hook'],
    ['IPv6 unspecified ::', 'http://[::]/hook'],
    ['IPv6 unique-local fc00::/7', 'http://[fc00::1]/hook'],
    ['IPv6 unique-local fd…', 'http://[fd12:3456::1]/hook'],
    ['the AWS IPv6 metadata address fd00:ec2::254', 'http://[fd00:ec2::254]/latest'],
    ['IPv6 link-local fe80::/10', 'http://[fe80::1]/hook'],
    ['IPv6 multicast', 'http://[ff02::1]/hook'],
    ['IPv4-mapped IPv6 of loopback', 'http://[::ffff:127.0.0.1]/hook'],
    ['IPv4-mapped IPv6 of a private address', 'http://[::ffff:10.0.0.1]/hook'],
    ['NAT64 of loopback', 'http://[64:ff9b::7f00:1]/hook'],
    ['IPv4-compatible IPv6 of loopback', 'http://[::127.0.0.1]/hook'],
    ['IPv4-compatible IPv6 of the metadata address', 'http://[::169.254.169.254]/latest'],
    ['a name that resolves to loopback', 'http://localhost:3001/hook'],
  ] as const
  let context: TestContext
  let owner: TestUser
  let miniAppId: string
  beforeAll(async () => {
    context = createTestContext()
    ;({ owner, miniAppId } = await setUpApp(context))
  })
  afterAll(() => context.close())

  for (const [name, url] of refused) {
    test(`${name} (${url}) is refused at creation: 400 WEBHOOK_URL_NOT_ALLOWED`, async () => {
      const res = await context.call('POST', `/api/mini-apps/${miniAppId}/webhooks`, { token: owner.token, json: { url } })
      expect(res.status).toBe(400)
      expect(res.body.code).toBe('WEBHOOK_URL_NOT_ALLOWED')
      expect(res.body.message).toContain('--webhooks-allow-private')
      // a name's resolved address is not told (creation is no DNS lookup of internal names)
      if (url.includes('localhost')) expect(res.text).not.toContain('127.0.0.1')
    })
  }

  for (const url of ['ftp://example.com/hook', 'file:///etc/passwd', 'javascript:alert(1)', 'gopher://example.com/']) {
    test(`a URL that is not http(s) (${url}) is refused: 400 WEBHOOK_URL_NOT_ALLOWED`, async () => {
      const res = await context.call('POST', `/api/mini-apps/${miniAppId}/webhooks`, { token: owner.token, json: { url } })
      expect(res.status).toBe(400)
      expect(res.body.code).toBe('WEBHOOK_URL_NOT_ALLOWED')
    })
  }

  test('something that is not a URL, credentials in the URL, an unknown event, an empty event list and an unknown format are 400 VALIDATION_ERROR', async () => {
    for (const json of [
      { url: 'not a url' },
      { url: 'https://user:pass@93.184.216.34/hook' },
      { url: 'https://93.184.216.34/hook', events: ['release.exploded'] },
      { url: 'https://93.184.216.34/hook', events: [] },
      { url: 'https://93.184.216.34/hook', format: 'xml' },
      { events: ['release.published'] },
    ]) {
      const res = await context.call('POST', `/api/mini-apps/${miniAppId}/webhooks`, { token: owner.token, json })
      expect({ json, status: res.status, code: res.body.code }).toEqual({ json, status: 400, code: 'VALIDATION_ERROR' })
    }
  })

  test('a URL over 2000 characters once percent-encoded (900 emoji in its path: 1822 as sent, 10,822 stored) is 400 VALIDATION_ERROR; 2000 written out is taken', async () => {
    const emoji = `https://93.184.216.34/${'\u{1F600}'.repeat(900)}`
    const refused = await context.call('POST', `/api/mini-apps/${miniAppId}/webhooks`, { token: owner.token, json: { url: emoji } })
    expect({ status: refused.status, code: refused.body.code, fields: refused.body.details?.map((detail: { field: string }) => detail.field) }).toEqual({ status: 400, code: 'VALIDATION_ERROR', fields: ['url'] })
    expect(refused.body.message).toContain('10822')
    const longest = 'https://93.184.216.34/' + 'a'.repeat(2000 - 'https://93.184.216.34/'.length)
    const taken = await context.call('POST', `/api/mini-apps/${miniAppId}/webhooks`, { token: owner.token, json: { url: longest } })
    expect(taken.status).toBe(201)
    expect(taken.body.url.length).toBe(2000)
    await context.call('DELETE', `/api/mini-apps/${miniAppId}/webhooks/${taken.body.id}`, { token: owner.token })
  })

  test('a VALIDATION_ERROR about the URL names the field in details, as every validation error does (decisions §1)', async () => {
    for (const url of ['not a url', 'https://user:pass@93.184.216.34/hook']) {
      const res = await context.call('POST', `/api/mini-apps/${miniAppId}/webhooks`, { token: owner.token, json: { url } })
      expect({ url, status: res.status, code: res.body.code, fields: res.body.details?.map((detail: { field: string }) => detail.field) }).toEqual({ url, status: 400, code: 'VALIDATION_ERROR', fields: ['url'] })
    }
  })

  test('public addresses (IPv4, IPv6, IPv4-mapped of a public one) are accepted', async () => {
    for (const url of ['https://93.184.216.34/hook', 'http://[2606:2800:220:1:248:1893:25c8:1946]/hook', 'http://[::ffff:93.184.216.34]/hook']) {
      const res = await context.call('POST', `/api/mini-apps/${miniAppId}/webhooks`, { token: owner.token, json: { url } })
      expect({ url, status: res.status }).toEqual({ url, status: 201 })
    }
  })

  test('isPublicAddress: only global unicast', () => {
    const table: [string, boolean][] = [
      ['8.8.8.8', true],
      ['2001:4860:4860::8888', true],
      ['::ffff:8.8.8.8', true],
      ['127.0.0.1', false],
      ['10.0.0.1', false],
      ['172.16.0.1', false],
      ['192.168.1.1', false],
      ['169.254.169.254', false],
      ['100.64.0.1', false],
      ['0.0.0.0', false],
      ['224.0.0.1', false],
      ['::1', false],
      ['::', false],
      ['fc00::1', false],
      ['fd00:ec2::254', false],
      ['fe80::1', false],
      ['ff02::1', false],
      ['::ffff:127.0.0.1', false],
      ['::ffff:169.254.169.254', false],
      ['::7f00:1', false],
      ['::a00:1', false],
      ['::808:808', false],
      ['2002:7f00:1::1', false],
      ['not an address', false],
    ]
    for (const [address, allowed] of table) expect({ address, allowed: isPublicAddress(address) }).toEqual({ address, allowed })
  })
})

describe('test deliveries are limited', () => {
  test('a webhook takes 5 test deliveries a minute, then 429 RATE_LIMITED with Retry-After; another webhook has its own budget; a minute later it takes tests again', async () => {
    const context = createTestContext({ rateLimit: true })
    const { owner, miniAppId } = await setUpApp(context)
    const create = async () => (await context.call('POST', `/api/mini-apps/${miniAppId}/webhooks`, { token: owner.token, json: { url: 'https://93.184.216.34/hook' } })).body.id as string
    const [first, second] = [await create(), await create()]
    const test = (id: string) => context.call('POST', `/api/mini-apps/${miniAppId}/webhooks/${id}/test`, { token: owner.token })
    for (let index = 0; index < 5; index++) expect((await test(first)).status).toBe(200)
    const refused = await test(first)
    expect(refused.status).toBe(429)
    expect(refused.body.code).toBe('RATE_LIMITED')
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0)
    expect((await test(second)).status).toBe(200)
    context.advance(61_000)
    expect((await test(first)).status).toBe(200)
    const queued = context.dataDir.db.$client.query<{ n: number }, []>("SELECT count(*) AS n FROM webhook_deliveries WHERE event = 'webhook.test'").get()!.n
    expect(queued).toBe(7)
    context.close()
  })
})

describe('managing webhooks', () => {
  let context: TestContext
  let owner: TestUser
  let miniAppId: string
  beforeAll(async () => {
    context = createTestContext()
    ;({ owner, miniAppId } = await setUpApp(context))
  })
  afterAll(() => context.close())
  const base = () => `/api/mini-apps/${miniAppId}/webhooks`

  test('create shows the secret once; list, deliveries and the audit log never show it; delete removes it', async () => {
    const created = await context.call('POST', base(), { token: owner.token, json: { url: 'https://93.184.216.34/hook', events: ['release.published', 'rollout.paused'], format: 'slack' } })
    expect(created.status).toBe(201)
    expect(created.body).toMatchObject({ url: 'https://93.184.216.34/hook', events: ['release.published', 'rollout.paused'], format: 'slack' })
    expect(created.body.secret).toMatch(/^whsec_[A-Za-z0-9_-]{32}$/)
    const listed = await context.call('GET', base(), { token: owner.token })
    expect(listed.status).toBe(200)
    expect(listed.body.webhooks).toEqual([{ id: created.body.id, url: 'https://93.184.216.34/hook', events: ['release.published', 'rollout.paused'], format: 'slack', createdAt: created.body.createdAt }])
    expect(listed.text).not.toContain(created.body.secret)
    const tested = await context.call('POST', `${base()}/${created.body.id}/test`, { token: owner.token })
    expect(tested.status).toBe(200)
    expect(tested.body).toMatchObject({ event: 'webhook.test', status: 'pending', attempts: 0 })
    const deliveries = await context.call('GET', `${base()}/${created.body.id}/deliveries`, { token: owner.token })
    expect(deliveries.body.deliveries).toHaveLength(1)
    expect(deliveries.text).not.toContain(created.body.secret)
    const removed = await context.call('DELETE', `${base()}/${created.body.id}`, { token: owner.token })
    expect(removed.body).toEqual({ success: true, id: created.body.id })
    expect((await context.call('GET', base(), { token: owner.token })).body.webhooks).toEqual([])
    // the queued test delivery finds nothing and ends
    await context.app.store.jobs.drain()
    expect(context.app.store.jobs.backlog().pending).toBe(0)
    const audit = context.dataDir.db.$client.query<{ action: string; summary: string; metadata: string; actor_id: string }, []>("SELECT action, summary, metadata, actor_id FROM audit_logs WHERE action LIKE 'webhook.%' ORDER BY created_at").all()
    expect(audit.map((entry) => entry.action)).toEqual(['webhook.create', 'webhook.test', 'webhook.delete'])
    expect(audit.every((entry) => entry.actor_id === owner.id)).toBe(true)
    expect(JSON.stringify(audit)).not.toContain(created.body.secret)
  })

  test('the audit log names a webhook by its origin: the path (a Slack webhook\'s credential) stays out of it, also once the webhook is deleted', async () => {
    const created = await context.call('POST', base(), { token: owner.token, json: { url: 'https://93.184.216.34/services/T0/B0/slack-credential?token=query-credential', format: 'slack' } })
    expect(created.status).toBe(201)
    const tested = await context.call('POST', `${base()}/${created.body.id}/test`, { token: owner.token })
    expect(tested.status).toBe(200)
    const removed = await context.call('DELETE', `${base()}/${created.body.id}`, { token: owner.token })
    expect(removed.status).toBe(200)
    await context.app.store.jobs.drain()
    const audit = context.dataDir.db.$client.query<{ action: string; summary: string; metadata: string }, [string]>("SELECT action, summary, metadata FROM audit_logs WHERE action LIKE 'webhook.%' AND metadata LIKE '%' || ? || '%' ORDER BY created_at").all(created.body.id)
    expect(audit.map((entry) => entry.action)).toEqual(['webhook.create', 'webhook.test', 'webhook.delete'])
    for (const entry of audit) {
      expect(`${entry.summary} ${entry.metadata}`).toContain('https://93.184.216.34')
      expect(`${entry.summary} ${entry.metadata}`).not.toContain('credential')
    }
  })

  test('an unknown webhook is 404 WEBHOOK_NOT_FOUND for delete, test and deliveries', async () => {
    for (const [method, path] of [
      ['DELETE', `${base()}/nope`],
      ['POST', `${base()}/nope/test`],
      ['GET', `${base()}/nope/deliveries`],
    ] as const) {
      const res = await context.call(method, path, { token: owner.token })
      expect({ path, status: res.status, code: res.body.code }).toEqual({ path, status: 404, code: 'WEBHOOK_NOT_FOUND' })
    }
  })

  test('a developer of the miniapp gets 403 OWNER_REQUIRED, a stranger 404, nobody 401, an API key 403 SCOPE_REQUIRED; an admin may', async () => {
    const developer = await createTestUser(context)
    expect((await context.call('POST', `/api/mini-apps/${miniAppId}/members`, { token: owner.token, json: { email: developer.email, role: 'DEVELOPER' } })).status).toBe(201)
    const stranger = await createTestUser(context)
    const admin = await createTestUser(context, { role: 'ADMIN' })
    const json = { url: 'https://93.184.216.34/hook' }
    const asDeveloper = await context.call('POST', base(), { token: developer.token, json })
    expect([asDeveloper.status, asDeveloper.body.code]).toEqual([403, 'OWNER_REQUIRED'])
    const listDeveloper = await context.call('GET', base(), { token: developer.token })
    expect([listDeveloper.status, listDeveloper.body.code]).toEqual([403, 'OWNER_REQUIRED'])
    const asStranger = await context.call('GET', base(), { token: stranger.token })
    expect([asStranger.status, asStranger.body.code]).toEqual([404, 'MINI_APP_NOT_FOUND'])
    const anonymous = await context.call('GET', base())
    expect([anonymous.status, anonymous.body.code]).toEqual([401, 'AUTH_REQUIRED'])
    const key = await context.call('POST', '/api/auth/api-keys', { token: owner.token, json: { name: 'ci', scopes: ['read', 'upload', 'release'] } })
    const withKey = await context.call('GET', base(), { token: key.body.key })
    expect([withKey.status, withKey.body.code]).toEqual([403, 'SCOPE_REQUIRED'])
    const asAdmin = await context.call('POST', base(), { token: admin.token, json })
    expect(asAdmin.status).toBe(201)
  })
})

describe('deliveries to a real receiver (--webhooks-allow-private)', () => {
  let receiver: ReturnType<typeof startReceiver>
  let context: TestContext
  let owner: TestUser
  let miniAppId: string
  let appId: string
  beforeAll(async () => {
    receiver = startReceiver()
    context = createTestContext({ webhooksAllowPrivate: true })
    ;({ owner, miniAppId, appId } = await setUpApp(context))
  })
  afterAll(() => {
    context.close()
    receiver.stop()
  })
  afterEach(async () => {
    // each test starts with no webhook and an empty receiver
    const listed = await context.call('GET', `/api/mini-apps/${miniAppId}/webhooks`, { token: owner.token })
    for (const hook of listed.body.webhooks) await context.call('DELETE', `/api/mini-apps/${miniAppId}/webhooks/${hook.id}`, { token: owner.token })
    await context.app.store.jobs.drain()
    receiver.received.length = 0
    receiver.statuses.length = 0
  })
  const create = async (json: Record<string, unknown>) => {
    const res = await context.call('POST', `/api/mini-apps/${miniAppId}/webhooks`, { token: owner.token, json })
    expect(res.status).toBe(201)
    return res.body as { id: string; secret: string }
  }
  const deliveries = async (id: string) => (await context.call('GET', `/api/mini-apps/${miniAppId}/webhooks/${id}/deliveries`, { token: owner.token })).body.deliveries

  test('upload, publish, rollout change and rollback each reach a webhook that takes them, signed over the raw body; nothing before the request answered', async () => {
    const hook = await create({ url: receiver.url(), events: ['version.uploaded', 'release.published', 'rollout.changed', 'release.rolled_back'] })
    const first = await uploadVersion(context, owner.token, appId, '1.0.0')
    expect((await context.call('POST', `/api/mini-apps/${miniAppId}/versions/${first}/publish`, { token: owner.token, json: {} })).status).toBe(200)
    const second = await uploadVersion(context, owner.token, appId, '1.1.0')
    expect((await context.call('POST', `/api/mini-apps/${miniAppId}/versions/${second}/publish`, { token: owner.token, json: { rolloutPercent: 20 } })).status).toBe(200)
    expect((await context.call('PATCH', `/api/mini-apps/${miniAppId}/channels/stable/rollout`, { token: owner.token, json: { rolloutPercent: 60 } })).status).toBe(200)
    expect((await context.call('POST', `/api/mini-apps/${miniAppId}/rollback`, { token: owner.token, json: { targetVersionId: first } })).status).toBe(200)
    // the requests answered with nothing sent yet: deliveries run from the queue
    expect(receiver.received).toHaveLength(0)
    await context.app.store.jobs.drain()
    expect(receiver.received.map((request) => request.headers.get('x-miniship-event'))).toEqual(['version.uploaded', 'release.published', 'version.uploaded', 'release.published', 'rollout.changed', 'release.rolled_back'])
    for (const request of receiver.received) {
      expect(request.headers.get('content-type')).toBe('application/json')
      expect(request.headers.get('x-miniship-signature')).toBe(hmac(hook.secret, request.body))
      const body = JSON.parse(request.body)
      expect(Object.keys(body)).toEqual(['id', 'event', 'occurredAt', 'miniApp', 'data'])
      expect(body.id).toBe(request.headers.get('x-miniship-delivery')!)
      expect(body.event).toBe(request.headers.get('x-miniship-event')!)
      expect(body.miniApp).toEqual({ id: miniAppId, appId, name: expect.any(String) })
      expect(body.data.by).toEqual({ type: 'user', id: owner.id, email: owner.email })
    }
    const [uploaded, published, , staged, rollout, rolledBack] = receiver.received.map((request) => JSON.parse(request.body).data)
    expect(uploaded.version).toMatchObject({ id: first, version: '1.0.0', buildNumber: 1, channel: 'stable' })
    expect(published).toMatchObject({ channel: 'stable', version: { id: first, version: '1.0.0' }, rolloutPercent: 100, mandatory: false })
    expect(staged).toMatchObject({ version: { id: second, version: '1.1.0' }, rolloutPercent: 20 })
    expect(rollout).toMatchObject({ channel: 'stable', version: { id: second, version: '1.1.0' }, rolloutPercent: 60 })
    expect(rolledBack).toMatchObject({ channel: 'stable', version: { id: first, version: '1.0.0' } })
    expect(new Set(receiver.received.map((request) => request.headers.get('x-miniship-delivery'))).size).toBe(6)
    const listed = await deliveries(hook.id)
    expect(listed).toHaveLength(6)
    expect(listed.every((delivery: { status: string; attempts: number; responseStatus: number }) => delivery.status === 'delivered' && delivery.attempts === 1 && delivery.responseStatus === 200)).toBe(true)
  })

  test('a release change and what it owes (the deliveries, the mirror write) are one transaction: a delivery SQLite refuses to queue leaves the channel as it was, never changed without its event', async () => {
    await create({ url: receiver.url(), events: ['release.published', 'rollout.changed', 'release.rolled_back'] })
    const first = await uploadVersion(context, owner.token, appId, '3.0.0')
    expect((await context.call('POST', `/api/mini-apps/${miniAppId}/versions/${first}/publish`, { token: owner.token, json: {} })).status).toBe(200)
    const second = await uploadVersion(context, owner.token, appId, '3.1.0')
    await context.app.store.jobs.drain()
    receiver.received.length = 0
    const client = context.dataDir.db.$client
    const stable = async () => {
      const channels = (await context.call('GET', `/api/mini-apps/${miniAppId}/channels`, { token: owner.token })).body.channels as { name: string; release: { version: string; rolloutPercent: number } | null }[]
      return channels.find((channel) => channel.name === 'stable')!.release
    }
    // as a full disk or another process's lock would refuse the delivery's row
    client.run("CREATE TRIGGER refuse_delivery BEFORE INSERT ON webhook_deliveries BEGIN SELECT RAISE(ABORT, 'refused'); END")
    try {
      expect((await context.call('POST', `/api/mini-apps/${miniAppId}/versions/${second}/publish`, { token: owner.token, json: { rolloutPercent: 20 } })).status).toBeGreaterThanOrEqual(500)
      expect(await stable()).toMatchObject({ version: '3.0.0', rolloutPercent: 100 })
      const version = (await context.call('GET', `/api/mini-apps/${miniAppId}/workspace`, { token: owner.token })).body.versions.find((v: { id: string }) => v.id === second)
      expect(version.status).not.toBe('PUBLISHED')
    } finally {
      client.run('DROP TRIGGER refuse_delivery')
    }
    expect((await context.call('POST', `/api/mini-apps/${miniAppId}/versions/${second}/publish`, { token: owner.token, json: { rolloutPercent: 20 } })).status).toBe(200)
    client.run("CREATE TRIGGER refuse_delivery BEFORE INSERT ON webhook_deliveries BEGIN SELECT RAISE(ABORT, 'refused'); END")
    try {
      expect((await context.call('PATCH', `/api/mini-apps/${miniAppId}/channels/stable/rollout`, { token: owner.token, json: { rolloutPercent: 60 } })).status).toBeGreaterThanOrEqual(500)
      expect(await stable()).toMatchObject({ version: '3.1.0', rolloutPercent: 20 })
      expect((await context.call('POST', `/api/mini-apps/${miniAppId}/rollback`, { token: owner.token, json: { targetVersionId: first } })).status).toBeGreaterThanOrEqual(500)
      expect(await stable()).toMatchObject({ version: '3.1.0', rolloutPercent: 20 })
    } finally {
      client.run('DROP TRIGGER refuse_delivery')
    }
    // every change that happened was heard, once
    await context.app.store.jobs.drain()
    expect(receiver.received.map((request) => request.headers.get('x-miniship-event'))).toEqual(['release.published'])
  })

  test('an upload and its version.uploaded deliveries commit together: a delivery SQLite refuses to queue leaves no version behind', async () => {
    await create({ url: receiver.url(), events: ['version.uploaded'] })
    const client = context.dataDir.db.$client
    client.run("CREATE TRIGGER refuse_delivery BEFORE INSERT ON webhook_deliveries BEGIN SELECT RAISE(ABORT, 'refused'); END")
    try {
      const refused = await upload(context, owner.token, appId, uploadForm(appId, { version: '4.0.0' }))
      expect(refused.status).toBeGreaterThanOrEqual(500)
    } finally {
      client.run('DROP TRIGGER refuse_delivery')
    }
    const versions = (await context.call('GET', `/api/mini-apps/${miniAppId}/workspace`, { token: owner.token })).body.versions as { version: string }[]
    expect(versions.map((version) => version.version)).not.toContain('4.0.0')
    // sent again, it is stored and heard once
    expect((await upload(context, owner.token, appId, uploadForm(appId, { version: '4.0.0' }))).status).toBe(201)
    await context.app.store.jobs.drain()
    expect(receiver.received.map((request) => JSON.parse(request.body).data.version.version)).toEqual(['4.0.0'])
  })

  test('a name is resolved, checked, and the delivery goes to the address checked, with the URL\'s Host', async () => {
    const hook = await create({ url: `http://localhost:${receiver.port}/by-name`, events: ['version.uploaded'] })
    await uploadVersion(context, owner.token, appId, '1.9.0')
    await context.app.store.jobs.drain()
    expect(receiver.received.map((request) => [request.path, request.headers.get('host')])).toEqual([['/by-name', `localhost:${receiver.port}`]])
    expect(await deliveries(hook.id)).toMatchObject([{ status: 'delivered', responseStatus: 200 }])
  })

  test('pinnedTarget: the checked address, the Host of the URL, the name for TLS', () => {
    expect(pinnedTarget(new URL('https://hooks.example.com:8443/x?y=1'), ['2606:2800::1', '93.184.216.34'])).toEqual({ url: 'https://93.184.216.34:8443/x?y=1', host: 'hooks.example.com:8443', serverName: 'hooks.example.com' })
    expect(pinnedTarget(new URL('https://hooks.example.com/x'), ['2606:2800::1'])).toEqual({ url: 'https://[2606:2800::1]/x', host: 'hooks.example.com', serverName: 'hooks.example.com' })
    expect(pinnedTarget(new URL('http://93.184.216.34/x'), ['93.184.216.34'])).toEqual({ url: 'http://93.184.216.34/x', host: '93.184.216.34', serverName: null })
  })

  test('a failure whose message quotes the URL keeps the path and query (often the credential, as Slack\'s) out of the server log and the deliveries list', async () => {
    // a receiver whose answer fetch cannot read: its error quotes the URL it was fetching
    const broken = Bun.listen({
      hostname: '127.0.0.1',
      port: 0,
      socket: {
        data(socket) {
          socket.write('HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\nok')
          socket.end()
        },
      },
    })
    try {
      const hook = await create({ url: `http://127.0.0.1:${broken.port}/services/T0/B0/slack-credential?token=query-credential`, events: ['version.uploaded'] })
      const logged = context.logs.length
      await uploadVersion(context, owner.token, appId, '1.9.5')
      await context.app.store.jobs.drain()
      const [delivery] = await deliveries(hook.id)
      expect(delivery).toMatchObject({ status: 'pending', attempts: 1 })
      // the failure still says what went wrong, and where
      expect(delivery.error).toContain(`http://127.0.0.1:${broken.port}`)
      const newLogs = context.logs.slice(logged).join('\n')
      expect(newLogs).toContain('background job failed')
      for (const text of [delivery.error as string, newLogs]) {
        expect(text).not.toContain('slack-credential')
        expect(text).not.toContain('query-credential')
      }
    } finally {
      broken.stop(true)
    }
  })

  test('a webhook hears only the events it took', async () => {
    await create({ url: receiver.url(), events: ['rollout.paused'] })
    await uploadVersion(context, owner.token, appId, '2.0.0')
    await context.app.store.jobs.drain()
    expect(receiver.received).toHaveLength(0)
  })

  test('a receiver that answers 500 gets the delivery again after about 10 s, then 30 s; the same body and signature each time', async () => {
    const hook = await create({ url: receiver.url(), events: ['version.uploaded'] })
    receiver.statuses.push(500, 503)
    await uploadVersion(context, owner.token, appId, '2.1.0')
    await context.app.store.jobs.drain()
    expect(await deliveries(hook.id)).toMatchObject([{ status: 'pending', attempts: 1, responseStatus: 500, error: 'the receiver answered 500' }])
    context.advance(9_000)
    await context.app.store.jobs.drain()
    expect(receiver.received).toHaveLength(1)
    context.advance(1_000)
    await context.app.store.jobs.drain()
    expect(await deliveries(hook.id)).toMatchObject([{ status: 'pending', attempts: 2, responseStatus: 503 }])
    context.advance(30_000)
    await context.app.store.jobs.drain()
    expect(await deliveries(hook.id)).toMatchObject([{ status: 'delivered', attempts: 3, responseStatus: 200, error: null }])
    expect(new Set(receiver.received.map((request) => request.body)).size).toBe(1)
    expect(new Set(receiver.received.map((request) => request.headers.get('x-miniship-signature'))).size).toBe(1)
    expect(receiver.received[0]!.headers.get('x-miniship-signature')).toBe(hmac(hook.secret, receiver.received[0]!.body))
  })

  test('a receiver that never takes it: six attempts over about 1 h 13 min, then failed', async () => {
    const hook = await create({ url: receiver.url(), events: ['version.uploaded'] })
    receiver.statuses.push(500, 500, 500, 500, 500, 500)
    await uploadVersion(context, owner.token, appId, '2.2.0')
    await context.app.store.jobs.drain()
    for (const wait of [10_000, 30_000, 120_000, 600_000, 3_600_000]) {
      context.advance(wait)
      await context.app.store.jobs.drain()
    }
    // the test users' access tokens last an hour of the moved clock
    owner.token = await createTokenService(context.dataDir.secret, () => context.now.value, 3600).signAccess({ id: owner.id, role: 'USER', tokenVersion: 1 })
    expect(receiver.received).toHaveLength(6)
    expect(await deliveries(hook.id)).toMatchObject([{ status: 'failed', attempts: 6, responseStatus: 500 }])
    expect(context.app.store.jobs.backlog().byKind['webhook-delivery']).toMatchObject({ pending: 0, failed: 1 })
    context.advance(24 * 3_600_000)
    await context.app.store.jobs.drain()
    expect(receiver.received).toHaveLength(6)
    owner.token = await createTokenService(context.dataDir.secret, () => context.now.value, 3600).signAccess({ id: owner.id, role: 'USER', tokenVersion: 1 })
  })

  test('a redirect is not followed: it counts as a failed attempt', async () => {
    const hook = await create({ url: receiver.url(), events: ['version.uploaded'] })
    receiver.statuses.push(302)
    await uploadVersion(context, owner.token, appId, '2.3.0')
    await context.app.store.jobs.drain()
    expect(receiver.received.map((request) => request.path)).toEqual(['/hook'])
    expect(await deliveries(hook.id)).toMatchObject([{ status: 'pending', attempts: 1, responseStatus: 302 }])
  })

  test('format slack posts a readable { text }, signed the same way', async () => {
    const hook = await create({ url: receiver.url(), events: ['release.published'], format: 'slack' })
    const versionId = await uploadVersion(context, owner.token, appId, '2.4.0')
    await create({ url: receiver.url(), events: ['release.published'] })
    await context.call('POST', `/api/mini-apps/${miniAppId}/versions/${versionId}/publish`, { token: owner.token, json: { rolloutPercent: 25, hostVersionRange: ' >=2.3.0 <3 ' } })
    await context.app.store.jobs.drain()
    expect(receiver.received).toHaveLength(2)
    // the Slack delivery is the one whose body is { text } alone
    const slack = receiver.received.find((delivery) => !('event' in JSON.parse(delivery.body)))!
    const body = JSON.parse(slack.body)
    expect(Object.keys(body)).toEqual(['text'])
    expect(body.text).toContain(appId)
    // the host range is part of what was published: the Slack line names it as the CLI and the console do
    // (its < and > escaped as Slack asks)
    expect(body.text).toContain('published 2.4.0 to stable (25 %, host &gt;=2.3.0 &lt;3)')
    expect(body.text).toContain(`by ${owner.email}`)
    // the audit log says it with the same words (publishedText, as the CLI and the console)
    const audit = context.dataDir.db.$client.query("SELECT summary FROM audit_logs WHERE action = 'version.publish' ORDER BY created_at DESC, id DESC").get() as { summary: string }
    expect(audit.summary).toBe(`${owner.email} published ${appId} 2.4.0 to stable (25 %, host >=2.3.0 <3)`)
    // the JSON event carries it too, as checked (trimmed)
    const event = receiver.received.map((delivery) => JSON.parse(delivery.body)).find((sent) => sent.event === 'release.published')
    expect(event.data).toMatchObject({ channel: 'stable', rolloutPercent: 25, mandatory: false, hostVersionRange: '>=2.3.0 <3' })
    expect(slack.headers.get('x-miniship-event')).toBe('release.published')
    expect(slack.headers.get('x-miniship-signature')).toBe(hmac(hook.secret, slack.body))
  })

  test('format slack: a pause reason typed on several lines, and an app name, with <!channel>, a Slack link or & are one line, escaped, so they neither ping nor link', async () => {
    const named = await context.call('POST', '/api/mini-apps', { token: owner.token, json: { appId: 'com.example.escaped', name: 'Shop <!here> & Co' } })
    expect(named.status).toBe(201)
    const hook = (await context.call('POST', `/api/mini-apps/${named.body.id}/webhooks`, { token: owner.token, json: { url: receiver.url(), events: ['rollout.paused'], format: 'slack' } })).body
    const versionId = await uploadVersion(context, owner.token, 'com.example.escaped', '1.0.0')
    expect((await context.call('POST', `/api/mini-apps/${named.body.id}/versions/${versionId}/publish`, { token: owner.token, json: { rolloutPercent: 20 } })).status).toBe(200)
    const paused = await context.call('PATCH', `/api/mini-apps/${named.body.id}/channels/stable/rollout`, { token: owner.token, json: { paused: true, reason: 'crash on start\n\n<!channel> see <https://evil.example|the logs>\r\n\tA&B' } })
    expect(paused.status).toBe(200)
    await context.app.store.jobs.drain()
    const sent = receiver.received.filter((delivery) => delivery.headers.get('x-miniship-event') === 'rollout.paused')
    expect(sent).toHaveLength(1)
    expect(sent[0]!.headers.get('x-miniship-signature')).toBe(hmac(hook.secret, sent[0]!.body))
    expect(JSON.parse(sent[0]!.body).text).toBe(
      `Shop &lt;!here&gt; &amp; Co (com.example.escaped): the rollout of 1.0.0 on stable was paused by ${owner.email}: crash on start &lt;!channel&gt; see &lt;https://evil.example|the logs&gt; A&amp;B`,
    )
  })

  test('test sends webhook.test to that webhook; deliveries show the latest 50, newest first', async () => {
    const hook = await create({ url: receiver.url(), events: ['rollout.paused'] })
    for (let i = 0; i < 52; i++) {
      const res = await context.call('POST', `/api/mini-apps/${miniAppId}/webhooks/${hook.id}/test`, { token: owner.token })
      expect(res.status).toBe(200)
      context.advance(1)
    }
    await context.app.store.jobs.drain()
    expect(receiver.received).toHaveLength(52)
    expect(JSON.parse(receiver.received[0]!.body)).toMatchObject({ event: 'webhook.test', data: { message: 'A test delivery from miniship' } })
    const listed = await deliveries(hook.id)
    expect(listed).toHaveLength(50)
    expect(listed[0].createdAt >= listed[49].createdAt).toBe(true)
    expect(listed[0]).toMatchObject({ event: 'webhook.test', status: 'delivered', attempts: 1, responseStatus: 200 })
  })
})

test('slackText says what happened in one line, the release guard\'s figures included', () => {
  const app = { id: 'x', appId: 'com.example.shop', name: 'Shop' }
  const by = { type: 'user', id: 'u', email: 'dev@example.com' }
  const version = { id: 'v', version: '1.4.0', buildNumber: 7 }
  expect(slackText(app, 'version.uploaded', { version, by })).toBe('Shop (com.example.shop): version 1.4.0 (build 7) was uploaded by dev@example.com')
  expect(slackText(app, 'release.published', { channel: 'beta', version, rolloutPercent: 100, mandatory: true, by })).toBe('Shop (com.example.shop): published 1.4.0 to beta (100 %, mandatory) by dev@example.com')
  expect(slackText(app, 'release.rolled_back', { channel: 'stable', version, by })).toBe('Shop (com.example.shop): stable was rolled back to 1.4.0 by dev@example.com')
  expect(slackText(app, 'rollout.changed', { channel: 'stable', version, rolloutPercent: 0, by })).toBe('Shop (com.example.shop): the rollout of 1.4.0 on stable was reverted (every device gets the previous release) by dev@example.com')
  expect(slackText(app, 'rollout.changed', { channel: 'stable', version, rolloutPercent: 40, previousState: 'paused', state: 'rolling-out', by })).toBe('Shop (com.example.shop): the rollout of 1.4.0 on stable was resumed at 40 % by dev@example.com')
  expect(slackText(app, 'rollout.changed', { channel: 'stable', version, rolloutPercent: 40, by: { type: 'api-key', id: 'k', name: 'ci', ownerEmail: 'dev@example.com' } })).toBe('Shop (com.example.shop): the rollout of 1.4.0 on stable was set to 40 % by the API key "ci" of dev@example.com')
  expect(slackText(app, 'rollout.paused', { channel: 'stable', version, rolloutPercent: 30, by: releaseGuardActor, failedDevices: 12, devices: 140, failureRate: 12 / 140, maxFailureRate: 0.05 })).toBe(
    'Shop (com.example.shop): the rollout of 1.4.0 on stable was paused by release-guard: 12 of 140 devices failed (8.6 %) — threshold 5 %',
  )
  expect(slackText(app, 'rollout.paused', { channel: 'stable', version, rolloutPercent: 30, by })).toBe('Shop (com.example.shop): the rollout of 1.4.0 on stable was paused by dev@example.com')
  // a person's reason is said, as the JSON body's data.reason carries it
  expect(slackText(app, 'rollout.paused', { channel: 'stable', version, rolloutPercent: 30, reason: 'crash on Android 9', by })).toBe('Shop (com.example.shop): the rollout of 1.4.0 on stable was paused by dev@example.com: crash on Android 9')
  // the chat quotes the figure the console's badge and the CLI show: 23 of 80 is 28.75 %, which both round to 28.7 %
  const trip = { failedDevices: 23, totalDevices: 80, failureRate: 23 / 80, maxFailureRate: 0.05 }
  expect(guardPauseText(trip)).toBe('paused by the release guard: 23 of 80 devices failed (28.7 %) — threshold 5 %')
  expect(slackText(app, 'rollout.paused', { channel: 'stable', version, rolloutPercent: 30, by: releaseGuardActor, failedDevices: 23, devices: 80, failureRate: 23 / 80, maxFailureRate: 0.05 })).toBe(
    'Shop (com.example.shop): the rollout of 1.4.0 on stable was paused by release-guard: 23 of 80 devices failed (28.7 %) — threshold 5 %',
  )
})

describe('delivery history', () => {
  test('the latest 50 are listed, newest first; past 200 the oldest finished ones go, failed as well as delivered, so a receiver that is down for good does not grow the database without end', async () => {
    const context = createTestContext({ webhooksAllowPrivate: true })
    const down = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('no', { status: 500 }) })
    try {
      const { owner, miniAppId } = await setUpApp(context)
      const base = `/api/mini-apps/${miniAppId}/webhooks`
      const hook = (await context.call('POST', base, { token: owner.token, json: { url: `http://127.0.0.1:${down.port}/hook` } })).body as { id: string }
      const queue = async (count: number) => {
        for (let index = 0; index < count; index++) {
          const res = await context.call('POST', `${base}/${hook.id}/test`, { token: owner.token })
          expect(res.status).toBe(200)
          context.advance(1)
        }
      }
      await queue(205)
      // every attempt fails: after the sixth each delivery is failed
      await context.app.store.jobs.drain()
      for (const wait of [10_000, 30_000, 120_000, 600_000, 3_600_000]) {
        context.advance(wait)
        await context.app.store.jobs.drain()
      }
      const rows = () => context.dataDir.db.$client.query<{ status: string; n: number }, [string]>('SELECT status, count(*) AS n FROM webhook_deliveries WHERE webhook_id = ? GROUP BY status').all(hook.id)
      expect(rows()).toEqual([{ status: 'failed', n: 205 }])
      // the test users' access tokens last an hour of the moved clock
      owner.token = await createTokenService(context.dataDir.secret, () => context.now.value, 3600).signAccess({ id: owner.id, role: 'USER', tokenVersion: 1 })
      await queue(1)
      expect(rows()).toEqual([{ status: 'failed', n: 199 }, { status: 'pending', n: 1 }])
      const listed = await context.call('GET', `${base}/${hook.id}/deliveries`, { token: owner.token })
      expect(listed.status).toBe(200)
      expect(listed.body.deliveries).toHaveLength(50)
      expect(listed.body.deliveries[0]).toMatchObject({ event: 'webhook.test', status: 'pending', attempts: 0 })
      expect(listed.body.deliveries.slice(1).every((delivery: { status: string; attempts: number }) => delivery.status === 'failed' && delivery.attempts === 6)).toBe(true)
    } finally {
      down.stop(true)
      context.close()
    }
  })
})

describe('deliveries survive a restart, and the address rule holds at delivery time', () => {
  test('a delivery that failed before the process stopped is delivered by the next one', async () => {
    const receiver = startReceiver()
    const context = createTestContext({ webhooksAllowPrivate: true })
    const { owner, miniAppId, appId } = await setUpApp(context)
    const created = await context.call('POST', `/api/mini-apps/${miniAppId}/webhooks`, { token: owner.token, json: { url: receiver.url(), events: ['version.uploaded'] } })
    receiver.statuses.push(503)
    await uploadVersion(context, owner.token, appId, '1.0.0')
    await context.app.store.jobs.drain()
    expect(receiver.received).toHaveLength(1)
    // the process stops: the worker, then the database
    await context.app.store.jobs.stop(1000)
    context.dataDir.db.$client.close()

    const reopened = openDataDir(context.config.dataDir)
    const now = context.now.value + 10_000
    const app = createApp({ config: context.config, db: reopened.db, paths: reopened.paths, secret: reopened.secret, clock: () => now, log: () => {}, jobs: { pollMs: 20 } })
    app.store.jobs.start()
    for (let i = 0; i < 200 && receiver.received.length < 2; i++) await Bun.sleep(20)
    await app.store.jobs.stop(1000)
    expect(receiver.received).toHaveLength(2)
    expect(receiver.received[1]!.body).toBe(receiver.received[0]!.body)
    expect(receiver.received[1]!.headers.get('x-miniship-signature')).toBe(hmac(created.body.secret, receiver.received[1]!.body))
    const row = reopened.db.$client.query<{ status: string; attempts: number }, []>('SELECT status, attempts FROM webhook_deliveries').get()
    expect(row).toEqual({ status: 'delivered', attempts: 2 })
    reopened.db.$client.close()
    rmSync(context.config.dataDir, { recursive: true, force: true })
    receiver.stop()
  })

  test('a webhook to 127.0.0.1 or to a name that resolves to it, made while private targets were allowed, is refused at delivery once they are not', async () => {
    const receiver = startReceiver()
    const allowed = createTestContext({ webhooksAllowPrivate: true })
    const { owner, miniAppId, appId } = await setUpApp(allowed)
    for (const url of [receiver.url(), `http://localhost:${receiver.port}/hook`]) {
      expect((await allowed.call('POST', `/api/mini-apps/${miniAppId}/webhooks`, { token: owner.token, json: { url, events: ['version.uploaded'] } })).status).toBe(201)
    }
    allowed.dataDir.db.$client.close()
    const reopened = openDataDir(allowed.config.dataDir)
    const app = createApp({ config: { ...allowed.config, webhooksAllowPrivate: false }, db: reopened.db, paths: reopened.paths, secret: reopened.secret, clock: () => allowed.now.value, log: () => {} })
    const res = await app.handle(new Request(`http://localhost/api/mini-apps/by-app-id/${appId}/versions/upload`, { method: 'POST', headers: { authorization: `Bearer ${owner.token}` }, body: uploadForm(appId, { version: '1.0.0' }) }))
    expect(res.status).toBe(201)
    await app.store.jobs.drain()
    expect(receiver.received).toHaveLength(0)
    const errors = reopened.db.$client.query<{ last_error: string; status: string }, []>('SELECT last_error, status FROM webhook_deliveries ORDER BY last_error').all()
    expect(errors).toHaveLength(2)
    expect(errors[0]!.last_error).toContain('127.0.0.1 is not a public address')
    expect(errors[1]!.last_error).toContain('localhost resolves to')
    expect(errors.every((row) => row.status === 'pending')).toBe(true)
    reopened.db.$client.close()
    rmSync(allowed.config.dataDir, { recursive: true, force: true })
    receiver.stop()
  })
})

describe('a delivery the receiver took is not sent again because the database was busy', () => {
  test('the receiver answers 200 while another connection holds the write lock past the busy timeout: recorded delivered once the lock goes, never posted twice', async () => {
    const context = createTestContext({ webhooksAllowPrivate: true })
    const { owner, miniAppId, appId } = await setUpApp(context)
    // a sqlite3 shell, a backup or a long write elsewhere: it takes the write lock as the delivery arrives and keeps it 800 ms
    const other = new Database(context.dataDir.paths.database)
    const received: string[] = []
    const receiver = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      async fetch(request) {
        received.push(await request.text())
        other.exec('BEGIN IMMEDIATE')
        setTimeout(() => other.exec('ROLLBACK'), 800)
        return new Response('ok')
      },
    })
    const created = await context.call('POST', `/api/mini-apps/${miniAppId}/webhooks`, { token: owner.token, json: { url: `http://127.0.0.1:${receiver.port}/hook`, events: ['version.uploaded'] } })
    expect(created.status).toBe(201)
    await uploadVersion(context, owner.token, appId, '1.0.0')
    await context.app.store.jobs.drain()
    // the lock goes
    await Bun.sleep(1000)
    // past every retry wait: nothing is owed, so nothing more is sent
    for (const wait of [11_000, 31_000, 121_000]) {
      context.advance(wait)
      await context.app.store.jobs.drain()
    }
    expect(received).toHaveLength(1)
    const listed = await context.call('GET', `/api/mini-apps/${miniAppId}/webhooks/${created.body.id}/deliveries`, { token: owner.token })
    expect(listed.body.deliveries).toMatchObject([{ event: 'version.uploaded', status: 'delivered', attempts: 1, responseStatus: 200, error: null }])
    expect(context.dataDir.db.$client.query<{ n: number }, []>('SELECT count(*) AS n FROM jobs').get()!.n).toBe(0)
    // a process killed between recording the delivery and removing its job leaves the job to run again: it sends nothing
    context.dataDir.db.$client
      .query("INSERT INTO jobs (id, kind, payload, state, attempts, run_after, dedupe_key, last_error, created_at, updated_at) VALUES ('left-by-a-crash', 'webhook-delivery', ?, 'pending', 1, 0, NULL, NULL, ?, ?)")
      .run(JSON.stringify({ deliveryId: listed.body.deliveries[0].id }), new Date(context.now.value).toISOString(), new Date(context.now.value).toISOString())
    await context.app.store.jobs.drain()
    expect(received).toHaveLength(1)
    expect((await context.call('GET', `/api/mini-apps/${miniAppId}/webhooks/${created.body.id}/deliveries`, { token: owner.token })).body.deliveries).toMatchObject([{ status: 'delivered', attempts: 1 }])
    receiver.stop(true)
    other.close()
    context.close()
  })
})

describe('a removed webhook leaves nothing in the background queue', () => {
  test('its given-up and its waiting deliveries go with it: health, metrics and doctor stop reporting them', async () => {
    const receiver = startReceiver()
    const context = createTestContext({ webhooksAllowPrivate: true })
    const { owner, miniAppId, appId } = await setUpApp(context)
    const admin = await createTestUser(context, { role: 'ADMIN' })
    const created = await context.call('POST', `/api/mini-apps/${miniAppId}/webhooks`, { token: owner.token, json: { url: receiver.url(), events: ['version.uploaded'] } })
    expect(created.status).toBe(201)
    // one delivery that gives up after six 500s, and one still waiting for its retry
    receiver.statuses.push(500, 500, 500, 500, 500, 500, 500)
    await uploadVersion(context, owner.token, appId, '1.0.0')
    await context.app.store.jobs.drain()
    for (const wait of [10_000, 30_000, 120_000, 600_000, 3_600_000]) {
      context.advance(wait)
      await context.app.store.jobs.drain()
    }
    const fresh = async (user: TestUser) => createTokenService(context.dataDir.secret, () => context.now.value, 3600).signAccess({ id: user.id, role: user === admin ? 'ADMIN' : 'USER', tokenVersion: 1 })
    owner.token = await fresh(owner)
    await uploadVersion(context, owner.token, appId, '1.1.0')
    await context.app.store.jobs.drain()
    const jobsOf = async () => (await context.call('GET', '/api/health', { token: await fresh(admin) })).body.jobs.byKind['webhook-delivery']
    expect(await jobsOf()).toMatchObject({ pending: 1, failed: 1 })
    const removed = await context.call('DELETE', `/api/mini-apps/${miniAppId}/webhooks/${created.body.id}`, { token: owner.token })
    expect(removed.status).toBe(200)
    expect(await jobsOf()).toEqual({ pending: 0, running: 0, failed: 0, oldestPendingSeconds: 0 })
    expect(receiver.received).toHaveLength(7)
    receiver.stop()
    context.close()
  })
})
