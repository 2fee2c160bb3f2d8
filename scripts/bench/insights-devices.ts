// What counting a new device costs (issue 13): the sketches of schema 7 against schema 6's row per device.
//
//   node_modules/.bin/bun scripts/bench/insights-devices.ts [--rounds 6] [--devices 100000]
//
// Each round, both sides count `--devices` new devices of one version and day (an update check's
// count) and flush them, so the day's devices grow round by round as on a busy day:
//   sketch   the insights service as it is (a keyed hash per count into the version's sketch; a
//            flush merges it into one stored row);
//   rows     schema 6's way, rebuilt here as it was: the device ids kept in a Set, and a flush that
//            hashes them, sorts the hashes and inserts them a thousand per statement into
//            insight_devices (WITHOUT ROWID, primary key version, day, hash) with INSERT OR IGNORE.
// Both in one process on SQLite files in a temp directory, WAL and synchronous = FULL like serve;
// the sides alternate which goes first. Prints µs per device (count + flush) per round, medians, ratio.
import { Database } from 'bun:sqlite'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { openDatabase } from '../../src/db/open'
import { createInsightsService } from '../../src/modules/insights/service'
import { median } from './support'

const { values: options } = parseArgs({ options: { rounds: { type: 'string', default: '6' }, devices: { type: 'string', default: '100000' } } })
const rounds = Number(options.rounds)
const devices = Number(options.devices)
const work = mkdtempSync(join(tmpdir(), 'miniship-bench-insights-devices-'))
const key = new Uint8Array(32).fill(7)
const version = { id: '01a20944-0672-763f-b854-e6bb825ee5b7', miniAppId: 'bench-app' }

try {
  const db = openDatabase(join(work, 'sketch.db'))
  const insights = createInsightsService({ db, clock: Date.now, key, enabled: true, flushSeconds: 5, log: console.error })

  const old = new Database(join(work, 'rows.db'), { create: true, strict: true })
  old.exec('PRAGMA journal_mode = WAL')
  old.exec('PRAGMA synchronous = FULL')
  old.exec('CREATE TABLE insight_devices (version_id text NOT NULL, day text NOT NULL, device_hash text NOT NULL, PRIMARY KEY (version_id, day, device_hash)) WITHOUT ROWID')
  const insert = old.prepare<unknown, [string, string, string]>('INSERT OR IGNORE INTO insight_devices (version_id, day, device_hash) SELECT ?1, ?2, value FROM json_each(?3)')
  const hasher = new Bun.CryptoHasher('sha256', key)
  const day = new Date().toISOString().slice(0, 10)
  const pending = new Set<string>()
  interface Side {
    count(deviceId: string): void
    flush(): void
  }
  const rows: Side = {
    count: (deviceId) => void pending.add(deviceId),
    flush: () => {
      const hashes = [...pending].map((deviceId) => hasher.copy().update(deviceId).digest('base64url').slice(0, 22)).sort()
      old.transaction(() => {
        for (let at = 0; at < hashes.length; at += 1000) insert.run(version.id, day, `["${hashes.slice(at, at + 1000).join('","')}"]`)
      })()
      pending.clear()
    },
  }
  const sketch: Side = {
    count: (deviceId) => insights.counters.countUpdateCheck(version, 'stable', 'ios', deviceId),
    flush: () => insights.flush(),
  }

  let next = 0
  const run = (side: Side) => {
    const ids = Array.from({ length: devices }, () => `bench-device-${++next}`)
    const started = performance.now()
    for (const deviceId of ids) side.count(deviceId)
    side.flush()
    return ((performance.now() - started) * 1000) / devices
  }
  const results = { sketch: [] as number[], rows: [] as number[] }
  for (let round = 1; round <= rounds; round++) {
    if (round % 2) {
      results.sketch.push(run(sketch))
      results.rows.push(run(rows))
    } else {
      results.rows.push(run(rows))
      results.sketch.push(run(sketch))
    }
  }
  const stored = old.query<{ n: number }, []>('SELECT count(*) AS n FROM insight_devices').get()!.n
  console.log(`insights devices: ${rounds} alternating rounds of ${devices} new devices each (count + flush), medians`)
  console.log(`  sketch (schema 7)    ${median(results.sketch).toFixed(2)} µs per device   per round: ${results.sketch.map((value) => value.toFixed(2)).join(', ')}`)
  console.log(`  rows (schema 6)      ${median(results.rows).toFixed(2)} µs per device   per round: ${results.rows.map((value) => value.toFixed(2)).join(', ')} (${stored} rows at the end)`)
  console.log(`  ratio rows ÷ sketch  ${(median(results.rows) / median(results.sketch)).toFixed(2)}× the time per device`)
  db.$client.close()
  old.close()
} finally {
  rmSync(work, { recursive: true, force: true })
}
