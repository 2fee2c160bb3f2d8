// Insights on the compiled binary: counts held in memory are written on SIGTERM (none lost), device ids stored hashed, /api/metrics scrapes clean.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { Database } from 'bun:sqlite'
import { buildZip } from '../test-fixtures'
import { parsePrometheusText } from '../modules/system/test-prometheus'
import { binaryCopy, callApi, setUpFirstAdmin, startBinary } from './support'

let dir: string
let binary: string

beforeAll(async () => {
  ;({ dir, binary } = await binaryCopy('miniship-insights-'))
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const metricsToken = 'e2e-metrics-token-0123456789'

test('SIGTERM right after the requests loses no count; a restarted server reports them all', async () => {
  const dataDir = join(dir, 'data')
  // a flush interval far beyond the test: whatever reaches the database was written by the shutdown
  const args = ['--rate-limit', 'off', '--insights-flush', '1h', '--metrics-token', metricsToken]
  const server = await startBinary({ dataDir, cwd: dir, binary, args })
  let stopped = false
  try {
    await setUpFirstAdmin(server)
    const registered = await callApi(server.baseUrl, 'POST', '/api/auth/register', { json: { email: 'dev@example.com', password: 'insights password' } })
    expect(registered.status).toBe(201)
    const token = registered.body.accessToken as string
    const miniApp = await callApi(server.baseUrl, 'POST', '/api/mini-apps', { token, json: { appId: 'com.example.fleet', name: 'Fleet' } })
    const form = new FormData()
    form.append('version', '1.0.0')
    form.append('bundleIos', new Blob(['i'.repeat(2000)]), 'main.ios.jsbundle')
    form.append('bundleAndroid', new Blob(['a'.repeat(1500)]), 'main.android.bundle')
    form.append('manifest', new Blob([JSON.stringify({ appId: 'com.example.fleet', name: 'Fleet', pages: { home: 'Home' } })]), 'app.json')
    form.append('assetsIos', new Blob([buildZip([{ name: 'assets/a.png', content: 'png' }]) as BlobPart]), 'assets-ios.zip')
    form.append('assetsAndroid', new Blob([buildZip([{ name: 'raw/a.json', content: '{}' }]) as BlobPart]), 'assets-android.zip')
    const version = await callApi(server.baseUrl, 'POST', '/api/mini-apps/by-app-id/com.example.fleet/versions/upload', { token, body: form })
    expect(version.status).toBe(201)
    expect((await callApi(server.baseUrl, 'POST', `/api/mini-apps/${miniApp.body.id}/versions/${version.body.id}/publish`, { token, json: {} })).status).toBe(200)

    // N install requests through serve's native route, M whole downloads, one range in the middle
    const installs = 25
    const downloads = 12
    let info: { bundles: { ios: string; android: string } } | null = null
    await Promise.all(
      Array.from({ length: installs }, async () => {
        const response = await fetch(`${server.baseUrl}/api/mini-apps/access/apps/com.example.fleet/release/install`)
        expect(response.status).toBe(200)
        info = await response.json()
      }),
    )
    const bundleUrl = new URL(info!.bundles.android, server.baseUrl).toString()
    await Promise.all(
      Array.from({ length: downloads }, async () => {
        const response = await fetch(bundleUrl)
        expect(response.status).toBe(200)
        expect((await response.arrayBuffer()).byteLength).toBe(1500)
      }),
    )
    const middle = await fetch(bundleUrl, { headers: { range: 'bytes=100-199' } })
    expect(middle.status).toBe(206)
    await middle.arrayBuffer()
    const events = await callApi(server.baseUrl, 'POST', '/api/mini-apps/access/events', {
      json: { events: [{ appId: 'com.example.fleet', versionId: version.body.id, platform: 'android', event: 'launched', deviceId: 'phone-serial-42' }] },
    })
    expect(events.status).toBe(202)

    // the scrape parses, and counts what the request log saw
    const scrape = await fetch(`${server.baseUrl}/api/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } })
    expect(scrape.status).toBe(200)
    const families = parsePrometheusText(await scrape.text())
    const installSamples = families.get('miniship_http_requests_total')!.samples.filter((sample) => sample.labels.group === 'install_info' && sample.labels.status_class === '2xx')
    expect(installSamples[0]!.value).toBe(installs)
    expect(families.get('miniship_uploads_total')!.samples[0]!.value).toBe(1)

    // nothing of the counts above is in the database yet: /api/metrics flushed, so count from the
    // requests after it by asking again without flushing
    const more = 3
    for (let i = 0; i < more; i++) expect((await fetch(`${server.baseUrl}/api/mini-apps/access/apps/com.example.fleet/release/install`)).status).toBe(200)
    const before = new Database(join(dataDir, 'miniship.db'), { readonly: true })
    const flushedBefore = before.query<{ n: number | null }, []>('SELECT sum(install_infos) AS n FROM insight_counts').get()!.n
    before.close()
    expect(flushedBefore).toBe(installs)

    expect(await server.stop('SIGTERM')).toBe(0)
    stopped = true
    const db = new Database(join(dataDir, 'miniship.db'), { readonly: true })
    const sums = db.query<{ installs: number; downloads: number }, []>('SELECT sum(install_infos) AS installs, sum(downloads) AS downloads FROM insight_counts').get()!
    expect(sums).toEqual({ installs: installs + more, downloads })
    // one device, one version, one day: its sketch holds the one 22-character hash, not the id
    const sketches = db.query<{ hashes: string | null; registers: Uint8Array | null }, []>('SELECT hashes, registers FROM insight_device_sketches').all()
    expect(sketches).toHaveLength(1)
    expect(sketches[0]!.hashes).toMatch(/^[A-Za-z0-9_-]{22}$/)
    expect(sketches[0]!.hashes).not.toContain('phone-serial-42')
    expect(sketches[0]!.registers).toBeNull()
    db.close()

    // a restarted server reports them
    const again = await startBinary({ dataDir, cwd: dir, binary, args })
    try {
      const login = await callApi(again.baseUrl, 'POST', '/api/auth/login', { json: { email: 'dev@example.com', password: 'insights password' } })
      const report = await callApi(again.baseUrl, 'GET', `/api/mini-apps/${miniApp.body.id}/insights?days=1`, { token: login.body.accessToken })
      expect(report.status).toBe(200)
      expect(report.body.totals).toMatchObject({ installs: installs + more, downloads: { ios: 0, android: downloads }, activeDevices: 1 })
      expect(report.body.adoption).toMatchObject({ versionId: version.body.id, share: 1 })
    } finally {
      expect(await again.stop()).toBe(0)
    }
  } finally {
    if (!stopped) await server.stop('SIGKILL')
  }
}, 120_000)
