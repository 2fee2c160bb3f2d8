// Opens the SQLite database with the pragmas we rely on and applies the embedded migrations.
import { Database } from 'bun:sqlite'
import { drizzle, type BunSQLiteDatabase } from 'drizzle-orm/bun-sqlite'
import { embeddedMigrations } from './migrations.macro' with { type: 'macro' }
import { productVersion } from '../version'

// Without drizzle's relational API (db.query.*, unused): handing it the schema made drizzle walk
// every table's relations on every open, a few ms of each start (issue 30).
export type Db = BunSQLiteDatabase & { $client: Database }

const migrations = embeddedMigrations()

/** How many migrations this build knows; a database with more was written by a newer miniship. */
export const schemaVersion = migrations.length

export const databaseFileName = 'miniship.db'

/** Count of migrations recorded in a database (0 for a fresh one). */
export function appliedMigrationCount(client: Database): number {
  const table = client
    .query("SELECT name FROM sqlite_master WHERE type = 'table' AND name = '__drizzle_migrations'")
    .get()
  if (!table) return 0
  const row = client.query('SELECT count(*) AS n FROM __drizzle_migrations').get() as { n: number }
  return row.n
}

/**
 * Whether drizzle's migrate() would apply nothing: it applies each migration newer than the newest
 * recorded one. Asked first because building its statements took a few ms of every start (issue 30).
 */
function upToDate(client: Database, applied: number): boolean {
  if (applied === 0) return false
  const newest = client.query('SELECT created_at AS at FROM __drizzle_migrations ORDER BY created_at DESC LIMIT 1').get() as { at: unknown } | null
  return newest !== null && migrations.every((migration) => Number(newest.at) >= migration.folderMillis)
}

/**
 * The schema version of the database at `path` and how many of this build's migrations it lacks,
 * read without writing anything (null when there is no database there yet).
 */
export function pendingMigrations(path: string): { applied: number; pending: number } | null {
  let client: Database
  try {
    client = new Database(path, { readonly: true, strict: true })
  } catch {
    return null
  }
  try {
    const applied = appliedMigrationCount(client)
    return { applied, pending: applied > schemaVersion || upToDate(client, applied) ? 0 : Math.max(schemaVersion - applied, 1) }
  } catch {
    // unreadable: openDatabase says what is wrong with it
    return null
  } finally {
    client.close()
  }
}

/** A database a newer miniship migrated: every command refuses it alike (exit 2, NEWER_SCHEMA). */
export class NewerSchemaError extends Error {
  constructor(path: string, applied: number) {
    super(`${path} has database schema version ${applied}, newer than this miniship ${productVersion} knows (${schemaVersion}); use a newer miniship`)
  }
}

/**
 * For the commands that read the database without migrating it (doctor, backup, migrate-storage):
 * an older miniship does not know every table a newer schema has (one that refers to stored files,
 * say), so it refuses as serve does rather than report, copy or move less than there is.
 */
export function refuseNewerSchema(path: string): void {
  let client: Database
  try {
    client = new Database(path, { readonly: true, strict: true })
  } catch {
    return // not readable: the command says what is wrong with it
  }
  let applied: number
  try {
    applied = appliedMigrationCount(client)
  } catch {
    return
  } finally {
    client.close()
  }
  if (applied > schemaVersion) throw new NewerSchemaError(path, applied)
}

/**
 * How long a write waits for another process's write lock (a backup tool, an operator's sqlite3
 * shell). Short, because the wait blocks the one JS thread and so every request: past it the write
 * fails fast as 503 DATABASE_BUSY with Retry-After, and the client tries again.
 */
export const busyTimeoutMs = 250

/** SQLite's "database is locked" (SQLITE_BUSY and its extended codes), wherever a wrapper put it. */
export function isDatabaseBusy(error: unknown): boolean {
  for (let current = error, depth = 0; current instanceof Error && depth < 5; current = current.cause, depth++) {
    const code = (current as Error & { code?: unknown }).code
    if (typeof code === 'string' && code.startsWith('SQLITE_BUSY')) return true
  }
  return false
}

/**
 * Runs `work` (synchronous) as one immediate transaction: the transactions of the services it calls
 * become savepoints inside it, so a change and what it queues for later (a webhook's deliveries,
 * the release mirror's write) commit together or not at all, and no crash or busy lock between the
 * two leaves a change that nothing will announce. Throws what `work` throws, with nothing written.
 */
export function atomically<T>(db: Db, work: () => T): T {
  let result: T | undefined
  db.$client.transaction(() => {
    result = work()
  }).immediate()
  return result as T
}

/**
 * Whether a write could be made right now: takes the write lock without waiting and lets it go.
 * Cheap (no page is written) and synchronous, so nothing of ours interleaves with it.
 */
export function canWrite(client: Database): boolean {
  client.exec('PRAGMA busy_timeout = 0')
  try {
    client.exec('BEGIN IMMEDIATE')
    client.exec('ROLLBACK')
    return true
  } catch (error) {
    if (isDatabaseBusy(error)) return false
    throw error
  } finally {
    client.exec(`PRAGMA busy_timeout = ${busyTimeoutMs}`)
  }
}

/**
 * Opens (creating if needed) the database at `path`: WAL, a busy timeout, foreign keys, full
 * fsync on commit, then every embedded migration not yet applied.
 */
export function openDatabase(path: string, options: { migrate?: boolean } = {}): Db {
  const client = new Database(path, { create: true, strict: true })
  try {
    client.exec('PRAGMA journal_mode = WAL')
    client.exec(`PRAGMA busy_timeout = ${busyTimeoutMs}`)
    client.exec('PRAGMA foreign_keys = ON')
    client.exec('PRAGMA synchronous = FULL')
    const db = drizzle(client) as Db
    if (options.migrate !== false) {
      const applied = appliedMigrationCount(client)
      if (applied > schemaVersion) {
        throw new NewerSchemaError(path, applied)
      }
      // drizzle's migrate() reads files from disk; the binary has none, so hand it the embedded list
      const internals = db as unknown as { dialect: { migrate(list: typeof migrations, session: unknown, config: object): void }; session: unknown }
      if (!upToDate(client, applied)) internals.dialect.migrate(migrations, internals.session, { migrationsFolder: '' })
    }
    return db
  } catch (error) {
    client.close()
    throw error
  }
}

/**
 * Moves everything in the WAL into the database file, then closes: the database file alone is
 * then complete (an operator copying it, a tool opening it read-only). Closing without this can
 * leave every committed page in the -wal file while statements are still cached.
 */
export function closeDatabase(db: Pick<Db, '$client'>): void {
  try {
    db.$client.exec('PRAGMA wal_checkpoint(TRUNCATE)')
  } finally {
    db.$client.close()
  }
}
