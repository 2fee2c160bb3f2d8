// Configuration: flags > MINISHIP_* environment > defaults, validated once into a typed object.
import { accessSync, constants, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { isIPv4 } from 'node:net'


/** What an assets archive may hold (checked at upload, versions/archive.ts); the settings' defaults. */
export interface ArchiveLimits {
  maxEntries: number
  maxUnpackedBytes: number
  /** unpacked size ÷ packed size of one entry */
  maxCompressionRatio: number
}

export const defaultArchiveLimits: ArchiveLimits = { maxEntries: 20_000, maxUnpackedBytes: 1024 * 1024 * 1024, maxCompressionRatio: 200 }

export interface RateLimits {
  /** requests per minute per client address */
  login: number
  register: number
  cliSessionCreate: number
  cliSessionPoll: number
  /** approvals of device sign-ins, per user and per client address */
  cliSessionApprove: number
  /** members added by an email no account has (each one tells the caller so), per user and per address */
  memberUnknownEmail: number
  /** POST /api/mini-apps/access/events: devices behind one NAT share an address, so it is generous */
  events: number
  /** failed API key authentications (unknown, revoked, expired key) per client address (decisions §18) */
  apiKeyFailures: number
}

/** Which requests get a log line (`--access-log`): every one, only those that may change something (not GET or HEAD), none. */
export type AccessLogMode = 'all' | 'writes' | 'off'
export const accessLogModes: readonly AccessLogMode[] = ['all', 'writes', 'off']

export interface Config {
  dataDir: string
  port: number
  host: string
  /** public base URL including the `/api` root, without trailing slash */
  publicUrl: string | null
  /** base URL for file downloads (a CDN in front of /api), without trailing slash */
  cdnUrl: string | null
  registration: 'open' | 'closed'
  /** decisions §13: the shortest password register, create-admin, admin-made users and password changes take (6–128, default 6) */
  passwordMinLength: number
  uploadLimitBytes: number
  tokenTtlSeconds: number
  downloadTokenTtlSeconds: number
  cliSessionTtlSeconds: number
  cliIntervalSeconds: number
  rateLimit: boolean
  rateLimits: RateLimits
  routeScheme: string
  trustProxy: boolean
  /** which requests get a line on stdout: all, writes (not GET/HEAD), off; /api/metrics counts every one */
  accessLog: AccessLogMode
  /** bytes of JSON accepted by non-upload routes */
  jsonLimitBytes: number
  /** count install info, update checks, downloads and device events (off: for benchmarks only) */
  insights: boolean
  /** how often the in-memory insight counters are written to the database */
  insightsFlushSeconds: number
  /** a Bearer token that may read /api/metrics besides administrators' access tokens */
  metricsToken: string | null
  /** what an uploaded assets archive may hold */
  archiveLimits: ArchiveLimits
  // ---- object storage (issue 14)
  /** where stored files live: the data directory (default) or an S3-compatible bucket */
  storage: StorageConfig
  /** with S3 storage: answer downloads with a 302 to a presigned URL, or stream them through */
  s3Downloads: 'redirect' | 'proxy'
  /** with S3 storage: write each channel's release as static objects under releases/ (decisions §11) */
  mirrorReleases: boolean
  /** webhooks may target loopback, private and link-local addresses (decisions §16); off by default */
  webhooksAllowPrivate: boolean
}

export type StorageConfig = { kind: 'local' } | S3StorageConfig

export interface S3StorageConfig {
  kind: 's3'
  bucket: string
  /** null: AWS itself, by region */
  endpoint: string | null
  region: string
  /** '' or a key prefix without leading or trailing slash */
  prefix: string
  /** from the environment only, never a flag; never logged */
  accessKeyId: string
  secretAccessKey: string
  sessionToken: string | null
  /**
   * How long one call to the bucket may go without an answer or progress (milliseconds; absent: the
   * default, `defaultS3TimeoutMs`): a metadata call's whole time, a transfer's silence.
   */
  timeoutMs?: number
  /**
   * Set when the data directory's storage.json records this very location: the installation id it
   * names (the owner of the prefix, see the bucket's miniship-owner.json), or null for a
   * storage.json written before owner ids existed. Absent: this data directory has not used it yet.
   */
  recorded?: { owner: string | null }
}

/** A bad configuration value: the CLI prints the message as one line and exits 2. */
/**
 * A setting, or the data directory, that the operator must change before running again (exit 2);
 * `code` names the situation in --json's error document (USAGE when nothing more specific fits).
 */
export class ConfigError extends Error {
  constructor(
    message: string,
    readonly code: string = 'USAGE',
  ) {
    super(message)
  }
}

/** What the command line gave; every field optional, as commander hands them over. */
export interface ConfigFlags {
  dataDir?: string
  port?: string
  host?: string
  publicUrl?: string
  cdnUrl?: string
  registration?: string
  passwordMinLength?: string
  uploadLimitMb?: string
  tokenTtl?: string
  rateLimit?: string
  rateLimits?: string
  routeScheme?: string
  trustProxy?: string
  accessLog?: string
  insights?: string
  insightsFlush?: string
  metricsToken?: string
  storage?: string
  s3Bucket?: string
  s3Endpoint?: string
  s3Region?: string
  s3Prefix?: string
  s3Downloads?: string
  s3Timeout?: string
  mirrorReleases?: string
  /** a bare `--webhooks-allow-private` arrives as true */
  webhooksAllowPrivate?: string | boolean
  archiveMaxEntries?: string
  archiveMaxUnpackedMb?: string
  archiveMaxRatio?: string
}

const settings = {
  dataDir: { env: 'MINISHIP_DATA_DIR', flag: '--data-dir', fallback: './data' },
  port: { env: 'MINISHIP_PORT', flag: '--port', fallback: '3001' },
  host: { env: 'MINISHIP_HOST', flag: '--host', fallback: '0.0.0.0' },
  publicUrl: { env: 'MINISHIP_PUBLIC_URL', flag: '--public-url', fallback: '' },
  cdnUrl: { env: 'MINISHIP_CDN_URL', flag: '--cdn-url', fallback: '' },
  registration: { env: 'MINISHIP_REGISTRATION', flag: '--registration', fallback: 'open' },
  passwordMinLength: { env: 'MINISHIP_PASSWORD_MIN_LENGTH', flag: '--password-min-length', fallback: '6' },
  uploadLimitMb: { env: 'MINISHIP_UPLOAD_LIMIT_MB', flag: '--upload-limit-mb', fallback: '512' },
  tokenTtl: { env: 'MINISHIP_TOKEN_TTL', flag: '--token-ttl', fallback: '30d' },
  rateLimit: { env: 'MINISHIP_RATE_LIMIT', flag: '--rate-limit', fallback: 'on' },
  rateLimits: { env: 'MINISHIP_RATE_LIMITS', flag: '--rate-limits', fallback: '' },
  routeScheme: { env: 'MINISHIP_ROUTE_SCHEME', flag: '--route-scheme', fallback: 'miniapp' },
  trustProxy: { env: 'MINISHIP_TRUST_PROXY', flag: '--trust-proxy', fallback: 'off' },
  accessLog: { env: 'MINISHIP_ACCESS_LOG', flag: '--access-log', fallback: 'all' },
  insights: { env: 'MINISHIP_INSIGHTS', flag: '--insights', fallback: 'on' },
  insightsFlush: { env: 'MINISHIP_INSIGHTS_FLUSH', flag: '--insights-flush', fallback: '5s' },
  metricsToken: { env: 'MINISHIP_METRICS_TOKEN', flag: '--metrics-token', fallback: '' },
  // object storage (issue 14): empty fallbacks are filled from the data directory's storage.json
  storage: { env: 'MINISHIP_STORAGE', flag: '--storage', fallback: '' },
  s3Bucket: { env: 'MINISHIP_S3_BUCKET', flag: '--s3-bucket', fallback: '' },
  s3Endpoint: { env: 'MINISHIP_S3_ENDPOINT', flag: '--s3-endpoint', fallback: '' },
  s3Region: { env: 'MINISHIP_S3_REGION', flag: '--s3-region', fallback: '' },
  s3Prefix: { env: 'MINISHIP_S3_PREFIX', flag: '--s3-prefix', fallback: '' },
  s3Downloads: { env: 'MINISHIP_S3_DOWNLOADS', flag: '--s3-downloads', fallback: 'redirect' },
  s3Timeout: { env: 'MINISHIP_S3_TIMEOUT', flag: '--s3-timeout', fallback: '10s' },
  mirrorReleases: { env: 'MINISHIP_MIRROR_RELEASES', flag: '--mirror-releases', fallback: 'off' },
  webhooksAllowPrivate: { env: 'MINISHIP_WEBHOOKS_ALLOW_PRIVATE', flag: '--webhooks-allow-private', fallback: 'off' },
  archiveMaxEntries: { env: 'MINISHIP_ARCHIVE_MAX_ENTRIES', flag: '--archive-max-entries', fallback: String(defaultArchiveLimits.maxEntries) },
  archiveMaxUnpackedMb: { env: 'MINISHIP_ARCHIVE_MAX_UNPACKED_MB', flag: '--archive-max-unpacked-mb', fallback: String(defaultArchiveLimits.maxUnpackedBytes / 1024 / 1024) },
  archiveMaxRatio: { env: 'MINISHIP_ARCHIVE_MAX_RATIO', flag: '--archive-max-ratio', fallback: String(defaultArchiveLimits.maxCompressionRatio) },
} as const satisfies Record<keyof ConfigFlags, { env: string; flag: string; fallback: string }>

/** Seconds in a duration such as `30d`, `12h`, `15m`, `45s`; null when it is not one. */
export function parseDuration(text: string): number | null {
  const match = /^(\d{1,6})([smhd])$/.exec(text.trim())
  if (!match) return null
  const unit = { s: 1, m: 60, h: 3600, d: 86400 }[match[2] as 's' | 'm' | 'h' | 'd']
  const seconds = Number(match[1]) * unit
  return seconds > 0 ? seconds : null
}

export const defaultRateLimits: RateLimits = { login: 10, register: 10, cliSessionCreate: 10, cliSessionPoll: 60, cliSessionApprove: 10, memberUnknownEmail: 10, events: 300, apiKeyFailures: 10 }
const rateLimitNames: Record<string, keyof RateLimits> = {
  login: 'login',
  register: 'register',
  'cli-create': 'cliSessionCreate',
  'cli-poll': 'cliSessionPoll',
  'cli-approve': 'cliSessionApprove',
  'member-unknown': 'memberUnknownEmail',
  events: 'events',
  'api-key': 'apiKeyFailures',
}

/** "login=20,cli-poll=120" over the defaults; the names are login, register, cli-create, cli-poll, cli-approve, member-unknown, events, api-key. */
export function parseRateLimits(name: string, value: string): RateLimits {
  const limits = { ...defaultRateLimits }
  if (value.trim() === '') return limits
  for (const part of value.split(',')) {
    const match = /^\s*([a-z-]+)\s*=\s*(\d{1,6})\s*$/.exec(part)
    const key = match && rateLimitNames[match[1]!]
    if (!match || !key || Number(match[2]) < 1) {
      throw new ConfigError(`${name} must be a list such as login=10,register=10,cli-create=10,cli-poll=60,cli-approve=10,member-unknown=10,events=300,api-key=10 (requests per minute per client address, at least 1), got "${value}"`)
    }
    limits[key] = Number(match[2])
  }
  return limits
}

function wholeNumber(name: string, value: string, what: string): number {
  const number = Number(value)
  if (!/^\d{1,9}$/.test(value) || number < 1) throw new ConfigError(`${name} must be a whole number of ${what} of at least 1, got "${value}"`)
  return number
}

function onOff(name: string, value: string): boolean {
  if (value === 'on' || value === 'true' || value === '1') return true
  if (value === 'off' || value === 'false' || value === '0') return false
  throw new ConfigError(`${name} must be "on" or "off" (or 1, true, 0, false), got "${value}"`)
}

function baseUrl(name: string, value: string, example = 'https://apps.example.com/api'): string | null {
  if (value === '') return null
  let url: URL
  try {
    url = new URL(value)
  } catch {
    throw new ConfigError(`${name} must be a full http(s) URL such as ${example}, got "${value}"`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ConfigError(`${name} must start with http:// or https://, got "${value}"`)
  }
  if (url.search || url.hash) throw new ConfigError(`${name} must not carry a query or fragment, got "${value}"`)
  return url.toString().replace(/\/+$/, '')
}

export interface LoadOptions {
  /**
   * The command writes a new storage.json (migrate-storage, restore): the storage settings may
   * name another place than the one recorded, or local storage. Everywhere else a different bucket, prefix, endpoint or region is
   * refused, as the stored files are where storage.json says.
   */
  storageMayMove?: boolean
}

/**
 * Builds the configuration from flags, then `env`, then defaults. Throws ConfigError naming the
 * setting (flag and variable) on the first bad value.
 */
export function loadConfig(flags: ConfigFlags = {}, env: Record<string, string | undefined> = Bun.env, options: LoadOptions = {}): Config {
  const pick = (key: keyof typeof settings): { value: string; name: string } => {
    const setting = settings[key]
    const fromFlag = flags[key]
    if (fromFlag !== undefined) return { value: String(fromFlag), name: setting.flag }
    const fromEnv = env[setting.env]
    if (fromEnv !== undefined && fromEnv !== '') return { value: fromEnv, name: setting.env }
    return { value: setting.fallback, name: setting.flag }
  }

  const port = pick('port')
  if (!/^\d{1,5}$/.test(port.value) || Number(port.value) > 65535) {
    throw new ConfigError(`${port.name} must be a port number between 0 and 65535, got "${port.value}"`)
  }

  const host = pick('host')
  if (!/^[A-Za-z0-9.:\-[\]]+$/.test(host.value)) {
    throw new ConfigError(`${host.name} must be an IP address or host name, got "${host.value}"`)
  }
  // No host name is all digits and dots, so such a value is an IPv4 address or a mistake. Left to
  // the resolver, a mistake like 999.1.1.1 fails differently from one machine to the next.
  if (/^[\d.]+$/.test(host.value) && !isIPv4(host.value)) {
    throw new ConfigError(`${host.name} must be an IP address or host name, got "${host.value}" (not an IPv4 address: four numbers from 0 to 255)`)
  }

  const registration = pick('registration')
  if (registration.value !== 'open' && registration.value !== 'closed') {
    throw new ConfigError(`${registration.name} must be "open" or "closed", got "${registration.value}"`)
  }

  const passwordMin = pick('passwordMinLength')
  const passwordMinLength = Number(passwordMin.value)
  if (!/^\d{1,3}$/.test(passwordMin.value) || passwordMinLength < 6 || passwordMinLength > 128) {
    throw new ConfigError(`${passwordMin.name} must be a whole number of characters from 6 to 128 (8 or more is recommended, NIST SP 800-63B), got "${passwordMin.value}"`)
  }
  const uploadLimit = pick('uploadLimitMb')
  const uploadLimitMb = Number(uploadLimit.value)
  if (!/^\d+$/.test(uploadLimit.value) || uploadLimitMb < 1 || uploadLimitMb > 1024 * 1024) {
    throw new ConfigError(`${uploadLimit.name} must be a whole number of megabytes from 1 to 1048576 (1 TB), got "${uploadLimit.value}"`)
  }

  const tokenTtl = pick('tokenTtl')
  const tokenTtlSeconds = parseDuration(tokenTtl.value)
  if (tokenTtlSeconds === null) {
    throw new ConfigError(`${tokenTtl.name} must be a duration such as 30d, 12h or 90m, got "${tokenTtl.value}"`)
  }

  const routeScheme = pick('routeScheme')
  if (!/^[a-z][a-z0-9+.-]{0,31}$/.test(routeScheme.value)) {
    throw new ConfigError(`${routeScheme.name} must be a URL scheme such as "miniapp" (lower-case letters, digits, + . -), got "${routeScheme.value}"`)
  }

  const dataDir = pick('dataDir')
  if (dataDir.value.trim() === '') throw new ConfigError(`${dataDir.name} must not be empty`)

  const rateLimit = pick('rateLimit')
  const rateLimits = pick('rateLimits')
  const trustProxy = pick('trustProxy')
  const publicUrl = pick('publicUrl')
  const cdnUrl = pick('cdnUrl')
  const insights = pick('insights')
  const accessLog = pick('accessLog')
  if (!(accessLogModes as readonly string[]).includes(accessLog.value)) {
    throw new ConfigError(`${accessLog.name} must be "all", "writes" (only requests other than GET and HEAD) or "off", got "${accessLog.value}"`)
  }

  const insightsFlush = pick('insightsFlush')
  const insightsFlushSeconds = parseDuration(insightsFlush.value)
  if (insightsFlushSeconds === null || insightsFlushSeconds > 3600) {
    throw new ConfigError(`${insightsFlush.name} must be a duration between 1s and 1h such as 5s, got "${insightsFlush.value}"`)
  }

  const metricsToken = pick('metricsToken')
  if (metricsToken.value !== '' && !/^[\x21-\x7e]{16,256}$/.test(metricsToken.value)) {
    throw new ConfigError(`${metricsToken.name} must be 16 to 256 printable characters without spaces (a scraper sends it as a Bearer token)`)
  }
  // checked whatever the storage, like every other setting: a bad value is never silently ignored
  const s3Timeout = pick('s3Timeout')
  const s3TimeoutSeconds = parseDuration(s3Timeout.value)
  if (s3TimeoutSeconds === null || s3TimeoutSeconds > 600) throw new ConfigError(`${s3Timeout.name} must be a duration between 1s and 10m such as 10s, got "${s3Timeout.value}"`)
  const resolvedDataDir = resolve(dataDir.value)
  const storage = storageConfig(pick, env, readStorageFile(resolvedDataDir), options.storageMayMove === true, s3TimeoutSeconds)
  const s3Downloads = pick('s3Downloads')
  if (s3Downloads.value !== 'redirect' && s3Downloads.value !== 'proxy') {
    throw new ConfigError(`${s3Downloads.name} must be "redirect" or "proxy", got "${s3Downloads.value}"`)
  }
  const mirrorReleases = pick('mirrorReleases')
  const mirror = onOff(mirrorReleases.name, mirrorReleases.value)
  if (mirror && storage.kind !== 's3') throw new ConfigError(`${mirrorReleases.name} on needs S3 storage (--storage s3): the mirror writes static objects to the bucket`)
  if (mirror && cdnUrl.value === '') throw new ConfigError(`${mirrorReleases.name} on needs --cdn-url (or MINISHIP_CDN_URL): install.json names its files on the CDN in front of the bucket`)
  const webhooksAllowPrivate = pick('webhooksAllowPrivate')
  const archiveMaxEntries = pick('archiveMaxEntries')
  const archiveMaxUnpackedMb = pick('archiveMaxUnpackedMb')
  const archiveMaxRatio = pick('archiveMaxRatio')

  return {
    dataDir: resolvedDataDir,
    port: Number(port.value),
    host: host.value,
    publicUrl: baseUrl(publicUrl.name, publicUrl.value),
    cdnUrl: baseUrl(cdnUrl.name, cdnUrl.value, 'https://cdn.example.com'),
    registration: registration.value,
    passwordMinLength,
    uploadLimitBytes: uploadLimitMb * 1024 * 1024,
    tokenTtlSeconds,
    downloadTokenTtlSeconds: 7 * 86400,
    cliSessionTtlSeconds: 600,
    cliIntervalSeconds: 5,
    rateLimit: onOff(rateLimit.name, rateLimit.value),
    rateLimits: parseRateLimits(rateLimits.name, rateLimits.value),
    routeScheme: routeScheme.value,
    trustProxy: onOff(trustProxy.name, trustProxy.value),
    accessLog: accessLog.value as AccessLogMode,
    jsonLimitBytes: 1024 * 1024,
    insights: onOff(insights.name, insights.value),
    insightsFlushSeconds,
    metricsToken: metricsToken.value === '' ? null : metricsToken.value,
    archiveLimits: {
      maxEntries: wholeNumber(archiveMaxEntries.name, archiveMaxEntries.value, 'entries'),
      maxUnpackedBytes: wholeNumber(archiveMaxUnpackedMb.name, archiveMaxUnpackedMb.value, 'megabytes') * 1024 * 1024,
      maxCompressionRatio: wholeNumber(archiveMaxRatio.name, archiveMaxRatio.value, 'times'),
    },
    storage,
    s3Downloads: s3Downloads.value,
    mirrorReleases: mirror,
    webhooksAllowPrivate: onOff(webhooksAllowPrivate.name, webhooksAllowPrivate.value),
  }
}

// ---- object storage (issue 14) ----------------------------------------------------------------

/** The data directory's record of where its stored files live (written by serve and migrate-storage). */
export const storageFileName = 'storage.json'

/** What storage.json holds: never credentials. */
export interface StorageFile {
  storage: 'local' | 's3'
  s3?: { bucket: string; endpoint: string | null; region: string; prefix: string }
  /**
   * The installation id of this data directory, also written to the bucket prefix's owner marker
   * (miniship-owner.json) so that no other data directory adopts (and garbage-collects) its files.
   * Absent in storage.json written before owner markers; serve then adopts the prefix.
   */
  owner?: string
}

/** What an installation id looks like (a UUID as made here; kept loose for hand-edited files). */
export const ownerIdPattern = /^[A-Za-z0-9._-]{1,100}$/

/** storage.json of `dataDir`, or null when there is none (a local-storage directory). */
export function readStorageFile(dataDir: string): StorageFile | null {
  let text: string
  try {
    text = readFileSync(join(dataDir, storageFileName), 'utf8')
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ENOENT' || code === 'ENOTDIR') return null
    if (code === 'EACCES' || code === 'EPERM') {
      // run as the wrong user, the directory itself is what cannot be read: naming storage.json (which a
      // local data directory does not even have) sent operators looking for the wrong file
      let directoryReadable = true
      try {
        accessSync(dataDir, constants.R_OK | constants.X_OK)
      } catch {
        directoryReadable = false
      }
      if (!directoryReadable) throw new ConfigError(`data directory ${dataDir} cannot be read by this user (permission denied): run miniship as the user that owns it`, 'DATA_DIR_UNREADABLE')
      throw new ConfigError(`${join(dataDir, storageFileName)} cannot be read by this user (permission denied): run miniship as the user that owns the data directory`, 'DATA_DIR_UNREADABLE')
    }
    throw new ConfigError(`${join(dataDir, storageFileName)} cannot be read: ${(error as Error).message}`)
  }
  try {
    const parsed = JSON.parse(text) as StorageFile
    const ownerValid = parsed.owner === undefined || (typeof parsed.owner === 'string' && ownerIdPattern.test(parsed.owner))
    if (ownerValid && (parsed.storage === 'local' || (parsed.storage === 's3' && typeof parsed.s3?.bucket === 'string'))) return parsed
  } catch {
    // reported below
  }
  throw new ConfigError(`${join(dataDir, storageFileName)} is damaged; it should read {"storage":"local"} or {"storage":"s3","s3":{"bucket":…}}`)
}

type SettingPicker = (key: keyof typeof settings) => { value: string; name: string }

/** One call to the bucket that neither answers nor moves bytes for this long counts as storage down (issue 29). */
export const defaultS3TimeoutMs = 10_000

/**
 * Flags, then environment, then the data directory's storage.json, then local. Credentials come
 * only from the environment (MINISHIP_S3_* first, then the standard AWS_* names): a flag would
 * show in `ps` and in shell history.
 */
function storageConfig(pick: SettingPicker, env: Record<string, string | undefined>, persisted: StorageFile | null, mayMove: boolean, timeoutSeconds: number): StorageConfig {
  const kind = pick('storage')
  const chosen = kind.value === '' ? (persisted?.storage ?? 'local') : kind.value
  if (chosen !== 'local' && chosen !== 's3') throw new ConfigError(`${kind.name} must be "local" or "s3", got "${kind.value}"`)
  if (chosen === 'local') {
    if (persisted?.storage === 's3' && !mayMove) {
      throw new ConfigError(`${kind.name} local: this data directory keeps its stored files in S3 (bucket ${persisted.s3!.bucket}, see storage.json); leave out ${kind.name}`)
    }
    return { kind: 'local' }
  }
  const fromFile = persisted?.storage === 's3' ? persisted.s3! : null
  const setting = (key: 's3Bucket' | 's3Endpoint' | 's3Region' | 's3Prefix', stored: string | null | undefined) => {
    const picked = pick(key)
    return picked.value === '' && stored ? { value: stored, name: picked.name } : picked
  }
  const bucket = setting('s3Bucket', fromFile?.bucket)
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket.value)) {
    throw new ConfigError(bucket.value === '' ? `${bucket.name} is required with S3 storage` : `${bucket.name} must be a bucket name (3–63 lower-case letters, digits, dots, hyphens), got "${bucket.value}"`)
  }
  const endpoint = setting('s3Endpoint', fromFile?.endpoint)
  const region = setting('s3Region', fromFile?.region)
  if (region.value !== '' && !/^[a-z0-9-]{2,32}$/.test(region.value)) throw new ConfigError(`${region.name} must be a region name such as us-east-1, got "${region.value}"`)
  const prefix = setting('s3Prefix', fromFile?.prefix)
  if (prefix.value !== '' && !/^[A-Za-z0-9!_.*'()-]+(\/[A-Za-z0-9!_.*'()-]+)*\/?$/.test(prefix.value.replace(/^\/+/, ''))) {
    throw new ConfigError(`${prefix.name} must be a key prefix such as miniship or team/miniship, got "${prefix.value}"`)
  }
  const location = { bucket: bucket.value, endpoint: baseUrl(endpoint.name, endpoint.value, 'https://s3.eu-central-1.amazonaws.com or http://127.0.0.1:9000'), region: region.value || 'us-east-1', prefix: prefix.value.replace(/^\/+|\/+$/g, '') }
  if (fromFile && !mayMove) refuseAnotherLocation(fromFile, { bucket, prefix }, location)
  const accessKeyId = env.MINISHIP_S3_ACCESS_KEY_ID || env.AWS_ACCESS_KEY_ID || ''
  const secretAccessKey = env.MINISHIP_S3_SECRET_ACCESS_KEY || env.AWS_SECRET_ACCESS_KEY || ''
  if (accessKeyId === '' || secretAccessKey === '') {
    throw new ConfigError('S3 storage needs credentials in the environment: MINISHIP_S3_ACCESS_KEY_ID and MINISHIP_S3_SECRET_ACCESS_KEY (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)')
  }
  const recorded = fromFile && sameLocation(fromFile, location) ? { recorded: { owner: persisted!.owner ?? null } } : {}
  return {
    kind: 's3',
    ...location,
    accessKeyId,
    secretAccessKey,
    sessionToken: env.MINISHIP_S3_SESSION_TOKEN || env.AWS_SESSION_TOKEN || null,
    timeoutMs: timeoutSeconds * 1000,
    ...recorded,
  }
}

type S3Location = NonNullable<StorageFile['s3']>

/** storage.json's location, with the defaults a missing field stood for. */
function recordedLocation(recorded: S3Location): S3Location {
  return { bucket: recorded.bucket, endpoint: recorded.endpoint ?? null, region: recorded.region || 'us-east-1', prefix: (recorded.prefix ?? '').replace(/^\/+|\/+$/g, '') }
}

/** Whether the files are where storage.json says: the bucket and prefix (a moved endpoint or a corrected region names the same files). */
function sameLocation(recorded: S3Location, location: S3Location): boolean {
  const stored = recordedLocation(recorded)
  return stored.bucket === location.bucket && stored.prefix === location.prefix
}

/**
 * A flag or variable naming another bucket or prefix than storage.json records would serve (and
 * garbage-collect) a place where this directory's files are not: refused, naming the setting,
 * what is recorded, and how the files move. The endpoint and the region may change (a moved MinIO
 * host, a corrected region name the same files); serve records the new ones.
 */
function refuseAnotherLocation(recorded: S3Location, picked: Record<'bucket' | 'prefix', { value: string; name: string }>, location: S3Location): void {
  const stored = recordedLocation(recorded)
  const labels = { bucket: ['bucket', '', 's3Bucket'], prefix: ['key prefix', 'none', 's3Prefix'] } as const
  for (const key of ['bucket', 'prefix'] as const) {
    if (picked[key].value === '' || stored[key] === location[key]) continue
    const [label, empty, setting] = labels[key]
    const flag = settings[setting].flag
    const shown = stored[key] === '' ? empty : `"${stored[key]}"`
    throw new ConfigError(
      `${picked[key].name} "${picked[key].value}": this data directory keeps its stored files at ${label} ${shown} (recorded in storage.json); leave out ${picked[key].name}, or move them by restoring a backup into a new data directory (miniship backup, then miniship restore FILE --storage s3 ${flag} ${picked[key].value}); migrate-storage moves only local files`,
    )
  }
}
