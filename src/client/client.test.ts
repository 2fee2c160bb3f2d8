import { afterAll, describe, expect, test } from 'bun:test'
import { mkdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { tempDir } from '../test-support'
import { jsonDocument, runCli } from '../cli/test-run'
import { buildZip } from '../test-fixtures'
import { configPath, normaliseServerUrl, readConfig, redactedServerUrl, removeConfigToken, resolveTarget, writeConfig } from './config'
import { CliError, createApiClient, parseHttpResponse } from './http'
import { browserCommand } from './login'
import { findArtifacts, multipartFromDisk } from './push'
import { publishBody, rolloutBody } from './publish'

const root = tempDir('miniship-client-')
afterAll(() => rmSync(root, { recursive: true, force: true }))

describe('server URL (decisions §12)', () => {
  const table: [string, string | null][] = [
    ['https://apps.example.com', 'https://apps.example.com/api'],
    ['https://apps.example.com/', 'https://apps.example.com/api'],
    ['https://apps.example.com/api', 'https://apps.example.com/api'],
    ['https://apps.example.com/api/', 'https://apps.example.com/api'],
    ['http://127.0.0.1:3001', 'http://127.0.0.1:3001/api'],
    ['https://example.com/miniship/api', 'https://example.com/miniship/api'],
    ['ftp://example.com', null],
    ['apps.example.com', null],
    ['https://apps.example.com/?x=1', null],
  ]
  for (const [input, expected] of table) test(`${input} → ${expected}`, () => expect(normaliseServerUrl(input)).toBe(expected))
})

describe('where server and token come from', () => {
  const saved = { server: 'https://saved.example.com/api', token: 'saved-token' }
  const table: [string, { server?: string }, Record<string, string>, { server: string; token: string | null }][] = [
    ['the saved config', {}, {}, { server: 'https://saved.example.com/api', token: 'saved-token' }],
    ['MINISHIP_SERVER over the saved one (the saved token stays with its server)', {}, { MINISHIP_SERVER: 'https://env.example.com' }, { server: 'https://env.example.com/api', token: null }],
    ['MINISHIP_TOKEN over the saved token', {}, { MINISHIP_TOKEN: 'msk_env' }, { server: 'https://saved.example.com/api', token: 'msk_env' }],
    ['--server over MINISHIP_SERVER', { server: 'https://flag.example.com' }, { MINISHIP_SERVER: 'https://env.example.com', MINISHIP_TOKEN: 'msk_env' }, { server: 'https://flag.example.com/api', token: 'msk_env' }],
    ['--server naming the saved server keeps its token', { server: 'https://saved.example.com/' }, {}, { server: 'https://saved.example.com/api', token: 'saved-token' }],
  ]
  for (const [what, flags, env, expected] of table) {
    test(what, () => {
      const target = resolveTarget(flags, env, saved)
      expect({ server: target.server, token: target.token }).toEqual(expected)
    })
  }
  test('MINISHIP_TOKEN as a shell may set it, with a trailing line break: the token alone', () => {
    expect(resolveTarget({ server: 'https://flag.example.com' }, { MINISHIP_TOKEN: 'msk_env\n' }, {}).token).toBe('msk_env')
  })
  test('MINISHIP_TOKEN with a line break inside is bad usage (exit 2), not an unreachable server, and is not repeated', async () => {
    const run = await runCli(['whoami', '--server', 'http://127.0.0.1:9', '--json'], { env: { MINISHIP_TOKEN: 'msk_secret\r\nX-Other: 1' } })
    expect(run.exitCode).toBe(2)
    expect(jsonDocument(run)).toEqual({ error: { code: 'USAGE', message: expect.stringContaining('MINISHIP_TOKEN holds a space, line break') } })
    expect(run.stdout + run.stderr).not.toContain('msk_secret')
  })
  test('MINISHIP_TOKEN set but blank is bad usage (exit 2) naming it, not dropped for the saved sign-in; empty is unset', async () => {
    const home = join(root, 'conf-blank-token')
    writeConfig({ server: 'http://127.0.0.1:9/api', token: 'msk_saved' }, join(home, 'miniship', 'config.json'))
    for (const blank of ['  ', '\n', ' \t\r\n']) {
      expect(() => resolveTarget({}, { MINISHIP_TOKEN: blank }, { server: 'https://saved.example.com/api', token: 'saved-token' })).toThrow('MINISHIP_TOKEN is set but blank')
      for (const json of [false, true]) {
        const run = await runCli(['whoami', ...(json ? ['--json'] : [])], { env: { MINISHIP_TOKEN: blank, XDG_CONFIG_HOME: home } })
        expect(run.exitCode).toBe(2)
        expect(run.stderr).toBe('miniship: MINISHIP_TOKEN is set but blank (only spaces or line breaks); set it to the token or API key, or unset it\n')
        if (json) expect(jsonDocument(run)).toEqual({ error: { code: 'USAGE', message: expect.stringContaining('MINISHIP_TOKEN is set but blank') } })
        expect(run.stdout + run.stderr).not.toContain('msk_saved')
      }
    }
    expect(resolveTarget({}, { MINISHIP_TOKEN: '' }, { server: 'https://saved.example.com/api', token: 'saved-token' }).token).toBe('saved-token')
  })
  test('no server anywhere is not signed in (exit 2, NOT_SIGNED_IN), as a server without a token is', () => {
    expect(() => resolveTarget({}, {}, {})).toThrow(CliError)
    try {
      resolveTarget({}, {}, {})
    } catch (error) {
      expect((error as CliError).exitCode).toBe(2)
      expect((error as CliError).body?.code).toBe('NOT_SIGNED_IN')
    }
  })
})

describe('a server URL with a password (or a query) in it is refused without repeating it', () => {
  for (const args of [['whoami', '--server', 'https://ci:hunter22@apps.example.com', '--json'], ['logout', '--server', 'https://ci:hunter22@apps.example.com', '--json']]) {
    test(args[0]!, async () => {
      const run = await runCli(args)
      expect(run.exitCode).toBe(2)
      expect(jsonDocument(run)).toEqual({ error: { code: 'USAGE', message: expect.stringContaining('(got "https://***@apps.example.com", which names a user or password') } })
      expect(run.stdout + run.stderr).not.toContain('hunter22')
    })
  }
  test('from MINISHIP_SERVER too', async () => {
    const run = await runCli(['apps', 'ls', '--json'], { env: { MINISHIP_SERVER: 'https://:hunter22@apps.example.com' } })
    expect(run.exitCode).toBe(2)
    expect(run.stdout + run.stderr).not.toContain('hunter22')
  })
  test('nor a query, which may hold a token (an install link copied whole)', async () => {
    const run = await runCli(['whoami', '--server', 'https://apps.example.com/api/mini-apps/access/versions/v1/install?token=eyJhunter22', '--json'])
    expect(run.exitCode).toBe(2)
    expect(jsonDocument(run)).toEqual({ error: { code: 'USAGE', message: expect.stringContaining('(got "https://apps.example.com/api/mini-apps/access/versions/v1/install?…": the server URL takes no query') } })
    expect(run.stdout + run.stderr).not.toContain('hunter22')
  })
  // each was repeated whole: it parses with the scheme "ci:", has a fragment, or does not parse at all
  const unparsed: [string, string, string][] = [
    ['a password without a scheme', 'ci:hunter22@apps.example.com', '"***@apps.example.com", which names a user or password'],
    ['a fragment', 'https://apps.example.com/#token=hunter22', '"https://apps.example.com/#…": the server URL takes no #fragment'],
    ['a query in what is no URL', 'apps.example.com/install?token=hunter22', '"apps.example.com/install?…": the server URL takes no query'],
  ]
  for (const [what, server, shown] of unparsed) {
    test(`nor ${what}, in text or in --json`, async () => {
      for (const json of [false, true]) {
        const run = await runCli(['whoami', '--server', server, ...(json ? ['--json'] : [])])
        expect(run.exitCode).toBe(2)
        expect(run.stderr).toContain(`(got ${shown}`)
        if (json) expect(jsonDocument(run)).toEqual({ error: { code: 'USAGE', message: expect.stringContaining(`(got ${shown}`) } })
        expect(run.stdout + run.stderr).not.toContain('hunter22')
      }
    })
  }
  const redacted: [string, string][] = [
    ['https://ci:hunter22@apps.example.com', 'https://***@apps.example.com'],
    ['ci:hunter22@apps.example.com', '***@apps.example.com'],
    ['https://ci:p@ss/hunter22@apps.example.com/api', 'https://***@apps.example.com/api'],
    ['https://apps.example.com/api?token=hunter22#x', 'https://apps.example.com/api?…'],
    ['https://apps.example.com/#token=hunter22?x', 'https://apps.example.com/#…'],
    ['apps.example.com?token=a@hunter22', 'apps.example.com?…'],
    ['  https://apps.example.com/api  ', 'https://apps.example.com/api'],
  ]
  for (const [given, shown] of redacted) test(`${given.trim()} is shown as ${shown}`, () => expect(redactedServerUrl(given).shown).toBe(shown))
  test('a URL without one is repeated as given', async () => {
    const run = await runCli(['whoami', '--server', 'ftp://apps.example.com', '--json'])
    expect(jsonDocument(run)).toEqual({ error: { code: 'USAGE', message: '--server must be an http(s) URL such as https://apps.example.com (got "ftp://apps.example.com")' } })
  })
})

describe('the config file', () => {
  test('lives under XDG_CONFIG_HOME, else ~/.config', () => {
    expect(configPath({ XDG_CONFIG_HOME: '/x/conf', HOME: '/home/a' })).toBe('/x/conf/miniship/config.json')
    expect(configPath({ HOME: '/home/a' })).toBe('/home/a/.config/miniship/config.json')
    expect(configPath({ XDG_CONFIG_HOME: 'relative', HOME: '/home/a' })).toBe('/home/a/.config/miniship/config.json')
  })
  test('is written 0600 and logout removes the token', () => {
    const path = join(root, 'conf', 'miniship', 'config.json')
    writeConfig({ server: 'https://a.example.com/api', token: 't', user: { id: '1', email: 'a@b.c', displayName: 'A' } }, path)
    expect(statSync(path).mode & 0o777).toBe(0o600)
    expect(readConfig(path).token).toBe('t')
    expect(removeConfigToken(path)).toBe(true)
    expect(readConfig(path)).toEqual({ server: 'https://a.example.com/api' })
    expect(removeConfigToken(path)).toBe(false)
  })
  test('logout --server naming another server keeps the saved sign-in (it removed the saved token of any server)', async () => {
    const home = join(root, 'conf-logout')
    const path = join(home, 'miniship', 'config.json')
    writeConfig({ server: 'https://a.example.com/api', token: 't' }, path)
    expect(removeConfigToken(path, 'https://b.example.com/api')).toBe(false)
    const other = await runCli(['logout', '--server', 'https://b.example.com', '--json'], { env: { XDG_CONFIG_HOME: home } })
    expect(other.exitCode).toBe(0)
    expect(jsonDocument(other)).toEqual({ signedOut: false })
    expect(readConfig(path).token).toBe('t')
    const human = await runCli(['logout', '--server', 'https://b.example.com'], { env: { XDG_CONFIG_HOME: home } })
    expect(human.stdout).toContain('the saved sign-in is for https://a.example.com/api and was kept')
    const same = await runCli(['logout', '--server', 'https://a.example.com/', '--json'], { env: { XDG_CONFIG_HOME: home } })
    expect(jsonDocument(same)).toEqual({ signedOut: true })
    expect(readConfig(path).token).toBeUndefined()
  })
})

describe('opening a browser only where there is a display', () => {
  const table: [string, NodeJS.Platform, Record<string, string>, string | null][] = [
    ['linux without DISPLAY', 'linux', {}, null],
    ['linux with an empty DISPLAY', 'linux', { DISPLAY: '' }, null],
    ['linux with DISPLAY', 'linux', { DISPLAY: ':0' }, 'xdg-open'],
    ['linux with Wayland', 'linux', { WAYLAND_DISPLAY: 'wayland-0' }, 'xdg-open'],
    ['macOS', 'darwin', {}, 'open'],
    ['CI', 'darwin', { CI: 'true' }, null],
  ]
  for (const [what, platform, env, opener] of table) test(what, () => expect(browserCommand('https://x', platform, env)?.[0] ?? null).toBe(opener))
})

describe('rollout flags: one action each (decisions §13)', () => {
  test('map to the PATCH body', () => {
    expect(rolloutBody({ pause: true })).toEqual({ paused: true })
    expect(rolloutBody({ pause: true, reason: 'crash' })).toEqual({ paused: true, reason: 'crash' })
    expect(rolloutBody({ resume: true })).toEqual({ paused: false })
    expect(rolloutBody({ revert: true })).toEqual({ rolloutPercent: 0 })
    expect(rolloutBody({ percent: '50' })).toEqual({ rolloutPercent: 50 })
  })
  const bad: [Record<string, unknown>, RegExp][] = [
    [{}, /--pause, --resume, --revert or --percent N/],
    [{ pause: true, revert: true }, /choose one of --pause, --revert/],
    [{ percent: '50', resume: true }, /choose one of --resume, --percent/],
    [{ resume: true, reason: 'x' }, /--reason goes with --pause/],
    [{ percent: '101' }, /--percent must be a whole number from 0 to 100/],
  ]
  for (const [flags, message] of bad) test(`${JSON.stringify(flags)} is bad usage`, () => expect(() => rolloutBody(flags)).toThrow(message))
})

describe('publish flags', () => {
  test('map to the publish body of PLAN.md, only what was given', () => {
    expect(publishBody({})).toEqual({})
    expect(publishBody({ channel: 'beta', notes: 'n', rollout: '25', mandatory: true, hostRange: '>=2' })).toEqual({ channel: 'beta', notes: 'n', rolloutPercent: 25, mandatory: true, hostVersionRange: '>=2' })
  })
  for (const rollout of ['0', '101', '5.5', 'x']) {
    test(`--rollout ${rollout} is bad usage`, () => expect(() => publishBody({ rollout })).toThrow(/--rollout must be a whole number from 1 to 100/))
  }
  for (const hostRange of ['banana', '>=2..0', '1.0.0 -']) {
    test(`--host-range ${hostRange} is bad usage`, () => expect(() => publishBody({ hostRange })).toThrow(/--host-range must be a semver range/))
  }
})

describe('push: artifacts', () => {
  const scratch = () => Promise.resolve(tempDir('miniship-client-zip-'))
  function folder(name: string): string {
    const dir = join(root, name)
    mkdirSync(join(dir, 'ios', 'assets', 'img'), { recursive: true })
    mkdirSync(join(dir, 'android', 'res', 'drawable-mdpi'), { recursive: true })
    writeFileSync(join(dir, 'main.ios.jsbundle'), 'ios')
    writeFileSync(join(dir, 'main.android.bundle'), 'android')
    writeFileSync(join(dir, 'app.json'), '{}')
    writeFileSync(join(dir, 'ios', 'assets', 'img', 'a.png'), 'a')
    writeFileSync(join(dir, 'android', 'res', 'drawable-mdpi', 'a.png'), 'a')
    return dir
  }

  test('zips ios/assets and android/res into the layouts the runtimes unpack', async () => {
    const artifacts = await findArtifacts(folder('layout'), scratch)
    expect(artifacts.map((a) => a.field)).toEqual(['bundleIos', 'bundleAndroid', 'manifest', 'assetsIos', 'assetsAndroid'])
    const { default: yauzl } = await import('yauzl')
    const names = async (path: string) =>
      new Promise<string[]>((resolve, reject) =>
        yauzl.open(path, { lazyEntries: false }, (error, zip) => {
          if (error || !zip) return reject(error)
          const found: string[] = []
          zip.on('entry', (entry: { fileName: string }) => found.push(entry.fileName))
          zip.on('end', () => resolve(found))
        }),
      )
    expect(await names(artifacts[3]!.path)).toEqual(['assets/img/a.png'])
    expect(await names(artifacts[4]!.path)).toEqual(['drawable-mdpi/a.png'])
  })

  test('prefers the zips when both are there', async () => {
    const dir = folder('zips')
    writeFileSync(join(dir, 'assets-ios.zip'), buildZip([{ name: 'assets/b.png', content: 'b' }]))
    const artifacts = await findArtifacts(dir, scratch)
    expect(artifacts[3]!.path).toBe(join(dir, 'assets-ios.zip'))
    expect(artifacts[3]!.zippedFrom).toBeUndefined()
  })

  test('a missing artifact names the file; a symbolic link in an asset folder is refused', async () => {
    const dir = folder('missing')
    rmSync(join(dir, 'app.json'))
    await expect(findArtifacts(dir, scratch)).rejects.toThrow('missing artifact app.json')
    rmSync(join(dir, 'main.android.bundle'))
    // a missing bundle: the react-native bundle command that writes it where push looks
    await expect(findArtifacts(dir, scratch)).rejects.toThrow(`missing artifact main.android.bundle in ${dir} (write it with: npx react-native bundle --platform android --dev false --entry-file index.js --bundle-output ${join(dir, 'main.android.bundle')} --assets-dest ${join(dir, 'android', 'res')})`)
    // React Native's own name for it: rename it
    writeFileSync(join(dir, 'index.android.bundle'), 'android')
    await expect(findArtifacts(dir, scratch)).rejects.toThrow(`missing artifact main.android.bundle in ${dir}; index.android.bundle is there: push takes the name main.android.bundle, so rename it`)
    writeFileSync(join(dir, 'main.android.bundle'), 'android')
    writeFileSync(join(dir, 'app.json'), '{}')
    rmSync(join(dir, 'android'), { recursive: true })
    await expect(findArtifacts(dir, scratch)).rejects.toThrow(`missing artifact assets-android.zip in ${dir} (or the folder android/res/ to zip; create it empty if the app has no assets)`)
    const linked = folder('linked')
    symlinkSync('/etc/passwd', join(linked, 'ios', 'assets', 'img', 'passwd'))
    await expect(findArtifacts(linked, scratch)).rejects.toThrow('is a symbolic link')
  })

  test('the streamed multipart has the announced length and parses back to the same fields and files', async () => {
    const dir = folder('multipart')
    const big = new Uint8Array(3 * 1024 * 1024 + 7)
    for (let offset = 0; offset < big.length; offset += 65536) crypto.getRandomValues(big.subarray(offset, Math.min(big.length, offset + 65536)))
    writeFileSync(join(dir, 'main.ios.jsbundle'), big)
    const artifacts = await findArtifacts(dir, scratch)
    const body = multipartFromDisk({ version: '1.0.0', changelog: 'a "quoted"\nline' }, artifacts)
    const collect = async (buffer?: Uint8Array) => {
      const parts: Uint8Array[] = []
      for await (const chunk of body.chunks(buffer)) parts.push(chunk.slice())
      return new Uint8Array(Buffer.concat(parts))
    }
    const bytes = await collect()
    expect(bytes.length).toBe(body.length)
    // with one shared buffer (how send() reads): the same bytes
    expect(await collect(new Uint8Array(64 * 1024))).toEqual(bytes)
    const form = await new Request('http://x', { method: 'POST', headers: { 'content-type': body.contentType }, body: bytes }).formData()
    expect(form.get('version')).toBe('1.0.0')
    expect(form.get('changelog')).toBe('a "quoted"\nline')
    const ios = form.get('bundleIos') as File
    expect(ios.name).toBe('main.ios.jsbundle')
    expect(new Uint8Array(await ios.arrayBuffer())).toEqual(big)
    expect((form.get('assetsAndroid') as File).name).toBe('assets-android.zip')
  })
})

describe('streamed sends (push)', () => {
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    maxRequestBodySize: 1024 * 1024 * 1024,
    async fetch(request) {
      if (request.headers.get('authorization') !== 'Bearer good') {
        return Response.json({ statusCode: 401, error: 'Unauthorized', code: 'AUTH_REQUIRED', message: 'Sign in first' }, { status: 401 })
      }
      const hasher = new Bun.CryptoHasher('sha256')
      let size = 0
      for await (const chunk of request.body!) {
        hasher.update(chunk)
        size += chunk.length
      }
      return Response.json({ size, sha256: hasher.digest('hex'), type: request.headers.get('content-type') }, { status: 201 })
    },
  })
  afterAll(() => server.stop(true))
  const data = new Uint8Array(5 * 1024 * 1024 + 3)
  for (let offset = 0; offset < data.length; offset += 65536) crypto.getRandomValues(data.subarray(offset, Math.min(data.length, offset + 65536)))
  const body = (onBytes?: (n: number) => void) => ({
    contentType: 'application/octet-stream',
    length: data.length,
    async *chunks(buffer?: Uint8Array) {
      for (let offset = 0; offset < data.length; offset += 100_000) {
        const part = data.subarray(offset, Math.min(data.length, offset + 100_000))
        if (buffer) {
          buffer.set(part)
          yield buffer.subarray(0, part.length)
        } else yield part
      }
    },
    onBytes,
  })

  test('delivers every byte in order with backpressure and answers the parsed body', async () => {
    let counted = 0
    const res = await createApiClient(`http://127.0.0.1:${server.port}/api`, 'good').send<{ size: number; sha256: string; type: string }>('POST', '/upload', body((n) => (counted += n)))
    expect(res.status).toBe(201)
    expect(res.body).toEqual({ size: data.length, sha256: new Bun.CryptoHasher('sha256').update(data).digest('hex'), type: 'application/octet-stream' })
    expect(counted).toBe(data.length)
  })

  test("a refusal is the server's message and code (exit 1), an unreachable server exit 3", async () => {
    const refused = createApiClient(`http://127.0.0.1:${server.port}/api`, 'bad').send('POST', '/upload', body())
    await expect(refused).rejects.toThrow('Sign in first (AUTH_REQUIRED, HTTP 401)')
    const probe = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response() })
    const port = probe.port
    await probe.stop(true)
    try {
      await createApiClient(`http://127.0.0.1:${port}/api`, 'good').send('POST', '/upload', body())
      throw new Error('expected a failure')
    } catch (error) {
      expect((error as CliError).exitCode).toBe(3)
    }
  })

  test('parses content-length and chunked responses', () => {
    const encode = (text: string) => new TextEncoder().encode(text)
    expect(parseHttpResponse(encode('HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\n{}trailing'))).toMatchObject({ status: 201, body: encode('{}') })
    const chunked = parseHttpResponse(encode('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{"a\r\n4\r\n":1}\r\n0\r\n\r\n'))!
    expect(new TextDecoder().decode(chunked.body)).toBe('{"a":1}')
    expect(parseHttpResponse(encode('garbage'))).toBeNull()
  })
})

describe('https uploads', () => {
  const openssl = Bun.which('openssl')
  test.skipIf(!openssl)('an untrusted certificate: exit 3, and not a byte (nor the token) reaches the server', async () => {
    const dir = tempDir('miniship-tls-')
    const made = Bun.spawnSync([openssl!, 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-days', '1', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost'], { stderr: 'ignore' })
    expect(made.exitCode).toBe(0)
    let requests = 0
    const server = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      tls: { cert: Bun.file(join(dir, 'cert.pem')), key: Bun.file(join(dir, 'key.pem')) },
      fetch() {
        requests++
        return new Response('{}')
      },
    })
    try {
      const data = new Uint8Array(1000)
      const sent = createApiClient(`https://localhost:${server.port}/api`, 'secret').send('POST', '/upload', { contentType: 'application/octet-stream', length: data.length, async *chunks() { yield data } })
      await expect(sent).rejects.toThrow(/cannot reach https:\/\/localhost:\d+\/api: .*certificate/)
      expect(requests).toBe(0)
    } finally {
      server.stop(true)
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

// a server that takes the connection and never answers, and one whose answer stalls mid-body: exit 3 naming it, not a wait for good
const silences: [string, string, (socket: { write(text: string): unknown }) => void][] = [
  ['a server that takes the connection and never answers', '/mini-apps', () => {}],
  ['a server whose answer stalls mid-body (the message does not say it never answered)', '/auth/me', (socket) => void socket.write('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{"id":')],
]
for (const [what, path, data] of silences) {
  test(`${what}: exit 3 naming it`, async () => {
    const listener = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data } })
    try {
      const server = `http://127.0.0.1:${listener.port}/api`
      const failure = await createApiClient(server, 'a-token', 'miniship-cli', 300).request('GET', path).then(
        () => null,
        (error: unknown) => error,
      )
      expect(failure).toBeInstanceOf(CliError)
      expect((failure as CliError).exitCode).toBe(3)
      expect((failure as CliError).message).toBe(`${server} did not answer within 0.3 s; is it overloaded or stopped, or is a proxy holding the connection?`)
    } finally {
      listener.stop(true)
    }
  })
}

describe('a server URL that is not the API', () => {
  // what a miniship server answers at /apps/…: the console's HTML page, 200
  const site = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('<!doctype html><title>miniship</title>', { headers: { 'content-type': 'text/html; charset=utf-8' } }) })
  afterAll(() => site.stop(true))

  test('--server https://host/apps: says which URL to use instead of "r.find is not a function"', async () => {
    const server = `http://127.0.0.1:${site.port}/apps`
    const api = createApiClient(server, 'a-token')
    const failure = await api.request('GET', '/mini-apps').then(
      () => null,
      (error: unknown) => error,
    )
    expect(failure).toBeInstanceOf(CliError)
    const message = (failure as CliError).message
    expect(message).toContain(`${server}/mini-apps answered HTTP 200 with text/html, not miniship's JSON`)
    expect(message).toContain(`ends in /api: http://127.0.0.1:${site.port}/api`)
    expect((failure as CliError).exitCode).toBe(1)
  })
})

test('a server that is not running: exit 3, UNREACHABLE, and what to check', async () => {
  const closed = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('') })
  const port = closed.port
  closed.stop(true)
  const run = await runCli(['whoami', '--json'], { env: { MINISHIP_TOKEN: 'msk_test', MINISHIP_SERVER: `http://127.0.0.1:${port}` } })
  expect(run.exitCode).toBe(3)
  expect(jsonDocument(run)).toEqual({
    error: { code: 'UNREACHABLE', message: `cannot reach http://127.0.0.1:${port}/api: connection refused (nothing listens there: check that miniship serve runs and that the address and port are right)` },
  })
})
