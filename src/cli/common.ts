// What every subcommand shares: the configuration flags, and turning a bad value into one line and exit 2.
import { Command, Option } from 'commander'
import { ConfigError, loadConfig, type Config, type ConfigFlags, type LoadOptions } from '../config'
import { NewerSchemaError } from '../db/open'
import { StorageUnreachableError, storageCallsAbandoned } from '../storage/s3'
import { withJsonUsageErrors, writeJsonError } from './json-output'
import { withRequiredOptionsMarked } from './help'

/** `--data-dir` is on every subcommand (whose --help marks required options); the server flags only on `serve`. */
export function withDataDirOption(command: Command): Command {
  return withRequiredOptionsMarked(command).option('--data-dir <dir>', 'data directory (env MINISHIP_DATA_DIR, default ./data)')
}

export function withServerOptions(command: Command): Command {
  return withStorageOptions(withDataDirOption(command))
    .option('--port <n>', 'port to listen on (env MINISHIP_PORT, default 3001)')
    .option('--host <addr>', 'address to bind (env MINISHIP_HOST, default 0.0.0.0)')
    .option('--public-url <url>', 'public base URL including /api, e.g. https://apps.example.com/api (env MINISHIP_PUBLIC_URL)')
    .option('--cdn-url <url>', 'base URL of a CDN serving the file downloads (env MINISHIP_CDN_URL)')
    .addOption(new Option('--registration <mode>', 'whether anyone may register (env MINISHIP_REGISTRATION, default open)').choices(['open', 'closed']))
    .option('--password-min-length <n>', 'shortest password accepted when one is set, in characters (an emoji is one), 6-128 (env MINISHIP_PASSWORD_MIN_LENGTH, default 6; 8 or more recommended)')
    .option('--upload-limit-mb <n>', 'largest upload request in MB (env MINISHIP_UPLOAD_LIMIT_MB, default 512)')
    .option('--token-ttl <duration>', 'access token lifetime such as 30d or 12h (env MINISHIP_TOKEN_TTL, default 30d)')
    .addOption(new Option('--rate-limit <mode>', 'rate limits per client address on login, register, command-line sign-ins (create, poll, approve), members added by an unknown email, device events and failed API keys, and per webhook on test deliveries; --rate-limits sets the per-address ones (env MINISHIP_RATE_LIMIT, default on)').choices(['on', 'off']))
    .option('--rate-limits <list>', 'requests per minute per client address (env MINISHIP_RATE_LIMITS, default login=10,register=10,cli-create=10,cli-poll=60,cli-approve=10,member-unknown=10,events=300,api-key=10 failed keys)')
    .option('--route-scheme <name>', 'scheme of routeUrl in install info (env MINISHIP_ROUTE_SCHEME, default miniapp)')
    .option('--archive-max-entries <n>', 'most entries in an uploaded assets archive (env MINISHIP_ARCHIVE_MAX_ENTRIES, default 20000)')
    .option('--archive-max-unpacked-mb <n>', 'most MB an uploaded assets archive unpacks to (env MINISHIP_ARCHIVE_MAX_UNPACKED_MB, default 1024)')
    .option('--archive-max-ratio <n>', 'largest unpacked:packed ratio of one archive entry of 1 MB or more (env MINISHIP_ARCHIVE_MAX_RATIO, default 200)')
    .addOption(new Option('--trust-proxy <mode>', 'trust X-Forwarded-* headers from a reverse proxy (env MINISHIP_TRUST_PROXY, default off)').choices(['on', 'off']))
    .addOption(new Option('--access-log <mode>', 'request lines on stdout: all, writes (not GET/HEAD) or off; /api/metrics counts every request (env MINISHIP_ACCESS_LOG, default all)').choices(['all', 'writes', 'off']))
    .addOption(new Option('--insights <mode>', 'count installs, update checks, downloads and device events (env MINISHIP_INSIGHTS, default on)').choices(['on', 'off']))
    .option('--insights-flush <duration>', 'how often insight counters are written to the database, e.g. 5s (env MINISHIP_INSIGHTS_FLUSH, default 5s)')
    .option('--metrics-token <token>', 'Bearer token a Prometheus scraper may use for /api/metrics (env MINISHIP_METRICS_TOKEN)')
    .addOption(new Option('--s3-downloads <mode>', 'with S3 storage: 302 to a presigned URL, or stream through (env MINISHIP_S3_DOWNLOADS, default redirect)').choices(['redirect', 'proxy']))
    .addOption(new Option('--mirror-releases <mode>', 'with S3 storage: write each release to releases/ in the bucket for a CDN; off removes releases/ at start (env MINISHIP_MIRROR_RELEASES, default off)').choices(['on', 'off']))
    .option('--webhooks-allow-private', 'let webhooks target loopback, private and link-local addresses, e.g. a receiver on this machine (env MINISHIP_WEBHOOKS_ALLOW_PRIVATE=1; default off)')
}

// ---- object storage (issue 14) ----------------------------------------------------------------

/**
 * Where stored files live: on serve, doctor, backup, restore and migrate-storage. A data directory
 * remembers its choice in storage.json, so these are needed only the first time (another bucket or
 * prefix than the recorded one is refused, except by migrate-storage and restore); credentials come
 * from the environment only.
 */
export function withStorageOptions(command: Command): Command {
  return command
    .addOption(new Option('--storage <kind>', 'where stored files live (env MINISHIP_STORAGE, default: as recorded in the data directory, else local)').choices(['local', 's3']))
    .option('--s3-bucket <name>', 'bucket for S3 storage (env MINISHIP_S3_BUCKET)')
    .option('--s3-endpoint <url>', 'S3-compatible endpoint, e.g. https://<account>.r2.cloudflarestorage.com (env MINISHIP_S3_ENDPOINT; default AWS)')
    .option('--s3-region <region>', 'bucket region (env MINISHIP_S3_REGION, default us-east-1)')
    .option('--s3-prefix <prefix>', 'key prefix inside the bucket (env MINISHIP_S3_PREFIX, default none)')
    .option('--s3-timeout <duration>', 'how long one call to the bucket may go without an answer or progress before it counts as down, e.g. 10s (env MINISHIP_S3_TIMEOUT, default 10s)')
}

/** `--json` on an operator's command: its result, or its failure, as one JSON document on stdout. */
export function withJsonOption(command: Command): Command {
  return withJsonUsageErrors(command.option('--json', 'print one JSON document on stdout instead of text (the result, or {"error": {"code", "message"}})'))
}

/**
 * Whether this process's command runs with --json, so that `fail` prints the error document too.
 * Set once by runAction: one command runs per process.
 */
let failuresAsJson = false

/**
 * Prints a problem as one line on stderr (and with --json the error document on stdout) and exits,
 * 2 by default (the exit code of a bad invocation). `code` names it for scripts; without it USAGE
 * for exit 2, FAILED otherwise.
 */
export function fail(message: string, exitCode = 2, code?: string): never {
  process.stderr.write(`miniship: ${message}\n`)
  if (failuresAsJson) writeJsonError({ code: code ?? (exitCode === 2 ? 'USAGE' : 'FAILED'), message })
  process.exit(exitCode)
}

export function configFrom(flags: ConfigFlags, options: LoadOptions = {}): Config {
  try {
    return loadConfig(flags, Bun.env, options)
  } catch (error) {
    if (error instanceof ConfigError) fail(error.message, 2, error.code)
    throw error
  }
}

/**
 * Runs an action, turning failures into one clear line: bad configuration, a data directory in use
 * or unreadable, or a newer schema exit 2 (the operator must change something first), each with its
 * code; a bucket that cannot be reached exits 1, STORAGE_UNREACHABLE (the same command may work
 * later, nothing changed); anything unexpected exits 1 with its message (the stack only with MINISHIP_DEBUG=1), never
 * with a trace of our source files on an operator's terminal. With `json`, each of these is also
 * the error document on stdout. `oneShot` (every command but serve): the process ends with the action.
 */
export async function runAction(action: () => Promise<void> | void, options: { json?: boolean; oneShot?: boolean } = {}): Promise<void> {
  failuresAsJson = options.json === true
  try {
    await action()
    // a command that is done (doctor on a frozen bucket) would otherwise wait for ever on the calls its timeouts gave up on
    if (options.oneShot && storageCallsAbandoned()) process.exit(process.exitCode ?? 0)
  } catch (error) {
    if (error instanceof ConfigError) fail(error.message, 2, error.code)
    if (error instanceof NewerSchemaError) fail(error.message, 2, 'NEWER_SCHEMA')
    if (error instanceof StorageUnreachableError) fail(error.message, 1, 'STORAGE_UNREACHABLE')
    if (Bun.env.MINISHIP_DEBUG === '1') throw error
    const message = error instanceof Error ? error.message.split('\n')[0] : String(error)
    fail(`${message} (run with MINISHIP_DEBUG=1 for details)`, 1)
  }
}
