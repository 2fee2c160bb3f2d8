// URL building under the three configurations, and the contract's resolution rule applied to what we build.
import { describe, expect, test } from 'bun:test'
import { downloadUrls, fileBase, routeUrl } from './urls'
import { resolveUrl } from './test-runtime'

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

describe('what a runtime makes of the URLs we build (the contract resolution rule)', () => {
  // A runtime's serverBaseURL includes /api; the expected absolute URLs are written out, so this
  // checks downloadUrls, with test-runtime's resolveUrl only playing the runtime.
  const serverBaseUrl = 'https://apps.example.com/api'
  const resolved: [string, string][] = [
    ['neither', `https://apps.example.com/api/mini-apps/access/versions/${versionId}`],
    ['public URL', `https://apps.example.com/api/mini-apps/access/versions/${versionId}`],
    ['CDN', `https://cdn.example.net/miniship/mini-apps/access/versions/${versionId}`],
    ['CDN without public URL', `https://cdn.example.net/mini-apps/access/versions/${versionId}`],
  ]
  for (const [name, prefix] of resolved) {
    test(`${name}: every file URL resolves to ${prefix}/…`, () => {
      const { config } = configurations.find((entry) => entry.name === name)!
      const urls = downloadUrls(config, versionId, token)
      const all = [urls.bundleUrl, urls.bundles.ios, urls.bundles.android, urls.assetsUrl.ios, urls.assetsUrl.android, urls.manifestUrl].map((url) => resolveUrl(serverBaseUrl, url))
      expect(all).toEqual(['bundles/ios', 'bundles/ios', 'bundles/android', 'assets/ios', 'assets/android', 'manifest'].map((path) => `${prefix}/${path}?token=${token}`))
    })
  }
})
