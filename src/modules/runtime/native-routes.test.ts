import { expect, test } from 'bun:test'
import type { BunRequest } from 'bun'
import { segmentAfter } from './native-routes'
import { queryValue, remembered, runtimeQuery } from './query'

test('queryValue reads one decoded query parameter without a URL object', () => {
  const table: [string, string | undefined][] = [
    ['http://x/a', undefined],
    ['http://x/a?token=abc', 'abc'],
    ['http://x/a?x=1&token=a%2Eb', 'a.b'],
    ['http://x/a?token=', ''],
    ['http://x/a?tokens=abc', undefined],
    ['http://x/a?token=abc#frag', 'abc'],
    ['http://x/a?token=a+b', 'a b'],
    ['http://x/a?token=%E0%A4%A', '%E0%A4%A'],
    ['http://x/a?token=first&token=second', 'first'],
    ['http://x/a?xtoken=1&token=2', '2'],
    ['http://x/a?token', ''],
    ['http://x/a?token&x=1', ''],
  ]
  for (const [url, value] of table) expect({ url, value: queryValue(url, 'token') }).toEqual({ url, value })
  // remembering the last value read: the same answers, each URL twice in a row and then in reverse order
  const memo = remembered()
  for (const [url, value] of [...table.flatMap((row) => [row, row]), ...[...table].reverse()]) expect({ url, value: queryValue(url, 'token', memo) }).toEqual({ url, value })
})

test('a remembered token or id is answered only for the same text: same length, other characters, other places', () => {
  const tokens = remembered()
  const ids = remembered()
  const prefix = '/api/mini-apps/access/versions/'
  const cases: [string, string, string | undefined][] = [
    ['http://x/api/mini-apps/access/versions/v-aaaa/install?token=t-aaaa', 'v-aaaa', 't-aaaa'],
    ['http://x/api/mini-apps/access/versions/v-aaaa/install?token=t-aaaa', 'v-aaaa', 't-aaaa'],
    ['http://x/api/mini-apps/access/versions/v-aaab/install?token=t-aaab', 'v-aaab', 't-aaab'],
    ['http://x/api/mini-apps/access/versions/v-aaab/install?token=t-aaa%2B', 'v-aaab', 't-aaa+'],
    ['http://x/api/mini-apps/access/versions/v-aaab/install?token=t-aaa%2B', 'v-aaab', 't-aaa+'],
    ['http://x/api/mini-apps/access/versions/v-aaab/install?token=t-aaab&x=1', 'v-aaab', 't-aaab'],
    ['http://x/api/mini-apps/access/versions/v-aaa/install?x=t-aaab&token=t-aa', 'v-aaa', 't-aa'],
    ['http://x/api/mini-apps/access/versions/v-aaa/install', 'v-aaa', undefined],
    ['http://x/api/mini-apps/access/versions/v%2Daaa/install?token=', null as unknown as string, ''],
  ]
  for (const [url, id, token] of cases) expect({ url, id: segmentAfter(url, prefix, ids), token: queryValue(url, 'token', tokens) }).toEqual({ url, id, token })
})

test('runtimeQuery reads every runtime parameter in one pass, each as queryValue would', () => {
  const urls = [
    'http://x/a',
    'http://x/a?platform=ios&currentVersion=1.0.0&deviceId=dev-1',
    'http://x/a?channel=beta&hostVersion=2.3.0&deviceId=a%3Ab&token=t1&token=t2',
    'http://x/a?deviceId=&platform=android#x&channel=no',
    'http://x/a?deviceId=first&deviceId=second&currentVersion=1.0.0+x&hostVersion=%E0%A4%A',
    'http://x/a?tokenx=1&xchannel=2&platform&channel=c',
    'http://x/a?platform=ios&currentVersion=1.0.0&deviceId',
    'http://x/a?deviceId&deviceId=second&token&channel',
  ]
  const names = ['token', 'channel', 'deviceId', 'hostVersion', 'platform', 'currentVersion'] as const
  for (const url of urls) {
    const query = runtimeQuery(url)
    for (const name of names) expect({ url, name, value: query[name] }).toEqual({ url, name, value: queryValue(url, name) })
    // as the app's routes (HEAD, app.handle) read the query: a name alone is an empty value, not an absent one
    const search = new URL(url).searchParams
    for (const name of names) if (name !== 'hostVersion') expect({ url, name, value: query[name] }).toEqual({ url, name, value: search.get(name) ?? undefined })
  }
})

test("nativeDispatch picks a runtime route only where Bun's router would, with the same ids; anything else goes on to the app", async () => {
  const { nativeDispatch, nativeInstallRoutes, segmentAfter, lastSegment } = await import('./native-routes')
  const patterns = [
    '/api/mini-apps/access/versions/:versionId/install',
    '/api/mini-apps/access/apps/:appId/release/install',
    '/api/mini-apps/access/versions/:versionId/bundles/:platform',
    '/api/mini-apps/access/versions/:versionId/assets/:platform',
    '/api/mini-apps/access/versions/:versionId/manifest',
    '/api/mini-apps/access/apps/:appId/update',
  ]
  // each native handler answers its pattern and the ids it reads from the URL
  const routes = nativeInstallRoutes({} as never, () => () => new Response(), () => {}) as unknown as Record<string, unknown>
  expect(Object.keys(routes).sort()).toEqual([...patterns].sort())
  const answering = Object.fromEntries(
    patterns.map((pattern) => [
      pattern,
      {
        GET: (_request: Request, _server: unknown, url: string) =>
          Response.json({ pattern, id: segmentAfter(url, pattern.includes('/versions/') ? '/api/mini-apps/access/versions/' : '/api/mini-apps/access/apps/'), platform: pattern.endsWith(':platform') ? lastSegment(url) : undefined }),
      },
    ]),
  )
  const dispatch = nativeDispatch(answering as never)
  // Bun's router, for comparison: which pattern, which params
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    routes: Object.fromEntries(patterns.map((pattern) => [pattern, { GET: (request: BunRequest) => Response.json({ pattern, params: request.params }) }])),
    fetch: () => Response.json({ pattern: null }),
  })
  try {
    const paths = [
      '/api/mini-apps/access/versions/01a20944-0672-763f-b854-e6bb825ee5b7/install?token=abc',
      '/api/mini-apps/access/versions/v1/install',
      '/api/mini-apps/access/versions/v1/install/',
      '/api/mini-apps/access/versions//install',
      '/api/mini-apps/access/versions/v%31/install?token=a/b',
      '/api/mini-apps/access/versions/v1/install?token=a/b/c',
      '/api/mini-apps/access/versions/v1/installs',
      '/api/mini-apps/access/versions/v1/manifest?token=t',
      '/api/mini-apps/access/versions/v1/bundles/ios?token=a/b/c',
      '/api/mini-apps/access/versions/v1/bundles/android',
      '/api/mini-apps/access/versions/v1/bundles/app.json',
      '/api/mini-apps/access/versions/v1/bundles/i%6Fs?token=t',
      '/api/mini-apps/access/versions/v1/bundles/ios/',
      '/api/mini-apps/access/versions/v1/bundles/',
      '/api/mini-apps/access/versions/v1/assets/android?token=t',
      '/api/mini-apps/access/versions/v1/bundle?platform=ios',
      '/api/mini-apps/access/apps/com.example.app/update?platform=ios&deviceId=a/b',
      '/api/mini-apps/access/apps/com.example.app/update/',
      '/api/mini-apps/access/apps/com.example.app/release/install?deviceId=d',
      '/api/mini-apps/access/apps/com.example.app/release/bundles/ios',
      '/api/mini-apps/access/apps/a:b@c/update?x=1',
      '/api/mini-apps/access/events',
      '/api/mini-apps/access/apps',
      '/api/mini-apps/access/',
      '/api/mini-apps/access',
      '/api/health',
      '/',
    ]
    let matched = 0
    for (const path of paths) {
      const url = `http://127.0.0.1:${server.port}${path}`
      const bun = (await (await fetch(url)).json()) as { pattern: string | null; params?: Record<string, string> }
      const ours = dispatch(new Request(url), null as never, url)
      // HEAD and other methods always go on to the app
      expect(dispatch(new Request(url, { method: 'HEAD' }), null as never, url)).toBeNull()
      if (ours === null) continue
      const picked = (await (ours as Response).json()) as { pattern: string; id: string; platform?: string }
      expect({ path, pattern: picked.pattern }).toEqual({ path, pattern: bun.pattern! })
      expect({ path, id: picked.id }).toEqual({ path, id: bun.params!.versionId ?? bun.params!.appId! })
      if (bun.params!.platform !== undefined) expect({ path, platform: picked.platform }).toEqual({ path, platform: bun.params!.platform })
      matched++
    }
    // the plain forms of every route are picked here; the encoded and odd ones go on to the app
    expect(matched).toBe(11)
  } finally {
    await server.stop(true)
  }
})

test('a route reads its id where nativeDispatch found it, and only in that URL: called with another, it reads that one', async () => {
  const { nativeDispatch, nativeInstallRoutes } = await import('./native-routes')
  const echo = (_request: Request, id: string, ...rest: unknown[]) => Response.json({ id, kind: typeof rest[0] === 'string' ? rest[0] : undefined })
  const answers = { versionInstall: echo, releaseInstall: echo, update: echo, fileOfKind: echo, file: echo }
  const routes = nativeInstallRoutes(answers as never, (handler) => (request, server, url) => handler(request, server, url ?? request.url), () => {}) as unknown as Record<string, { GET: (request: Request, server: unknown, url?: string) => Response }>
  const dispatch = nativeDispatch(routes as never)
  const base = 'http://127.0.0.1:3001/api/mini-apps/access'
  const idOf = async (answer: unknown) => ((await (answer as Response).json()) as { id: string }).id
  const cases: [string, string, string][] = [
    ['/api/mini-apps/access/versions/:versionId/install', `${base}/versions/first-id/install?token=t`, 'first-id'],
    ['/api/mini-apps/access/apps/:appId/release/install', `${base}/apps/com.example.one/release/install`, 'com.example.one'],
    ['/api/mini-apps/access/apps/:appId/update', `${base}/apps/com.example.one/update?platform=ios`, 'com.example.one'],
    ['/api/mini-apps/access/versions/:versionId/bundles/:platform', `${base}/versions/first-id/bundles/ios?token=t`, 'first-id'],
    ['/api/mini-apps/access/versions/:versionId/manifest', `${base}/versions/first-id/manifest?token=t`, 'first-id'],
  ]
  for (const [pattern, url, id] of cases) {
    expect({ url, id: await idOf(dispatch(new Request(url), null as never, url)) }).toEqual({ url, id })
    // the same route called as Bun's route table calls it, with a URL of another id (longer, shorter, encoded): that id
    for (const [other, otherId] of [
      [url.replace(id, `${id}-longer`), `${id}-longer`],
      [url.replace(id, 'x'), 'x'],
      [url.replace(id, 'a%2Fb'), 'a/b'],
    ] as const) {
      const request = Object.assign(new Request(other), { params: { versionId: otherId, appId: otherId, platform: 'ios' } })
      expect({ other, id: await idOf(routes[pattern]!.GET(request, null, other)) }).toEqual({ other, id: otherId })
    }
    // and dispatched again after that, the first URL's id
    expect({ url, id: await idOf(dispatch(new Request(url), null as never, url)) }).toEqual({ url, id })
  }
})

test("the file routes hand the URL's channel (what insights count the download under) and token to the answers", async () => {
  const { nativeDispatch, nativeInstallRoutes } = await import('./native-routes')
  const seen = (_request: Request, versionId: string, kind: string, token: string | undefined, _server: unknown, channel: string | undefined) => Response.json({ versionId, kind, token: token ?? null, channel: channel ?? null })
  const answers = { fileOfKind: seen, file: seen }
  const routes = nativeInstallRoutes(answers as never, (handler) => (request, server, url) => handler(request, server, url ?? request.url), () => {})
  const dispatch = nativeDispatch(routes as never)
  const base = 'http://127.0.0.1:3001/api/mini-apps/access/versions/v1'
  const cases: [string, Record<string, string | null>][] = [
    [`${base}/bundles/ios?token=t&channel=beta`, { versionId: 'v1', kind: 'bundleIos', token: 't', channel: 'beta' }],
    [`${base}/bundles/android?channel=beta&token=t`, { versionId: 'v1', kind: 'bundleAndroid', token: 't', channel: 'beta' }],
    [`${base}/assets/ios?token=t`, { versionId: 'v1', kind: 'assetsIos', token: 't', channel: null }],
    [`${base}/manifest?token=t&channel=beta-2`, { versionId: 'v1', kind: 'manifest', token: 't', channel: 'beta-2' }],
    [`${base}/bundles/app.json?token=t&channel=beta`, { versionId: 'v1', kind: 'bundles/app.json', token: 't', channel: 'beta' }],
    [`${base}/bundles/ios?token=t&channel=a%20b`, { versionId: 'v1', kind: 'bundleIos', token: 't', channel: 'a b' }],
  ]
  for (const [url, expected] of cases) expect({ url, ...((await (dispatch(new Request(url), null as never, url) as Response).json()) as object) }).toEqual({ url, ...expected })
})
