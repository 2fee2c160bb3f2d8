// The data directory: database, signing secret, blob store, tmp/, and the lock a running server holds.
import { chmodSync, mkdirSync, existsSync, readFileSync, writeFileSync, openSync, closeSync, fsyncSync, renameSync, accessSync, constants, statSync, rmSync, readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { ConfigError } from './config'
import { openDatabase, databaseFileName, NewerSchemaError, pendingMigrations, schemaVersion, type Db } from './db/open'

export const secretFileName = 'secret.key'
export const lockFileName = 'miniship.lock'
export const insightsKeyFileName = 'insights.key'

export interface DataDirPaths {
  root: string
  database: string
  secret: string
  /** the HMAC key device ids are hashed with before they are stored (insights) */
  insightsKey: string
  blobs: string
  tmp: string
  lock: string
}

export function dataDirPaths(root: string): DataDirPaths {
  return {
    root,
    database: join(root, databaseFileName),
    secret: join(root, secretFileName),
    insightsKey: join(root, insightsKeyFileName),
    blobs: join(root, 'blobs'),
    tmp: join(root, 'tmp'),
    lock: join(root, lockFileName),
  }
}

/** Flushes a file's data, or a directory's entries (after a rename into it), to the disk. */
export function fsyncPath(path: string): void {
  const fd = openSync(path, 'r')
  try {
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}

/** Writes `content` so that a crash leaves either the old file or the whole new one. */
export function writeFileAtomic(path: string, content: string | Uint8Array, mode = 0o600): void {
  const temporary = `${path}.${process.pid}.tmp`
  writeFileSync(temporary, content, { mode })
  fsyncPath(temporary)
  renameSync(temporary, path)
  fsyncPath(dirname(path))
}

const fileSystemReasons: Record<string, string> = {
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  ENOTDIR: 'a part of the path is a file, not a directory',
  EEXIST: 'a file of that name exists',
  EROFS: 'the file system is read-only',
  ENOSPC: 'the disk is full',
}

/** "permission denied" rather than "EACCES": what an operator reads in one line. */
export function fileSystemReason(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code
  return (code && fileSystemReasons[code]) ?? (error as Error).message
}

function ensureWritableDirectory(path: string): void {
  if (existsSync(path) && !statSync(path).isDirectory()) throw new ConfigError(`data directory ${path} is not a directory`)
  try {
    // the directory holds password hashes and the signing secret: only its owner reads it
    mkdirSync(path, { recursive: true, mode: 0o700 })
  } catch (error) {
    throw new ConfigError(`data directory ${path} cannot be created: ${fileSystemReason(error)}`)
  }
  try {
    accessSync(path, constants.W_OK | constants.R_OK | constants.X_OK)
  } catch {
    throw new ConfigError(`data directory ${path} is not writable by this user`)
  }
}

/** What miniship itself puts in a data directory (and what a fresh file system brings along). */
const ownNames = new Set([databaseFileName, `${databaseFileName}-wal`, `${databaseFileName}-shm`, secretFileName, insightsKeyFileName, lockFileName, 'blobs', 'tmp', 'lost+found'])

/**
 * `--data-dir $HOME` by mistake would set up inside it and empty a `tmp/` of the user's: only an
 * empty directory, or one that is already miniship's, is taken.
 */
function refuseForeignDirectory(root: string): void {
  const names = readdirSync(root)
  if (names.includes(databaseFileName) || names.includes(secretFileName)) return
  const foreign = names.filter((name) => !ownNames.has(name) && !/^(secret|insights)\.key\.\d+\.tmp$/.test(name))
  if (foreign.length === 0) return
  const shown = foreign.slice(0, 3).join(', ') + (foreign.length > 3 ? `, and ${foreign.length - 3} more` : '')
  throw new ConfigError(`data directory ${root} is not empty and is not a miniship data directory (it holds ${shown}); point --data-dir at an empty or new directory`)
}

/** Whether any file sits in the blob store (an instance that has taken uploads). */
export function hasStoredFiles(paths: Pick<DataDirPaths, 'blobs'>): boolean {
  const root = join(paths.blobs, 'sha256')
  if (!existsSync(root)) return false
  return readdirSync(root).some((prefix) => {
    const folder = join(root, prefix)
    return statSync(folder).isDirectory() && readdirSync(folder).length > 0
  })
}

/**
 * A directory that has served before (a secret or stored files) but has no database lost it: a
 * fresh, empty database there would make every stored file look unreferenced, and the startup
 * clean-up would delete them all. Refuse instead, and say how to recover.
 */
function refuseLostDatabase(paths: DataDirPaths): void {
  const missing = !existsSync(paths.database) || statSync(paths.database).size === 0
  if (!missing) return
  const storedFiles = hasStoredFiles(paths)
  if (!storedFiles && !existsSync(paths.secret)) return
  const what = storedFiles ? 'stored files' : 'a signing secret'
  throw new ConfigError(
    `data directory ${paths.root} holds ${what} but its database is missing or empty; restore a backup (miniship restore FILE --data-dir ${paths.root} --force), or move the directory away to start a new instance`,
  )
}

/** The HS256 signing secret, generated once (mode 0600) and never leaving the data directory. */
export function readOrCreateSecret(paths: DataDirPaths, warn: (line: string) => void = () => {}): Uint8Array {
  if (!existsSync(paths.secret)) {
    if (existsSync(paths.database)) {
      warn(`the signing secret ${paths.secret} was missing and a new one was made: every access token and download link issued before no longer works (restore secret.key from a backup to keep them)`)
    }
    writeFileAtomic(paths.secret, randomBytes(48).toString('base64url') + '\n')
  }
  let text: string
  try {
    text = readFileSync(paths.secret, 'utf8').trim()
  } catch (error) {
    throw new ConfigError(`signing secret ${paths.secret} cannot be read: ${fileSystemReason(error)}`)
  }
  if (text.length < 32) throw new ConfigError(`signing secret ${paths.secret} is too short or damaged`)
  return new TextEncoder().encode(text)
}

/**
 * The key device ids are hashed with (HMAC-SHA256) before insights store them, made once (mode
 * 0600). Apart from the signing secret so that it can be replaced on its own; losing it only
 * means a device counts as new once more.
 */
export function readOrCreateInsightsKey(paths: Pick<DataDirPaths, 'insightsKey'>): Uint8Array {
  if (!existsSync(paths.insightsKey)) writeFileAtomic(paths.insightsKey, randomBytes(32).toString('base64url') + '\n')
  let text: string
  try {
    text = readFileSync(paths.insightsKey, 'utf8').trim()
  } catch (error) {
    throw new ConfigError(`insights key ${paths.insightsKey} cannot be read: ${fileSystemReason(error)}`)
  }
  if (text.length < 32) throw new ConfigError(`insights key ${paths.insightsKey} is too short or damaged; remove it and a new one is made`)
  return new TextEncoder().encode(text)
}

export function isInitialised(root: string): boolean {
  const paths = dataDirPaths(root)
  return existsSync(paths.database) && existsSync(paths.secret)
}

/** The name of a backup's staging directory in tmp/: the pid of the backup that owns it comes first. */
export const backupStagingName = (uuid: string) => `backup-${process.pid}-${uuid}`

/**
 * The entries of tmp/ that no running process uses: leftovers of uploads or backups a crash (or a
 * stop) interrupted. Spared: the staging of a backup still running, named by its pid, which takes
 * no lock (it is safe beside a serving server), so a server starting, `doctor --fix`, `init` or
 * `create-admin` must not sweep its files away midway.
 */
/** The staging directories in tmp/ of backups that were killed (their pid no running `miniship backup`): nobody's, even while a server runs. */
export function deadBackupStagings(tmp: string): string[] {
  if (!existsSync(tmp)) return []
  return readdirSync(tmp).filter((name) => {
    const backup = /^backup-(\d+)-/.exec(name)
    return backup !== null && Number(backup[1]) !== process.pid && !processAlive(Number(backup[1]), backupCommand)
  })
}

export function tmpLeftovers(tmp: string): string[] {
  if (!existsSync(tmp)) return []
  return readdirSync(tmp).filter((name) => {
    const backup = /^backup-(\d+)-/.exec(name)
    return backup === null || Number(backup[1]) === process.pid || !processAlive(Number(backup[1]), backupCommand)
  })
}

export interface OpenedDataDir {
  paths: DataDirPaths
  db: Db
  secret: Uint8Array
}

/**
 * Creates what is missing (idempotent), applies migrations and empties tmp/ (leftovers of uploads
 * a crash interrupted). Throws ConfigError when the directory is unusable.
 */
export function openDataDir(root: string, options: { sweepTmp?: boolean; warn?: (line: string) => void } = {}): OpenedDataDir {
  const paths = dataDirPaths(root)
  ensureWritableDirectory(root)
  refuseForeignDirectory(root)
  refuseLostDatabase(paths)
  // uploads (and the password hashes beside them) are the owner's alone, as the README says
  mkdirSync(join(paths.blobs, 'sha256'), { recursive: true, mode: 0o700 })
  mkdirSync(paths.tmp, { recursive: true, mode: 0o700 })
  // While another process serves this directory, tmp/ holds its uploads in flight: not leftovers.
  if (options.sweepTmp !== false && lockHolder(paths) === null) {
    for (const name of tmpLeftovers(paths.tmp)) rmSync(join(paths.tmp, name), { recursive: true, force: true })
  }
  const secret = readOrCreateSecret(paths, options.warn ?? ((line) => process.stderr.write(`miniship: warning: ${line}\n`)))
  readOrCreateInsightsKey(paths)
  if (existsSync(paths.database)) {
    try {
      accessSync(paths.database, constants.R_OK | constants.W_OK)
    } catch {
      throw new ConfigError(`database ${paths.database} is not writable by this user`)
    }
  }
  refuseMigratingUnderAnotherHolder(paths)
  let db: Db
  try {
    db = openDatabase(paths.database)
  } catch (error) {
    if (error instanceof NewerSchemaError) throw error
    throw new ConfigError(`database ${paths.database} cannot be opened: ${(error as Error).message}; run miniship doctor, or restore a backup`)
  }
  // SQLite creates files with the process umask (usually 0644); the database holds password hashes
  for (const file of [paths.database, `${paths.database}-wal`, `${paths.database}-shm`]) {
    if (existsSync(file)) chmodSync(file, 0o600)
  }
  return { paths, db, secret }
}

/**
 * An older miniship still serving the directory (an upgrade whose new binary ran `serve`, `init` or
 * `create-admin` before the old `serve` stopped) must not have the database migrated under it: it
 * would go on serving a schema it does not know, refuse to start again, and its backups could no
 * longer be restored by it. Nothing is written; the caller stops with one line.
 */
function refuseMigratingUnderAnotherHolder(paths: DataDirPaths): void {
  if (!existsSync(paths.database)) return
  const holder = lockHolder(paths)
  if (holder === null || holder === process.pid) return
  const schema = pendingMigrations(paths.database)
  if (schema === null || schema.pending === 0) return
  throw new ConfigError(
    `another miniship (pid ${holder}) is already serving ${paths.root} on database schema version ${schema.applied}; stop it first: this miniship would apply ${schema.pending} migrations (schema version ${schemaVersion}) under it. Then start this miniship's serve, which applies them`,
    'DATA_DIR_IN_USE',
  )
}

/**
 * What every command that needs the data directory to itself (serve, restore, migrate-storage,
 * doctor --fix) says when a running miniship holds its lock: the same words, exit 2 and
 * DATA_DIR_IN_USE, since the operator must stop that one first. `more` adds what else may be done.
 */
export function dataDirInUse(paths: Pick<DataDirPaths, 'root' | 'lock'>, holder: number, more = ''): ConfigError {
  const running = lockingCommandOf(holder)
  const what = running === null ? `is already serving ${paths.root}; stop it first` : `is running ${running} on ${paths.root}; let it finish first`
  return new ConfigError(`another miniship (pid ${holder}) ${what} (if none runs, remove ${paths.lock})${more}`, 'DATA_DIR_IN_USE')
}

/**
 * The subcommand other than serve that holds the lock (`restore`, `migrate-storage`, `doctor --fix`),
 * read from /proc; null for serve, or where the command line cannot be read.
 */
function lockingCommandOf(pid: number): string | null {
  let commandLine: string
  try {
    commandLine = readFileSync(`/proc/${pid}/cmdline`, 'utf8')
  } catch {
    return null
  }
  return lockingCommandIn(commandLine)
}

/**
 * The same, of a NUL-separated command line: its subcommand is the first of the words after the
 * program that names one, so `miniship serve --data-dir restore` is serve, whatever its arguments say.
 */
export function lockingCommandIn(commandLine: string): string | null {
  const command = commandLine
    .split('\u0000')
    .slice(1, 4)
    .find((word) => word === 'serve' || word === 'restore' || word === 'migrate-storage' || word === 'doctor')
  return command === undefined || command === 'serve' ? null : command === 'doctor' ? 'doctor --fix' : command
}

/** Held by `serve`: a second server on the same data directory refuses to start. */
export function acquireLock(paths: DataDirPaths): () => void {
  const mine = String(process.pid)
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(paths.lock, 'wx', 0o600)
      writeFileSync(fd, mine + '\n')
      closeSync(fd)
      return () => {
        try {
          if (readFileSync(paths.lock, 'utf8').trim() === mine) rmSync(paths.lock, { force: true })
        } catch {
          // already gone
        }
      }
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
      const holder = lockHolder(paths)
      if (holder !== null && holder !== process.pid) {
        throw dataDirInUse(paths, holder)
      }
      // The holder died without cleaning up (SIGKILL, power loss): the lock is stale.
      rmSync(paths.lock, { force: true })
    }
  }
  throw new ConfigError(`could not take the lock ${paths.lock}`)
}

/** The pid of the live process holding the lock, or null when there is none (or it died). */
export function lockHolder(paths: Pick<DataDirPaths, 'lock'>): number | null {
  let holder: number
  try {
    holder = Number(readFileSync(paths.lock, 'utf8').trim())
  } catch {
    return null
  }
  return Number.isInteger(holder) && holder > 0 && (holder === process.pid || processAlive(holder)) ? holder : null
}

/** Whether `pid` is a `miniship backup` still running (another process than this one). */
export function backupRunning(pid: number): boolean {
  return pid !== process.pid && processAlive(pid, backupCommand)
}

/** A command line (NUL-separated, as /proc has it) of a miniship that takes the lock, or of one running a backup. */
const lockCommand = /miniship|\u0000(serve|doctor|restore|migrate-storage)\u0000/
const backupCommand = /(miniship|main\.ts).*\u0000backup\u0000/

/**
 * Whether `pid` is a live miniship. After a crash and a reboot the pid in a stale lock may belong
 * to some other program; where /proc tells, a process whose command line names none of our
 * lock-taking subcommands is not taken for a holder.
 */
function processAlive(pid: number, command = lockCommand): boolean {
  try {
    process.kill(pid, 0)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false
  }
  let commandLine: string
  try {
    commandLine = readFileSync(`/proc/${pid}/cmdline`, 'utf8')
  } catch {
    return true
  }
  return command.test(commandLine + '\u0000')
}
