// The developer CLI on the compiled binary against the compiled binary as the server: login, push, publish, status, rollback, API keys in CI, and every refusal's exit code.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdirSync, rmSync, statSync, writeFileSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { binaryPath, callApi, cleanEnv, freePort, runBinary, setUpFirstAdmin, startBinary, tempDir, type ApiCallOptions, type RunningBinary, type RunResult } from './support'
import { buildZip } from '../test-fixtures'

const mb = 1024 * 1024
let dir: string
let server: RunningBinary
let token: string
let shopId: string
let blogId: string

const api = (method: string, path: string, options: ApiCallOptions = {}) => callApi(server.baseUrl, method, path, options)

/** A build folder: the bundles and app.json, the iOS assets as a folder (push zips it), the Android ones as a zip. */
function buildFolder(name: string, options: { iosBundleBytes?: number; omit?: string; assetsIosZip?: Uint8Array; appId?: string } = {}): string {
  const folder = join(dir, name)
  mkdirSync(join(folder, 'ios', 'assets', 'images'), { recursive: true })
  const ios = new Uint8Array(options.iosBundleBytes ?? 1024)
  for (let offset = 0; offset < ios.length; offset += 65536) crypto.getRandomValues(ios.subarray(offset, offset + 65536))
  const files: Record<string, Uint8Array | string> = {
    'main.ios.jsbundle': ios,
    'main.android.bundle': 'console.log("android")',
    'app.json': JSON.stringify({ appId: options.appId ?? 'shop', name: 'Shop', pages: { home: 'Home' } }),
    'assets-android.zip': buildZip([{ name: 'drawable-mdpi/logo.png', content: 'png' }, { name: 'raw/data.json', content: '{}' }]),
  }
  if (options.assetsIosZip) files['assets-ios.zip'] = options.assetsIosZip
  for (const [file, content] of Object.entries(files)) if (file !== options.omit) writeFileSync(join(folder, file), content)
  writeFileSync(join(folder, 'ios', 'assets', 'images', 'logo.png'), 'png-bytes')
  return folder
}

/** The client's environment: its own config folder, no display (so no browser), nothing from ours. */
function clientEnv(configHome: string, extra: Record<string, string> = {}): Record<string, string> {
  return { XDG_CONFIG_HOME: configHome, DISPLAY: '', WAYLAND_DISPLAY: '', ...extra }
}

const cli = (args: string[], env: Record<string, string>, stdin?: string): Promise<RunResult> => runBinary(args, { env, stdin })

beforeAll(async () => {
  dir = tempDir('miniship-cli-e2e-')
  server = await startBinary({ dataDir: join(dir, 'data') })
  await setUpFirstAdmin(server)
  const registered = await api('POST', '/api/auth/register', { json: { email: 'dev@example.test', password: 'dev-password', displayName: 'Dev' } })
  token = registered.body.accessToken
  shopId = (await api('POST', '/api/mini-apps', { token, json: { appId: 'shop', name: 'Shop' } })).body.id
  blogId = (await api('POST', '/api/mini-apps', { token, json: { appId: 'blog', name: 'Blog' } })).body.id
  expect(typeof shopId).toBe('string')
}, 120_000)

afterAll(async () => {
  if (server) await server.stop()
  rmSync(dir, { recursive: true, force: true })
})

describe('a developer at a terminal', () => {
  const configHome = () => join(dir, 'config-dev')
  const env = () => clientEnv(configHome())

  test('login: prints the code on stdout, the test approves it over HTTP, the token is saved 0600', async () => {
    const child = Bun.spawn([await binaryPath(), 'login', '--server', server.baseUrl], { env: cleanEnv(env()), stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
    const decoder = new TextDecoder()
    let stdout = ''
    const reader = child.stdout.getReader()
    let code: string | undefined
    while (!code) {
      const { value, done } = await reader.read()
      if (done) break
      stdout += decoder.decode(value, { stream: true })
      code = /\b([A-Z]{4}-\d{4})\b/.exec(stdout)?.[1]
    }
    expect(code).toBeDefined()
    expect(stdout).toContain(`${server.baseUrl}/cli/authorize?code=${code}`)
    const approved = await api('POST', `/api/auth/cli/sessions/${code}/approve`, { token })
    expect(approved.status).toBe(200)
    for (;;) {
      const { value, done } = await reader.read()
      if (done) break
      stdout += decoder.decode(value, { stream: true })
    }
    expect(await child.exited).toBe(0)
    expect(stdout).toContain('Signed in to')
    // the code's expiry as a person reads it, not an ISO string
    expect(stdout).toMatch(/\(valid until \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC\)/)
    const path = join(configHome(), 'miniship', 'config.json')
    expect(statSync(path).mode & 0o777).toBe(0o600)
    const saved = JSON.parse(readFileSync(path, 'utf8'))
    expect(saved.server).toBe(`${server.baseUrl}/api`)
    expect(saved.user.email).toBe('dev@example.test')
  }, 60_000)

  test('whoami names the account and the server', async () => {
    const result = await cli(['whoami'], env())
    expect(result.exitCode).toBe(0)
    expect(result.stdout).toContain('dev@example.test')
    expect(result.stdout).toContain(`${server.baseUrl}/api`)
  })

  test('push of a 50 MB bundle with --publish, zipping ios/assets itself; the server stores the exact bytes', async () => {
    const folder = buildFolder('build-1.0.0', { iosBundleBytes: 50 * mb })
    const result = await cli(['push', folder, '--app', 'shop', '--version', '1.0.0', '--changelog', 'first', '--publish', '--notes', 'launch'], env())
    expect(result.stderr).not.toContain('miniship:')
    expect(result.exitCode).toBe(0)
    expect(result.stdout).toContain('Uploaded shop 1.0.0 (build 1')
    expect(result.stdout).toContain('Published shop 1.0.0 to stable')
    const workspace = await api('GET', `/api/mini-apps/${shopId}/workspace`, { token })
    const version = workspace.body.versions.find((v: { version: string }) => v.version === '1.0.0')
    expect(version.status).toBe('PUBLISHED')
    expect(version.files.bundleIos.size).toBe(50 * mb)
    expect(version.files.bundleIos.sha256).toBe(new Bun.CryptoHasher('sha256').update(readFileSync(join(folder, 'main.ios.jsbundle'))).digest('hex'))
    expect(workspace.body.miniApp.currentReleaseVersionId).toBe(version.id)
  }, 120_000)

  test('push --json prints one JSON document with the version and its warnings', async () => {
    const result = await cli(['push', buildFolder('build-1.1.0'), '--app', 'shop', '--version', '1.1.0', '--publish', '--json'], env())
    expect(result.exitCode).toBe(0)
    const answer = JSON.parse(result.stdout)
    expect(answer.version.version).toBe('1.1.0')
    expect(Array.isArray(answer.warnings)).toBe(true)
    expect(answer.published.status).toBe('PUBLISHED')
  }, 60_000)

  test('status shows the release; rollback moves it back; versions ls and apps list them', async () => {
    let status = await cli(['status', 'shop'], env())
    expect(status.exitCode).toBe(0)
    expect(status.stdout).toMatch(/channel stable\s+1\.1\.0/)
    const rollback = await cli(['rollback', 'shop', '1.0.0', '--notes', 'back'], env())
    expect(rollback.exitCode).toBe(0)
    expect(rollback.stdout).toContain('Rolled shop back to 1.0.0')
    status = await cli(['status', 'shop', '--json'], env())
    const json = JSON.parse(status.stdout)
    expect(json.channels.find((c: { name: string }) => c.name === 'stable').release.version).toBe('1.0.0')
    const versions = await cli(['versions', 'ls', 'shop'], env())
    // the words of decisions §13: the version rolled back from is not "live"
    expect(versions.stdout).toMatch(/1\.1\.0\s+build \d+\s+rolled back/)
    expect(versions.stdout).toMatch(/1\.0\.0\s+build \d+\s+live on stable, complete 100 %/)
    const apps = await cli(['apps', '--json'], env())
    expect(JSON.parse(apps.stdout).miniApps.map((app: { appId: string }) => app.appId).sort()).toEqual(['blog', 'shop'])
  }, 60_000)

  test('staged rollout: push --publish --rollout 20 --mandatory, then rollout --percent 100; a beta channel', async () => {
    const push = await cli(['push', buildFolder('build-1.2.0'), '--app', 'shop', '--version', '1.2.0', '--publish', '--rollout', '20', '--mandatory', '--host-range', '>=2.0.0'], env())
    expect(push.exitCode).toBe(0)
    expect(push.stdout).toContain('Published shop 1.2.0 to stable (20 %, mandatory, host >=2.0.0)')
    let status = await cli(['status', 'shop'], env())
    expect(status.stdout).toMatch(/channel stable\s+1\.2\.0 rolling-out 20 % \(mandatory, host >=2\.0\.0\)\. 20 % get 1\.2\.0; the others get 1\.0\.0\./)
    const rollout = await cli(['rollout', 'shop', '--channel', 'stable', '--percent', '100'], env())
    expect(rollout.exitCode).toBe(0)
    expect(rollout.stdout).toContain('stable: 1.2.0 complete 100 %')
    const stable = JSON.parse((await cli(['status', 'shop', '--json'], env())).stdout).channels.find((c: { name: string }) => c.name === 'stable')
    expect(stable.release).toMatchObject({ version: '1.2.0', rolloutPercent: 100, mandatory: true, hostVersionRange: '>=2.0.0' })

    expect((await api('POST', `/api/mini-apps/${shopId}/channels`, { token, json: { name: 'beta' } })).status).toBe(201)
    const beta = await cli(['push', buildFolder('build-1.3.0-beta.1'), '--app', 'shop', '--version', '1.3.0-beta.1', '--channel', 'beta', '--release-type', 'beta'], env())
    expect(beta.exitCode).toBe(0)
    const published = await cli(['publish', 'shop', '1.3.0-beta.1', '--notes', 'testers'], env())
    expect(published.exitCode).toBe(0)
    expect(published.stdout).toContain('Published shop 1.3.0-beta.1 to beta')
    status = await cli(['status', 'shop'], env())
    expect(status.stdout).toMatch(/channel beta\s+1\.3\.0-beta\.1/)
    expect(status.stdout).toMatch(/channel stable\s+1\.2\.0/)
    expect(status.stdout).toMatch(/experience\s+1\.3\.0-beta\.1/)
    const missing = await cli(['rollout', 'shop', '--channel', 'nope', '--percent', '50'], env())
    expect(missing.exitCode).toBe(1)
    expect(missing.stderr).toContain('CHANNEL_NOT_FOUND, HTTP 404')
  }, 60_000)

  test('channels ls|create|rm; push to a channel the app lacks says how to create it', async () => {
    const nightly = await cli(['push', buildFolder('build-1.4.0-n'), '--app', 'shop', '--version', '1.4.0-nightly.1', '--channel', 'nightly'], env())
    expect(nightly.exitCode).toBe(1)
    expect(nightly.stderr).toContain('shop has no channel "nightly"; create it first: miniship channels create nightly --app shop')
    const created = await cli(['channels', 'create', 'nightly', '--app', 'shop'], env())
    expect(created.exitCode).toBe(0)
    expect(created.stdout).toContain('Created channel nightly of shop')
    const again = await cli(['channels', 'create', 'nightly', '--app', 'shop', '--json'], env())
    expect(again.exitCode).toBe(1)
    expect(JSON.parse(again.stdout).error.code).toBe('CHANNEL_EXISTS')
    const listed = await cli(['channels', 'ls', '--app', 'shop'], env())
    expect(listed.exitCode).toBe(0)
    expect(listed.stdout).toMatch(/stable\s+1\.2\.0 complete 100 %/)
    expect(listed.stdout).toMatch(/beta\s+1\.3\.0-beta\.1 complete 100 %/)
    expect(listed.stdout).toMatch(/nightly\s+nothing released/)
    const json = JSON.parse((await cli(['channels', 'ls', '--app', 'shop', '--json'], env())).stdout)
    expect(json.channels.map((c: { name: string; state: string | null }) => [c.name, c.state])).toEqual([['stable', 'complete'], ['beta', 'complete'], ['nightly', null]])
    const removed = await cli(['channels', 'rm', 'nightly', '--app', 'shop'], env())
    expect(removed.exitCode).toBe(0)
    expect(removed.stdout).toContain('Removed channel nightly of shop')
    const stable = await cli(['channels', 'rm', 'stable', '--app', 'shop'], env())
    expect(stable.exitCode).toBe(1)
    expect(stable.stderr).toContain('CHANNEL_IS_DEFAULT')
    const help = await cli(['channels', '--help'], env())
    expect(help.stdout).toContain('$ miniship channels create beta --app com.example.shop')
    const createHelp = await cli(['channels', 'create', '--help'], env())
    expect(createHelp.stdout).toContain('Example:')
  }, 60_000)

  test('apps create makes a mini app', async () => {
    const created = await cli(['apps', 'create', 'notes', '--name', 'Notes'], env())
    expect(created.exitCode).toBe(0)
    expect(created.stdout).toContain('Created notes')
  })

  test('logout forgets the token; then whoami says how to sign in (exit 2: no server was asked)', async () => {
    const out = await cli(['logout'], env())
    expect(out.exitCode).toBe(0)
    const who = await cli(['whoami', '--server', server.baseUrl], env())
    expect(who.exitCode).toBe(2)
    expect(who.stderr).toContain('not signed in')
  })

  test('login --with-password reads the password from stdin', async () => {
    const result = await cli(['login', '--server', server.baseUrl, '--with-password', '--email', 'dev@example.test'], env(), 'dev-password\n')
    expect(result.exitCode).toBe(0)
    expect((await cli(['whoami'], env())).stdout).toContain('dev@example.test')
    const wrong = await cli(['login', '--server', server.baseUrl, '--with-password', '--email', 'dev@example.test'], env(), 'nope\n')
    expect(wrong.exitCode).toBe(1)
    expect(wrong.stderr).toContain('INVALID_CREDENTIALS')
  }, 30_000)
})

describe('the device flow against a server that denies, rate-limits or expires', () => {
  // A stand-in server answering exactly what decisions §4 and PLAN.md describe, one poll at a time.
  function fakeServer(polls: (() => Response)[]) {
    let index = 0
    return Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      fetch(request) {
        const url = new URL(request.url)
        if (request.method === 'POST' && url.pathname === '/api/auth/cli/sessions') {
          return Response.json({ code: 'ABCD-2345', verificationUrl: `http://127.0.0.1/cli/authorize?code=ABCD-2345`, expiresAt: new Date(Date.now() + 60_000).toISOString(), intervalSeconds: 1 }, { status: 201 })
        }
        if (url.pathname === '/api/auth/cli/sessions/ABCD-2345') return polls[Math.min(index++, polls.length - 1)]!()
        return Response.json({ statusCode: 404, error: 'Not Found', code: 'NOT_FOUND', message: 'no' }, { status: 404 })
      },
    })
  }

  test('a denied code stops at once with a clear message (exit 1)', async () => {
    const fake = fakeServer([() => Response.json({ status: 'expired', reason: 'denied' })])
    try {
      const result = await cli(['login', '--server', `http://127.0.0.1:${fake.port}`], clientEnv(join(dir, 'config-denied')))
      expect(result.exitCode).toBe(1)
      expect(result.stdout).toContain('ABCD-2345')
      expect(result.stderr).toContain('was denied in the console')
      expect(existsSync(join(dir, 'config-denied', 'miniship', 'config.json'))).toBe(false)
    } finally {
      fake.stop(true)
    }
  }, 30_000)

  test('a 429 poll waits and goes on polling; then the approval is saved', async () => {
    const fake = fakeServer([
      () => Response.json({ status: 'pending' }),
      () => Response.json({ statusCode: 429, error: 'Too Many Requests', code: 'RATE_LIMITED', message: 'slow down' }, { status: 429, headers: { 'retry-after': '1' } }),
      () => Response.json({ status: 'approved', accessToken: 'token-from-fake', user: { id: 'u1', email: 'fake@example.test', displayName: 'Fake' } }),
    ])
    try {
      const result = await cli(['login', '--server', `http://127.0.0.1:${fake.port}`], clientEnv(join(dir, 'config-429')))
      expect(result.stderr).toBe('')
      expect(result.exitCode).toBe(0)
      const saved = JSON.parse(readFileSync(join(dir, 'config-429', 'miniship', 'config.json'), 'utf8'))
      expect(saved.token).toBe('token-from-fake')
    } finally {
      fake.stop(true)
    }
  }, 30_000)

  test('an expired code says so (exit 1)', async () => {
    const fake = fakeServer([() => Response.json({ status: 'expired' })])
    try {
      const result = await cli(['login', '--server', `http://127.0.0.1:${fake.port}`], clientEnv(join(dir, 'config-expired')))
      expect(result.exitCode).toBe(1)
      expect(result.stderr).toContain('expired before it was approved')
    } finally {
      fake.stop(true)
    }
  }, 30_000)
})

describe('CI with an API key and no config file', () => {
  const configHome = () => join(dir, 'config-ci')
  const createKey = async (body: Record<string, unknown>) => {
    const res = await api('POST', '/api/auth/api-keys', { token, json: body })
    expect(res.status).toBe(201)
    return res.body as { id: string; key: string }
  }
  const ciEnv = (key: string) => clientEnv(configHome(), { MINISHIP_SERVER: server.baseUrl, MINISHIP_TOKEN: key })

  test('push --publish, status, rollback and whoami with MINISHIP_SERVER/MINISHIP_TOKEN', async () => {
    const { key } = await createKey({ name: 'ci', scopes: ['read', 'upload', 'release'] })
    const push = await cli(['push', buildFolder('ci-2.0.0', { iosBundleBytes: 50 * mb }), '--app', 'shop', '--version', '2.0.0', '--publish'], ciEnv(key))
    expect(push.stderr).not.toContain('miniship:')
    expect(push.exitCode).toBe(0)
    expect(push.stdout).toContain('Published shop 2.0.0')
    const status = await cli(['status', 'shop'], ciEnv(key))
    expect(status.stdout).toMatch(/channel stable\s+2\.0\.0/)
    const rollback = await cli(['rollback', 'shop', '1.2.0'], ciEnv(key))
    expect(rollback.stderr).toBe('')
    expect(rollback.exitCode).toBe(0)
    expect((await cli(['status', 'shop'], ciEnv(key))).stdout).toMatch(/channel stable\s+1\.2\.0/)
    const who = await cli(['whoami'], ciEnv(key))
    expect(who.exitCode).toBe(0)
    expect(who.stdout).toContain('using API key "ci"')
    expect(existsSync(join(configHome(), 'miniship'))).toBe(false)
  }, 120_000)

  test('a key without the upload scope: exit 1 with 403 SCOPE_REQUIRED', async () => {
    const { key } = await createKey({ name: 'read only', scopes: ['read'] })
    const result = await cli(['push', buildFolder('ci-3.0.0'), '--app', 'shop', '--version', '3.0.0'], ciEnv(key))
    expect(result.exitCode).toBe(1)
    expect(result.stderr).toContain('SCOPE_REQUIRED, HTTP 403')
    expect(result.stderr).toContain('; miniship push needs an API key with the "upload" scope')
  }, 30_000)

  test('a key refused for one scope is told every scope the command takes (rollout: read and release)', async () => {
    const { key } = await createKey({ name: 'upload only', scopes: ['upload'] })
    const result = await cli(['rollout', 'shop', '--channel', 'stable', '--percent', '50'], ciEnv(key))
    expect(result.exitCode).toBe(1)
    // its first request (finding the mini app) is refused for "read"; the release scope would be refused next
    expect(result.stderr).toContain('This needs an API key with the "read" scope')
    expect(result.stderr).toContain('(SCOPE_REQUIRED, HTTP 403); miniship rollout needs an API key with the "read" and "release" scopes')
    // push --publish with an upload-only key: the upload goes through, the publish is refused, and the message says what is left to do
    const publishing = await cli(['push', buildFolder('ci-3.0.1'), '--app', 'shop', '--version', '3.0.1', '--publish'], ciEnv(key))
    expect(publishing.exitCode).toBe(1)
    expect(publishing.stderr).toContain('miniship push --publish needs an API key with the "upload" and "release" scopes. shop 3.0.1 was uploaded (')
    expect(publishing.stderr).toContain('); publish it with a key that has the "read" and "release" scopes: miniship publish shop 3.0.1')
  }, 30_000)

  test('a key for another mini app: exit 1 with 404 like a non-member', async () => {
    const { key } = await createKey({ name: 'blog only', scopes: ['read', 'upload'], miniAppIds: [blogId] })
    const result = await cli(['push', buildFolder('ci-blog'), '--app', 'shop', '--version', '3.0.0'], ciEnv(key))
    expect(result.exitCode).toBe(1)
    expect(result.stderr).toContain('MINI_APP_NOT_FOUND, HTTP 404')
  }, 30_000)

  test('a revoked key: exit 1 with 401 API_KEY_REVOKED', async () => {
    const { id, key } = await createKey({ name: 'revoked', scopes: ['read', 'upload'] })
    expect((await api('DELETE', `/api/auth/api-keys/${id}`, { token })).status).toBe(200)
    const result = await cli(['push', buildFolder('ci-revoked'), '--app', 'shop', '--version', '3.0.0'], ciEnv(key))
    expect(result.exitCode).toBe(1)
    expect(result.stderr).toContain('API_KEY_REVOKED, HTTP 401')
  }, 30_000)

  test('an expired key: exit 1 with 401 API_KEY_EXPIRED', async () => {
    const { key } = await createKey({ name: 'short-lived', scopes: ['read'], expiresAt: new Date(Date.now() + 1500).toISOString() })
    // waits for the expiry to pass (not a timing assertion)
    await Bun.sleep(1600)
    const result = await cli(['status', 'shop'], ciEnv(key))
    expect(result.exitCode).toBe(1)
    expect(result.stderr).toContain('API_KEY_EXPIRED, HTTP 401')
  }, 30_000)
})

describe('refusals, each with its exit code and message', () => {
  const env = () => clientEnv(join(dir, 'config-dev'))
  const uploadRequests = () => server.output().stdout.split('\n').filter((line) => line.includes('/versions/upload')).length

  test('a missing artifact names the file (exit 2)', async () => {
    const result = await cli(['push', buildFolder('missing', { omit: 'main.android.bundle' }), '--app', 'shop', '--version', '4.0.0'], env())
    expect(result.exitCode).toBe(2)
    expect(result.stderr).toContain('missing artifact main.android.bundle')
  })

  test('an unsafe zip entry is caught locally, before a byte is sent (exit 2)', async () => {
    const before = uploadRequests()
    const evil = buildZip([{ name: 'assets/../../evil.sh', content: 'rm -rf /' }])
    const result = await cli(['push', buildFolder('unsafe', { assetsIosZip: evil }), '--app', 'shop', '--version', '4.0.0'], env())
    expect(result.exitCode).toBe(2)
    expect(result.stderr).toContain('assets-ios.zip')
    expect(result.stderr).toContain('INVALID_ARCHIVE')
    expect(uploadRequests()).toBe(before)
  })

  test('a manifest for another app is caught locally (exit 2)', async () => {
    const result = await cli(['push', buildFolder('other-manifest', { appId: 'blog' }), '--app', 'shop', '--version', '4.0.0'], env())
    expect(result.exitCode).toBe(2)
    expect(result.stderr).toContain('MANIFEST_MISMATCH')
  })

  test('the server down: exit 3', async () => {
    const port = await freePort()
    const result = await cli(['push', buildFolder('down'), '--app', 'shop', '--version', '4.0.0', '--server', `http://127.0.0.1:${port}`], clientEnv(join(dir, 'config-none'), { MINISHIP_TOKEN: 'msk_x' }))
    expect(result.exitCode).toBe(3)
    expect(result.stderr).toContain('cannot reach')
  })

  test('a refused upload: exit 1 and the server code (re-pushing a published version)', async () => {
    const result = await cli(['push', buildFolder('again'), '--app', 'shop', '--version', '1.0.0'], env())
    expect(result.exitCode).toBe(1)
    expect(result.stderr).toContain('VERSION_ALREADY_PUBLISHED, HTTP 409')
  })

  test('a too-big upload is refused before it is sent, and the message names --upload-limit-mb', async () => {
    const small = await startBinary({ dataDir: join(dir, 'small'), args: ['--upload-limit-mb', '1'] })
    try {
      await setUpFirstAdmin(small)
      const smallToken = (await callApi(small.baseUrl, 'POST', '/api/auth/register', { json: { email: 'small@example.test', password: 'dev-password' } })).body.accessToken
      expect((await callApi(small.baseUrl, 'POST', '/api/mini-apps', { token: smallToken, json: { appId: 'shop', name: 'Shop' } })).status).toBe(201)
      const result = await cli(['push', buildFolder('too-big', { iosBundleBytes: 2 * mb }), '--app', 'shop', '--version', '5.0.0', '--server', small.baseUrl, '--json'], clientEnv(join(dir, 'config-small'), { MINISHIP_TOKEN: smallToken }))
      expect(result.exitCode).toBe(1)
      expect(result.stderr).toContain('over the 1.0 MB')
      expect(result.stderr).toContain('nothing was sent')
      expect(result.stderr).toContain('--upload-limit-mb')
      expect(JSON.parse(result.stdout).error.code).toBe('PAYLOAD_TOO_LARGE')
      expect(small.output().stdout.split('\n').filter((line) => line.includes('/versions/upload'))).toEqual([])
    } finally {
      await small.stop()
    }
  }, 60_000)

  test('a mistyped flag is named as such, with the one meant (not "required option --app")', async () => {
    const result = await cli(['push', '--ap', 'shop', '--version', '1.0.0'], env())
    expect(result.exitCode).toBe(2)
    expect(result.stderr).toContain("unknown option '--ap' (Did you mean --app?)")
    expect(result.stderr).not.toContain('required option')
  })

  test('--server naming the console (…/apps) says to use the /api URL, not "r.find is not a function"', async () => {
    const result = await cli(['versions', 'ls', 'shop', '--server', `${server.baseUrl}/apps`], clientEnv(join(dir, 'config-none'), { MINISHIP_TOKEN: token }))
    expect(result.exitCode).toBe(1)
    expect(result.stderr).toContain('is not a miniship API URL')
    expect(result.stderr).toContain(`${server.baseUrl}/api`)
    expect(result.stderr).not.toContain('is not a function')
  })

  test('--server naming the console (…/apps) says to use the /api URL for a sign-in and a change too, not "No such endpoint"', async () => {
    // the console answers GET /apps/… with its page, but a POST or PATCH there with miniship's own 404 JSON
    const login = await cli(['login', '--server', `${server.baseUrl}/apps`, '--with-password', '--email', 'dev@example.test'], clientEnv(join(dir, 'config-apps')), 'dev-password\n')
    const create = await cli(['channels', 'create', 'qa', '--app', 'shop', '--server', `${server.baseUrl}/apps`], clientEnv(join(dir, 'config-none'), { MINISHIP_TOKEN: token }))
    for (const result of [login, create]) {
      expect(result.exitCode).toBe(1)
      expect(result.stderr).toContain('is not a miniship API URL')
      expect(result.stderr).toContain(`${server.baseUrl}/api`)
      expect(result.stderr).not.toContain('No such endpoint')
    }
  })

  test('bad usage: exit 2 (bad version, bad rollout, unknown option, bad server URL)', async () => {
    for (const args of [
      ['push', '.', '--app', 'shop', '--version', 'one'],
      ['push', '.', '--app', 'shop', '--version', '1.0.0', '--publish', '--rollout', '0'],
      ['status', 'shop', '--bogus'],
      ['status', 'shop', '--server', 'ftp://example.com'],
    ]) {
      const result = await cli(args, env())
      expect({ args, exitCode: result.exitCode }).toEqual({ args, exitCode: 2 })
    }
  })
})
