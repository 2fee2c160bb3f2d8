// URL building: the API base of a request, file URLs per configuration, release-stable scopes, deep links; and the contract's resolution rule.
import { describe, expect, test } from 'bun:test'
import { AppError } from './errors'
import { apiBase, deepLink, downloadUrls, fileBase, installUrl, isDeviceId, releaseUrls, routeUrl, scopePath, servedApiBase } from './urls'
import { derivedManifestUrl } from '../modules/runtime/test-runtime'

const versionId = '0192f0aa-0000-7000-8000-000000000001'
const token = 'aaa.bbb.ccc'

function request(url: string, headers: Record<string, string> = {}): Request {
  return new Request(url, { headers })
}

describe('apiBase: the base every handed-out URL is built on', () => {
  const plain: { publicUrl: string | null; trustProxy: boolean } = { publicUrl: null, trustProxy: false }
  const trusting: typeof plain = { publicUrl: null, trustProxy: true }
  const cases: [string, Request, typeof plain, string][] = [
    ['the request origin + /api by default', request('http://10.0.0.5:3001/api/x', { host: '10.0.0.5:3001' }), plain, 'http://10.0.0.5:3001/api'],
    ['the Host header over the URL', request('http://localhost/api/x', { host: 'apps.example.com' }), plain, 'http://apps.example.com/api'],
    ['an https request stays https', request('https://apps.example.com/api/x', { host: 'apps.example.com' }), plain, 'https://apps.example.com/api'],
    ['X-Forwarded-* ignored without --trust-proxy', request('http://127.0.0.1/api/x', { host: '127.0.0.1:3001', 'x-forwarded-proto': 'https', 'x-forwarded-host': 'evil.example' }), plain, 'http://127.0.0.1:3001/api'],
    ['X-Forwarded-* used with --trust-proxy', request('http://127.0.0.1/api/x', { host: '127.0.0.1:3001', 'x-forwarded-proto': 'https', 'x-forwarded-host': 'apps.example.com' }), trusting, 'https://apps.example.com/api'],
    ['a docker-compose service name: underscore is valid in a host name (RFC 3986 reg-name)', request('http://localhost/api/x', { host: 'miniship_app:3000' }), plain, 'http://miniship_app:3000/api'],
    ['a trusted X-Forwarded-Host with an underscore', request('http://127.0.0.1/api/x', { host: '127.0.0.1:3001', 'x-forwarded-host': '_edge.internal' }), trusting, 'http://_edge.internal/api'],
    ['--public-url wins over everything', request('http://127.0.0.1/api/x', { host: 'other' }), { publicUrl: 'https://apps.example.com/base/api', trustProxy: true }, 'https://apps.example.com/base/api'],
  ]
  for (const [name, req, config, expected] of cases) {
    test(name, () => expect(apiBase(req, config)).toBe(expected))
  }

  const hostile: [string, Record<string, string>, typeof plain][] = [
    ['a Host with a path', { host: 'evil.example/phish' }, plain],
    ['a Host with spaces', { host: 'evil example' }, plain],
    ['a Host with a query', { host: 'evil.example?x=1' }, plain],
    ['a Host with user info', { host: 'user@evil.example' }, plain],
    ['a Host with a quote', { host: 'evil"example' }, plain],
    ['a Host with a control character', { host: 'evil\texample' }, plain],
    ['a trusted X-Forwarded-Host with a path', { host: 'ok.example', 'x-forwarded-host': 'evil.example/x' }, trusting],
  ]
  for (const [name, headers, config] of hostile) {
    test(`${name}: 400 INVALID_HOST, no URL is built`, () => {
      let caught: unknown
      try {
        apiBase(request('http://localhost/api/x', headers), config)
      } catch (error) {
        caught = error
      }
      expect(caught).toBeInstanceOf(AppError)
      expect((caught as AppError).status).toBe(400)
      expect((caught as AppError).code).toBe('INVALID_HOST')
    })
  }
})

describe('servedApiBase: the same base from the URL Bun built for a served request', () => {
  const plain = { publicUrl: null, trustProxy: false }
  test('the URL authority stands for the Host header, which is not read', () => {
    // a Request whose Host header disagrees shows which one is used
    expect(servedApiBase(request('http://apps.example.com:8443/api/x?y=1', { host: 'other.example' }), plain, 'http://apps.example.com:8443/api/x?y=1')).toBe('http://apps.example.com:8443/api')
    expect(servedApiBase(request('https://apps.example.com/api/x'), plain, 'https://apps.example.com/api/x')).toBe('https://apps.example.com/api')
  })
  test('--public-url wins; behind a trusted proxy the forwarded headers are read', () => {
    expect(servedApiBase(request('http://127.0.0.1/api/x'), { publicUrl: 'https://p.example/api', trustProxy: false }, 'http://127.0.0.1/api/x')).toBe('https://p.example/api')
    const proxied = request('http://127.0.0.1/api/x', { host: '127.0.0.1', 'x-forwarded-proto': 'https', 'x-forwarded-host': 'apps.example.com' })
    expect(servedApiBase(proxied, { publicUrl: null, trustProxy: true }, 'http://127.0.0.1/api/x')).toBe('https://apps.example.com/api')
  })
  test('an underscore in the URL authority (a docker-compose service name) is a host name', () => {
    expect(servedApiBase(request('http://miniship_app:3000/api/x'), plain, 'http://miniship_app:3000/api/x')).toBe('http://miniship_app:3000/api')
  })
  test('a URL without a host (Bun found no host name in the Host header): 400 INVALID_HOST from the header', () => {
    let caught: unknown
    try {
      servedApiBase(request('http://localhost/api/x', { host: 'evil example' }), plain, '/api/x')
    } catch (error) {
      caught = error
    }
    expect((caught as AppError).code).toBe('INVALID_HOST')
  })
})

describe('file URLs', () => {
  const base = 'https://apps.example.com/api'
  test('fileBase is the CDN when configured, else the API base', () => {
    expect(fileBase({ cdnUrl: null }, base)).toBe(base)
    expect(fileBase({ cdnUrl: 'https://cdn.example.net/miniship' }, base)).toBe('https://cdn.example.net/miniship')
  })

  test('downloadUrls: every file of one version with its token; the derived manifest path is one we answer', () => {
    const urls = downloadUrls(base, versionId, token)
    const prefix = `${base}/mini-apps/access/versions/${versionId}`
    expect(urls).toEqual({
      bundleUrl: `${prefix}/bundles/ios?token=${token}`,
      bundles: { ios: `${prefix}/bundles/ios?token=${token}`, android: `${prefix}/bundles/android?token=${token}` },
      assetsUrl: { ios: `${prefix}/assets/ios?token=${token}`, android: `${prefix}/assets/android?token=${token}` },
      manifestUrl: `${prefix}/manifest?token=${token}`,
    })
    expect(derivedManifestUrl(urls.bundleUrl)).toBe(`${prefix}/bundles/app.json`)
  })

  test('a token with characters that need escaping is escaped', () => {
    expect(downloadUrls(base, 'v1', 'a+b/c=').manifestUrl).toBe(`${base}/mini-apps/access/versions/v1/manifest?token=a%2Bb%2Fc%3D`)
  })

  const scopes: [string, Parameters<typeof scopePath>[0], string][] = [
    ['stable without device: the §9 paths', { channel: 'stable' }, ''],
    ['another channel', { channel: 'beta' }, 'channels/beta/'],
    ['stable with a device', { channel: 'stable', deviceId: 'dev-1' }, 'channels/stable/devices/dev-1/'],
    ['a device and a host version, escaped', { channel: 'beta', deviceId: 'a:b', hostVersion: '2.0.0-rc.1' }, 'channels/beta/devices/a%3Ab/hosts/2.0.0-rc.1/'],
  ]
  for (const [name, scope, expected] of scopes) {
    test(`scopePath: ${name}`, () => expect(scopePath(scope)).toBe(expected))
  }

  // decisions §18: 1–200 of [A-Za-z0-9._:-], not "." or ".."
  const deviceIds: [string, boolean][] = [
    ['a', true],
    ['0192f0aa-0000-7000-8000-000000000001', true],
    ['AbC_09.x:y-z', true],
    ['.a', true],
    ['a..b', true],
    ['...', true],
    ['x'.repeat(200), true],
    ['q83vEjRWeJA', true], // base64url
    ['', false],
    ['.', false],
    ['..', false],
    ['x'.repeat(201), false],
    ['a/b', false],
    ['a\\b', false],
    ['a b', false],
    ['q83v+jRW/JA=', false], // base64: send it as base64url
    ['a%2Fb', false],
    ['a?b', false],
    ['a#b', false],
    ['é', false],
    ['a\u0000', false],
    ['a\n', false],
  ]
  for (const [id, valid] of deviceIds) {
    test(`isDeviceId(${JSON.stringify(id.length > 20 ? `${id.slice(0, 8)}…(${id.length})` : id)}) is ${valid}`, () => expect(isDeviceId(id)).toBe(valid))
  }

  test('scopePath refuses a deviceId that would make a path resolve elsewhere (400 INVALID_DEVICE_ID)', () => {
    for (const deviceId of ['.', '..', 'a/b', '']) {
      let error: unknown
      try {
        scopePath({ channel: 'beta', deviceId })
      } catch (caught) {
        error = caught
      }
      expect(error).toBeInstanceOf(AppError)
      expect(error).toMatchObject({ status: 400, code: 'INVALID_DEVICE_ID' })
    }
  })

  test('releaseUrls: release-stable files below the scope; the derived manifest stays in the scope', () => {
    const urls = releaseUrls(base, 'shop', 'channels/beta/devices/d1/', token)
    expect(urls.bundles.android).toBe(`${base}/mini-apps/access/apps/shop/channels/beta/devices/d1/release/bundles/android?token=${token}`)
    expect(derivedManifestUrl(urls.bundleUrl)).toBe(`${base}/mini-apps/access/apps/shop/channels/beta/devices/d1/release/bundles/app.json`)
    expect(releaseUrls(base, 'shop', '', token).manifestUrl).toBe(`${base}/mini-apps/access/apps/shop/release/manifest?token=${token}`)
  })

  test('deepLink: <scheme>://miniapp/install/<versionId>?installUrl=<the install URL, encoded>', () => {
    const install = installUrl(base, versionId, 'a.b')
    expect(install).toBe(`${base}/mini-apps/access/versions/${versionId}/install?token=a.b`)
    const link = deepLink({ routeScheme: 'acme' }, versionId, install)
    expect(link).toBe(`acme://miniapp/install/${versionId}?installUrl=${encodeURIComponent(install)}`)
    expect(new URL(link).searchParams.get('installUrl')).toBe(install)
  })

  test('routeUrl is <scheme>://<appId>', () => {
    expect(routeUrl({ routeScheme: 'miniapp' }, 'shop.demo')).toBe('miniapp://shop.demo')
    expect(routeUrl({ routeScheme: 'acme+app' }, 'Shop')).toBe('acme+app://Shop')
  })
})

describe('what a runtime makes of the URLs we hand out', () => {
  // The contract lets a runtime resolve paths against its own serverBaseURL; we hand out full URLs
  // (decisions §9) so that nothing depends on how a runtime was configured. Checked on the
  // product's builders directly: each URL parses on its own and comes back unchanged.
  const base = 'https://apps.example.com/api'
  const cdn = fileBase({ cdnUrl: 'https://cdn.example.net/miniship' }, base)
  const every = (urls: ReturnType<typeof downloadUrls>) => [urls.bundleUrl, urls.bundles.ios, urls.bundles.android, urls.assetsUrl.ios, urls.assetsUrl.android, urls.manifestUrl]
  const built = [...every(downloadUrls(base, versionId, token)), ...every(downloadUrls(cdn, versionId, token)), ...every(releaseUrls(base, 'shop', 'channels/beta/devices/d1/', token)), installUrl(base, versionId, token)]
  test(`${built.length} URLs, each a full URL on the API base or the CDN`, () => {
    for (const url of built) {
      expect(new URL(url).toString()).toBe(url)
      expect(url.startsWith(`${base}/mini-apps/access/`) || url.startsWith('https://cdn.example.net/miniship/mini-apps/access/')).toBe(true)
    }
  })
})
