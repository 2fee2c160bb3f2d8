// `miniship doctor`: find what a crash, a restore or a disk problem broke, and name it.
import { Command } from 'commander'
import { accessSync, constants, existsSync, rmSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { Database } from 'bun:sqlite'
import { configFrom, fail, runAction, withDataDirOption, withJsonOption, withStorageOptions } from './common'
import { acquireLock, dataDirInUse, dataDirPaths, deadBackupStagings, hasStoredFiles, lockHolder, type DataDirPaths } from '../data-dir'
import { appliedMigrationCount, refuseNewerSchema, schemaVersion } from '../db/open'
import { collectGarbage, collectStoreGarbage, describeCollected, findGarbage, findStoreGarbage } from '../storage/gc'
import { checkStoredFiles, createLocalBlobStore, openBlobStore, type BlobStore } from '../storage'
import { jobBacklog, type JobBacklog } from '../jobs/queue'
import { storageErrorText, StorageUnreachableError } from '../storage/s3'
import { decodeBase64, unsoundKeyReason } from '../modules/signing/keys'
import { webhookJobKind, withoutUrlPaths } from '../modules/webhooks/service'
import { timeText } from '../terminal/time'
import { spaceReports } from '../disk-space'

/** A backlog older than this is a problem (the bucket has been unreachable for a while), or for webhook deliveries a warning (a receiver has). */
const stuckJobSeconds = 15 * 60

function ageText(seconds: number): string {
  return seconds < 120 ? `${seconds} s` : seconds < 7200 ? `${Math.round(seconds / 60)} min` : `${Math.round(seconds / 3600)} h`
}

/** One line saying what waits in the background queue, per kind ("release-mirror: 2 pending, the oldest 3 min; …"). */
export function describeBacklog(backlog: JobBacklog): string {
  const kinds = Object.entries(backlog.byKind)
  if (kinds.length === 0) return 'nothing pending'
  return kinds
    .map(([kind, of]) => `${kind}: ${of.pending + of.running} pending${of.pending + of.running > 0 ? `, the oldest ${ageText(of.oldestPendingSeconds)}` : ''}, ${of.failed} failed`)
    .join('; ')
}

/**
 * The background queue's problems: jobs that gave up, and jobs waiting for longer than a retry or two should take.
 * Webhook deliveries a receiver refused are warnings instead (webhookDeliveryWarnings); one never tried in that
 * time is a problem here: this server's queue is not sending.
 */
function backgroundJobProblems(database: Database, now: number): string[] {
  const backlog = jobBacklog(database, now)
  const problems: string[] = []
  const untried = database
    .query<{ count: number; oldest: string | null }, [string, string]>(
      "SELECT count(*) AS count, min(created_at) AS oldest FROM jobs WHERE kind = ? AND state IN ('pending', 'running') AND last_error IS NULL AND attempts = 0 AND created_at <= ?",
    )
    .get(webhookJobKind, new Date(now - stuckJobSeconds * 1000).toISOString())
  if (untried && untried.count > 0) {
    problems.push(
      `background jobs: ${plural(untried.count, 'webhook delivery', 'webhook deliveries')} waiting for ${ageText(waitedSeconds(untried.oldest!, now))} with no attempt yet: they are sent while miniship serve runs; if it is running, its job queue is not (restart it)`,
    )
  }
  const lastError = (kind: string, state: string) =>
    database.query<{ last_error: string | null }, [string, string]>('SELECT last_error FROM jobs WHERE kind = ? AND state = ? AND last_error IS NOT NULL ORDER BY updated_at DESC LIMIT 1').get(kind, state)?.last_error ?? 'none recorded'
  for (const [kind, of] of Object.entries(backlog.byKind)) {
    if (kind === webhookJobKind) continue
    const advice = kind === 'release-mirror' ? 'the next serve start writes the mirror again' : 'they are kept 30 days'
    if (of.failed > 0) problems.push(`background jobs: ${of.failed} ${kind} job(s) gave up after their retries (last error: ${lastError(kind, 'failed')}); ${advice}`)
    if (of.pending + of.running > 0 && of.oldestPendingSeconds >= stuckJobSeconds) {
      problems.push(`background jobs: ${of.pending + of.running} ${kind} job(s) waiting, the oldest for ${ageText(of.oldestPendingSeconds)} (last error: ${lastError(kind, 'pending')})`)
    }
  }
  return problems
}

/** What waits and what gave up for one webhook (webhookId null: deliveries whose record is gone, so their webhook is unknown). */
interface WebhookTrouble {
  webhookId: string | null
  appId: string | null
  /** the receiver's scheme, host and port: its path and query are often its credential (Slack's, Discord's) */
  origin: string | null
  failed: number
  /** when the first of them gave up */
  firstFailedAt: string | null
  waiting: number
  /** when the oldest waiting one was queued */
  oldestWaitingAt: string | null
  /** the newest error of any of its deliveries, waiting or given up */
  lastError: string | null
}

function plural(count: number, one: string, many: string): string {
  return `${count} ${count === 1 ? one : many}`
}

/** The origin of a stored webhook URL, as the audit log names a webhook; never its path or query. */
function originOf(url: string): string {
  try {
    return new URL(url).origin
  } catch {
    return 'an unreadable URL'
  }
}

/** Webhook deliveries that gave up, or have waited past stuckJobSeconds, grouped by webhook. */
function webhookTroubles(database: Database, now: number): WebhookTrouble[] {
  const rows = database
    .query<{ state: string; createdAt: string; updatedAt: string; lastError: string | null; webhookId: string | null; url: string | null; appId: string | null }, [string]>(
      `SELECT j.state AS state, j.created_at AS createdAt, j.updated_at AS updatedAt, j.last_error AS lastError, w.id AS webhookId, w.url AS url, m.app_id AS appId
       FROM jobs j
       LEFT JOIN webhook_deliveries d ON d.id = (CASE WHEN json_valid(j.payload) THEN json_extract(j.payload, '$.deliveryId') END)
       LEFT JOIN webhooks w ON w.id = d.webhook_id
       LEFT JOIN mini_apps m ON m.id = w.mini_app_id
       WHERE j.kind = ?
       ORDER BY j.updated_at, j.id`,
    )
    .all(webhookJobKind)
  const byWebhook = new Map<string | null, WebhookTrouble>()
  for (const row of rows) {
    let trouble = byWebhook.get(row.webhookId)
    if (!trouble) {
      trouble = { webhookId: row.webhookId, appId: row.appId, origin: row.url === null ? null : originOf(row.url), failed: 0, firstFailedAt: null, waiting: 0, oldestWaitingAt: null, lastError: null }
      byWebhook.set(row.webhookId, trouble)
    }
    if (row.state === 'failed') {
      trouble.failed++
      if (trouble.firstFailedAt === null || row.updatedAt < trouble.firstFailedAt) trouble.firstFailedAt = row.updatedAt
    } else if (row.lastError !== null && waitedSeconds(row.createdAt, now) >= stuckJobSeconds) {
      // waiting past the limit after the receiver refused it; one queued a moment ago is no trouble yet, one never tried is a problem (backgroundJobProblems)
      trouble.waiting++
      if (trouble.oldestWaitingAt === null || row.createdAt < trouble.oldestWaitingAt) trouble.oldestWaitingAt = row.createdAt
    }
    // rows come oldest update first: the last one seen is the newest error
    if (row.lastError !== null) trouble.lastError = row.lastError
  }
  return [...byWebhook.values()]
    .filter((trouble) => trouble.failed > 0 || trouble.waiting > 0)
    .sort((a, b) => (a.webhookId === null ? 1 : b.webhookId === null ? -1 : `${a.appId} ${a.webhookId}`.localeCompare(`${b.appId} ${b.webhookId}`)))
}

function waitedSeconds(since: string, now: number): number {
  return Math.max(0, Math.floor((now - Date.parse(since)) / 1000))
}

/** One warning line for one webhook's deliveries: which webhook, how many, since when, the last error, and what to do. */
function webhookTroubleText(trouble: WebhookTrouble, now: number): string {
  const parts: string[] = []
  if (trouble.failed > 0) {
    parts.push(`${plural(trouble.failed, 'delivery', 'deliveries')} gave up after ${trouble.failed === 1 ? 'its' : 'their'} retries ${trouble.failed === 1 ? 'at' : 'since'} ${timeText(trouble.firstFailedAt!)}`)
  }
  if (trouble.waiting > 0) {
    const oldest = trouble.oldestWaitingAt!
    parts.push(`${plural(trouble.waiting, 'delivery', 'deliveries')} waiting for ${ageText(waitedSeconds(oldest, now))}, since ${timeText(oldest)}`)
  }
  // delivery errors are stored without URL paths already; cut again, so no receiver's credential can reach a cron mail
  const why = `last error: ${trouble.lastError === null ? 'none recorded' : withoutUrlPaths(trouble.lastError)}`
  const kept = trouble.failed > 0 ? '; given-up deliveries are not sent again and are reported for 30 days' : ''
  if (trouble.webhookId === null) {
    return `webhook deliveries: for a webhook whose delivery records were pruned (200 are kept per webhook): ${parts.join(', ')} (${why}); nothing to do${kept}`
  }
  const { webhookId: id, appId } = trouble
  const deliveries = `miniship webhooks deliveries ${id} --app ${appId}`
  return (
    `webhook deliveries: webhook ${id} of ${appId} (${trouble.origin}): ${parts.join(', ')} (${why}); ` +
    `check the receiver (or this server's outbound network and DNS), see the deliveries with ${deliveries}, ` +
    `once it answers send a test with miniship webhooks test ${id} --app ${appId}, or remove the webhook and its deliveries with miniship webhooks rm ${id} --app ${appId}${kept}`
  )
}

/** The background queue's warnings: webhook deliveries that gave up or wait too long, one line per webhook. Doctor still exits 0 for them. */
function webhookDeliveryWarnings(database: Database, now: number): string[] {
  return webhookTroubles(database, now).map((trouble) => webhookTroubleText(trouble, now))
}

export interface DoctorCheck {
  name: string
  /** reads our tables: skipped (the migrations check says why) until every migration is applied */
  needsSchema?: boolean
  /** reads the stored files: skipped while the bucket cannot be reached */
  needsStore?: boolean
  /** problems found; an empty list means the check passed */
  run(paths: DataDirPaths, database: Database, store: BlobStore): string[] | Promise<string[]>
  /** what is worth saying but is not wrong with this data directory (a webhook receiver that does not answer): printed, never exit 1 */
  warn?(database: Database): string[]
}

/** Checks that need an open, readable database; run in order, each reporting its own problems. */
export const databaseChecks: DoctorCheck[] = [
  {
    name: 'database integrity',
    run: (_paths, database) => {
      const rows = database.query('PRAGMA integrity_check').all() as { integrity_check: string }[]
      const problems = rows.map((row) => row.integrity_check).filter((text) => text !== 'ok')
      return problems.map((text) => `database integrity: ${text}`)
    },
  },
  {
    name: 'foreign keys',
    run: (_paths, database) => {
      const rows = database.query('PRAGMA foreign_key_check').all() as { table: string; rowid: number; parent: string }[]
      return rows.map((row) => `database: row ${row.rowid} of ${row.table} refers to a missing ${row.parent} row`)
    },
  },
  {
    name: 'migrations',
    run: (_paths, database) => {
      const applied = appliedMigrationCount(database)
      if (applied < schemaVersion) return [`database: ${schemaVersion - applied} of ${schemaVersion} migrations not applied; run miniship init`]
      if (applied > schemaVersion) return [`database: schema version ${applied} is newer than this miniship (${schemaVersion}); use a newer miniship`]
      return []
    },
  },
  {
    name: 'stored files',
    needsSchema: true,
    needsStore: true,
    // every file a version refers to exists, with its recorded size and sha256
    run: (_paths, database, store) => checkStoredFiles(database, store),
  },
  {
    name: 'background jobs',
    needsSchema: true,
    run: (_paths, database) => backgroundJobProblems(database, Date.now()),
    warn: (database) => webhookDeliveryWarnings(database, Date.now()),
  },
  {
    name: 'signing keys',
    needsSchema: true,
    // a trusted key stored before miniship refused weak ones: under it anyone can sign a release
    run: (_paths, database) => weakSigningKeyProblems(database),
  },
  {
    name: 'leftovers',
    needsSchema: true,
    needsStore: true,
    // While a server runs, tmp/ and fresh blobs belong to uploads in flight; it collects at startup.
    // A killed backup's staging is nobody's even then, and its hard links keep deleted files on disk.
    run: (paths, database, store) => (lockHolder(paths) === null ? garbageProblems(paths, database, store) : deadBackupProblems(paths)),
  },
]

/** Trusted (not revoked) signing keys under which anyone can make a valid signature: the server refuses them since 0.3.0, but not those stored before. */
function weakSigningKeyProblems(database: Database): string[] {
  const rows = database
    .query<{ keyId: string; name: string; publicKey: string; appId: string }, []>(
      'SELECT k.key_id AS keyId, k.name AS name, k.public_key AS publicKey, m.app_id AS appId FROM signing_keys k JOIN mini_apps m ON m.id = k.mini_app_id WHERE k.revoked_at IS NULL ORDER BY m.app_id, k.key_id',
    )
    .all()
  return rows.flatMap((row) => {
    const raw = decodeBase64(row.publicKey)
    const unsound = raw === null || raw.length !== 32 ? 'is not 32 bytes of base64' : unsoundKeyReason(raw)
    return unsound === null ? [] : [`signing key ${row.keyId} ("${row.name}") of ${row.appId} ${unsound}; revoke it (miniship keys revoke --app ${row.appId} ${row.keyId}) and sign with a key miniship keys generate made`]
  })
}

function deadBackupProblems(paths: DataDirPaths): string[] {
  const dead = deadBackupStagings(paths.tmp)
  return dead.length === 0 ? [] : [`${dead.length} staging director${dead.length === 1 ? 'y' : 'ies'} of a killed backup in ${paths.tmp} (its hard links keep stored files on disk); miniship doctor --fix removes ${dead.length === 1 ? 'it' : 'them'}, also while the server runs`]
}

async function garbageProblems(paths: DataDirPaths, database: Database, store: BlobStore): Promise<string[]> {
  const { unreferenced: local, tmpLeftovers } = findGarbage(paths, database)
  // with S3 storage the bucket is checked too (local blobs/ then holds only what predates migrate-storage)
  const unreferenced = store.kind === 'local' ? local : [...local, ...(await findStoreGarbage(store, database))]
  const problems: string[] = []
  if (unreferenced.length > 0) {
    const bytes = unreferenced.reduce((sum, file) => sum + file.size, 0)
    problems.push(`${unreferenced.length} stored file(s) no version refers to (${bytes} bytes), e.g. ${unreferenced[0]!.path}; miniship doctor --fix removes them`)
  }
  if (tmpLeftovers.length > 0) problems.push(`${tmpLeftovers.length} leftover(s) of interrupted work in ${paths.tmp}; miniship doctor --fix removes them`)
  return problems
}

/** `--fix`: collect garbage under the data directory's lock, so that no server starts meanwhile. */
export async function fixLeftovers(root: string, store: BlobStore): Promise<string> {
  const paths = dataDirPaths(root)
  if (!existsSync(paths.database)) return 'nothing to fix: there is no database'
  if (!schemaComplete(paths)) fail('the database is not complete (see the problems below); nothing was removed', 1)
  const holder = lockHolder(paths)
  if (holder !== null) {
    // what a killed backup staged is nobody's: removed now; the rest waits for the server's next start
    const dead = deadBackupStagings(paths.tmp)
    if (dead.length === 0) throw dataDirInUse(paths, holder, ', and run doctor --fix again; or leave it to the server, which cleans up when it next starts')
    for (const name of dead) rmSync(join(paths.tmp, name), { recursive: true, force: true })
    return `removed ${dead.length} staging director${dead.length === 1 ? 'y' : 'ies'} of a killed backup from ${paths.tmp}; the server (pid ${holder}) collects the rest when it next starts`
  }
  const releaseLock = acquireLock(paths)
  try {
    const database = openForChecks(paths.database)
    try {
      const collected = collectGarbage(paths, database)
      if (store.kind !== 'local') {
        const inBucket = await collectStoreGarbage(store, database, undefined, true)
        collected.removedFiles += inBucket.removedFiles
        collected.removedBytes += inBucket.removedBytes
      }
      return describeCollected(collected) ?? 'nothing to fix: no unreferenced files and nothing in tmp/'
    } finally {
      database.close()
    }
  } finally {
    releaseLock()
  }
}

function secretProblems(paths: DataDirPaths): string[] {
  if (!existsSync(paths.secret)) return [`signing secret ${paths.secret} is missing: existing tokens cannot be verified`]
  const mode = statSync(paths.secret).mode & 0o777
  if (mode & 0o077) return [`signing secret ${paths.secret} is readable by others (mode ${mode.toString(8)}); run chmod 600`]
  return []
}

/**
 * Doctor never writes to the database, but it opens it read-write when it can: a read-only
 * connection to a WAL database whose -shm file is gone (a copied data directory) fails with
 * "disk I/O error" instead of reading it.
 */
function openForChecks(path: string): Database {
  try {
    return new Database(path, { readwrite: true, create: false, strict: true })
  } catch {
    return new Database(path, { readonly: true, strict: true })
  }
}

/** Whether the database opens and has every migration this miniship knows. */
function schemaComplete(paths: DataDirPaths): boolean {
  try {
    const database = openForChecks(paths.database)
    try {
      return appliedMigrationCount(database) === schemaVersion
    } finally {
      database.close()
    }
  } catch {
    return false
  }
}

/** The background queue's backlog, or null when the database cannot say (its problems are reported elsewhere). */
function backlogOf(root: string): JobBacklog | null {
  const paths = dataDirPaths(root)
  if (!schemaComplete(paths)) return null
  try {
    const database = openForChecks(paths.database)
    try {
      return jobBacklog(database, Date.now())
    } finally {
      database.close()
    }
  } catch {
    return null
  }
}

/** The schema version the database is at (its applied migrations), or null when it cannot be read. */
function databaseSchemaVersion(root: string): number | null {
  const paths = dataDirPaths(root)
  if (!existsSync(paths.database)) return null
  try {
    const database = openForChecks(paths.database)
    try {
      return appliedMigrationCount(database)
    } finally {
      database.close()
    }
  } catch {
    return null
  }
}

/** What one check found: its problems (none: it passed), its warnings, or why it was not run. */
export interface CheckResult {
  name: string
  problems: string[]
  /** worth a look but not wrong with the data directory: they leave the check passed and doctor's exit code 0 */
  warnings?: string[]
  /** set when the check could not run (the problem that stopped it is another check's) */
  skipped?: string
}

/** Every check doctor runs on the data directory at `root`, in order, with what each found. */
export async function runChecks(root: string, progress: (line: string) => void = () => {}, store?: BlobStore, unreachable?: string): Promise<CheckResult[]> {
  const paths = dataDirPaths(root)
  const blobs = store ?? createLocalBlobStore(paths)
  const results: CheckResult[] = []
  const notRun = (why: string): CheckResult[] => [...results, ...databaseChecks.map((check) => ({ name: check.name, problems: [], skipped: why }))]
  if (!existsSync(root)) {
    results.push({ name: 'data directory', problems: [`data directory ${root} does not exist; run miniship init`] })
    return notRun('no data directory')
  }
  results.push({ name: 'data directory', problems: [] })
  if (!existsSync(paths.database) || statSync(paths.database).size === 0) {
    results.push({
      name: 'database file',
      problems: [
        hasStoredFiles(paths) || existsSync(paths.secret)
          ? `database ${paths.database} is missing or empty while the directory holds stored files or a secret; restore a backup (miniship restore FILE --data-dir ${root} --force)`
          : `database ${paths.database} does not exist; run miniship init`,
      ],
    })
    return notRun('no database')
  }
  results.push({ name: 'signing secret', problems: secretProblems(paths) })
  const access: CheckResult = { name: 'database file', problems: [] }
  results.push(access)
  try {
    accessSync(paths.database, constants.R_OK | constants.W_OK)
  } catch {
    access.problems.push(`database ${paths.database} is not writable by this user: the server cannot record anything`)
  }
  let database: Database
  try {
    database = openForChecks(paths.database)
    database.query('SELECT count(*) FROM sqlite_master').get()
  } catch (error) {
    access.problems.push(`database ${paths.database} cannot be opened or read: ${(error as Error).message}`)
    return notRun('the database cannot be read')
  }
  try {
    const schemaReady = appliedMigrationCount(database) === schemaVersion
    for (const check of databaseChecks) {
      if (check.needsSchema && !schemaReady) {
        results.push({ name: check.name, problems: [], skipped: 'migrations not applied' })
        continue
      }
      if (check.needsStore && unreachable !== undefined) {
        results.push({ name: check.name, problems: [], skipped: 'the bucket cannot be reached' })
        continue
      }
      progress(`checking ${check.name}…`)
      try {
        const problems = await check.run(paths, database, blobs)
        results.push({ name: check.name, problems, ...(check.warn ? { warnings: warningsOf(check, database) } : {}) })
      } catch (error) {
        results.push({ name: check.name, problems: [`${check.name}: could not be checked: ${storageErrorText(error)}`] })
      }
    }
  } finally {
    database.close()
  }
  return results
}

/** A check's warnings; one that cannot be read is a warning too, not a problem. */
function warningsOf(check: DoctorCheck, database: Database): string[] {
  try {
    return check.warn?.(database) ?? []
  } catch (error) {
    return [`${check.name}: the warnings could not be checked: ${(error as Error).message}`]
  }
}

/** Every problem doctor finds in the data directory at `root` (not its warnings). */
export async function diagnose(root: string, progress: (line: string) => void = () => {}, store?: BlobStore): Promise<string[]> {
  return (await runChecks(root, progress, store)).flatMap((check) => check.problems)
}

/** The background queue as `doctor --json` reports it: the backlog, and the release mirror's writes on their own. */
function backgroundJobsReport(backlog: JobBacklog | null) {
  if (backlog === null) return null
  const mirror = backlog.byKind['release-mirror']
  const pendingMirrorWrites = mirror ? mirror.pending + mirror.running : 0
  return { ...backlog, pendingMirrorWrites, oldestMirrorWriteSeconds: pendingMirrorWrites > 0 ? mirror!.oldestPendingSeconds : null, text: describeBacklog(backlog) }
}

export function doctorCommand(): Command {
  return withJsonOption(withStorageOptions(withDataDirOption(new Command('doctor'))))
    .description('check the database (integrity, migrations), the stored files, the job queue, the trusted signing keys and the free space; exits 1 and names each problem')
    .option('--fix', 'remove stored files no version refers to and leftovers in tmp/ (only while no server runs)')
    .addHelpText(
      'after',
      '\nExit codes:\n  0  healthy, also with warnings (webhook deliveries a receiver refused, given up or waiting: its trouble, or this server\'s outbound network)\n  1  problems found (a bucket that cannot be reached among them; with --fix: STORAGE_UNREACHABLE)\n  2  something to change first: a bad command line or setting, a data directory this user may not read (DATA_DIR_UNREADABLE), a database of a newer miniship (NEWER_SCHEMA), with --fix a running server (DATA_DIR_IN_USE)\n' +
        '\nExamples:\n  $ miniship doctor --data-dir /var/lib/miniship\n  $ miniship doctor --fix --data-dir /var/lib/miniship\n  $ miniship doctor --data-dir /var/lib/miniship --json    # {"healthy", "checks", "problems", "warnings", "backgroundJobs", …}',
    )
    .action(({ fix, json, ...flags }) =>
      runAction(
        async () => {
          const config = configFrom(flags)
          // a newer miniship's database: refused as every command refuses it (exit 2, NEWER_SCHEMA);
          // this miniship's checks would skip most of it and call the rest a problem
          refuseNewerSchema(dataDirPaths(config.dataDir).database)
          const line = (text: string) => {
            if (!json) console.log(text)
          }
          // refused credentials, a missing bucket or another data directory's prefix: one line, exit 2;
          // a bucket that cannot be reached (an outage) is a problem found, and the rest is still checked
          // (with --fix, which cannot do its work: exit 1, STORAGE_UNREACHABLE, as every command)
          let store: BlobStore | undefined
          let unreachable: string | undefined
          try {
            store = await openBlobStore(config, dataDirPaths(config.dataDir))
          } catch (error) {
            if (fix || !(error instanceof StorageUnreachableError)) throw error
            unreachable = error.message
          }
          const fixed = fix && store !== undefined ? await fixLeftovers(config.dataDir, store) : null
          if (fixed !== null) line(`FIXED: ${fixed}`)
          const tty = process.stderr.isTTY
          const checks = await runChecks(
            config.dataDir,
            (text) => {
              if (tty) process.stderr.write(`\r\x1b[K${text}`)
            },
            store,
            unreachable,
          )
          if (unreachable !== undefined) checks.unshift({ name: 'storage', problems: [`${unreachable}; the stored files were not checked (pending mirror writes wait for it: see background jobs)`] })
          // room for the next uploads and backup, from this directory's database and the upload limit serve uses
          const space = existsSync(config.dataDir) ? spaceReports(dataDirPaths(config.dataDir), config.uploadLimitBytes) : []
          if (space.length > 0) {
            checks.push({
              name: 'free space',
              problems: space.filter((report) => report.verdict === 'short').map((report) => report.text),
              warnings: space.filter((report) => report.verdict === 'low').map((report) => report.text),
            })
          }
          if (tty) process.stderr.write('\r\x1b[K')
          const problems = checks.flatMap((check) => check.problems)
          // a webhook receiver that does not answer: said, but neither unhealthy nor exit 1
          const warnings = checks.flatMap((check) => check.warnings ?? [])
          const backlog = backlogOf(config.dataDir)
          if (backlog !== null) line(`INFO: background jobs: ${describeBacklog(backlog)}`)
          for (const report of space) if (report.verdict === 'ok') line(`INFO: ${report.text}`)
          if (problems.length > 0) process.exitCode = 1
          if (json) {
            const results = checks.map(({ name, ...check }) => ({ name, ok: check.problems.length === 0 && check.skipped === undefined, ...check, warnings: check.warnings ?? [] }))
            // the database's own version, as backup --json and restore --json report it; this miniship's beside it
            const document = { dataDir: config.dataDir, healthy: problems.length === 0, schemaVersion: databaseSchemaVersion(config.dataDir), supportedSchemaVersion: schemaVersion, fixed, checks: results, problems, warnings, backgroundJobs: backgroundJobsReport(backlog), freeSpace: space.map(({ text: _text, ...report }) => report) }
            process.stdout.write(`${JSON.stringify(document, null, 2)}\n`)
            return
          }
          for (const problem of problems) line(`PROBLEM: ${problem}`)
          for (const warning of warnings) line(`WARNING: ${warning}`)
          const warned = warnings.length === 0 ? '' : `${warnings.length} warning${warnings.length === 1 ? '' : 's'}`
          if (problems.length === 0) {
            line(`OK: ${config.dataDir} is healthy (schema version ${schemaVersion})${warned && `; ${warned} above, not counted as problems`}`)
            return
          }
          line(`${problems.length} problem${problems.length === 1 ? '' : 's'} found in ${config.dataDir}${warned && `, and ${warned}`}`)
        },
        { json, oneShot: true },
      ),
    )
}
