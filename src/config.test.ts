import { describe, expect, test } from 'bun:test'
import { resolve } from 'node:path'
import { ConfigError, loadConfig, parseDuration } from './config'

describe('configuration precedence: flags > MINISHIP_* environment > defaults', () => {
  test('defaults', () => {
    const config = loadConfig({}, {})
    expect(config.port).toBe(3001)
    expect(config.host).toBe('0.0.0.0')
    expect(config.dataDir).toBe(resolve('./data'))
    expect(config.registration).toBe('open')
    expect(config.uploadLimitBytes).toBe(512 * 1024 * 1024)
    expect(config.tokenTtlSeconds).toBe(30 * 86400)
    expect(config.rateLimit).toBe(true)
    expect(config.routeScheme).toBe('miniapp')
    expect(config.trustProxy).toBe(false)
    expect(config.publicUrl).toBeNull()
    expect(config.cdnUrl).toBeNull()
  })

  test('environment overrides defaults', () => {
    const config = loadConfig({}, { MINISHIP_PORT: '4000', MINISHIP_REGISTRATION: 'closed', MINISHIP_DATA_DIR: '/tmp/x', MINISHIP_TOKEN_TTL: '12h', MINISHIP_PUBLIC_URL: 'https://apps.example.com/api/' })
    expect(config.port).toBe(4000)
    expect(config.registration).toBe('closed')
    expect(config.dataDir).toBe('/tmp/x')
    expect(config.tokenTtlSeconds).toBe(12 * 3600)
    expect(config.publicUrl).toBe('https://apps.example.com/api')
  })

  test('flags override environment', () => {
    const config = loadConfig({ port: '5000', registration: 'open', uploadLimitMb: '2' }, { MINISHIP_PORT: '4000', MINISHIP_REGISTRATION: 'closed', MINISHIP_UPLOAD_LIMIT_MB: '7' })
    expect(config.port).toBe(5000)
    expect(config.registration).toBe('open')
    expect(config.uploadLimitBytes).toBe(2 * 1024 * 1024)
  })

  test('archive limits: defaults, environment, flags, and a bad value names its setting', () => {
    expect(loadConfig({}, {}).archiveLimits).toEqual({ maxEntries: 20_000, maxUnpackedBytes: 1024 ** 3, maxCompressionRatio: 200 })
    const fromEnv = loadConfig({}, { MINISHIP_ARCHIVE_MAX_ENTRIES: '500', MINISHIP_ARCHIVE_MAX_UNPACKED_MB: '64', MINISHIP_ARCHIVE_MAX_RATIO: '50' })
    expect(fromEnv.archiveLimits).toEqual({ maxEntries: 500, maxUnpackedBytes: 64 * 1024 * 1024, maxCompressionRatio: 50 })
    expect(loadConfig({ archiveMaxEntries: '7' }, { MINISHIP_ARCHIVE_MAX_ENTRIES: '500' }).archiveLimits.maxEntries).toBe(7)
    expect(() => loadConfig({ archiveMaxRatio: '0' }, {})).toThrow('--archive-max-ratio must be a whole number')
    expect(() => loadConfig({}, { MINISHIP_ARCHIVE_MAX_ENTRIES: 'many' })).toThrow('MINISHIP_ARCHIVE_MAX_ENTRIES must be a whole number')
  })

  test('rate limits: defaults, then the list from the environment or a flag', () => {
    expect(loadConfig({}, {}).rateLimits).toEqual({ login: 10, register: 10, cliSessionCreate: 10, cliSessionPoll: 60, cliSessionApprove: 10, memberUnknownEmail: 10, events: 300, apiKeyFailures: 10 })
    expect(loadConfig({}, { MINISHIP_RATE_LIMITS: 'login=20, cli-poll=120' }).rateLimits).toEqual({ login: 20, register: 10, cliSessionCreate: 10, cliSessionPoll: 120, cliSessionApprove: 10, memberUnknownEmail: 10, events: 300, apiKeyFailures: 10 })
    expect(loadConfig({}, { MINISHIP_RATE_LIMITS: 'cli-approve=3,member-unknown=4' }).rateLimits).toMatchObject({ cliSessionApprove: 3, memberUnknownEmail: 4 })
    expect(loadConfig({ rateLimits: 'register=3' }, { MINISHIP_RATE_LIMITS: 'login=20' }).rateLimits).toEqual({ login: 10, register: 3, cliSessionCreate: 10, cliSessionPoll: 60, cliSessionApprove: 10, memberUnknownEmail: 10, events: 300, apiKeyFailures: 10 })
  })

  test('host: IPv4 and IPv6 addresses and host names', () => {
    for (const host of ['127.0.0.1', '0.0.0.0', '255.255.255.255', '::1', '::', 'localhost', 'nas.local', 'host-1']) expect(loadConfig({ host }, {}).host).toBe(host)
  })

  test('--s3-timeout is checked with local storage too, like every other setting (not ignored until S3 is chosen)', () => {
    expect(() => loadConfig({ s3Timeout: 'x' }, {})).toThrow('--s3-timeout must be a duration between 1s and 10m such as 10s, got "x"')
    expect(() => loadConfig({}, { MINISHIP_S3_TIMEOUT: 'x' })).toThrow('MINISHIP_S3_TIMEOUT must be a duration between 1s and 10m')
    expect(() => loadConfig({ s3Timeout: '11m' }, {})).toThrow('--s3-timeout must be a duration between 1s and 10m')
    expect(loadConfig({ s3Timeout: '30s' }, {}).storage).toEqual({ kind: 'local' })
  })

  test('access log: all by default, writes or off from the environment or a flag; anything else names the setting', () => {
    expect(loadConfig({}, {}).accessLog).toBe('all')
    expect(loadConfig({}, { MINISHIP_ACCESS_LOG: 'writes' }).accessLog).toBe('writes')
    expect(loadConfig({ accessLog: 'off' }, { MINISHIP_ACCESS_LOG: 'writes' }).accessLog).toBe('off')
    expect(() => loadConfig({}, { MINISHIP_ACCESS_LOG: 'none' })).toThrow(new ConfigError('MINISHIP_ACCESS_LOG must be "all", "writes" (only requests other than GET and HEAD) or "off", got "none"'))
    expect(() => loadConfig({ accessLog: 'quiet' }, {})).toThrow('--access-log must be "all", "writes"')
  })

  test('an empty environment variable counts as unset', () => {
    expect(loadConfig({}, { MINISHIP_PORT: '' }).port).toBe(3001)
  })
})

describe('bad values stop with a message naming the setting', () => {
  const cases: [string, Parameters<typeof loadConfig>[0], Record<string, string>, RegExp][] = [
    ['port abc (flag)', { port: 'abc' }, {}, /--port must be a port number.*"abc"/],
    ['port abc (env)', {}, { MINISHIP_PORT: 'abc' }, /MINISHIP_PORT must be a port number/],
    ['port too big', { port: '70000' }, {}, /--port/],
    ['registration maybe', { registration: 'maybe' }, {}, /--registration must be "open" or "closed"/],
    ['upload limit zero', { uploadLimitMb: '0' }, {}, /--upload-limit-mb/],
    ['upload limit text', {}, { MINISHIP_UPLOAD_LIMIT_MB: 'lots' }, /MINISHIP_UPLOAD_LIMIT_MB/],
    ['upload limit past 1 TB: the range is named', { uploadLimitMb: '999999999' }, {}, /--upload-limit-mb must be a whole number of megabytes from 1 to 1048576 \(1 TB\)/],
    ['token ttl', { tokenTtl: 'forever' }, {}, /--token-ttl must be a duration/],
    ['rate limit', { rateLimit: 'sometimes' }, {}, /--rate-limit must be "on" or "off"/],
    ['public url', { publicUrl: 'apps.example.com' }, {}, /--public-url must be a full http\(s\) URL/],
    ['cdn url scheme', { cdnUrl: 'ftp://cdn.example.com' }, {}, /--cdn-url must start with http/],
    ['route scheme', { routeScheme: 'Mini App' }, {}, /--route-scheme/],
    ['rate limits name', { rateLimits: 'logins=5' }, {}, /--rate-limits must be a list such as login=10/],
    ['rate limits zero', {}, { MINISHIP_RATE_LIMITS: 'login=0' }, /MINISHIP_RATE_LIMITS must be a list/],
    ['host 999.1.1.1', { host: '999.1.1.1' }, {}, /--host must be an IP address or host name, got "999.1.1.1" \(not an IPv4 address/],
    ['host 1.2.3 (env)', {}, { MINISHIP_HOST: '1.2.3' }, /MINISHIP_HOST must be an IP address/],
    ['host with a space', { host: 'my host' }, {}, /--host must be an IP address or host name/],
  ]
  for (const [name, flags, env, message] of cases) {
    test(name, () => {
      expect(() => loadConfig(flags, env)).toThrow(ConfigError)
      expect(() => loadConfig(flags, env)).toThrow(message)
    })
  }
})

test('parseDuration', () => {
  const table: [string, number | null][] = [
    ['30d', 30 * 86400],
    ['12h', 43200],
    ['90m', 5400],
    ['45s', 45],
    ['0d', null],
    ['1w', null],
    ['d', null],
    ['-1h', null],
  ]
  for (const [text, seconds] of table) expect(parseDuration(text)).toBe(seconds)
})

// ---- object storage (issue 14)
describe('storage settings: flags > environment > storage.json > local; credentials from the environment only', () => {
  const credentials = { MINISHIP_S3_ACCESS_KEY_ID: 'AKIAEXAMPLE', MINISHIP_S3_SECRET_ACCESS_KEY: 'secret-example' }

  test('local by default, S3 from flags with the credentials of the environment', () => {
    const dataDir = `/tmp/miniship-config-${Bun.randomUUIDv7()}`
    expect(loadConfig({ dataDir }, {}).storage).toEqual({ kind: 'local' })
    expect(loadConfig({ dataDir }, {}).s3Downloads).toBe('redirect')
    expect(loadConfig({ dataDir }, {}).mirrorReleases).toBe(false)
    const config = loadConfig({ dataDir, storage: 's3', s3Bucket: 'artifacts', s3Endpoint: 'http://127.0.0.1:9000/', s3Prefix: '/team/miniship/' }, credentials)
    expect(config.storage).toEqual({ kind: 's3', bucket: 'artifacts', endpoint: 'http://127.0.0.1:9000', region: 'us-east-1', prefix: 'team/miniship', accessKeyId: 'AKIAEXAMPLE', secretAccessKey: 'secret-example', sessionToken: null, timeoutMs: 10_000 })
    expect(loadConfig({ dataDir, storage: 's3', s3Bucket: 'artifacts' }, { ...credentials, MINISHIP_S3_TIMEOUT: '45s' }).storage).toMatchObject({ timeoutMs: 45_000 })
    const aws = loadConfig({ dataDir }, { MINISHIP_STORAGE: 's3', MINISHIP_S3_BUCKET: 'artifacts', AWS_ACCESS_KEY_ID: 'A', AWS_SECRET_ACCESS_KEY: 'B', AWS_SESSION_TOKEN: 'C', MINISHIP_S3_REGION: 'eu-west-1' })
    expect(aws.storage).toMatchObject({ accessKeyId: 'A', secretAccessKey: 'B', sessionToken: 'C', region: 'eu-west-1' })
  })

  const bad: [string, Parameters<typeof loadConfig>[0], Record<string, string>, string][] = [
    ['an unknown storage', { storage: 'ftp' }, {}, '--storage must be "local" or "s3"'],
    ['no bucket', { storage: 's3' }, credentials, '--s3-bucket is required'],
    ['a bad bucket name', { storage: 's3', s3Bucket: 'Not_A_Bucket' }, credentials, '--s3-bucket must be a bucket name'],
    ['no credentials', { storage: 's3', s3Bucket: 'artifacts' }, {}, 'MINISHIP_S3_ACCESS_KEY_ID and MINISHIP_S3_SECRET_ACCESS_KEY'],
    ['a bad endpoint', { storage: 's3', s3Bucket: 'artifacts', s3Endpoint: 'ftp://x' }, credentials, '--s3-endpoint must start with http'],
    ['a bad timeout', { storage: 's3', s3Bucket: 'artifacts', s3Timeout: '10' }, credentials, '--s3-timeout must be a duration between 1s and 10m'],
    ['a timeout too long', { storage: 's3', s3Bucket: 'artifacts' }, { ...credentials, MINISHIP_S3_TIMEOUT: '2h' }, 'MINISHIP_S3_TIMEOUT must be a duration between 1s and 10m'],
    ['a bad download mode', { s3Downloads: 'teleport' }, {}, '--s3-downloads must be "redirect" or "proxy"'],
    ['the mirror without S3', { mirrorReleases: 'on', cdnUrl: 'https://cdn.example.com' }, {}, '--mirror-releases on needs S3 storage'],
    ['the mirror without a CDN URL', { mirrorReleases: 'on', storage: 's3', s3Bucket: 'artifacts' }, credentials, '--mirror-releases on needs --cdn-url'],
  ]
  for (const [name, flags, env, message] of bad) {
    test(`${name} is refused naming the setting`, () => {
      let error: unknown
      try {
        loadConfig({ dataDir: '/tmp/miniship-config-none', ...flags }, env)
      } catch (caught) {
        error = caught
      }
      expect(error).toBeInstanceOf(ConfigError)
      expect((error as Error).message).toContain(message)
      expect((error as Error).message).not.toContain('secret-example')
    })
  }

  test('storage.json of the data directory fills in what flags and environment leave out', () => {
    const { mkdtempSync, writeFileSync, rmSync } = require('node:fs') as typeof import('node:fs')
    const dataDir = mkdtempSync('/tmp/miniship-config-')
    writeFileSync(`${dataDir}/storage.json`, JSON.stringify({ storage: 's3', s3: { bucket: 'remembered', endpoint: 'http://127.0.0.1:9000', region: 'eu-west-1', prefix: 'p' } }))
    expect(loadConfig({ dataDir }, credentials).storage).toMatchObject({ kind: 's3', bucket: 'remembered', endpoint: 'http://127.0.0.1:9000', region: 'eu-west-1', prefix: 'p' })
    expect(loadConfig({ dataDir }, credentials).storage).toMatchObject({ recorded: { owner: null } })
    expect(() => loadConfig({ dataDir, storage: 'local' }, credentials)).toThrow('keeps its stored files in S3')
    writeFileSync(`${dataDir}/storage.json`, '{"storage": 42}')
    expect(() => loadConfig({ dataDir }, credentials)).toThrow('storage.json is damaged')
    rmSync(dataDir, { recursive: true, force: true })
  })

  // A flag or variable naming another place than storage.json records would serve (and collect)
  // a place where this directory's files are not: refused, naming the setting and what is recorded.
  describe('a bucket or prefix other than storage.json records is refused; a moved endpoint or another region is taken', () => {
    const { mkdtempSync, writeFileSync, rmSync } = require('node:fs') as typeof import('node:fs')
    const recorded = { storage: 's3', s3: { bucket: 'bkt2', endpoint: 'http://127.0.0.1:9000', region: 'eu-west-1', prefix: 'r3' }, owner: '0199aa00-0000-7000-8000-000000000001' }
    const withStorageFile = (content: object, run: (dataDir: string) => void) => {
      const dataDir = mkdtempSync('/tmp/miniship-config-')
      try {
        writeFileSync(`${dataDir}/storage.json`, JSON.stringify(content))
        run(dataDir)
      } finally {
        rmSync(dataDir, { recursive: true, force: true })
      }
    }
    const refusal = (run: () => unknown): ConfigError => {
      try {
        run()
      } catch (error) {
        if (error instanceof ConfigError) return error
        throw error
      }
      throw new Error('not refused')
    }

    const table: [string, Parameters<typeof loadConfig>[0], Record<string, string>, string[]][] = [
      ['another bucket (flag)', { s3Bucket: 'bkt' }, {}, ['--s3-bucket "bkt"', 'bucket "bkt2"', 'storage.json', 'miniship restore FILE --storage s3 --s3-bucket bkt']],
      ['another bucket (environment)', {}, { MINISHIP_S3_BUCKET: 'bkt' }, ['MINISHIP_S3_BUCKET "bkt"', 'bucket "bkt2"', 'leave out MINISHIP_S3_BUCKET']],
      ['another prefix', { s3Bucket: 'bkt', s3Prefix: 'zz' }, {}, ['--s3-bucket "bkt"']],
      ['another prefix only', { s3Prefix: 'zz' }, {}, ['--s3-prefix "zz"', 'key prefix "r3"', '--s3-prefix zz']],
    ]
    for (const [name, flags, env, fragments] of table) {
      test(`${name}: one line naming the setting, the recorded value and how to move`, () => {
        withStorageFile(recorded, (dataDir) => {
          const message = refusal(() => loadConfig({ dataDir, ...flags }, { ...credentials, ...env })).message
          for (const fragment of fragments) expect(message).toContain(fragment)
          expect(message).toContain('restoring a backup into a new data directory')
          expect(message).not.toContain('\n')
          expect(message).not.toContain('secret-example')
        })
      })
    }

    test('the recorded values given again (slashes and trailing / aside) are fine, and carry the owner id', () => {
      withStorageFile(recorded, (dataDir) => {
        const config = loadConfig({ dataDir, storage: 's3', s3Bucket: 'bkt2', s3Prefix: '/r3/', s3Endpoint: 'http://127.0.0.1:9000/', s3Region: 'eu-west-1' }, credentials)
        expect(config.storage).toMatchObject({ kind: 's3', bucket: 'bkt2', prefix: 'r3', recorded: { owner: recorded.owner } })
        expect(loadConfig({ dataDir }, { ...credentials, MINISHIP_S3_BUCKET: 'bkt2' }).storage).toMatchObject({ bucket: 'bkt2', recorded: { owner: recorded.owner } })
      })
    })

    test('a storage.json without a prefix or endpoint: naming one is a change too', () => {
      withStorageFile({ storage: 's3', s3: { bucket: 'bkt2', endpoint: null, region: 'us-east-1', prefix: '' } }, (dataDir) => {
        expect(refusal(() => loadConfig({ dataDir, s3Prefix: 'victim' }, credentials)).message).toContain('key prefix none')
        expect(loadConfig({ dataDir, s3Region: 'us-east-1' }, credentials).storage).toMatchObject({ bucket: 'bkt2', recorded: { owner: null } })
      })
    })

    test('another endpoint or region names the same files (a moved MinIO host, a corrected region): taken, with the owner id', () => {
      withStorageFile(recorded, (dataDir) => {
        const moved = loadConfig({ dataDir, s3Endpoint: 'http://127.0.0.1:9001' }, { ...credentials, MINISHIP_S3_REGION: 'eu-central-1' }).storage
        expect(moved).toMatchObject({ bucket: 'bkt2', prefix: 'r3', endpoint: 'http://127.0.0.1:9001', region: 'eu-central-1', recorded: { owner: recorded.owner } })
      })
    })

    test('migrate-storage may name another place (it writes a new storage.json); the config then records nothing', () => {
      withStorageFile(recorded, (dataDir) => {
        const config = loadConfig({ dataDir, storage: 's3', s3Bucket: 'bkt', s3Prefix: 'zz' }, credentials, { storageMayMove: true })
        expect(config.storage).toMatchObject({ bucket: 'bkt', prefix: 'zz', region: 'eu-west-1' })
        expect((config.storage as { recorded?: unknown }).recorded).toBeUndefined()
      })
    })

    test('restore --force replaces the directory, storage.json with it: another place, or local storage, may be named', () => {
      withStorageFile(recorded, (dataDir) => {
        expect(loadConfig({ dataDir, s3Bucket: 'bkt', s3Prefix: 'zz' }, credentials, { storageMayMove: true }).storage).toMatchObject({ bucket: 'bkt', prefix: 'zz' })
        expect(loadConfig({ dataDir, storage: 'local' }, credentials, { storageMayMove: true }).storage).toEqual({ kind: 'local' })
        expect(refusal(() => loadConfig({ dataDir, storage: 'local' }, credentials)).message).toContain('keeps its stored files in S3')
      })
    })

    test('an owner id that is not one makes storage.json damaged', () => {
      withStorageFile({ ...recorded, owner: 'has spaces and "quotes"' }, (dataDir) => {
        expect(refusal(() => loadConfig({ dataDir }, credentials)).message).toContain('storage.json is damaged')
      })
    })
  })
})

// ---- webhooks (decisions §16)
describe('--webhooks-allow-private', () => {
  const dataDir = '/tmp/miniship-config-webhooks'
  test('off by default; the bare flag or MINISHIP_WEBHOOKS_ALLOW_PRIVATE=1 turns it on; the flag wins over the environment', () => {
    expect(loadConfig({ dataDir }, {}).webhooksAllowPrivate).toBe(false)
    expect(loadConfig({ dataDir, webhooksAllowPrivate: true }, {}).webhooksAllowPrivate).toBe(true)
    expect(loadConfig({ dataDir }, { MINISHIP_WEBHOOKS_ALLOW_PRIVATE: '1' }).webhooksAllowPrivate).toBe(true)
    expect(loadConfig({ dataDir }, { MINISHIP_WEBHOOKS_ALLOW_PRIVATE: 'off' }).webhooksAllowPrivate).toBe(false)
    expect(loadConfig({ dataDir, webhooksAllowPrivate: 'off' }, { MINISHIP_WEBHOOKS_ALLOW_PRIVATE: '1' }).webhooksAllowPrivate).toBe(false)
  })
  test('another value is refused naming the setting and every value it takes', () => {
    expect(() => loadConfig({ dataDir }, { MINISHIP_WEBHOOKS_ALLOW_PRIVATE: 'yes' })).toThrow('MINISHIP_WEBHOOKS_ALLOW_PRIVATE must be "on" or "off" (or 1, true, 0, false), got "yes"')
    for (const value of ['on', '1', 'true']) expect(loadConfig({ dataDir }, { MINISHIP_WEBHOOKS_ALLOW_PRIVATE: value }).webhooksAllowPrivate).toBe(true)
    for (const value of ['off', '0', 'false']) expect(loadConfig({ dataDir }, { MINISHIP_WEBHOOKS_ALLOW_PRIVATE: value }).webhooksAllowPrivate).toBe(false)
  })
})
