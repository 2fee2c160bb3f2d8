// Durability of the compiled binary: backup while uploads run → restore elsewhere → carry on; SIGKILL during
// uploads/publishes/deletes, round after round; garbage collected, referenced files never; damaged archives refused.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { Database } from 'bun:sqlite'
import { dataDirPaths } from '../data-dir'
import { blobPath, checkStoredFiles, createLocalBlobStore } from '../storage'
import { findGarbage } from '../storage/gc'
import { buildZip } from '../test-fixtures'
import { binaryCopy, callApi, runBinary, startBinary, type RunningBinary } from './support'

let dir: string
let binary: string

beforeAll(async () => {
  ;({ dir, binary } = await binaryCopy('miniship-durability-'))
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const run = (args: string[], options: { stdin?: string } = {}) => runBinary(args, { ...options, cwd: dir, binary })
const start = (dataDir: string) => startBinary({ dataDir, cwd: dir, binary, args: ['--rate-limit', 'off'] })
const sha256 = (bytes: Uint8Array | string) => new Bun.CryptoHasher('sha256').update(bytes).digest('hex')

const email = 'ops@example.com'
const password = 'durable password'
const fileFields = ['bundleIos', 'bundleAndroid', 'manifest', 'assetsIos', 'assetsAndroid'] as const

interface VersionRecord {
  id: string
  version: string
  status: string
  files: Record<(typeof fileFields)[number], { size: number; sha256: string }>
}

function api(server: RunningBinary, token: string, method: string, path: string, json?: unknown) {
  return callApi(server.baseUrl, method, `/api${path}`, { token, json })
}

async function login(server: RunningBinary): Promise<{ status: number; token: string }> {
  const response = await fetch(`${server.baseUrl}/api/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password }),
  })
  return { status: response.status, token: response.status === 200 ? (await response.json()).accessToken : '' }
}

/** A fresh data directory with an admin, the admin's token and one miniapp. */
async function provision(dataDir: string, appId: string): Promise<{ server: RunningBinary; token: string; miniAppId: string }> {
  const admin = await run(['create-admin', '--data-dir', dataDir, '--email', email, '--password-stdin'], { stdin: `${password}\n` })
  expect(admin.exitCode).toBe(0)
  const server = await start(dataDir)
  const { token } = await login(server)
  const created = await api(server, token, 'POST', '/mini-apps', { appId, name: appId })
  expect(created.status).toBe(201)
  return { server, token, miniAppId: created.body.id }
}

/** Small files, distinct per `version` so each upload stores five new blobs. */
function uploadForm(appId: string, version: string): FormData {
  const form = new FormData()
  form.append('version', version)
  form.append('bundleIos', new Blob([`console.log("ios ${version}")`], { type: 'application/javascript' }), 'main.ios.jsbundle')
  form.append('bundleAndroid', new Blob([`console.log("android ${version}")`], { type: 'application/javascript' }), 'main.android.bundle')
  form.append('manifest', new Blob([JSON.stringify({ appId, name: appId })], { type: 'application/json' }), 'app.json')
  form.append('assetsIos', new Blob([buildZip([{ name: 'assets/logo.png', content: `ios logo ${version}` }]) as BlobPart], { type: 'application/zip' }), 'assets-ios.zip')
  form.append('assetsAndroid', new Blob([buildZip([{ name: 'drawable-mdpi/logo.png', content: `android logo ${version}` }]) as BlobPart], { type: 'application/zip' }), 'assets-android.zip')
  return form
}

async function upload(server: RunningBinary, token: string, appId: string, version: string): Promise<{ status: number; body: any }> {
  const response = await fetch(`${server.baseUrl}/api/mini-apps/by-app-id/${appId}/versions/upload`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}` },
    body: uploadForm(appId, version),
  })
  return { status: response.status, body: await response.json() }
}

async function workspaceVersions(server: RunningBinary, token: string, miniAppId: string): Promise<VersionRecord[]> {
  const workspace = await api(server, token, 'GET', `/mini-apps/${miniAppId}/workspace`)
  expect(workspace.status).toBe(200)
  return workspace.body.versions
}

/** What a crash could break, read straight from the data directory (the server may be running). */
async function storeProblems(dataDir: string): Promise<{ stored: string[]; unreferenced: string[]; tmp: string[] }> {
  const paths = dataDirPaths(dataDir)
  const database = new Database(paths.database, { readonly: true })
  try {
    const { unreferenced } = findGarbage(paths, database)
    return { stored: await checkStoredFiles(database, createLocalBlobStore(paths)), unreferenced: unreferenced.map((file) => file.path), tmp: readdirSync(paths.tmp) }
  } finally {
    database.close()
  }
}

async function expectDoctorClean(dataDir: string): Promise<void> {
  const doctor = await run(['doctor', '--data-dir', dataDir])
  expect(doctor.stdout).toContain('OK')
  expect(doctor.exitCode).toBe(0)
}

describe('backup while uploads run, restore on another machine', () => {
  test('every version comes back with its five files, doctor is clean, passwords and tokens work', async () => {
    const source = join(dir, 'live')
    const { server, token, miniAppId } = await provision(source, 'busy.app')

    // The client: upload, publish every third, delete some drafts, until told to stop.
    const uploaded = new Map<string, VersionRecord>()
    const deleted = new Set<string>()
    let stop = false
    let round = 0
    let clientError: unknown = null
    const settledBeforeBackup = new Set<string>()
    const roundsReach = async (count: number) => {
      const deadline = Date.now() + 30_000
      while (round < count && clientError === null && Date.now() < deadline) await Bun.sleep(10)
      if (clientError) throw clientError
      expect(round).toBeGreaterThanOrEqual(count)
    }
    const client = (async () => {
      while (!stop) {
        const result = await upload(server, token, 'busy.app', `1.0.${round}`)
        expect(result.status).toBe(201)
        uploaded.set(result.body.id, result.body)
        if (round % 3 === 0) expect((await api(server, token, 'POST', `/mini-apps/${miniAppId}/versions/${result.body.id}/publish`, {})).status).toBe(200)
        if (round % 4 === 1 && round % 3 !== 0) {
          expect((await api(server, token, 'DELETE', `/mini-apps/${miniAppId}/versions/${result.body.id}`)).status).toBe(200)
          deleted.add(result.body.id)
        }
        round++
      }
    })().catch((error: unknown) => {
      clientError = error
    })
    await roundsReach(8)

    for (const id of uploaded.keys()) if (!deleted.has(id)) settledBeforeBackup.add(id)
    const archive = join(dir, 'live-backup.tar.gz')
    const backup = await run(['backup', '--data-dir', source, '--out', archive])
    const roundsDuringBackup = round
    await roundsReach(roundsDuringBackup + 3)
    stop = true
    await client
    if (clientError) throw clientError
    expect(backup.stderr).toBe('') // piped: no progress lines
    expect(backup.stdout).toContain(`Backup written to ${archive}`)
    expect(backup.exitCode).toBe(0)
    expect(readdirSync(dirname(archive)).filter((name) => name.endsWith('.partial'))).toEqual([])
    expect(readdirSync(join(source, 'tmp')).filter((name) => name.startsWith('backup-'))).toEqual([])
    expect(await server.stop('SIGTERM')).toBe(0)

    // "Another machine": a directory that never saw this data.
    const target = join(dir, 'elsewhere', 'data')
    const restore = await run(['restore', archive, '--data-dir', target])
    expect(restore.stderr).toBe('')
    expect(restore.exitCode).toBe(0)
    expect(restore.stdout).toContain(`into ${target}`)
    await expectDoctorClean(target)

    const restored = await start(target)
    // old access token (same secret) and old password
    const me = await api(restored, token, 'GET', '/auth/me')
    expect(me.status).toBe(200)
    expect(me.body.email).toBe(email)
    const relogin = await login(restored)
    expect(relogin.status).toBe(200)

    const versions = await workspaceVersions(restored, token, miniAppId)
    const ids = new Set(versions.map((version) => version.id))
    for (const id of settledBeforeBackup) expect(ids.has(id)).toBe(true)
    const downloadPaths: Record<(typeof fileFields)[number], string> = {
      bundleIos: 'bundle',
      bundleAndroid: 'bundles/android',
      manifest: 'manifest',
      assetsIos: 'assets/ios',
      assetsAndroid: 'assets/android',
    }
    for (const version of versions) {
      expect(uploaded.get(version.id)?.files).toEqual(version.files)
      for (const field of fileFields) {
        const { sha256: expected, size } = version.files[field]
        const content = readFileSync(blobPath(dataDirPaths(target), expected))
        expect(content.byteLength).toBe(size)
        expect(sha256(content)).toBe(expected)
        // and as the runtime downloads it from the restored server
        const download = await fetch(`${restored.baseUrl}/api/mini-apps/access/versions/${version.id}/${downloadPaths[field]}?token=${token}`)
        expect(download.status).toBe(200)
        expect(sha256(new Uint8Array(await download.arrayBuffer()))).toBe(expected)
      }
    }
    expect(await storeProblems(target)).toEqual({ stored: [], unreferenced: [], tmp: [] })
    // carry on: the restored instance takes new uploads
    expect((await upload(restored, token, 'busy.app', '2.0.0')).status).toBe(201)
    await expectDoctorClean(target)
    expect(await restored.stop('SIGTERM')).toBe(0)
    await expectDoctorClean(target)

    // A damaged copy of the same archive is refused before the (now populated) target is touched.
    const before = readdirSync(join(target, 'blobs', 'sha256')).sort()
    const databaseBefore = sha256(readFileSync(join(target, 'miniship.db')))
    const truncated = join(dir, 'truncated.tar.gz')
    copyFileSync(archive, truncated)
    truncateSync(truncated, Math.floor(statSync(truncated).size / 2))
    const refused = await run(['restore', truncated, '--data-dir', target, '--force'])
    expect(refused.exitCode).toBe(1)
    expect(refused.stderr).toContain('is truncated')
    expect(refused.stderr).toContain('was left as it was')
    expect(readdirSync(join(target, 'blobs', 'sha256')).sort()).toEqual(before)
    expect(sha256(readFileSync(join(target, 'miniship.db')))).toBe(databaseBefore)
    expect(readdirSync(dirname(target))).toEqual(['data'])

    // bad input, not a failed restore: exit 2, and nothing there was touched
    const notEmpty = await run(['restore', archive, '--data-dir', target])
    expect(notEmpty.exitCode).toBe(2)
    expect(notEmpty.stderr).toContain('is not empty')
  }, 120_000)
})

describe('SIGKILL during uploads, publishes and deletes', () => {
  test('after every restart: doctor clean, no row without its file, nothing left in tmp/ or unreferenced', async () => {
    const dataDir = join(dir, 'killed')
    const provisioned = await provision(dataDir, 'crashy.app')
    const { token, miniAppId } = provisioned
    let server = provisioned.server
    const rounds = 20
    let killedMidRequest = 0
    let succeeded = 0
    /** requests that failed while the server was up, or answered something other than success */
    const failures: string[] = []
    for (let round = 0; round < rounds; round++) {
      // A client writing as fast as it can (upload, publish a draft, delete a draft, again), and a
      // kill at a random moment while it does. Every answer must be the success it asks for; a
      // request may fail only once the kill was sent, and then the client stops.
      const running = server
      let killed = false
      const expectAnswer = async (what: string, request: Promise<{ status: number; body: unknown }>, status: number) => {
        let answer: { status: number; body: unknown }
        try {
          answer = await request
        } catch (error) {
          if (killed) throw error
          failures.push(`round ${round}: ${what} failed while the server was up: ${(error as Error).message}`)
          throw error
        }
        if (answer.status !== status) {
          failures.push(`round ${round}: ${what} answered ${answer.status} ${JSON.stringify(answer.body).slice(0, 300)}`)
          throw new Error(`${what} answered ${answer.status}`)
        }
        succeeded++
        return answer.body
      }
      const client = (async () => {
        for (let step = 0; ; step++) {
          const workspace = (await expectAnswer('workspace', api(running, token, 'GET', `/mini-apps/${miniAppId}/workspace`), 200)) as { versions: VersionRecord[] }
          const drafts = workspace.versions.filter((version) => version.status !== 'PUBLISHED')
          if (step % 3 === 0 || drafts.length < 2) await expectAnswer(`upload ${round}.${step}.0`, upload(running, token, 'crashy.app', `${round}.${step}.0`), 201)
          else if (step % 3 === 1) await expectAnswer(`publish ${drafts[0]!.version}`, api(running, token, 'POST', `/mini-apps/${miniAppId}/versions/${drafts[0]!.id}/publish`, {}), 200)
          else await expectAnswer(`delete ${drafts[1]!.version}`, api(running, token, 'DELETE', `/mini-apps/${miniAppId}/versions/${drafts[1]!.id}`), 200)
        }
      })().then(
        () => 'finished',
        () => (killed ? 'cut' : 'failed'),
      )
      await Bun.sleep(20 + Math.floor(Math.random() * 120))
      killed = true
      await server.stop('SIGKILL')
      const outcome = await client
      if (outcome === 'cut') killedMidRequest++
      expect(failures).toEqual([])

      server = await start(dataDir)
      // Startup removed tmp/ leftovers and unreferenced blobs; every row has its files.
      expect(await storeProblems(dataDir)).toEqual({ stored: [], unreferenced: [], tmp: [] })
      await expectDoctorClean(dataDir)
    }
    expect(failures).toEqual([])
    // The kills must have landed while the client was writing, or this proved nothing.
    expect(killedMidRequest).toBe(rounds)
    expect(succeeded).toBeGreaterThan(rounds)
    expect((await workspaceVersions(server, token, miniAppId)).length).toBeGreaterThan(0)
    expect(await server.stop('SIGTERM')).toBe(0)
    await expectDoctorClean(dataDir)
  }, 120_000)
})

describe('garbage collection', () => {
  test('unreferenced blobs go (doctor --fix, or startup), referenced ones never', async () => {
    const dataDir = join(dir, 'gc')
    const { server, token } = await provision(dataDir, 'gc.app')
    const version = (await upload(server, token, 'gc.app', '1.0.0')).body as VersionRecord
    const referenced = fileFields.map((field) => blobPath(dataDirPaths(dataDir), version.files[field].sha256))

    // A blob renamed into place whose row never committed, and a half-written upload.
    const plantLeftovers = () => {
      const orphan = blobPath(dataDirPaths(dataDir), sha256('orphan'))
      mkdirSync(dirname(orphan), { recursive: true })
      writeFileSync(orphan, 'orphan')
      writeFileSync(join(dataDir, 'tmp', 'upload-interrupted'), 'half')
      return orphan
    }

    // While the server runs, doctor --fix refuses: those could be uploads in flight. Exit 2, as every
    // command the running server's lock stops (DATA_DIR_IN_USE: docs/operating.md, Exit codes).
    const busy = await run(['doctor', '--fix', '--data-dir', dataDir])
    expect(busy.exitCode).toBe(2)
    expect(busy.stderr).toContain('is already serving')
    await server.stop('SIGKILL')

    const orphan = plantLeftovers()
    const found = await run(['doctor', '--data-dir', dataDir])
    expect(found.exitCode).toBe(1)
    expect(found.stdout).toContain('1 stored file(s) no version refers to')
    expect(found.stdout).toContain('1 leftover(s) of interrupted work')
    const fixed = await run(['doctor', '--fix', '--data-dir', dataDir])
    expect(fixed.stdout).toContain('FIXED: removed 1 stored file(s) no version refers to (6 bytes) and 1 leftover(s) in tmp/')
    expect(fixed.stdout).toContain('OK')
    expect(fixed.exitCode).toBe(0)
    expect(existsSync(orphan)).toBe(false)
    for (const path of referenced) expect(existsSync(path)).toBe(true)

    plantLeftovers()
    const restarted = await start(dataDir)
    expect(restarted.output().stderr).toContain('startup: removed 1 stored file(s)')
    expect(existsSync(orphan)).toBe(false)
    for (const path of referenced) expect(existsSync(path)).toBe(true)
    expect(await storeProblems(dataDir)).toEqual({ stored: [], unreferenced: [], tmp: [] })
    expect(await restarted.stop('SIGTERM')).toBe(0)
    await expectDoctorClean(dataDir)
  }, 60_000)
})

describe('SIGTERM while an upload is still sending', () => {
  test('after the grace the upload is cut off: one log line says so, tmp/ is empty, doctor is clean, exit 0', async () => {
    const dataDir = join(dir, 'cut-upload')
    const { server, token } = await provision(dataDir, 'cut.app')
    // a multipart body that starts a large bundle and then stalls, as a slow network does
    const boundary = 'miniship-cut-upload'
    let stall: () => void = () => {}
    const body = new ReadableStream<Uint8Array>({
      async start(controller) {
        const encoder = new TextEncoder()
        controller.enqueue(encoder.encode(`--${boundary}\r\nContent-Disposition: form-data; name="version"\r\n\r\n1.0.0\r\n--${boundary}\r\nContent-Disposition: form-data; name="bundleIos"; filename="main.ios.jsbundle"\r\nContent-Type: application/javascript\r\n\r\n`))
        for (let chunk = 0; chunk < 8; chunk++) controller.enqueue(new Uint8Array(256 * 1024).fill(0x61))
        await new Promise<void>((resolve) => (stall = resolve))
        controller.close()
      },
    })
    const sending = fetch(`${server.baseUrl}/api/mini-apps/by-app-id/cut.app/versions/upload`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': `multipart/form-data; boundary=${boundary}` },
      body,
      // @ts-expect-error Bun and undici take a streamed request body with duplex: 'half'
      duplex: 'half',
    }).catch((error: unknown) => error)
    const tmp = join(dataDir, 'tmp')
    for (let waited = 0; readdirSync(tmp).length === 0 && waited < 5000; waited += 50) await Bun.sleep(50)
    expect(readdirSync(tmp).length).toBeGreaterThan(0)
    expect(await server.stop('SIGTERM')).toBe(0)
    stall()
    await sending
    expect(server.output().stdout).toContain('request(s) still in flight after 10 s were cut off')
    expect(readdirSync(tmp)).toEqual([])
    await expectDoctorClean(dataDir)
  }, 60_000)
})
