// URL building under the three configurations, and the contract's resolution rule applied to what we build.
import { describe, expect, test } from 'bun:test'
import { downloadUrls, fileBase, routeUrl } from './urls'
import { derivedManifestUrl, resolveUrl } from './test-runtime'

const versionId = '0192f0aa-0000-7000-8000-000000000001'
const token = 'aaa.bbb.ccc'
const configurations = [
  { name: 'neither', config: { publicUrl: null, cdnUrl: null }, base: '/api' },
  { name: 'public URL', config: { publicUrl: 'https://apps.example.com/api', cdnUrl: null }, base: 'https://apps.example.com/api' },
  { name: 'CDN', config: { publicUrl: 'https://apps.example.com/api', cdnUrl: 'https://cdn.example.net/miniship' }, base: 'https://cdn.example.net/miniship' },
  { name: 'CDN without public URL', config: { publicUrl: null, cdnUrl: 'https://cdn.example.net' }, base: 'https://cdn.example.net' },
]

describe('downloadUrls', () => {
  for (const { name, config, base } of configurations) {
    test(`${name}: every file URL on ${base}, with the token`, () => {
      expect(fileBase(config)).toBe(base)
      const urls = downloadUrls(config, versionId, token)
      const prefix = `${base}/mini-apps/access/versions/${versionId}`
      expect(urls).toEqual({
        bundleUrl: `${prefix}/bundles/ios?token=${token}`,
        bundles: { ios: `${prefix}/bundles/ios?token=${token}`, android: `${prefix}/bundles/android?token=${token}` },
        assetsUrl: { ios: `${prefix}/assets/ios?token=${token}`, android: `${prefix}/assets/android?token=${token}` },
        manifestUrl: `${prefix}/manifest?token=${token}`,
      })
      // the runtime's derived manifest path is one we answer
      expect(derivedManifestUrl(urls.bundleUrl)).toBe(`${prefix}/bundles/app.json`)
    })
  }

  test('a token with characters that need escaping is escaped', () => {
    expect(downloadUrls({ publicUrl: null, cdnUrl: null }, 'v1', 'a+b/c=').manifestUrl).toBe('/api/mini-apps/access/versions/v1/manifest?token=a%2Bb%2Fc%3D')
  })

  test('routeUrl is <scheme>://<appId>', () => {
    expect(routeUrl({ routeScheme: 'miniapp' }, 'shop.demo')).toBe('miniapp://shop.demo')
    expect(routeUrl({ routeScheme: 'acme+app' }, 'Shop')).toBe('acme+app://Shop')
  })
})

describe('resolveUrl (the contract rule, as a runtime applies it)', () => {
  const cases: [string, string, string][] = [
    ['https://apps.example.com/api', '/api/mini-apps/x', 'https://apps.example.com/api/mini-apps/x'],
    ['https://apps.example.com/prefix/api', '/api/mini-apps/x', 'https://apps.example.com/api/mini-apps/x'],
    ['http://127.0.0.1:3001/api', '/api/x?token=t', 'http://127.0.0.1:3001/api/x?token=t'],
    ['https://apps.example.com/api', 'mini-apps/x', 'https://apps.example.com/api/mini-apps/x'],
    ['https://apps.example.com/api/', 'mini-apps/x', 'https://apps.example.com/api/mini-apps/x'],
    ['https://apps.example.com/api', 'https://cdn.example.net/a/b?token=t', 'https://cdn.example.net/a/b?token=t'],
    ['https://apps.example.com/api', 'http://127.0.0.1:9/a', 'http://127.0.0.1:9/a'],
  ]
  for (const [base, url, expected] of cases) {
    test(`${url} against ${base}`, () => expect(resolveUrl(base, url)).toBe(expected))
  }
})
