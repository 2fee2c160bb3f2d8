// Upgrading a round-1 database: the round-2 migrations carry its data into channels and version_files.
import { afterAll, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { drizzle } from 'drizzle-orm/bun-sqlite'
import { readMigrationFiles } from 'drizzle-orm/migrator'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { tempDir } from '../test-support'
import { closeDatabase, openDatabase } from './open'
import { countOf, sketchFromRow } from '../modules/insights/sketch'
import { createInsightsService } from '../modules/insights/service'

const dir = tempDir()
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** A new database at `path` with only the first `count` embedded migrations applied: the schema an older release left. */
function databaseAt(path: string, count: number): Database {
  const client = new Database(path, { create: true, strict: true })
  const migrations = readMigrationFiles({ migrationsFolder: join(import.meta.dir, '../../migrations') })
  const internals = drizzle(client) as unknown as { dialect: { migrate(list: typeof migrations, session: unknown, config: object): void }; session: unknown }
  internals.dialect.migrate(migrations.slice(0, count), internals.session, { migrationsFolder: '' })
  return client
}

test('a database at the first migration, with a published release, keeps every file and its release after the upgrade', () => {
  const path = join(dir, 'old.db')
  const client = databaseAt(path, 1)
  const at = '2026-11-01T10:00:00.000Z'
  client.run("INSERT INTO users (id, email, display_name, password_hash, role, status, created_at, updated_at) VALUES ('u1', 'a@example.com', 'A', 'h', 'ADMIN', 'ACTIVE', ?, ?)", [at, at])
  client.run("INSERT INTO mini_apps (id, app_id, name, current_release_version_id, created_at, updated_at) VALUES ('m1', 'old.app', 'Old', 'v1', ?, ?)", [at, at])
  const hash = (n: number) => String(n).repeat(64).slice(0, 64)
  for (const [id, version, status, base] of [['v1', '1.0.0', 'PUBLISHED', 1], ['v2', '1.1.0', 'DRAFT', 6]] as const) {
    client.run(
      `INSERT INTO versions (id, mini_app_id, version, build_number, release_type, status, created_at, updated_at,
        bundle_ios_sha256, bundle_ios_size, bundle_android_sha256, bundle_android_size, manifest_sha256, manifest_size,
        assets_ios_sha256, assets_ios_size, assets_android_sha256, assets_android_size)
       VALUES (?, 'm1', ?, ?, 'RELEASE', ?, ?, ?, ?, 10, ?, 11, ?, 12, ?, 13, ?, 14)`,
      [id, version, base, status, at, at, hash(base), hash(base + 1), hash(base + 2), hash(base + 3), hash(base + 4)],
    )
  }
  client.close()

  const upgraded = openDatabase(path)
  try {
    const files = upgraded.$client.query('SELECT version_id, kind, sha256, size FROM version_files ORDER BY version_id, size').all()
    expect(files).toEqual([
      { version_id: 'v1', kind: 'bundleIos', sha256: hash(1), size: 10 },
      { version_id: 'v1', kind: 'bundleAndroid', sha256: hash(2), size: 11 },
      { version_id: 'v1', kind: 'manifest', sha256: hash(3), size: 12 },
      { version_id: 'v1', kind: 'assetsIos', sha256: hash(4), size: 13 },
      { version_id: 'v1', kind: 'assetsAndroid', sha256: hash(5), size: 14 },
      { version_id: 'v2', kind: 'bundleIos', sha256: hash(6), size: 10 },
      { version_id: 'v2', kind: 'bundleAndroid', sha256: hash(7), size: 11 },
      { version_id: 'v2', kind: 'manifest', sha256: hash(8), size: 12 },
      { version_id: 'v2', kind: 'assetsIos', sha256: hash(9), size: 13 },
      { version_id: 'v2', kind: 'assetsAndroid', sha256: hash(10), size: 14 },
    ])
    const columns = (upgraded.$client.query('PRAGMA table_info(versions)').all() as { name: string }[]).map((column) => column.name)
    expect(columns.filter((name) => name.endsWith('_sha256'))).toEqual([])
    expect(columns).toContain('channel')
    const releases = upgraded.$client.query('SELECT mini_app_id, channel, version_id, rollout_percent, withdrawn_at FROM channel_releases').all()
    expect(releases).toEqual([{ mini_app_id: 'm1', channel: 'stable', version_id: 'v1', rollout_percent: 100, withdrawn_at: null }])
    const versionChannels = upgraded.$client.query('SELECT DISTINCT channel FROM versions').all()
    expect(versionChannels).toEqual([{ channel: 'stable' }])
  } finally {
    closeDatabase(upgraded)
  }
})

test("schema 6's device rows become one sketch per version and day, counted the same (and past 2,048, as registers)", () => {
  const path = join(dir, 'devices.db')
  const client = databaseAt(path, 6)
  const hashOf = (n: number) => new Bun.CryptoHasher('sha256', 'key').update(`device-${n}`).digest('base64url').slice(0, 22)
  const at = '2026-11-20T10:00:00.000Z'
  client.run("INSERT INTO mini_apps (id, app_id, name, created_at, updated_at) VALUES ('m1', 'fleet.app', 'Fleet', ?, ?)", [at, at])
  for (const [id, version] of [['v1', '1.0.0'], ['v2', '1.1.0']]) {
    client.run("INSERT INTO versions (id, mini_app_id, version, build_number, release_type, status, created_at, updated_at) VALUES (?, 'm1', ?, 1, 'RELEASE', 'PUBLISHED', ?, ?)", [id, version, at, at])
  }
  const insert = client.prepare('INSERT INTO insight_devices (version_id, day, device_hash) VALUES (?, ?, ?)')
  client.transaction(() => {
    for (let n = 0; n < 3; n++) insert.run('v1', '2026-11-20', hashOf(n))
    insert.run('v1', '2026-11-21', hashOf(0))
    for (let n = 0; n < 3000; n++) insert.run('v2', '2026-11-21', hashOf(n))
  })()
  client.close()

  const upgraded = openDatabase(path)
  try {
    const tables = upgraded.$client.query<{ name: string }, []>("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'insight_device%'").all()
    expect(tables).toEqual([{ name: 'insight_device_sketches' }])
    const rows = upgraded.$client
      .query<{ versionId: string; day: string; hashes: string | null; registers: Uint8Array | null }, []>('SELECT version_id AS versionId, day, hashes, registers FROM insight_device_sketches ORDER BY version_id, day')
      .all()
    expect(rows.map((row) => [row.versionId, row.day, row.hashes?.length])).toEqual([
      ['v1', '2026-11-20', 66],
      ['v1', '2026-11-21', 22],
      ['v2', '2026-11-21', 3000 * 22],
    ])
    const sketches = rows.map((row) => sketchFromRow(row.hashes, row.registers))
    expect(sketches.slice(0, 2).map(countOf)).toEqual([3, 1])
    expect(new Set(rows[0]!.hashes!.match(/.{22}/g))).toEqual(new Set([0, 1, 2].map(hashOf)))
    // the migrated 3,000 read as registers, within the estimate's error
    expect(sketches[2]!.registers).not.toBeNull()
    expect(Math.abs(countOf(sketches[2]!) - 3000)).toBeLessThan(75)
    // the first prune writes that row back as registers, once; the exact rows stay as they are
    const insights = createInsightsService({ db: upgraded, clock: () => Date.parse('2026-11-21T12:00:00Z'), key: new Uint8Array(32), enabled: true, flushSeconds: 5, log: () => {} })
    expect(insights.prune()).toEqual({ deviceDays: 0, orphans: 0, compacted: 1 })
    expect(insights.prune().compacted).toBe(0)
    const after = upgraded.$client.query<{ hashes: string | null; registers: Uint8Array | null }, []>("SELECT hashes, registers FROM insight_device_sketches WHERE version_id = 'v2'").get()!
    expect(after.hashes).toBeNull()
    expect(after.registers).toHaveLength(16384)
    expect(countOf(sketchFromRow(null, after.registers))).toBe(countOf(sketches[2]!))
    expect(upgraded.$client.query<{ n: number }, []>('SELECT count(*) AS n FROM insight_device_sketches WHERE hashes IS NOT NULL').get()!.n).toBe(2)
  } finally {
    closeDatabase(upgraded)
  }
})

// how a report reads such rows: channel-adoption.test.ts
test("schema 14's failure messages are kept, with no channel: it was not stored, and is not guessed", () => {
  const path = join(dir, 'failures.db')
  const client = databaseAt(path, 14)
  const at = '2026-11-20T10:00:00.000Z'
  client.run("INSERT INTO mini_apps (id, app_id, name, created_at, updated_at) VALUES ('m1', 'failing.app', 'Failing', ?, ?)", [at, at])
  client.run("INSERT INTO versions (id, mini_app_id, version, build_number, release_type, status, created_at, updated_at) VALUES ('v1', 'm1', '1.0.0', 1, 'RELEASE', 'PUBLISHED', ?, ?)", [at, at])
  client.run("INSERT INTO insight_failures (version_id, mini_app_id, platform, message, at) VALUES ('v1', 'm1', 'ios', 'old crash', ?)", [at])
  client.close()

  const upgraded = openDatabase(path)
  try {
    expect(upgraded.$client.query('SELECT version_id, message, channel FROM insight_failures').all()).toEqual([{ version_id: 'v1', message: 'old crash', channel: null }])
  } finally {
    closeDatabase(upgraded)
  }
})
