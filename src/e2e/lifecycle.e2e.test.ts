// A team on the compiled binary: real-sized uploads, review → publish → rollback → delete, and a SIGKILL mid-upload.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { callApi, runBinary, type ApiCallOptions, startBinary, tempDir, type RunningBinary } from './support'
import { buildZip } from '../test-fixtures'

const mb = 1024 * 1024
let dir: string
let dataDir: string
let server: RunningBinary
let adminToken: string
let token: string

beforeAll(async () => {
  dir = tempDir()
  dataDir = join(dir, 'data')
  expect((await runBinary(['init', '--data-dir', dataDir])).exitCode).toBe(0)
  const admin = await runBinary(['create-admin', '--data-dir', dataDir, '--email', 'admin@example.test', '--password-stdin'], { stdin: 'admin-password\n' })
  expect(admin.exitCode).toBe(0)
  server = await startBinary({ dataDir })
  adminToken = (await api('POST', '/api/auth/login', { json: { email: 'admin@example.test', password: 'admin-password' } })).body.accessToken
  token = (await api('POST', '/api/auth/register', { json: { email: 'dev@example.test', password: 'dev-password' } })).body.accessToken
  expect(typeof token).toBe('string')
  // Real-sized parts (decisions: 5 MB bundles, 20 MB assets), written once and sent from disk like a CLI does.
  for (const version of ['1.0.0', '1.1.0', '1.2.0']) {
    writeFileSync(join(dir, `ios-${version}.bundle`), crypto.getRandomValues(new Uint8Array(5 * mb)))
    writeFileSync(join(dir, `android-${version}.bundle`), crypto.getRandomValues(new Uint8Array(5 * mb)))
  }
  const big = new Uint8Array(20 * mb)
  for (let offset = 0; offset < big.length; offset += 65536) crypto.getRandomValues(big.subarray(offset, offset + 65536))
  writeFileSync(join(dir, 'assets-ios.zip'), buildZip([{ name: 'assets/' }, { name: 'assets/images.bin', content: big }]))
  writeFileSync(join(dir, 'assets-android.zip'), buildZip([{ name: 'drawable-xhdpi/images.bin', content: big }, { name: 'raw/config.json', content: '{}' }]))
}, 180_000)

afterAll(async () => {
  if (server) await server.stop()
  rmSync(dir, { recursive: true, force: true })
})

const api = (method: string, path: string, options: ApiCallOptions = {}) => callApi(server.baseUrl, method, path, options)

function uploadForm(version: string): FormData {
  const form = new FormData()
  form.append('version', version)
  form.append('changelog', `changes in ${version}`)
  form.append('bundleIos', Bun.file(join(dir, `ios-${version}.bundle`)), 'main.ios.jsbundle')
  form.append('bundleAndroid', Bun.file(join(dir, `android-${version}.bundle`)), 'main.android.bundle')
  form.append('manifest', new Blob([JSON.stringify({ appId: 'team.shop', name: 'Shop', version, pages: { index: 'pages/index' } })]), 'app.json')
  form.append('assetsIos', Bun.file(join(dir, 'assets-ios.zip')), 'assets-ios.zip')
  form.append('assetsAndroid', Bun.file(join(dir, 'assets-android.zip')), 'assets-android.zip')
  return form
}

const sha256 = async (path: string) => new Bun.CryptoHasher('sha256').update(await Bun.file(path).bytes()).digest('hex')

describe('the whole publishing lifecycle on the compiled binary', () => {
  let miniAppId: string
  const ids: Record<string, string> = {}

  test('create → upload 1.0.0 → review → publish → upload 1.1.0 → publish → rollback → delete a draft', async () => {
    const created = await api('POST', '/api/mini-apps', { token, json: { appId: 'team.shop', name: 'Shop' } })
    expect(created.status).toBe(201)
    miniAppId = created.body.id

    const first = await api('POST', '/api/mini-apps/by-app-id/team.shop/versions/upload', { token, body: uploadForm('1.0.0') })
    expect(first.status).toBe(201)
    expect(first.body).toMatchObject({ version: '1.0.0', status: 'DRAFT', buildNumber: 1, releaseType: 'RELEASE', warnings: [] })
    expect(first.body.files.bundleIos).toEqual({ size: 5 * mb, sha256: await sha256(join(dir, 'ios-1.0.0.bundle')) })
    expect(first.body.files.assetsIos).toEqual({ size: Bun.file(join(dir, 'assets-ios.zip')).size, sha256: await sha256(join(dir, 'assets-ios.zip')) })
    ids['1.0.0'] = first.body.id
    expect((await api('GET', `/api/mini-apps/${miniAppId}`, { token })).body.currentExperienceVersionId).toBe(ids['1.0.0'])

    const review = await api('POST', `/api/mini-apps/${miniAppId}/versions/${ids['1.0.0']}/review`, { token })
    expect(review.body.status).toBe('IN_REVIEW')
    expect((await api('GET', `/api/mini-apps/${miniAppId}`, { token })).body.currentReviewVersionId).toBe(ids['1.0.0'])

    const publish = await api('POST', `/api/mini-apps/${miniAppId}/versions/${ids['1.0.0']}/publish`, { token, json: { notes: 'first release' } })
    expect(publish.body.status).toBe('PUBLISHED')
    expect((await api('GET', `/api/mini-apps/${miniAppId}`, { token })).body.currentReleaseVersionId).toBe(ids['1.0.0'])

    const second = await api('POST', '/api/mini-apps/by-app-id/team.shop/versions/upload', { token, body: uploadForm('1.1.0') })
    expect(second.body).toMatchObject({ status: 'DRAFT', buildNumber: 2 })
    ids['1.1.0'] = second.body.id
    expect((await api('POST', `/api/mini-apps/${miniAppId}/versions/${ids['1.1.0']}/publish`, { token, json: {} })).status).toBe(200)

    const rollback = await api('POST', `/api/mini-apps/${miniAppId}/rollback`, { token, json: { targetVersionId: ids['1.0.0'], notes: 'regression' } })
    expect(rollback.status).toBe(200)
    expect(rollback.body.miniApp.currentReleaseVersionId).toBe(ids['1.0.0'])

    const draft = await api('POST', '/api/mini-apps/by-app-id/team.shop/versions/upload', { token, body: uploadForm('1.2.0') })
    ids['1.2.0'] = draft.body.id
    // re-upload of an unpublished version: same id, next build number
    const again = await api('POST', '/api/mini-apps/by-app-id/team.shop/versions/upload', { token, body: uploadForm('1.2.0') })
    expect(again.body).toMatchObject({ id: ids['1.2.0'], buildNumber: 4, status: 'DRAFT' })
    const removed = await api('DELETE', `/api/mini-apps/${miniAppId}/versions/${ids['1.2.0']}`, { token })
    expect(removed.body).toEqual({ success: true, versionId: ids['1.2.0'] })
    // the shared archives stay, the draft's own bundles are gone
    const blobs = readdirSync(join(dataDir, 'blobs', 'sha256'), { recursive: true }).map(String)
    expect(blobs.some((name) => name.endsWith(first.body.files.assetsIos.sha256))).toBe(true)
    expect(blobs.some((name) => name.endsWith(again.body.files.bundleIos.sha256))).toBe(false)
  }, 120_000)

  test('the workspace shows versions newest first, sizes and hashes, the release history and access links', async () => {
    const workspace = await api('GET', `/api/mini-apps/${miniAppId}/workspace`, { token })
    expect(workspace.status).toBe(200)
    expect(workspace.body.miniApp).toMatchObject({ id: miniAppId, currentReleaseVersionId: ids['1.0.0'], currentExperienceVersionId: ids['1.1.0'] })
    expect(workspace.body.versions.map((v: { version: string; status: string }) => `${v.version} ${v.status}`)).toEqual(['1.1.0 PUBLISHED', '1.0.0 PUBLISHED'])
    expect(workspace.body.versions[1].files.bundleAndroid).toEqual({ size: 5 * mb, sha256: await sha256(join(dir, 'android-1.0.0.bundle')) })
    expect(workspace.body.releaseHistory.map((h: { action: string; version: string }) => `${h.action} ${h.version}`)).toEqual(['ROLLBACK 1.0.0', 'PUBLISH 1.1.0', 'PUBLISH 1.0.0'])
    expect(workspace.body.releaseHistory[0]).toMatchObject({ notes: 'regression', actor: { email: 'dev@example.test' } })
    for (const link of workspace.body.accessLinks) {
      // a full URL on the request's origin: the runtimes cannot open a bare path (decisions §6)
      expect(link.installUrl).toMatch(new RegExp(`^${server.baseUrl}/api/mini-apps/access/versions/${link.versionId}/install\\?token=[\\w-]+\\.[\\w-]+\\.[\\w-]+$`))
      expect(link.deepLink).toBe(`miniapp://miniapp/install/${link.versionId}?installUrl=${encodeURIComponent(link.installUrl)}`)
    }
  })

  test('the audit log shows each step', async () => {
    const listing = await api('GET', '/api/admin/users?auditLimit=1000', { token: adminToken })
    expect(listing.status).toBe(200)
    const actions = (listing.body.auditLogs as { action: string; targetId: string }[]).map((entry) => entry.action)
    for (const action of ['miniapp.create', 'version.upload', 'version.review', 'version.publish', 'version.rollback', 'version.delete']) expect(actions).toContain(action)
    expect(actions.filter((action) => action === 'version.upload')).toHaveLength(4)
  })
})

describe('SIGKILL in the middle of a large upload', () => {
  test('after a restart: no version row, nothing in tmp/, doctor clean', async () => {
    const created = await api('POST', '/api/mini-apps', { token, json: { appId: 'killed.app', name: 'Killed' } })
    expect(created.status).toBe(201)
    const boundary = 'killboundary'
    const encoder = new TextEncoder()
    const chunk = crypto.getRandomValues(new Uint8Array(mb))
    let sent = 0
    // A body that keeps coming (up to 300 MB, slowly) so the server is surely mid-upload when killed.
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (sent === 0) {
          controller.enqueue(encoder.encode(`--${boundary}\r\nContent-Disposition: form-data; name="version"\r\n\r\n1.0.0\r\n--${boundary}\r\nContent-Disposition: form-data; name="bundleIos"; filename="main.ios.jsbundle"\r\n\r\n`))
        } else if (sent < 300) {
          controller.enqueue(chunk)
          await Bun.sleep(10)
        } else controller.close()
        sent++
      },
    })
    const uploading = fetch(`${server.baseUrl}/api/mini-apps/by-app-id/killed.app/versions/upload`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': `multipart/form-data; boundary=${boundary}` },
      body,
    }).catch((error: Error) => error)
    const tmp = join(dataDir, 'tmp')
    const deadline = Date.now() + 30_000
    while (readdirSync(tmp).length === 0 && Date.now() < deadline) await Bun.sleep(20)
    expect(readdirSync(tmp).length).toBeGreaterThan(0)
    await Bun.sleep(200)
    expect(await server.stop('SIGKILL')).not.toBe(0)
    expect(await uploading).toBeInstanceOf(Error)

    server = await startBinary({ dataDir })
    expect(readdirSync(tmp)).toEqual([])
    const workspace = await api('GET', `/api/mini-apps/${created.body.id}/workspace`, { token })
    expect(workspace.body.versions).toEqual([])
    expect(workspace.body.miniApp.currentExperienceVersionId).toBeNull()
    await server.stop()
    const doctor = await runBinary(['doctor', '--data-dir', dataDir])
    expect(doctor.stdout).toContain('OK')
    expect(doctor.exitCode).toBe(0)
    server = await startBinary({ dataDir })
  }, 120_000)
})

describe('doctor and the stored files', () => {
  test('names a stored file that is missing or damaged', async () => {
    await server.stop()
    const root = join(dataDir, 'blobs', 'sha256')
    const files = readdirSync(root, { recursive: true }).map(String).filter((name) => /[0-9a-f]{64}$/.test(name))
    expect(files.length).toBeGreaterThan(2)
    writeFileSync(join(root, files[0]!), 'damaged')
    rmSync(join(root, files[1]!))
    const doctor = await runBinary(['doctor', '--data-dir', dataDir])
    expect(doctor.exitCode).toBe(1)
    expect(doctor.stdout).toContain('is missing (used by team.shop')
    expect(doctor.stdout).toContain('bytes,')
    server = await startBinary({ dataDir })
  }, 60_000)
})
