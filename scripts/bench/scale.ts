// Cost that grows with the data (issue 15): the same calls on an empty database and on one seeded with
// 100k versions of one miniapp and 50k users, p50/p99 of each.
//
//   node_modules/.bin/bun scripts/bench/scale.ts [--versions 100000] [--users 50000] [--samples 40]
//
// Each side is a fresh data directory served by `bun src/main.ts serve` (from source, as `npm start`).
// The big one is seeded straight into SQLite before the server starts (through the API it would take
// hours), every seeded version pointing at the same five small blobs. Then, on each side, in turn:
// GET the workspace (first page), GET install info of a published version, POST an upload, DELETE
// that upload. The sides alternate per round, so machine noise falls on both.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { Database } from 'bun:sqlite'
import { buildZip } from '../../src/test-fixtures'
import { call, freePort, waitForHealth } from './support'

const root = join(import.meta.dir, '..', '..')
const { values: options } = parseArgs({
  options: { versions: { type: 'string', default: '100000' }, users: { type: 'string', default: '50000' }, samples: { type: 'string', default: '40' } },
})
const versionCount = Number(options.versions)
const userCount = Number(options.users)
const samples = Number(options.samples)
const work = mkdtempSync(join(tmpdir(), 'miniship-bench-scale-'))
const children: ReturnType<typeof Bun.spawn>[] = []
const cleanUp = () => {
  for (const child of children) child.kill('SIGTERM')
  rmSync(work, { recursive: true, force: true })
}
process.on('SIGINT', () => {
  cleanUp()
  process.exit(130)
})

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

interface Side {
  name: string
  base: string
  token: string
  miniAppId: string
  installUrl: string
  timings: Record<'workspace' | 'install' | 'upload' | 'delete', number[]>
}

/** A server with a user, a miniapp and one published version, through the API; the caller may seed more before. */
async function prepare(name: string, seed: (dataDir: string) => Promise<void> | void): Promise<Side> {
  const dataDir = join(work, name)
  // init the directory (schema) with a short-lived server, seed it while nothing runs, then serve it
  const first = await startServer(dataDir)
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
  return { name, base, token: accessToken, miniAppId: miniApp.id, installUrl: `${base}/api/mini-apps/access/versions/${version.id}/install?token=${token}`, timings: { workspace: [], install: [], upload: [], delete: [] } }
}

/** 100k versions of the bench miniapp (every one with the same five blobs) and 50k users, in two transactions. */
function seedLarge(dataDir: string): void {
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
      if (index % 10_000 === 0) progress(`seeding versions ${index}/${versionCount}`)
    }
    database.run('UPDATE mini_apps SET next_build_number = ? WHERE id = ?', [10 + versionCount, app.id])
  })()
  const insertUser = database.prepare("INSERT INTO users (id, email, display_name, password_hash, role, status, created_at, updated_at) VALUES (?, ?, ?, 'x', 'USER', 'ACTIVE', ?, ?)")
  database.transaction(() => {
    for (let index = 0; index < userCount; index++) insertUser.run(`seed-user-${index}`, `user${index}@example.com`, `User ${index}`, now, now)
  })()
  progress(`seeded ${versionCount} versions and ${userCount} users`)
  process.stderr.write('\n')
  database.close()
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const started = performance.now()
  await fn()
  return performance.now() - started
}

async function sample(side: Side, round: number): Promise<void> {
  side.timings.workspace.push(await timed(() => call(side.base, 'GET', `/api/mini-apps/${side.miniAppId}/workspace`, { token: side.token })))
  side.timings.install.push(await timed(() => call(side.base, 'GET', side.installUrl.slice(side.base.length))))
  let uploaded: { id: string } = { id: '' }
  side.timings.upload.push(await timed(async () => (uploaded = await call(side.base, 'POST', '/api/mini-apps/by-app-id/com.example.scale/versions/upload', { token: side.token, body: form(`9.0.${round}`) }))))
  side.timings.delete.push(await timed(() => call(side.base, 'DELETE', `/api/mini-apps/${side.miniAppId}/versions/${uploaded.id}`, { token: side.token })))
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
}

try {
  const empty = await prepare('empty', () => {})
  const large = await prepare('large', seedLarge)
  for (const side of [empty, large]) await sample(side, 999) // warm up
  for (const side of [empty, large]) for (const key of Object.keys(side.timings) as (keyof Side['timings'])[]) side.timings[key].length = 0
  for (let round = 0; round < samples; round++) {
    const order = round % 2 ? [large, empty] : [empty, large]
    for (const side of order) await sample(side, round)
    progress(`round ${round + 1}/${samples}`)
  }
  process.stderr.write('\n')
  console.log(`scale benchmark: ${samples} samples per call, empty database vs ${versionCount} versions of one miniapp and ${userCount} users`)
  console.log(`  ${'call'.padEnd(34)} ${'empty p50'.padStart(10)} ${'empty p99'.padStart(10)} ${'large p50'.padStart(10)} ${'large p99'.padStart(10)} ${'p50 ratio'.padStart(10)}`)
  const labels: Record<keyof Side['timings'], string> = { workspace: 'workspace (first page of 50)', install: 'install info (published version)', upload: 'upload (small files)', delete: 'delete (a draft)' }
  for (const key of Object.keys(labels) as (keyof Side['timings'])[]) {
    const [e50, e99, l50, l99] = [percentile(empty.timings[key], 50), percentile(empty.timings[key], 99), percentile(large.timings[key], 50), percentile(large.timings[key], 99)]
    console.log(`  ${labels[key].padEnd(34)} ${`${e50.toFixed(1)} ms`.padStart(10)} ${`${e99.toFixed(1)} ms`.padStart(10)} ${`${l50.toFixed(1)} ms`.padStart(10)} ${`${l99.toFixed(1)} ms`.padStart(10)} ${(l50 / e50).toFixed(2).padStart(10)}`)
  }
} finally {
  cleanUp()
}
