// `miniship doctor`: find what a crash, a restore or a disk problem broke, and name it.
import { Command } from 'commander'
import { accessSync, constants, existsSync, statSync } from 'node:fs'
import { Database } from 'bun:sqlite'
import { configFrom, fail, runAction, withDataDirOption, withStorageOptions } from './common'
import { acquireLock, dataDirPaths, hasStoredFiles, lockHolder, type DataDirPaths } from '../data-dir'
import { appliedMigrationCount, schemaVersion } from '../db/open'
import { collectGarbage, collectStoreGarbage, describeCollected, findGarbage, findStoreGarbage } from '../storage/gc'
import { checkStoredFiles, createLocalBlobStore, openBlobStore, type BlobStore } from '../storage'
import { jobBacklog, type JobBacklog } from '../jobs/queue'

/** A backlog older than this is a problem (the bucket or a receiver has been unreachable for a while). */
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

/** The background queue's problems: jobs that gave up, and jobs waiting for longer than a retry or two should take. */
function backgroundJobProblems(database: Database, now: number): string[] {
  const backlog = jobBacklog(database, now)
  const problems: string[] = []
  const lastError = (kind: string, state: string) =>
    database.query<{ last_error: string | null }, [string, string]>('SELECT last_error FROM jobs WHERE kind = ? AND state = ? AND last_error IS NOT NULL ORDER BY updated_at DESC LIMIT 1').get(kind, state)?.last_error ?? 'none recorded'
  for (const [kind, of] of Object.entries(backlog.byKind)) {
    const advice = kind === 'release-mirror' ? 'the next serve start writes the mirror again' : 'they are kept 30 days'
    if (of.failed > 0) problems.push(`background jobs: ${of.failed} ${kind} job(s) gave up after their retries (last error: ${lastError(kind, 'failed')}); ${advice}`)
    if (of.pending + of.running > 0 && of.oldestPendingSeconds >= stuckJobSeconds) {
      problems.push(`background jobs: ${of.pending + of.running} ${kind} job(s) waiting, the oldest for ${ageText(of.oldestPendingSeconds)} (last error: ${lastError(kind, 'pending')})`)
    }
  }
  return problems
}

export interface DoctorCheck {
  name: string
  /** reads our tables: skipped (the migrations check says why) until every migration is applied */
  needsSchema?: boolean
  /** problems found; an empty list means the check passed */
  run(paths: DataDirPaths, database: Database, store: BlobStore): string[] | Promise<string[]>
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
    // every file a version refers to exists, with its recorded size and sha256
    run: (_paths, database, store) => checkStoredFiles(database, store),
  },
  {
    name: 'background jobs',
    needsSchema: true,
    run: (_paths, database) => backgroundJobProblems(database, Date.now()),
  },
  {
    name: 'leftovers',
    needsSchema: true,
    // While a server runs, tmp/ and fresh blobs belong to uploads in flight; it collects at startup.
    run: (paths, database, store) => (lockHolder(paths) === null ? garbageProblems(paths, database, store) : []),
  },
]

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
async function fixLeftovers(root: string, store: BlobStore): Promise<string> {
  const paths = dataDirPaths(root)
  if (!existsSync(paths.database)) return 'nothing to fix: there is no database'
  if (!schemaComplete(paths)) fail('the database is not complete (see the problems below); nothing was removed', 1)
  const holder = lockHolder(paths)
  if (holder !== null) fail(`a miniship server (pid ${holder}) is serving ${root}; it cleans up at startup, or stop it and run doctor --fix again`, 1)
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

/** Every problem doctor finds in the data directory at `root`. */
export async function diagnose(root: string, progress: (line: string) => void = () => {}, store?: BlobStore): Promise<string[]> {
  const paths = dataDirPaths(root)
  const blobs = store ?? createLocalBlobStore(paths)
  if (!existsSync(root)) return [`data directory ${root} does not exist; run miniship init`]
  if (!existsSync(paths.database) || statSync(paths.database).size === 0) {
    return hasStoredFiles(paths) || existsSync(paths.secret)
      ? [`database ${paths.database} is missing or empty while the directory holds stored files or a secret; restore a backup (miniship restore FILE --data-dir ${root} --force)`]
      : [`database ${paths.database} does not exist; run miniship init`]
  }
  const problems = secretProblems(paths)
  try {
    accessSync(paths.database, constants.R_OK | constants.W_OK)
  } catch {
    problems.push(`database ${paths.database} is not writable by this user: the server cannot record anything`)
  }
  let database: Database
  try {
    database = openForChecks(paths.database)
    database.query('SELECT count(*) FROM sqlite_master').get()
  } catch (error) {
    return [...problems, `database ${paths.database} cannot be opened or read: ${(error as Error).message}`]
  }
  try {
    const schemaReady = appliedMigrationCount(database) === schemaVersion
    for (const check of databaseChecks) {
      if (check.needsSchema && !schemaReady) continue
      progress(`checking ${check.name}…`)
      try {
        problems.push(...(await check.run(paths, database, blobs)))
      } catch (error) {
        problems.push(`${check.name}: could not be checked: ${(error as Error).message}`)
      }
    }
  } finally {
    database.close()
  }
  return problems
}

export function doctorCommand(): Command {
  return withStorageOptions(withDataDirOption(new Command('doctor')))
    .description('check the database (integrity, migrations) and the stored files; exits 1 and names each problem')
    .option('--fix', 'remove stored files no version refers to and leftovers in tmp/ (only while no server runs)')
    .addHelpText('after', '\nExamples:\n  $ miniship doctor --data-dir /var/lib/miniship\n  $ miniship doctor --fix --data-dir /var/lib/miniship')
    .action(({ fix, ...flags }) =>
      runAction(async () => {
        const config = configFrom(flags)
        // refused credentials, a missing bucket or another data directory's prefix: one line, exit 2
        const store = await openBlobStore(config, dataDirPaths(config.dataDir))
        if (fix) console.log(`FIXED: ${await fixLeftovers(config.dataDir, store)}`)
        const tty = process.stderr.isTTY
        const problems = await diagnose(
          config.dataDir,
          (line) => {
            if (tty) process.stderr.write(`\r\x1b[K${line}`)
          },
          store,
        )
        if (tty) process.stderr.write('\r\x1b[K')
        const backlog = backlogOf(config.dataDir)
        if (backlog !== null) console.log(`INFO: background jobs: ${describeBacklog(backlog)}`)
        if (problems.length === 0) {
          console.log(`OK: ${config.dataDir} is healthy (schema version ${schemaVersion})`)
          return
        }
        for (const problem of problems) console.log(`PROBLEM: ${problem}`)
        console.log(`${problems.length} problem${problems.length === 1 ? '' : 's'} found in ${config.dataDir}`)
        process.exitCode = 1
      }),
    )
}
