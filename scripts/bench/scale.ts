// Cost that grows with the data (issues 15, 30): the same calls on an empty database and on one seeded
// with 100k versions of one miniapp and 50k users, p50/p99 of each and their ratios (goal: ≤ 1.5×).
//
//   node_modules/.bin/bun scripts/bench/scale.ts [--versions 100000] [--users 50000] [--samples 200]
//
// Each side is a fresh data directory served by `bun src/main.ts serve` (from source, as `npm start`).
// The big one is seeded straight into SQLite before the server starts (through the API it would take
// hours), every seeded version a draft pointing at the same five small blobs. The calls: GET the
// workspace (first page), GET it with ?limit=1, GET it with ?status=PUBLISHED (the console's filter;
// one version on every side), GET install info of a published version, POST an upload, DELETE that
// upload. Each call runs on every side back to back (empty, one page, large; the reverse every other
// round), so machine noise (this machine is shared) falls on all alike. A round takes well under a
// second, hence 200 by default: with fewer than 100 samples p99 is the slowest one, which on a shared
// machine is one scheduler hiccup rather than the database.
//
// The first page of the empty side holds one version and the large side's 50, each with a signed
// link: that row measures the page's size, not the data's. So a third server holds exactly one
// page's worth (50 seeded drafts besides the published one), and the row "first page of 50 both"
// compares the large side with it; the ?limit=1 row compares one version on each. The third server
// answers every call too (its numbers are not printed but for that row): a server that answered only
// the first page was measurably colder than the others.
import { availableParallelism, loadavg } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { Database } from 'bun:sqlite'
import { buildZip } from '../../src/test-fixtures'
import { benchWorkspace, call, freePort, waitForHealth, createBenchAdmin } from './support'

const root = join(import.meta.dir, '..', '..')
const { values: options } = parseArgs({
  options: { versions: { type: 'string', default: '100000' }, users: { type: 'string', default: '50000' }, samples: { type: 'string', default: '200' } },
})
const versionCount = Number(options.versions)
const userCount = Number(options.users)
const samples = Number(options.samples)
const { work, children, cleanUp } = benchWorkspace('scale')

const progress = (text: string) => process.stderr.write(process.stderr.isTTY ? `\r${text.padEnd(70)}` : `${text}\n`)



async function startServer(dataDir: string): Promise<string> {
  const port = await freePort()
  const child = Bun.spawn([process.execPath, join(root, 'src', 'main.ts'), 'serve', '--data-dir', dataDir, '--host', '127.0.0.1', '--port', String(port), '--rate-limit', 'off'], {
    cwd: work,
    stdout: 'ignore',
    stderr: 'inherit',
  })
  children.push(child)
  const base = `http://127.0.0.1:${port}`
  await waitForHealth(base, 60_000)
  return base
}

function form(version: string): FormData {
  const data = new FormData()
  data.append('version', version)
  data.append('bundleIos', new Blob([`console.log("ios ${version}")`]), 'main.ios.jsbundle')
  data.append('bundleAndroid', new Blob([`console.log("android ${version}")`]), 'main.android.bundle')
  data.append('manifest', new Blob([JSON.stringify({ appId: 'com.example.scale', version, pages: { index: 'index' } })]), 'app.json')
  data.append('assetsIos', new Blob([buildZip([{ name: 'assets/logo.png', content: 'png' }]) as BlobPart]), 'assets-ios.zip')
  data.append('assetsAndroid', new Blob([buildZip([{ name: 'drawable-mdpi/logo.png', content: 'png' }]) as BlobPart]), 'assets-android.zip')
  return data
}

type CallName = 'workspace' | 'workspaceOne' | 'workspacePublished' | 'install' | 'upload' | 'delete'
const callNames: CallName[] = ['workspace', 'workspaceOne', 'workspacePublished', 'install', 'upload', 'delete']

interface Side {
  name: string
  base: string
  token: string
  miniAppId: string
  installUrl: string
  /** the id of the version this side's last upload made, for the delete that follows */
  uploaded: string
  timings: Record<CallName, number[]>
}

/** A server with a user, a miniapp and one published version, through the API; the caller may seed more before. */
async function prepare(name: string, seed: (dataDir: string) => Promise<void> | void): Promise<Side> {
  const dataDir = join(work, name)
  // init the directory (schema) with a short-lived server, seed it while nothing runs, then serve it
  const first = await startServer(dataDir)
  createBenchAdmin([process.execPath, join(root, 'src', 'main.ts')], dataDir)
  const { accessToken } = await call(first, 'POST', '/api/auth/register', { json: { email: `bench-${name}@example.com`, password: 'bench-password' } })
  const miniApp = await call(first, 'POST', '/api/mini-apps', { token: accessToken, json: { appId: 'com.example.scale', name: 'Scale' } })
  const version = await call(first, 'POST', '/api/mini-apps/by-app-id/com.example.scale/versions/upload', { token: accessToken, body: form('0.0.1') })
  await call(first, 'POST', `/api/mini-apps/${miniApp.id}/versions/${version.id}/publish`, { token: accessToken, json: {} })
  children.pop()!.kill('SIGTERM')
  await Bun.sleep(500)
  await seed(dataDir)
  const base = await startServer(dataDir)
  const info = await call(base, 'GET', `/api/mini-apps/access/versions/${version.id}/install?token=${accessToken}`)
  const token = new URL(info.bundleUrl).searchParams.get('token')!
  const timings = Object.fromEntries(callNames.map((key) => [key, [] as number[]])) as Side['timings']
  return { name, base, token: accessToken, miniAppId: miniApp.id, installUrl: `${base}/api/mini-apps/access/versions/${version.id}/install?token=${token}`, uploaded: '', timings }
}

/** `versionCount` draft versions of the bench miniapp (every one with the same five blobs) and `userCount` users, in two transactions. */
function seed(dataDir: string, versionCount: number, userCount: number): void {
  const database = new Database(join(dataDir, 'miniship.db'), { strict: true })
  database.exec('PRAGMA busy_timeout = 5000')
  const app = database.query("SELECT id, created_by FROM mini_apps WHERE app_id = 'com.example.scale'").get() as { id: string; created_by: string }
  const files = database.query('SELECT kind, sha256, size FROM version_files LIMIT 5').all() as { kind: string; sha256: string; size: number }[]
  const insertVersion = database.prepare("INSERT INTO versions (id, mini_app_id, version, build_number, release_type, status, channel, created_by, created_at, updated_at) VALUES (?, ?, ?, ?, 'RELEASE', 'DRAFT', 'stable', ?, ?, ?)")
  const insertFile = database.prepare('INSERT INTO version_files (version_id, kind, sha256, size) VALUES (?, ?, ?, ?)')
  const now = new Date().toISOString()
  database.transaction(() => {
    for (let index = 0; index < versionCount; index++) {
      const id = `seed-${String(index).padStart(7, '0')}`
      insertVersion.run(id, app.id, `1.${Math.floor(index / 1000)}.${index % 1000}`, 10 + index, app.created_by, now, now)
      for (const file of files) insertFile.run(id, file.kind, file.sha256, file.size)
      if (index % 10_000 === 0 && versionCount > 1000) progress(`seeding versions ${index}/${versionCount}`)
    }
    database.run('UPDATE mini_apps SET next_build_number = ? WHERE id = ?', [10 + versionCount, app.id])
  })()
  const insertUser = database.prepare("INSERT INTO users (id, email, display_name, password_hash, role, status, created_at, updated_at) VALUES (?, ?, ?, 'x', 'USER', 'ACTIVE', ?, ?)")
  database.transaction(() => {
    for (let index = 0; index < userCount; index++) insertUser.run(`seed-user-${index}`, `user${index}@example.com`, `User ${index}`, now, now)
  })()
  if (versionCount > 1000) {
    progress(`seeded ${versionCount} versions and ${userCount} users`)
    process.stderr.write('\n')
  }
  database.close()
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const started = performance.now()
  await fn()
  return performance.now() - started
}

/** One call on one side; the upload leaves its version's id for the delete. */
async function run(side: Side, key: CallName, round: number): Promise<number> {
  switch (key) {
    case 'workspace':
      return timed(() => call(side.base, 'GET', `/api/mini-apps/${side.miniAppId}/workspace`, { token: side.token }))
    case 'workspaceOne':
      return timed(() => call(side.base, 'GET', `/api/mini-apps/${side.miniAppId}/workspace?limit=1`, { token: side.token }))
    case 'workspacePublished':
      return timed(() => call(side.base, 'GET', `/api/mini-apps/${side.miniAppId}/workspace?status=PUBLISHED`, { token: side.token }))
    case 'install':
      return timed(() => call(side.base, 'GET', side.installUrl.slice(side.base.length)))
    case 'upload':
      return timed(async () => (side.uploaded = (await call(side.base, 'POST', '/api/mini-apps/by-app-id/com.example.scale/versions/upload', { token: side.token, body: form(`9.0.${round}`) })).id))
    case 'delete':
      return timed(() => call(side.base, 'DELETE', `/api/mini-apps/${side.miniAppId}/versions/${side.uploaded}`, { token: side.token }))
  }
}

/** One round: each call on every side back to back. */
async function sample(sides: Side[], round: number): Promise<void> {
  for (const key of callNames) for (const side of sides) side.timings[key].push(await run(side, key, round))
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
}

try {
  const empty = await prepare('empty', () => {})
  const page = await prepare('page', (dataDir) => seed(dataDir, 50, 0))
  const large = await prepare('large', (dataDir) => seed(dataDir, versionCount, userCount))
  for (let warm = 0; warm < 3; warm++) await sample([empty, page, large], 990 + warm)
  for (const side of [empty, page, large]) for (const key of callNames) side.timings[key].length = 0
  const loadStart = loadavg()[0]!
  for (let round = 0; round < samples; round++) {
    // the page side sits between the other two, whichever goes first
    await sample(round % 2 ? [large, page, empty] : [empty, page, large], round)
    progress(`round ${round + 1}/${samples}`)
  }
  process.stderr.write('\n')
  console.log(`scale benchmark: ${samples} samples per call, ${versionCount} versions of one miniapp and ${userCount} users ("large") against a baseline`)
  console.log(`  p99 of ${samples} samples is the ${samples <= 100 ? 'slowest' : `${Math.floor(0.99 * samples) + 1}th fastest`}; a ratio over 1.5 is marked *`)
  // p99 on a busy machine is the scheduler's: say how busy it was
  console.log(`  load average ${loadStart.toFixed(2)} at the start of the rounds, ${loadavg()[0]!.toFixed(2)} at the end, on ${availableParallelism()} CPUs`)
  const head = (text: string, width = 10) => text.padStart(width)
  console.log(`  ${'call'.padEnd(44)} ${'baseline'.padEnd(16)} ${head('base p50')} ${head('base p99')} ${head('large p50')} ${head('large p99')} ${head('p50 ratio')} ${head('p99 ratio')}`)
  const rows: { label: string; key: CallName; baseline: Side; baselineName: string }[] = [
    { label: 'workspace (first page: 1 vs 50 versions)', key: 'workspace', baseline: empty, baselineName: 'empty' },
    { label: 'workspace (first page of 50 both)', key: 'workspace', baseline: page, baselineName: '50 drafts' },
    { label: 'workspace (?limit=1: one version both)', key: 'workspaceOne', baseline: empty, baselineName: 'empty' },
    { label: 'workspace (?status=PUBLISHED: one both)', key: 'workspacePublished', baseline: empty, baselineName: 'empty' },
    { label: 'install info (published version)', key: 'install', baseline: empty, baselineName: 'empty' },
    { label: 'upload (small files)', key: 'upload', baseline: empty, baselineName: 'empty' },
    { label: 'delete (a draft)', key: 'delete', baseline: empty, baselineName: 'empty' },
  ]
  const ms = (value: number) => head(`${value.toFixed(1)} ms`)
  const ratio = (value: number) => head(`${value.toFixed(2)}${value > 1.5 ? '*' : ' '}`)
  for (const { label, key, baseline, baselineName } of rows) {
    const [b50, b99, l50, l99] = [percentile(baseline.timings[key], 50), percentile(baseline.timings[key], 99), percentile(large.timings[key], 50), percentile(large.timings[key], 99)]
    console.log(`  ${label.padEnd(44)} ${baselineName.padEnd(16)} ${ms(b50)} ${ms(b99)} ${ms(l50)} ${ms(l99)} ${ratio(l50 / b50)} ${ratio(l99 / b99)}`)
  }
} finally {
  cleanUp()
}
