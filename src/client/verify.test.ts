// What a device checks (decisions §14), as verify does it: each way a release can be wrong is named.
import { describe, expect, test } from 'bun:test'
import { generateKeyPairSync, sign } from 'node:crypto'
import { buildStatement } from '../sdk/statement'
import { keyIdOf } from '../modules/signing/keys'
import { download, verifyRelease } from './verify'
import { readPublicKey } from './keys'
import { CliError } from './http'
import { jsonDocument, runCli } from '../cli/test-run'

function key() {
  const pair = generateKeyPairSync('ed25519')
  const raw = Buffer.from(pair.publicKey.export({ format: 'jwk' }).x!, 'base64url')
  return { privateKey: pair.privateKey, publicKey: raw.toString('base64'), keyId: keyIdOf(raw) }
}
const trusted = key()
const sha256 = (text: string) => new Bun.CryptoHasher('sha256').update(text).digest('hex')
const contents: Record<string, string> = { bundleIos: 'ios', bundleAndroid: 'android', manifest: '{"version":"1.0.0"}', assetsIos: 'zip-ios', assetsAndroid: 'zip-android' }
const urls = { bundles: { ios: 'u/bundleIos', android: 'u/bundleAndroid' }, manifestUrl: 'u/manifest', assetsUrl: { ios: 'u/assetsIos', android: 'u/assetsAndroid' } }
const files = Object.fromEntries(Object.entries(contents).map(([kind, text]) => [kind, { size: text.length, sha256: sha256(text) }])) as never

function release(options: { appId?: string; version?: string; by?: typeof trusted; statement?: string; unsigned?: boolean } = {}) {
  const statement = options.statement ?? buildStatement(options.appId ?? 'shop', options.version ?? '1.0.0', Object.fromEntries(Object.entries(contents).map(([kind, text]) => [kind, sha256(text)])))
  const by = options.by ?? trusted
  return {
    appId: 'shop',
    versionId: 'v1',
    version: '1.0.0',
    ...urls,
    files,
    ...(options.unsigned ? {} : { signature: { algorithm: 'ed25519', keyId: by.keyId, statement, value: sign(null, Buffer.from(statement), by.privateKey).toString('base64') } }),
  }
}
const serve = (changed: Record<string, string> = {}) => async (url: string) => new TextEncoder().encode(changed[url.slice(2)] ?? contents[url.slice(2)]!)
const failed = async (info: ReturnType<typeof release>, download = serve(), platforms: ('ios' | 'android')[] = ['ios', 'android']) =>
  (await verifyRelease(info, trusted, 'shop', platforms, download)).filter((check) => !check.ok).map((check) => check.check)

describe('verify: what a device refuses', () => {
  test('a release signed by the trusted key passes every check', async () => {
    expect(await failed(release())).toEqual([])
  })
  test('a file changed on the CDN fails that file alone', async () => {
    expect(await failed(release(), serve({ assetsIos: 'zip-evil' }))).toEqual(['assetsIos'])
  })
  test('only the platform asked for is downloaded', async () => {
    expect(await failed(release(), serve({ assetsIos: 'zip-evil' }), ['android'])).toEqual([])
  })
  test('a statement for another app or another version fails the statement check', async () => {
    expect(await failed(release({ appId: 'other' }))).toEqual(['statement'])
    expect(await failed(release({ version: '0.9.0' }))).toEqual(['statement'])
  })
  test('a signature by another key, a changed statement, an unsigned release: the signature check', async () => {
    expect(await failed(release({ by: key() }))).toEqual(['signature'])
    const info = release()
    info.signature!.statement = info.signature!.statement.replace(sha256('ios'), sha256('evil'))
    expect(await failed(info, serve({ bundleIos: 'evil' }))).toEqual(['signature'])
    expect(await failed(release({ unsigned: true }))).toEqual(['signature'])
  })
})

describe('verify --public-key takes only a key the server would trust', () => {
  // the identity point, all zeros (small order) and a point of order 8: under each, anyone can make a signature that verifies
  const identity = new Uint8Array(32)
  identity[0] = 1
  const weak = [identity, new Uint8Array(32), Buffer.from('c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a', 'hex')]
  for (const raw of weak) {
    test(`${Buffer.from(raw).toString('hex').slice(0, 16)}…: exit 2, weak key`, () => {
      let thrown: unknown
      try {
        readPublicKey(Buffer.from(raw).toString('base64'))
      } catch (error) {
        thrown = error
      }
      expect(thrown).toBeInstanceOf(CliError)
      expect((thrown as CliError).exitCode).toBe(2)
      expect((thrown as CliError).message).toContain('The public key is a weak Ed25519 key')
    })
  }
  test('a generated key is read as it is', () => {
    expect(readPublicKey(trusted.publicKey)).toEqual({ publicKey: trusted.publicKey, keyId: trusted.keyId, fromFile: null })
  })
})

test('an --install-url that is no URL is bad usage (exit 2, USAGE), however it begins', async () => {
  for (const url of ['ftp://cdn.example.com/install.json', 'http://', 'https://cdn example.com/install.json']) {
    const run = await runCli(['verify', '--app', 'shop', '--public-key', trusted.publicKey, '--install-url', url, '--json'])
    expect(run.exitCode).toBe(2)
    expect(jsonDocument(run)).toEqual({ error: { code: 'USAGE', message: `--install-url must be an http(s) URL (got ${JSON.stringify(url)})` } })
  }
  // a link copied whole, with its token: the refusal does not repeat the query
  const run = await runCli(['verify', '--app', 'shop', '--public-key', trusted.publicKey, '--install-url', 'https://cdn example.com/install.json?token=query-secret'])
  expect(run.exitCode).toBe(2)
  expect(run.stderr).toContain('--install-url must be an http(s) URL (got "https://cdn example.com/install.json?…")')
  expect(run.stdout + run.stderr).not.toContain('query-secret')
})

test('--channel beside --install-url is bad usage (exit 2, USAGE): the install info read is the URL\'s, and the channel was ignored without a word', async () => {
  const run = await runCli(['verify', '--app', 'shop', '--public-key', trusted.publicKey, '--channel', 'beta', '--install-url', 'https://cdn.example.com/releases/shop/stable/install.json', '--json'])
  expect(run.exitCode).toBe(2)
  expect(jsonDocument(run)).toEqual({ error: { code: 'USAGE', message: expect.stringContaining('--channel and --install-url: give one') } })
})

describe('verify fetches with a limit, as the API client does (exit 3)', () => {
  const failure = (url: string, timeoutMs: number) =>
    download(new URL(url), timeoutMs).then(
      () => null,
      (error: unknown) => error as CliError,
    )
  test('a server that takes the connection and never answers, or stops in the middle of the body', async () => {
    const silent = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
    const stalled = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data: (socket) => void socket.write('HTTP/1.1 200 OK\r\ncontent-length: 1000\r\n\r\n{"appId":') } })
    try {
      for (const port of [silent.port, stalled.port]) {
        const error = await failure(`http://127.0.0.1:${port}/install.json`, 300)
        expect(error).toBeInstanceOf(CliError)
        expect(error!.exitCode).toBe(3)
        expect(error!.message).toBe(`http://127.0.0.1:${port} did not answer within 0.3 s; is it overloaded or stopped, or is a proxy holding the connection?`)
      }
    } finally {
      silent.stop(true)
      stalled.stop(true)
    }
  })
  test('the limit is on silence, not on the whole download (a large bundle over a slow link)', async () => {
    const slow = Bun.listen({
      hostname: '127.0.0.1',
      port: 0,
      socket: {
        data(socket) {
          socket.write('HTTP/1.1 200 OK\r\ncontent-length: 8\r\n\r\n')
          let sent = 0
          const timer = setInterval(() => {
            socket.write('ab')
            if (++sent === 4) {
              clearInterval(timer)
              socket.end()
            }
          }, 100)
        },
      },
    })
    try {
      const answer = await download(new URL(`http://127.0.0.1:${slow.port}/bundle`), 250)
      expect(new TextDecoder().decode(answer.bytes)).toBe('abababab')
    } finally {
      slow.stop(true)
    }
  })
  test('--install-url where nothing listens: connection refused, without the advice about miniship serve (it may be a CDN)', async () => {
    const closed = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('') })
    const port = closed.port
    closed.stop(true)
    const message = `cannot reach http://127.0.0.1:${port}: connection refused`
    for (const json of [false, true]) {
      const run = await runCli(['verify', '--app', 'shop', '--public-key', trusted.publicKey, '--install-url', `http://127.0.0.1:${port}/releases/shop/stable/install.json`, ...(json ? ['--json'] : [])])
      expect(run.exitCode).toBe(3)
      expect(run.stderr).toBe(`miniship: ${message}\n`)
      if (json) expect(jsonDocument(run)).toEqual({ error: { code: 'UNREACHABLE', message } })
    }
  })
})

test('an --install-url that answers something other than install info (a web page, other JSON) says so: exit 1, no parser or engine message', async () => {
  const answers: Record<string, Response> = {
    '/page': new Response('<!doctype html><title>CDN</title>', { headers: { 'content-type': 'text/html' } }),
    '/health': Response.json({ status: 'ok' }),
    '/partial': Response.json({ appId: 'shop', versionId: 'v1', version: '1.0.0', bundles: { ios: 'b' }, files: {} }),
  }
  const server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: (request) => answers[new URL(request.url).pathname]?.clone() ?? new Response('', { status: 404 }) })
  try {
    for (const path of Object.keys(answers)) {
      const url = `http://127.0.0.1:${server.port}${path}`
      for (const json of [false, true]) {
        const run = await runCli(['verify', '--app', 'shop', '--public-key', trusted.publicKey, '--install-url', url, ...(json ? ['--json'] : [])])
        expect(run.exitCode).toBe(1)
        expect(run.stderr).toStartWith(`miniship: ${url} did not answer with install info`)
        expect(run.stderr).not.toMatch(/JSON Parse|evaluating|undefined|MINISHIP_DEBUG/)
        if (json) expect(jsonDocument(run)).toEqual({ error: { code: 'FAILED', message: run.stderr.slice("miniship: ".length, -1) } })
      }
    }
  } finally {
    server.stop(true)
  }
})

test('a failed check with --json: one document with the error code VERIFICATION_FAILED beside the report (ok: false, every check), exit 1', async () => {
  const info = release({ by: key() })
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch: (request) => {
      const path = new URL(request.url).pathname
      if (path === '/install.json') return Response.json(info)
      const text = contents[path.slice('/u/'.length)]
      return text === undefined ? new Response('', { status: 404 }) : new Response(text)
    },
  })
  try {
    const run = await runCli(['verify', '--app', 'shop', '--public-key', trusted.publicKey, '--install-url', `http://127.0.0.1:${server.port}/install.json`, '--json'])
    expect(run.exitCode).toBe(1)
    const message = `verification failed: signature (signed by the key ${info.signature!.keyId}, not by the key you trust (${trusted.keyId}))`
    expect(run.stderr).toBe(`miniship: ${message}\n`)
    const document = jsonDocument(run)
    expect(document.error).toEqual({ code: 'VERIFICATION_FAILED', message })
    expect(document).toMatchObject({ ok: false, appId: 'shop', version: '1.0.0', versionId: 'v1', keyId: trusted.keyId })
    expect((document.checks as { check: string; ok: boolean }[]).filter((check) => !check.ok).map((check) => check.check)).toEqual(['signature'])
  } finally {
    server.stop(true)
  }
})

test('with --install-url, the report names the address it read, not a channel it never asked (it said "on stable" of a beta install.json)', async () => {
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch: (request) => {
      const path = new URL(request.url).pathname
      if (path === '/releases/shop/beta/install.json') return Response.json(release())
      const text = contents[path.slice('/releases/shop/beta/u/'.length)]
      return text === undefined ? new Response('', { status: 404 }) : new Response(text)
    },
  })
  try {
    const url = `http://127.0.0.1:${server.port}/releases/shop/beta/install.json`
    const run = await runCli(['verify', '--app', 'shop', '--public-key', trusted.publicKey, '--install-url', `${url}?token=query-secret`])
    expect(run.exitCode).toBe(0)
    expect(run.stdout.split('\n')[0]).toBe(`shop 1.0.0 (version v1) from ${url}?…:`)
    expect(run.stdout).not.toContain('stable')
    expect(run.stdout).not.toContain('query-secret')
  } finally {
    server.stop(true)
  }
})
