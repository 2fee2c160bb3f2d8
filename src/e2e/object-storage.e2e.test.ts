// The binary with S3 storage (s3rver): start refusals, the whole release flow in both download modes,
// installs and updates from the release mirror through a "CDN" while miniship is stopped, and migrate-storage.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Server } from 'bun'
import { callApi, runBinary, setUpFirstAdmin, startBinary, tempDir, type RunningBinary } from './support'
import { buildZip } from '../test-fixtures'
import { derivedManifestUrl, installFiles, sha256Hex, type InstallInfo } from '../modules/runtime/test-runtime'
import { startTestS3, testCredentials, type TestS3 } from '../storage/test-s3'

let s3: TestS3
let dir: string
beforeAll(async () => {
  s3 = await startTestS3()
  dir = tempDir()
})
afterAll(async () => {
  await s3.close()
  rmSync(dir, { recursive: true, force: true })
})

function uploadForm(appId: string, version: string): FormData {
  const form = new FormData()
  form.append('version', version)
  form.append('bundleIos', new Blob([`/* ios ${version} */\n` + 'var a=1;'.repeat(100_000)]), 'main.ios.jsbundle')
  form.append('bundleAndroid', new Blob([`/* android ${version} */\n` + 'var b=2;'.repeat(80_000)]), 'main.android.bundle')
  form.append('manifest', new Blob([JSON.stringify({ appId, name: 'Shop', pages: { home: 'Home' } })]), 'app.json')
  form.append('assetsIos', new Blob([buildZip([{ name: 'assets/logo.png', content: `ios ${version}` }]) as BlobPart]), 'assets-ios.zip')
  form.append('assetsAndroid', new Blob([buildZip([{ name: 'drawable-mdpi/logo.png', content: `android ${version}` }]) as BlobPart]), 'assets-android.zip')
  return form
}

/** An owner, a miniapp and two uploaded versions on a running server. */
async function populate(server: RunningBinary, appId: string) {
  const api = (method: string, path: string, options = {}) => callApi(server.baseUrl, method, path, options)
  await setUpFirstAdmin(server)
  const token = (await api('POST', '/api/auth/register', { json: { email: `${appId}@example.test`, password: 'dev-password' } })).body.accessToken as string
  const miniAppId = (await api('POST', '/api/mini-apps', { token, json: { appId, name: 'Shop' } })).body.id as string
  const ids: Record<string, string> = {}
  for (const version of ['1.0.0', '1.1.0']) {
    const uploaded = await api('POST', `/api/mini-apps/by-app-id/${appId}/versions/upload`, { token, body: uploadForm(appId, version) })
    expect(uploaded.status).toBe(201)
    ids[version] = uploaded.body.id
  }
  return { token, miniAppId, ids }
}

/** A runtime's install: every file of install info fetched as given (redirects followed), sizes and hashes checked; answers the manifest's version. */
async function install(info: InstallInfo): Promise<string> {
  for (const [url, expected] of installFiles(info)) {
    const response = await fetch(url)
    expect(response.status).toBe(200)
    const bytes = new Uint8Array(await response.arrayBuffer())
    expect({ size: bytes.length, sha256: sha256Hex(bytes) }).toEqual(expected)
  }
  return ((await (await fetch(info.manifestUrl)).json()) as { version: string }).version
}

describe('serve with S3 storage refuses to start on a bucket it cannot use', () => {
  test('wrong credentials: exit 2, one line naming the setting, never the secret', async () => {
    const result = await runBinary(['serve', '--data-dir', join(dir, 'refused'), '--port', '0'], { env: { ...s3.env(), MINISHIP_S3_ACCESS_KEY_ID: 'WRONG', MINISHIP_S3_SECRET_ACCESS_KEY: 'hunter2-very-secret' } })
    expect(result.exitCode).toBe(2)
    expect(result.stderr.trim().split('\n')).toHaveLength(1)
    expect(result.stderr).toContain('MINISHIP_S3_ACCESS_KEY_ID')
    expect(result.stderr + result.stdout).not.toContain('hunter2-very-secret')
  })

  test('a wrong secret with a known key id (SignatureDoesNotMatch): exit 2, one line naming the setting, never the secret', async () => {
    // s3rver 3.7.1 accepts any secret for a known key id (tried here: a write with a wrong secret
    // succeeds), so this stand-in endpoint answers every request as S3 answers a bad signature
    const standIn = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      fetch: () =>
        new Response('<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SignatureDoesNotMatch</Code><Message>The request signature we calculated does not match the signature you provided. Check your key and signing method.</Message></Error>', {
          status: 403,
          headers: { 'content-type': 'application/xml' },
        }),
    })
    try {
      const secret = 'hunter2-another-secret'
      const result = await runBinary(['serve', '--data-dir', join(dir, 'refused'), '--port', '0'], {
        env: { ...s3.env(), MINISHIP_S3_ENDPOINT: `http://127.0.0.1:${standIn.port}`, MINISHIP_S3_SECRET_ACCESS_KEY: secret },
      })
      expect(result.exitCode).toBe(2)
      expect(result.stderr.trim().split('\n')).toHaveLength(1)
      expect(result.stderr).toContain('MINISHIP_S3_SECRET_ACCESS_KEY')
      expect(result.stderr).toContain('SignatureDoesNotMatch')
      expect(result.stderr + result.stdout).not.toContain(secret)
    } finally {
      standIn.stop(true)
    }
  })

  test('no credentials, an unknown bucket, and the S3 server stopped: each refused naming what to fix', async () => {
    const noCredentials = await runBinary(['serve', '--data-dir', join(dir, 'refused'), '--port', '0', '--storage', 's3', '--s3-bucket', 'miniship-test'])
    expect(noCredentials.exitCode).toBe(2)
    expect(noCredentials.stderr).toContain('MINISHIP_S3_ACCESS_KEY_ID')
    const noBucket = await runBinary(['serve', '--data-dir', join(dir, 'refused'), '--port', '0', '--s3-bucket', 'no-such-bucket'], { env: s3.env() })
    expect(noBucket.exitCode).toBe(2)
    expect(noBucket.stderr).toContain('--s3-bucket')
    await s3.stop()
    try {
      const down = await runBinary(['serve', '--data-dir', join(dir, 'refused'), '--port', '0'], { env: s3.env() })
      // a bucket that does not answer may answer later: exit 1 (STORAGE_UNREACHABLE), not 2 as for a setting to change
      expect(down.exitCode).toBe(1)
      expect(down.stderr).toContain('--s3-endpoint')
      expect(down.stderr.trim().split('\n')).toHaveLength(1)
    } finally {
      await s3.start()
    }
  })
})

for (const mode of ['redirect', 'proxy'] as const) {
  test(`--s3-downloads ${mode}: upload → publish → runtime install → update → rollback, every byte from the bucket`, async () => {
    const dataDir = join(dir, `flow-${mode}`)
    const server = await startBinary({ dataDir, args: ['--s3-downloads', mode], env: s3.env(`flow-${mode}`) })
    try {
      const appId = `com.example.flow${mode}`
      const { token, miniAppId, ids } = await populate(server, appId)
      const api = (method: string, path: string, options = {}) => callApi(server.baseUrl, method, path, { token, ...options })
      const releaseInfo = async () => (await (await fetch(`${server.baseUrl}/api/mini-apps/access/apps/${appId}/release/install`)).json()) as InstallInfo

      expect((await api('POST', `/api/mini-apps/${miniAppId}/versions/${ids['1.0.0']}/publish`, { json: {} })).status).toBe(200)
      expect(await install(await releaseInfo())).toBe('1.0.0')
      const direct = await fetch((await releaseInfo()).bundles.ios, { redirect: 'manual' })
      expect(direct.status).toBe(mode === 'redirect' ? 302 : 200)
      if (mode === 'redirect') expect(direct.headers.get('location')).toStartWith(`${s3.endpoint}/miniship-test/flow-${mode}/blobs/sha256/`)
      else await direct.arrayBuffer()

      expect((await api('POST', `/api/mini-apps/${miniAppId}/versions/${ids['1.1.0']}/publish`, { json: {} })).status).toBe(200)
      expect(await install(await releaseInfo())).toBe('1.1.0')
      expect((await api('POST', `/api/mini-apps/${miniAppId}/rollback`, { json: { targetVersionId: ids['1.0.0'] } })).status).toBe(200)
      expect(await install(await releaseInfo())).toBe('1.0.0')

      // nothing but the database and its companions in the data directory
      expect(readdirSync(join(dataDir, 'blobs', 'sha256'))).toEqual([])
      expect(existsSync(join(dataDir, 'storage.json'))).toBe(true)
      expect(readdirSync(join(s3.directory, 'miniship-test', `flow-${mode}`, 'blobs', 'sha256')).length).toBeGreaterThan(0)
    } finally {
      await server.stop()
    }
  }, 60_000)
}

describe('the release mirror: installs and updates through a CDN while miniship is stopped', () => {
  let cdn: Server<undefined>
  const cdnRequests: string[] = []
  const prefix = 'mirror'
  beforeAll(() => {
    // A CDN with the bucket as its origin for releases/: plain GETs, as a public bucket or an origin access identity would allow.
    cdn = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      async fetch(request) {
        const url = new URL(request.url)
        cdnRequests.push(url.pathname)
        if (!url.pathname.startsWith('/releases/')) return new Response('this CDN only serves releases/', { status: 502 })
        const origin = await fetch(s3.publicUrl(`${prefix}${url.pathname}`), { headers: request.headers })
        return new Response(origin.body, { status: origin.status, headers: origin.headers })
      },
    })
  })
  afterAll(() => cdn.stop(true))

  test('publish, update and rollback each reach a runtime that only talks to the CDN', async () => {
    const dataDir = join(dir, 'mirror')
    const cdnUrl = `http://127.0.0.1:${cdn.port}`
    const args = ['--mirror-releases', 'on', '--cdn-url', cdnUrl]
    const appId = 'com.example.mirrored'
    const installUrl = `${cdnUrl}/releases/${appId}/stable/install.json`

    let server = await startBinary({ dataDir, args, env: s3.env(prefix) })
    const { token, miniAppId, ids } = await populate(server, appId)
    expect((await callApi(server.baseUrl, 'POST', `/api/mini-apps/${miniAppId}/versions/${ids['1.0.0']}/publish`, { token, json: {} })).status).toBe(200)
    await server.stop()

    // miniship is down: the runtime installs from install.json on the CDN
    let info = (await (await fetch(installUrl)).json()) as InstallInfo
    expect(info.version).toBe('1.0.0')
    expect(info.bundleUrl).toStartWith(`${cdnUrl}/releases/${appId}/stable/bundles/ios?token=`)
    expect(await install(info)).toBe('1.0.0')
    const derived = derivedManifestUrl(info.bundleUrl)
    expect(derived).toBe(`${cdnUrl}/releases/${appId}/stable/bundles/app.json`)
    const manifest = await fetch(derived)
    expect(manifest.headers.get('cache-control')).toBe('public, max-age=60')
    expect(((await manifest.json()) as { version: string }).version).toBe('1.0.0')

    for (const [action, expected] of [
      ['publish', '1.1.0'],
      ['rollback', '1.0.0'],
    ] as const) {
      server = await startBinary({ dataDir, args, env: s3.env(prefix) })
      const res =
        action === 'publish'
          ? await callApi(server.baseUrl, 'POST', `/api/mini-apps/${miniAppId}/versions/${ids['1.1.0']}/publish`, { token, json: {} })
          : await callApi(server.baseUrl, 'POST', `/api/mini-apps/${miniAppId}/rollback`, { token, json: { targetVersionId: ids['1.0.0'] } })
      expect(res.status).toBe(200)
      await server.stop()
      // the update check of the existing runtime: the manifest derived from the bundle it installed
      expect(((await (await fetch(derived)).json()) as { version: string }).version).toBe(expected)
      info = (await (await fetch(installUrl)).json()) as InstallInfo
      expect(await install(info)).toBe(expected)
    }
    expect(cdnRequests.every((path) => path.startsWith('/releases/'))).toBe(true)
  }, 60_000)
})

test('migrate-storage --to s3: the same data directory moves from local to S3 storage and keeps serving every version', async () => {
  const dataDir = join(dir, 'migrating')
  let server = await startBinary({ dataDir })
  const appId = 'com.example.migrating'
  const { token, ids } = await populate(server, appId)
  await server.stop()

  const refused = await runBinary(['serve', '--data-dir', dataDir, '--port', '0'], { env: s3.env('migrating') })
  expect(refused.exitCode).toBe(2)
  expect(refused.stderr).toContain('migrate-storage --to s3')

  const migrated = await runBinary(['migrate-storage', '--to', 's3', '--data-dir', dataDir, '--s3-bucket', 'miniship-test', '--s3-endpoint', s3.endpoint, '--s3-prefix', 'migrating'], { env: testCredentials })
  expect(migrated.exitCode).toBe(0)
  expect(migrated.stdout).toContain('every one verified')
  rmSync(join(dataDir, 'blobs'), { recursive: true, force: true })

  // only the credentials: the bucket comes from the data directory's storage.json
  server = await startBinary({ dataDir, args: ['--s3-downloads', 'proxy'], env: testCredentials })
  try {
    for (const versionId of Object.values(ids)) {
      const info = (await (await fetch(`${server.baseUrl}/api/mini-apps/access/versions/${versionId}/install?token=${token}`)).json()) as InstallInfo
      await install(info)
    }
    const doctorWhileServing = await runBinary(['doctor', '--data-dir', dataDir], { env: testCredentials })
    expect(doctorWhileServing.stdout).toContain('OK:')
  } finally {
    await server.stop()
  }

  // refused credentials stop backup and doctor as they stop serve: one line naming the setting, exit 2
  const refusedKey = { ...testCredentials, MINISHIP_S3_ACCESS_KEY_ID: 'WRONG' }
  for (const args of [['backup', '--out', join(dir, 'refused-backup.tar.gz')], ['doctor']]) {
    const result = await runBinary([...args, '--data-dir', dataDir], { env: refusedKey })
    expect({ args, exitCode: result.exitCode }).toEqual({ args, exitCode: 2 })
    expect(result.stderr.trim().split('\n')).toHaveLength(1)
    expect(result.stderr).toContain('the credentials in MINISHIP_S3_ACCESS_KEY_ID/MINISHIP_S3_SECRET_ACCESS_KEY (or AWS_*) were refused')
    expect(result.stderr).not.toContain('backup failed: backup failed')
    expect(result.stderr + result.stdout).not.toContain(testCredentials.MINISHIP_S3_SECRET_ACCESS_KEY)
  }
  expect(existsSync(join(dir, 'refused-backup.tar.gz'))).toBe(false)
  const backup = await runBinary(['backup', '--out', join(dir, 'migrated-backup.tar.gz'), '--data-dir', dataDir], { env: testCredentials })
  expect(backup.exitCode).toBe(0)
  const stored = readdirSync(join(s3.directory, 'miniship-test', 'migrating', 'blobs'), { recursive: true }).filter((name) => String(name).endsWith('._S3rver_object')).length
  expect(stored).toBeGreaterThan(5)
  expect(backup.stdout).toContain(`(${stored} stored files,`)
}, 60_000)

test('a new data directory pointed at another installation\'s prefix is refused (exit 2) and every file of it survives; so is a prefix other than storage.json records', async () => {
  const victim = join(dir, 'victim')
  let server = await startBinary({ dataDir: victim, env: s3.env('victim') })
  const appId = 'com.example.victim'
  const { token, ids } = await populate(server, appId)
  await server.stop()
  const blobFiles = () => readdirSync(join(s3.directory, 'miniship-test', 'victim', 'blobs'), { recursive: true }).filter((name) => String(name).endsWith('._S3rver_object')).length
  const before = blobFiles()
  expect(before).toBeGreaterThanOrEqual(10)
  expect(existsSync(join(s3.directory, 'miniship-test', 'victim', 'miniship-owner.json._S3rver_object'))).toBe(true)

  const newcomer = join(dir, 'd8')
  const refused = await runBinary(['serve', '--data-dir', newcomer, '--port', '0', '--storage', 's3', '--s3-bucket', 'miniship-test', '--s3-prefix', 'victim', '--s3-endpoint', s3.endpoint], { env: testCredentials })
  expect(refused.exitCode).toBe(2)
  expect(refused.stderr.trim().split('\n')).toHaveLength(1)
  expect(refused.stderr).toContain('bucket "miniship-test" prefix "victim" belongs to another miniship data directory')
  expect(refused.stderr + refused.stdout).not.toContain('removed')
  expect(refused.stderr + refused.stdout).not.toContain(testCredentials.MINISHIP_S3_SECRET_ACCESS_KEY)
  expect(existsSync(join(newcomer, 'storage.json'))).toBe(false)
  expect(blobFiles()).toBe(before)
  // doctor --fix of a data directory whose storage.json names the victim's prefix: refused, nothing removed
  mkdirSync(newcomer, { recursive: true })
  writeFileSync(join(newcomer, 'storage.json'), JSON.stringify({ storage: 's3', s3: { bucket: 'miniship-test', endpoint: s3.endpoint, region: 'us-east-1', prefix: 'victim' }, owner: 'someone-else' }))
  const doctor = await runBinary(['doctor', '--fix', '--data-dir', newcomer], { env: testCredentials })
  expect(doctor.exitCode).toBe(2)
  expect(doctor.stderr).toContain('belongs to another miniship data directory')
  expect(blobFiles()).toBe(before)

  // the victim's own data directory, told another prefix: refused naming the recorded one
  const moved = await runBinary(['serve', '--data-dir', victim, '--port', '0', '--s3-prefix', 'zz'], { env: testCredentials })
  expect(moved.exitCode).toBe(2)
  expect(moved.stderr.trim().split('\n')).toHaveLength(1)
  expect(moved.stderr).toContain('--s3-prefix "zz"')
  expect(moved.stderr).toContain('key prefix "victim"')

  server = await startBinary({ dataDir: victim, args: ['--s3-downloads', 'proxy'], env: testCredentials })
  try {
    for (const versionId of Object.values(ids)) {
      const info = (await (await fetch(`${server.baseUrl}/api/mini-apps/access/versions/${versionId}/install?token=${token}`)).json()) as InstallInfo
      await install(info)
    }
  } finally {
    await server.stop()
  }
  expect(blobFiles()).toBe(before)
}, 60_000)
