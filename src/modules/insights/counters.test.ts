// The in-memory counters: what starts a download, day boundaries, drain/restore, the off switch, a failed flush.
import { expect, test } from 'bun:test'
import { createInsightCounters, downloadOf, utcDay } from './counters'
import { createTestContext } from '../../test-support'
import { createInsightsService } from './service'
import { countOf, sketchFromRow } from './sketch'

test('downloadOf: a download starts at a 200 to GET, a 206 from byte 0, or a redirect to the bucket for the file from byte 0; a range from a later byte (a resume), a probe of the first byte alone, HEAD and 304 start none', () => {
  const cases: [method: string, status: number, range: string | null, contentRange: string | null, expected: ReturnType<typeof downloadOf>][] = [
    ['GET', 200, null, null, { starts: true, bytes: 1000 }],
    // a Range the answer ignored (several ranges): the whole file
    ['GET', 200, 'bytes=0-1,5-9', null, { starts: true, bytes: 1000 }],
    ['GET', 302, null, null, { starts: true, bytes: 1000 }],
    ['GET', 302, 'bytes=0-', null, { starts: true, bytes: 1000 }],
    ['GET', 302, 'bytes=900-', null, { starts: false, bytes: 100 }],
    ['GET', 302, 'bytes=-100', null, { starts: false, bytes: 100 }],
    ['GET', 302, 'bytes=0-1,5-9', null, { starts: true, bytes: 1000 }],
    ['HEAD', 302, null, null, null],
    ['GET', 206, 'bytes=900-', 'bytes 900-999/1000', { starts: false, bytes: 100 }],
    ['GET', 206, 'bytes=0-', 'bytes 0-999/1000', { starts: true, bytes: 1000 }],
    ['GET', 206, 'bytes=0-99', 'bytes 0-99/1000', { starts: true, bytes: 100 }],
    ['GET', 206, 'bytes=10-99', 'bytes 10-99/1000', { starts: false, bytes: 90 }],
    // a probe of the first byte before the download: its byte is sent, no download starts
    ['GET', 206, 'bytes=0-0', 'bytes 0-0/1000', { starts: false, bytes: 1 }],
    ['GET', 302, 'bytes=0-0', null, { starts: false, bytes: 1 }],
    // the rest after a probe of the first byte (a client that keeps the probe's byte) starts the download
    ['GET', 206, 'bytes=1-', 'bytes 1-999/1000', { starts: true, bytes: 999 }],
    ['GET', 302, 'bytes=1-', null, { starts: true, bytes: 999 }],
    ['GET', 206, 'bytes=2-', 'bytes 2-999/1000', { starts: false, bytes: 998 }],
    // the first two bytes are more than a probe
    ['GET', 206, 'bytes=0-1', 'bytes 0-1/1000', { starts: true, bytes: 2 }],
    ['GET', 302, 'bytes=0-1', null, { starts: true, bytes: 2 }],
    ['GET', 206, null, null, null],
    ['GET', 304, null, null, null],
    ['GET', 416, 'bytes=2000-', null, null],
    ['HEAD', 200, null, null, null],
    ['HEAD', 206, 'bytes=900-', 'bytes 900-999/1000', null],
  ]
  for (const [method, status, range, contentRange, expected] of cases) {
    expect(downloadOf(method, status, 1000, range, () => contentRange), `${method} ${status} ${range} ${contentRange}`).toEqual(expected)
  }
})

test('downloadOf: bytes=0-0 of a one-byte file is the whole file, a download', () => {
  expect(downloadOf('GET', 206, 1, 'bytes=0-0', () => 'bytes 0-0/1')).toEqual({ starts: true, bytes: 1 })
  expect(downloadOf('GET', 302, 1, 'bytes=0-0', () => null)).toEqual({ starts: true, bytes: 1 })
})

const subject = { id: 'v1', miniAppId: 'm1' }

test('counts file under the UTC day of the clock; a day boundary seals the batch', () => {
  const now = { value: Date.parse('2026-11-22T23:59:59.000Z') }
  const counters = createInsightCounters({ clock: () => now.value, enabled: true, hashDevice: (deviceId) => Buffer.from(new Bun.CryptoHasher('sha256', 'key').update(deviceId).digest()) })
  counters.countInstall(subject, 'stable')
  counters.countInstall(subject, 'stable', 'unknown', 'device-1')
  now.value += 1000
  counters.countUpdateCheck(subject, 'beta', 'ios', 'device-1')
  const batches = counters.drain()
  expect(batches.map((batch) => batch.day)).toEqual(['2026-11-22', '2026-11-23'])
  expect(batches[0]!.slots.get('v1')!.channels.get('stable')![2].installInfos).toBe(2)
  // the device as its keyed hash, never as sent
  expect([...batches[0]!.slots.get('v1')!.devices.hashes!]).toEqual([new Bun.CryptoHasher('sha256', 'key').update('device-1').digest('base64url').slice(0, 22)])
  expect(batches[1]!.slots.get('v1')!.channels.get('beta')![0].updateChecks).toBe(1)
  expect(counters.pending()).toBe(false)
  expect(counters.drain()).toEqual([])
  counters.restore(batches)
  expect(counters.drain()).toHaveLength(2)
  expect(counters.totals.installInfos).toBe(2)
  expect(utcDay(Date.parse('2026-01-01T00:00:00Z'))).toBe('2026-01-01')
})

test('devices hashed in batches: every one counted reaches the drained sketches, across batches, days and versions', () => {
  const now = { value: Date.parse('2026-11-22T23:59:00.000Z') }
  const hashed: string[] = []
  const counters = createInsightCounters({
    clock: () => now.value,
    enabled: true,
    hashDevice: (deviceId) => {
      hashed.push(deviceId)
      return Buffer.from(new Bun.CryptoHasher('sha256', 'key').update(deviceId).digest())
    },
  })
  const other = { id: 'v2', miniAppId: 'app-1' }
  // 700 devices on v1 (more than two batches), every third one on v2 too, then a day boundary
  for (let index = 0; index < 700; index++) {
    counters.countUpdateCheck(subject, 'stable', 'ios', `device-${index}`)
    if (index % 3 === 0) counters.countInstall(other, 'stable', 'android', `device-${index}`)
    if (index === 500) now.value += 60_000
  }
  // an id too long or empty is not a device
  counters.countUpdateCheck(subject, 'stable', 'ios', '')
  expect(hashed.length).toBeLessThan(700 + 234)
  const batches = counters.drain()
  expect(hashed).toHaveLength(700 + 234)
  const devicesOf = (day: string, versionId: string) => countOf(batches.find((batch) => batch.day === day)!.slots.get(versionId)!.devices)
  expect(devicesOf('2026-11-22', 'v1')).toBe(501)
  expect(devicesOf('2026-11-23', 'v1')).toBe(199)
  expect(devicesOf('2026-11-22', 'v2')).toBe(167)
  expect(devicesOf('2026-11-23', 'v2')).toBe(67)
  expect(counters.drain()).toEqual([])
})

test('off: nothing is counted, not even the totals', () => {
  const counters = createInsightCounters({ clock: Date.now, enabled: false, hashDevice: () => { throw new Error('counting is off: nothing is hashed') } })
  counters.countInstall(subject, 'stable')
  counters.countEvent(subject, 'stable', 'ios', 'failed', 'd', { message: 'm', at: 'now' })
  expect(counters.pending()).toBe(false)
  expect(counters.totals.installInfos).toBe(0)
  expect(counters.totals.events.failed).toBe(0)
})

test('a flush that fails keeps the counts in memory; the next one writes them once', () => {
  const context = createTestContext()
  try {
    const logs: string[] = []
    const insights = createInsightsService({ db: context.dataDir.db, clock: () => context.now.value, key: new TextEncoder().encode('k'.repeat(32)), enabled: true, flushSeconds: 5, log: (line) => logs.push(line) })
    insights.counters.countInstall(subject, 'stable')
    insights.counters.countInstall(subject, 'stable')
    const client = context.dataDir.db.$client
    client.exec('ALTER TABLE insight_counts RENAME TO insight_counts_away')
    insights.flush()
    expect(logs.join('\n')).toContain('insights flush failed')
    expect(insights.counters.totals.flushFailures).toBe(1)
    expect(insights.counters.pending()).toBe(true)
    client.exec('ALTER TABLE insight_counts_away RENAME TO insight_counts')
    insights.counters.countInstall(subject, 'stable')
    insights.flush()
    insights.flush()
    expect(client.query<{ n: number }, []>('SELECT sum(install_infos) AS n FROM insight_counts').get()!.n).toBe(3)
  } finally {
    context.close()
  }
})

test('a flush that fails while writing device sketches loses no device and counts none twice', () => {
  const context = createTestContext()
  try {
    const logs: string[] = []
    const insights = createInsightsService({ db: context.dataDir.db, clock: () => context.now.value, key: new TextEncoder().encode('k'.repeat(32)), enabled: true, flushSeconds: 5, log: (line) => logs.push(line) })
    const small = { id: 'v-small', miniAppId: 'm1' }
    const check = (version: typeof subject, from: number, to: number) => {
      for (let index = from; index < to; index++) insights.counters.countUpdateCheck(version, 'stable', 'ios', `device-${index}`)
    }
    check(subject, 0, 3000)
    check(small, 0, 100)
    const client = context.dataDir.db.$client
    // the counts are written, then the first sketch fails: the whole transaction goes back
    client.exec("CREATE TRIGGER refuse_sketch BEFORE INSERT ON insight_device_sketches BEGIN SELECT RAISE(ABORT, 'disk full'); END")
    insights.flush()
    expect(logs.join('\n')).toContain('disk full')
    expect(client.query<{ n: number }, []>('SELECT count(*) AS n FROM insight_counts').get()!.n).toBe(0)
    // more checks while the write is refused, some of the same devices
    check(subject, 2500, 3500)
    check(small, 50, 150)
    client.exec('DROP TRIGGER refuse_sketch')
    insights.flush()
    insights.flush()
    const stored = (versionId: string) => {
      const row = client.query<{ hashes: string | null; registers: Uint8Array | null }, [string]>('SELECT hashes, registers FROM insight_device_sketches WHERE version_id = ?').get(versionId)!
      return countOf(sketchFromRow(row.hashes, row.registers))
    }
    expect(stored('v-small')).toBe(150)
    expect(Math.abs(stored('v1') - 3500) / 3500).toBeLessThan(0.025)
    expect(client.query<{ n: number }, []>('SELECT sum(update_checks) AS n FROM insight_counts').get()!.n).toBe(3000 + 100 + 1000 + 100)
  } finally {
    context.close()
  }
})

test("a miniapp's totals are added up when its counts are drained, taken back when a failed write restores them, and counted once when drained again", () => {
  const counters = createInsightCounters({ clock: () => Date.UTC(2026, 10, 25, 12), enabled: true, hashDevice: () => Buffer.alloc(64) })
  const other = { id: 'v2', miniAppId: 'm2' }
  counters.countUpdateCheck(subject, 'stable', 'ios', 'd1')
  counters.countUpdateCheck(subject, 'beta', 'android', 'd2')
  counters.countInstall(subject, 'stable')
  counters.countEvent(subject, 'stable', 'ios', 'failed', 'd1', { message: 'x', at: '2026-11-25T12:00:00.000Z' })
  counters.countUpdateCheck(other, 'stable', 'ios', 'd3')
  expect(counters.totals.byApp.size).toBe(0)
  const batches = counters.drain()
  expect(counters.totals.byApp.get('m1')).toEqual({ installInfos: 1, updateChecks: 2, downloads: { ios: 0, android: 0 }, installed: 0, launched: 0, failed: 1, rolledBack: 0 })
  expect(counters.totals.byApp.get('m2')).toMatchObject({ updateChecks: 1 })
  counters.restore(batches)
  expect(counters.totals.byApp.get('m1')).toMatchObject({ updateChecks: 0, installInfos: 0, failed: 0 })
  counters.countUpdateCheck(subject, 'stable', 'ios', 'd4')
  counters.drain()
  expect(counters.totals.byApp.get('m1')).toMatchObject({ installInfos: 1, updateChecks: 3, failed: 1 })
  expect(counters.totals.updateChecks).toBe(4)
})
