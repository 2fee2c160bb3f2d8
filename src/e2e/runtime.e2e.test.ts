// A host runtime following only the contract, against the compiled binary under each URL configuration:
// install a draft (access link) and the release (appId), update after a publish and a rollback, resume a download.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdirSync, readdirSync, rmSync, statSync, writeFileSync, createWriteStream } from 'node:fs'
import { dirname, join, resolve as resolvePath, sep } from 'node:path'
import { pipeline } from 'node:stream/promises'
import yauzl from 'yauzl'
import type { Server } from 'bun'
import { callApi, setUpFirstAdmin, startBinary, tempDir, type ApiCallOptions, type RunningBinary } from './support'
import { buildZip } from '../test-fixtures'
import { derivedManifestUrl, resolveUrl, sha256Hex, type InstallInfo as RuntimeInstallInfo } from '../modules/runtime/test-runtime'

const appId = 'com.example.runtime'

interface InstallInfo extends RuntimeInstallInfo {
  appId: string
  appName: string
  releaseType: string
  routeUrl: string
}

/** A reverse proxy (or a CDN) in front of the server: `<its prefix>/x` → `<upstream>/api/x`, bodies streamed. */
function startProxy(prefix: string): { server: Server<undefined>; upstream: { url: string }; requests: string[] } {
  const upstream = { url: '' }
  const requests: string[] = []
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(request) {
      const url = new URL(request.url)
      requests.push(url.pathname)
      if (!url.pathname.startsWith(prefix + '/')) return new Response('not behind this proxy', { status: 502 })
      const headers = new Headers(request.headers)
      headers.delete('host')
      const answer = await fetch(`${upstream.url}/api${url.pathname.slice(prefix.length)}${url.search}`, { method: request.method, headers, redirect: 'manual' })
      return new Response(answer.body, { status: answer.status, headers: answer.headers })
    },
  })
  return { server, upstream, requests }
}

/** Extracts a zip into `target` with yauzl, refusing any entry that would land outside it. */
function unzip(zipPath: string, target: string): Promise<void> {
  return new Promise((resolve, reject) => {
    yauzl.open(zipPath, { lazyEntries: true }, (openError, zip) => {
      if (openError || !zip) return reject(openError)
      zip.on('error', reject)
      zip.on('end', () => resolve())
      zip.on('entry', (entry: yauzl.Entry) => {
        const destination = resolvePath(target, entry.fileName)
        if (!destination.startsWith(resolvePath(target) + sep)) return reject(new Error(`entry ${entry.fileName} leaves the sandbox`))
        if (entry.fileName.endsWith('/')) {
          mkdirSync(destination, { recursive: true })
          return zip.readEntry()
        }
        mkdirSync(dirname(destination), { recursive: true })
        zip.openReadStream(entry, (streamError, stream) => {
          if (streamError || !stream) return reject(streamError)
          pipeline(stream, createWriteStream(destination)).then(() => zip.readEntry(), reject)
        })
      })
      zip.readEntry()
    })
  })
}

/**
 * The runtime: knows only `serverBaseURL` (with `/api`), the contract's URL rules and sandbox layout.
 * iOS keeps a miniapp in Documents/MiniApps/<appId>/ (index.bundle + assets/), Android in
 * <filesDir>/<platform_dir>/<appId>/ (index.android.bundle + drawable-*).
 */
class Runtime {
  constructor(
    readonly serverBaseUrl: string,
    readonly sandbox: string,
  ) {}

  async get(url: string, headers: Record<string, string> = {}): Promise<Response> {
    return fetch(resolveUrl(this.serverBaseUrl, url), { headers })
  }

  /**
   * What the real runtimes do with a file URL from install info: hand it to the platform's
   * downloader unchanged, which opens only full URLs (decisions §6, §9).
   */
  async fetchFile(url: string, headers: Record<string, string> = {}): Promise<Response> {
    expect(url).toMatch(/^https?:\/\//)
    return fetch(url, { headers })
  }

  /** The manifest the runtime checks for updates: derived from the bundle URL it installed, query dropped. */
  async derivedVersion(installedBundleUrl: string): Promise<string> {
    const response = await this.fetchFile(derivedManifestUrl(installedBundleUrl))
    expect(response.status).toBe(200)
    return ((await response.json()) as { version: string }).version
  }

  async installInfo(url: string): Promise<InstallInfo> {
    const response = await this.get(url)
    expect(response.status).toBe(200)
    return (await response.json()) as InstallInfo
  }

  releaseInstallInfo(): Promise<InstallInfo> {
    return this.installInfo(`mini-apps/access/apps/${appId}/release/install`)
  }

  /** Downloads `url` into `path`, checking size and sha256 against install info. */
  async download(url: string, path: string, expected: { size: number; sha256: string }): Promise<void> {
    const response = await this.fetchFile(url)
    expect(response.status).toBe(200)
    const bytes = new Uint8Array(await response.arrayBuffer())
    expect({ size: bytes.length, sha256: sha256Hex(bytes) }).toEqual(expected)
    mkdirSync(dirname(path), { recursive: true })
    writeFileSync(path, bytes)
  }

  iosDir(appIdentifier: string) {
    return join(this.sandbox, 'ios', 'Documents', 'MiniApps', appIdentifier)
  }

  androidDir(appIdentifier: string) {
    return join(this.sandbox, 'android', 'files', 'miniapps', appIdentifier)
  }

  /** Installs both platforms from install info and answers the manifest's version (what it keeps as "local"). */
  async install(info: InstallInfo): Promise<string> {
    const ios = this.iosDir(info.appId)
    const android = this.androidDir(info.appId)
    rmSync(ios, { recursive: true, force: true })
    rmSync(android, { recursive: true, force: true })
    await this.download(info.bundles.ios, join(ios, 'index.bundle'), info.files.bundleIos)
    await this.download(info.assetsUrl.ios, join(this.sandbox, 'assets-ios.zip'), info.files.assetsIos)
    await unzip(join(this.sandbox, 'assets-ios.zip'), ios)
    await this.download(info.bundles.android, join(android, 'index.android.bundle'), info.files.bundleAndroid)
    await this.download(info.assetsUrl.android, join(this.sandbox, 'assets-android.zip'), info.files.assetsAndroid)
    await unzip(join(this.sandbox, 'assets-android.zip'), android)
    await this.download(info.manifestUrl, join(ios, 'app.json'), info.files.manifest)
    const manifest = (await Bun.file(join(ios, 'app.json')).json()) as { version: string }
    writeFileSync(join(android, 'app.json'), JSON.stringify(manifest))
    return manifest.version
  }

  /** The remote manifest's version, from the full manifestUrl of install info. */
  async remoteVersion(info: InstallInfo): Promise<string> {
    const response = await this.fetchFile(info.manifestUrl)
    expect(response.status).toBe(200)
    return ((await response.json()) as { version: string }).version
  }
}

const configurations = [
  { name: 'no URL flags at all (full URLs on the request origin)', mode: 'paths' },
  { name: '--public-url behind a reverse proxy (full URLs)', mode: 'public' },
  { name: '--cdn-url (file URLs on the CDN, which forwards to /api)', mode: 'cdn' },
] as const

for (const configuration of configurations) {
  describe(`a runtime against the binary: ${configuration.name}`, () => {
    let dir: string
    let server: RunningBinary
    let proxy: ReturnType<typeof startProxy> | null = null
    let runtime: Runtime
    let token: string
    let miniAppId: string
    const ids: Record<string, string> = {}
    const contents: Record<string, { ios: string; android: string }> = {}
    const api = (method: string, path: string, options: ApiCallOptions = {}) => callApi(server.baseUrl, method, path, options)

    beforeAll(async () => {
      dir = tempDir()
      const dataDir = join(dir, 'data')
      let args: string[] = []
      if (configuration.mode === 'public') {
        proxy = startProxy('/api')
        args = ['--public-url', `http://127.0.0.1:${proxy.server.port}/api`]
      } else if (configuration.mode === 'cdn') {
        proxy = startProxy('/cdn/miniship')
        args = ['--cdn-url', `http://127.0.0.1:${proxy.server.port}/cdn/miniship`]
      }
      server = await startBinary({ dataDir, args })
      if (proxy) proxy.upstream.url = server.baseUrl
      const serverBaseUrl = configuration.mode === 'public' ? `http://127.0.0.1:${proxy!.server.port}/api` : `${server.baseUrl}/api`
      runtime = new Runtime(serverBaseUrl, join(dir, 'device'))

      await setUpFirstAdmin(server)
      token = (await api('POST', '/api/auth/register', { json: { email: 'dev@example.test', password: 'dev-password' } })).body.accessToken
      miniAppId = (await api('POST', '/api/mini-apps', { token, json: { appId, name: 'Runtime shop' } })).body.id
      for (const version of ['1.0.0', '1.1.0']) {
        // bundles of a realistic size, different per version and platform
        contents[version] = { ios: `/* ios ${version} */\n` + 'var a=1;'.repeat(250_000), android: `/* android ${version} */\n` + 'var b=2;'.repeat(200_000) }
        const form = new FormData()
        form.append('version', version)
        form.append('bundleIos', new Blob([contents[version]!.ios]), 'main.ios.jsbundle')
        form.append('bundleAndroid', new Blob([contents[version]!.android]), 'main.android.bundle')
        form.append('manifest', new Blob([JSON.stringify({ appId, name: 'Runtime shop' })]), 'app.json')
        form.append('assetsIos', new Blob([buildZip([{ name: 'assets/' }, { name: 'assets/images/logo.png', content: `ios logo ${version}` }]) as BlobPart]), 'assets-ios.zip')
        form.append(
          'assetsAndroid',
          new Blob([buildZip([{ name: 'drawable-mdpi/logo.png', content: `android logo ${version}` }, { name: 'drawable-xhdpi/logo.png', content: 'xhdpi' }, { name: 'raw/data.json', content: '{}' }]) as BlobPart]),
          'assets-android.zip',
        )
        const uploaded = await api('POST', `/api/mini-apps/by-app-id/${appId}/versions/upload`, { token, body: form })
        expect(uploaded.status).toBe(201)
        ids[version] = uploaded.body.id
      }
    }, 60_000)

    afterAll(async () => {
      if (server) await server.stop()
      proxy?.server.stop(true)
      rmSync(dir, { recursive: true, force: true })
    })

    test('every URL in install info has the configured form and carries a download token', async () => {
      const workspace = await api('GET', `/api/mini-apps/${miniAppId}/workspace`, { token })
      const link = workspace.body.accessLinks.find((entry: { versionId: string }) => entry.versionId === ids['1.0.0'])
      const info = await runtime.installInfo(link.installUrl)
      const fileBase =
        configuration.mode === 'paths' ? `${server.baseUrl}/api` : configuration.mode === 'public' ? `http://127.0.0.1:${proxy!.server.port}/api` : `http://127.0.0.1:${proxy!.server.port}/cdn/miniship`
      expect(info.routeUrl).toBe(`miniapp://${appId}`)
      for (const url of [info.bundleUrl, info.bundles.ios, info.bundles.android, info.assetsUrl.ios, info.assetsUrl.android, info.manifestUrl]) {
        expect(url).toStartWith(`${fileBase}/mini-apps/access/versions/${ids['1.0.0']}/`)
        const carried = new URL(url, 'http://x').searchParams.get('token')
        expect(carried).toBeTruthy()
        expect(carried).not.toBe(token)
      }
    })

    test('a draft installs through its access link: bundles, assets next to them, manifest', async () => {
      const workspace = await api('GET', `/api/mini-apps/${miniAppId}/workspace`, { token })
      const link = workspace.body.accessLinks.find((entry: { versionId: string }) => entry.versionId === ids['1.1.0'])
      const info = await runtime.installInfo(link.installUrl)
      expect(info).toMatchObject({ appId, versionId: ids['1.1.0'], version: '1.1.0' })
      expect(await runtime.install(info)).toBe('1.1.0')
      const ios = runtime.iosDir(appId)
      expect(readdirSync(ios).sort()).toEqual(['app.json', 'assets', 'index.bundle'])
      expect(await Bun.file(join(ios, 'index.bundle')).text()).toBe(contents['1.1.0']!.ios)
      expect(await Bun.file(join(ios, 'assets', 'images', 'logo.png')).text()).toBe('ios logo 1.1.0')
      const android = runtime.androidDir(appId)
      expect(readdirSync(android).sort()).toEqual(['app.json', 'drawable-mdpi', 'drawable-xhdpi', 'index.android.bundle', 'raw'])
      expect(await Bun.file(join(android, 'index.android.bundle')).text()).toBe(contents['1.1.0']!.android)
      expect(await Bun.file(join(android, 'drawable-mdpi', 'logo.png')).text()).toBe('android logo 1.1.0')
      // a draft is not the release: its derived manifest path (which loses the token) is refused
      const derived = await runtime.get(derivedManifestUrl(info.bundleUrl))
      expect(derived.status).toBe(401)
    })

    test('the experience install: 401 EXPERIENCE_NOT_PUBLIC without a token until experiencePublic is on; with a member token always', async () => {
      const refused = await runtime.get(`mini-apps/access/apps/${appId}/experience/install`)
      expect(refused.status).toBe(401)
      expect(((await refused.json()) as { code: string }).code).toBe('EXPERIENCE_NOT_PUBLIC')
      const member = await runtime.installInfo(`mini-apps/access/apps/${appId}/experience/install?token=${encodeURIComponent(token)}`)
      expect(member.versionId).toBe(ids['1.1.0'])
      expect((await api('PATCH', `/api/mini-apps/${miniAppId}`, { token, json: { experiencePublic: true } })).status).toBe(200)
      const open = await runtime.installInfo(`mini-apps/access/apps/${appId}/experience/install`)
      expect(open.versionId).toBe(ids['1.1.0'])
      expect(await runtime.install(open)).toBe('1.1.0')
      expect((await api('PATCH', `/api/mini-apps/${miniAppId}`, { token, json: { experiencePublic: false } })).status).toBe(200)
      expect((await runtime.get(`mini-apps/access/apps/${appId}/experience/install`)).status).toBe(401)
    })

    test('the release installs by appId; a publish and a rollback are detected through the app.json next to the installed bundle URL', async () => {
      const none = await runtime.get(`mini-apps/access/apps/${appId}/release/install`)
      expect(none.status).toBe(404)

      const published = await api('POST', `/api/mini-apps/${miniAppId}/versions/${ids['1.0.0']}/publish`, { token, json: {} })
      expect(published.status).toBe(200)
      let info = await runtime.releaseInstallInfo()
      expect(info.versionId).toBe(ids['1.0.0'])
      let local = await runtime.install(info)
      expect(local).toBe('1.0.0')
      // what the runtime keeps: the bundle URL it installed; it checks for updates at parent + /app.json, without the token
      const installedBundleUrl = info.bundles.ios
      expect(await Bun.file(join(runtime.iosDir(appId), 'index.bundle')).text()).toBe(contents['1.0.0']!.ios)
      expect(await runtime.derivedVersion(installedBundleUrl)).toBe(local)
      expect(await runtime.derivedVersion(info.bundles.android)).toBe(local)

      expect((await api('POST', `/api/mini-apps/${miniAppId}/versions/${ids['1.1.0']}/publish`, { token, json: {} })).status).toBe(200)
      expect(await runtime.derivedVersion(installedBundleUrl)).toBe('1.1.0')
      info = await runtime.releaseInstallInfo()
      local = await runtime.install(info)
      expect(local).toBe('1.1.0')
      expect(await Bun.file(join(runtime.iosDir(appId), 'index.bundle')).text()).toBe(contents['1.1.0']!.ios)
      expect(await runtime.derivedVersion(info.bundles.ios)).toBe(local)

      expect((await api('POST', `/api/mini-apps/${miniAppId}/rollback`, { token, json: { targetVersionId: ids['1.0.0'] } })).status).toBe(200)
      expect(await runtime.derivedVersion(info.bundles.ios)).toBe('1.0.0')
      info = await runtime.releaseInstallInfo()
      local = await runtime.install(info)
      expect(local).toBe('1.0.0')
      expect(await Bun.file(join(runtime.iosDir(appId), 'index.bundle')).text()).toBe(contents['1.0.0']!.ios)
      expect(await Bun.file(join(runtime.androidDir(appId), 'drawable-mdpi', 'logo.png')).text()).toBe('android logo 1.0.0')
      // the update check agrees with what the derived manifest says
      const check = await runtime.get(`mini-apps/access/apps/${appId}/update?platform=ios&currentVersion=1.1.0&deviceId=e2e-device`)
      expect(await check.json()).toMatchObject({ updateAvailable: true, mandatory: false, install: { version: '1.0.0' } })
    })

    test('an interrupted bundle download resumes with Range into an identical file', async () => {
      const info = await runtime.releaseInstallInfo()
      const partial = join(runtime.sandbox, 'partial.bundle')
      // read part of the body, then drop the connection
      const controller = new AbortController()
      const response = await fetch(info.bundles.ios, { signal: controller.signal })
      const reader = response.body!.getReader()
      const received: Uint8Array[] = []
      let length = 0
      while (length < 300_000) {
        const { value, done } = await reader.read()
        if (done) break
        received.push(value)
        length += value.length
      }
      controller.abort()
      await reader.cancel().catch(() => {})
      writeFileSync(partial, Buffer.concat(received))
      expect(statSync(partial).size).toBeLessThan(info.files.bundleIos.size)

      const rest = await runtime.fetchFile(info.bundles.ios, { range: `bytes=${statSync(partial).size}-` })
      expect(rest.status).toBe(206)
      expect(rest.headers.get('content-range')).toBe(`bytes ${statSync(partial).size}-${info.files.bundleIos.size - 1}/${info.files.bundleIos.size}`)
      const whole = Buffer.concat([await Bun.file(partial).bytes(), new Uint8Array(await rest.arrayBuffer())])
      expect(whole.length).toBe(info.files.bundleIos.size)
      expect(sha256Hex(whole)).toBe(info.files.bundleIos.sha256)
      expect(whole.toString()).toBe(contents['1.0.0']!.ios)
    })

    test('file headers through this configuration: ETag, short caching of release-stable URLs and immutable of versions, 304, HEAD', async () => {
      const info = await runtime.releaseInstallInfo()
      const first = await runtime.fetchFile(info.bundles.android)
      await first.arrayBuffer()
      expect(first.headers.get('content-type')).toBe('application/javascript')
      expect(first.headers.get('etag')).toBe(`"${info.files.bundleAndroid.sha256}"`)
      expect(first.headers.get('cache-control')).toBe('public, max-age=60')
      expect(first.headers.get('content-disposition')).toBe('attachment; filename="main.android.bundle"')
      const again = await runtime.fetchFile(info.bundles.android, { 'if-none-match': first.headers.get('etag')! })
      expect(again.status).toBe(304)
      const pinned = await runtime.installInfo(`mini-apps/access/versions/${ids['1.0.0']}/install?token=${encodeURIComponent(token)}`)
      const immutable = await runtime.fetchFile(pinned.bundles.android)
      await immutable.arrayBuffer()
      expect(immutable.headers.get('cache-control')).toBe('public, max-age=31536000, immutable')
      const head = await fetch(info.assetsUrl.ios, { method: 'HEAD' })
      expect(head.status).toBe(200)
      expect(head.headers.get('content-length')).toBe(String(info.files.assetsIos.size))
      expect(head.headers.get('content-type')).toBe('application/zip')
      if (configuration.mode === 'cdn') expect(proxy!.requests.some((path) => path.endsWith('/bundles/android'))).toBe(true)
      // the request log never holds a token
      const log = server.output().stdout
      expect(log).toContain('/mini-apps/access/versions/')
      expect(log).not.toContain(new URL(info.bundleUrl, 'http://x').searchParams.get('token')!)
    })
  })
}
