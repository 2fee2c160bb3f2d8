// `miniship restore`: check a backup archive against its backup.json, unpack it beside the target,
// bring its schema up to date and swap it into place, so a failure leaves the target as it was.
import { closeSync, createReadStream, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, realpathSync, renameSync, rmSync, statSync, writeSync } from 'node:fs'
import { basename, dirname, join, resolve } from 'node:path'
import { createGunzip } from 'node:zlib'
import { pipeline } from 'node:stream/promises'
import { randomBytes } from 'node:crypto'
import { Database } from 'bun:sqlite'
import { dataDirInUse, dataDirPaths, fsyncPath, lockHolder } from '../data-dir'
import { appliedMigrationCount, openDatabase, schemaVersion } from '../db/open'
import { blobPath, createLocalBlobStore } from '../storage'
import { openS3Store, StorageUnreachableError } from '../storage/s3'
import { writeStorageFile } from '../storage/storage-file'
import { ConfigError, type S3StorageConfig, type StorageConfig } from '../config'
import { referencedBlobs, referencedBlobsIn } from '../storage/gc'
import { productVersion } from '../version'
import { BackupError, BackupInputError, blobHashOfPath, isArchivePath, manifestName, parseManifest, type BackupManifest, type ManifestFile } from './manifest'
import { readTar, TarFormatError, type TarEntry, type TarEntrySink } from './tar-reader'

export interface RestoreOptions {
  archive: string
  dataDir: string
  force?: boolean
  progress?: (line: string) => void
  /** one-line notices worth keeping (the CLI writes them to stderr), e.g. leftovers removed */
  notice?: (line: string) => void
  /** paths to delete if the process is interrupted (the CLI removes them on SIGINT/SIGTERM) */
  cleanup?: Set<string>
  /**
   * Where the restored directory keeps its stored files (issue 14): default the data directory.
   * With a bucket, the archive's blobs are uploaded into it (or, for a --skip-blobs backup,
   * found there) and storage.json records it.
   */
  storage?: StorageConfig
}

export interface RestoreResult {
  manifest: BackupManifest
  /** migrations applied during the restore (the backup came from an older miniship) */
  migrated: number
  /** the target held a data directory (or anything) that the restore replaced */
  replaced: boolean
}

const manifestLimitBytes = 64 * 1024 * 1024

/** Streams the archive's entries through `onEntry`, turning gzip and tar failures into one clear BackupError. */
async function readArchive(archive: string, onEntry: (entry: TarEntry) => TarEntrySink | Promise<TarEntrySink>): Promise<void> {
  try {
    await pipeline(createReadStream(archive), createGunzip(), (source: AsyncIterable<Uint8Array>) => readTar(source, onEntry))
  } catch (error) {
    if (error instanceof BackupError) throw error
    const code = (error as NodeJS.ErrnoException).code
    if (error instanceof TarFormatError) throw new BackupError(`${archive} is damaged: ${error.message}`)
    if (code === 'Z_BUF_ERROR') throw new BackupError(`${archive} is truncated: the compressed data ends early`)
    if (code === 'Z_DATA_ERROR') throw new BackupError(`${archive} is damaged or not a .tar.gz backup: ${(error as Error).message}`)
    if (code === 'ENOENT') throw new BackupError(`${archive} does not exist`)
    if (code === 'EISDIR') throw new BackupError(`${archive} is a directory, not a backup archive`)
    throw new BackupError(`cannot read ${archive}: ${(error as Error).message}`)
  }
}

interface Hashed {
  sha256: string
  size: number
}

/** Checks one entry's hash and size against backup.json (and a blob's against its own name). */
function checkEntry(path: string, actual: Hashed, listed: ManifestFile | undefined): void {
  if (!listed) throw new BackupError(`${path} is in the archive but not listed in backup.json: the archive was altered or damaged`)
  if (actual.size !== listed.size) throw new BackupError(`${path} in the archive has ${actual.size} bytes where backup.json says ${listed.size}: the archive is damaged`)
  if (actual.sha256 !== listed.sha256) throw new BackupError(`${path} in the archive is damaged: its sha256 is ${actual.sha256}, backup.json says ${listed.sha256}`)
  const named = blobHashOfPath(path)
  if (named && named !== actual.sha256) throw new BackupError(`${path} in the archive is damaged: its content does not match its name`)
}

function checkEntryName(entry: TarEntry): 'skip' | 'manifest' | 'file' {
  if (entry.type === 'directory') {
    // archivers may record the folders; they carry nothing, but their names must be ours too
    if (entry.name === 'blobs/' || entry.name === 'blobs/sha256/' || /^blobs\/sha256\/[0-9a-f]{2}\/$/.test(entry.name)) return 'skip'
    throw new BackupError(`the archive holds an unexpected folder ${JSON.stringify(entry.name)}: not a miniship backup`)
  }
  if (entry.name === manifestName) return 'manifest'
  if (!isArchivePath(entry.name)) throw new BackupError(`the archive holds an unexpected file ${JSON.stringify(entry.name)}: not a miniship backup`)
  return 'file'
}

function checkSchema(manifest: BackupManifest): void {
  if (manifest.schemaVersion > schemaVersion) {
    // as a newer database is refused everywhere: exit 2, NEWER_SCHEMA
    throw new BackupInputError(
      `the backup has database schema version ${manifest.schemaVersion}, newer than this miniship ${productVersion} knows (${schemaVersion}); restore it with miniship ${manifest.productVersion} or newer`,
      'NEWER_SCHEMA',
    )
  }
}

/**
 * Pass one: read the whole archive, hash every entry and compare with backup.json. Nothing is
 * written. Returns the manifest once every listed file was found intact and nothing else was there.
 */
async function verifyArchive(archive: string, progress: (line: string) => void): Promise<BackupManifest> {
  let manifest: BackupManifest | null = null
  let listed = new Map<string, ManifestFile>()
  const seen = new Map<string, Hashed>()
  let count = 0
  await readArchive(archive, (entry) => {
    const kind = checkEntryName(entry)
    if (kind === 'skip') return { write() {}, end() {} }
    if (seen.has(entry.name) || (kind === 'manifest' && manifest)) throw new BackupError(`the archive holds ${entry.name} twice: it is damaged`)
    if (kind === 'manifest') {
      if (entry.size > manifestLimitBytes) throw new BackupError('backup.json in the archive is implausibly large: the archive is damaged')
      const chunks: Uint8Array[] = []
      return {
        write: (chunk) => void chunks.push(chunk),
        end() {
          manifest = parseManifest(Buffer.concat(chunks))
          // Refuse a newer schema as soon as we know, before reading gigabytes of blobs.
          checkSchema(manifest)
          listed = new Map(manifest.files.map((file) => [file.path, file]))
          for (const [path, hashed] of seen) checkEntry(path, hashed, listed.get(path))
        },
      }
    }
    const hasher = new Bun.CryptoHasher('sha256')
    let size = 0
    return {
      write(chunk) {
        hasher.update(chunk)
        size += chunk.byteLength
      },
      end() {
        const hashed = { sha256: hasher.digest('hex'), size }
        seen.set(entry.name, hashed)
        if (manifest) checkEntry(entry.name, hashed, listed.get(entry.name))
        if (++count % 50 === 0) progress(`verifying ${count} files…`)
      },
    }
  })
  if (!manifest) throw new BackupError(`${archive} has no backup.json: it is not a miniship backup, or it is damaged`)
  const missing = (manifest as BackupManifest).files.filter((file) => !seen.has(file.path))
  if (missing.length > 0) {
    throw new BackupError(`${missing[0]!.path}${missing.length > 1 ? ` and ${missing.length - 1} more file(s)` : ''} listed in backup.json ${missing.length > 1 ? 'are' : 'is'} missing from the archive: it is damaged or incomplete`)
  }
  return manifest
}

/** Pass two: unpack into `directory`, hashing again (the archive could change between the passes). */
async function extractArchive(archive: string, directory: string, manifest: BackupManifest, progress: (line: string) => void): Promise<void> {
  const listed = new Map(manifest.files.map((file) => [file.path, file]))
  const written = new Set<string>()
  let count = 0
  await readArchive(archive, (entry) => {
    const kind = checkEntryName(entry)
    if (kind !== 'file') return { write() {}, end() {} }
    if (!listed.has(entry.name) || written.has(entry.name)) throw new BackupError(`${archive} changed while it was being restored`)
    const target = join(directory, entry.name)
    mkdirSync(dirname(target), { recursive: true, mode: 0o700 })
    const fd = openSync(target, 'wx', 0o600)
    const hasher = new Bun.CryptoHasher('sha256')
    let size = 0
    return {
      write(chunk) {
        hasher.update(chunk)
        size += chunk.byteLength
        for (let offset = 0; offset < chunk.byteLength; ) offset += writeSync(fd, chunk, offset)
      },
      end() {
        fsyncSync(fd)
        closeSync(fd)
        checkEntry(entry.name, { sha256: hasher.digest('hex'), size }, listed.get(entry.name))
        written.add(entry.name)
        if (++count % 50 === 0) progress(`restoring ${count}/${manifest.files.length} files…`)
      },
    }
  })
  if (written.size !== listed.size) throw new BackupError(`${archive} changed while it was being restored`)
}

/** Brings the restored database up to date and checks that every file it refers to came with it. */
function prepareDatabase(directory: string, manifest: BackupManifest, blobsAreLocal = true): number {
  const paths = dataDirPaths(directory)
  const probe = new Database(paths.database, { readonly: true, strict: true })
  let applied: number
  try {
    applied = appliedMigrationCount(probe)
  } catch (error) {
    throw new BackupError(`the database in the backup cannot be read: ${(error as Error).message}`)
  } finally {
    probe.close()
  }
  if (applied !== manifest.schemaVersion) throw new BackupError(`the database in the backup has schema version ${applied}, but backup.json says ${manifest.schemaVersion}: the archive is inconsistent`)
  checkSchema(manifest)
  const db = openDatabase(paths.database)
  try {
    const missing = blobsAreLocal ? [...referencedBlobs(db.$client)].filter((sha256) => !existsSync(blobPath(paths, sha256))) : []
    if (missing.length > 0) throw new BackupError(`the database in the backup refers to ${missing.length} file(s) the archive does not hold, e.g. ${missing[0]}: the backup is incomplete`)
    // Leave a single self-contained database file behind, as a clean shutdown would.
    db.$client.exec('PRAGMA wal_checkpoint(TRUNCATE)')
  } finally {
    db.$client.close()
  }
  mkdirSync(join(paths.blobs, 'sha256'), { recursive: true })
  // uploads in flight (drafts among them) land here: the owner's alone, as openDataDir makes it
  mkdirSync(paths.tmp, { recursive: true, mode: 0o700 })
  return schemaVersion - applied
}

type OpenedBucket = Awaited<ReturnType<typeof openS3Store>>

/**
 * Opens the bucket a restore fills, before anything is written: probed, and its prefix refused
 * (ConfigError) when its owner marker names another installation than the backup's. The
 * restored directory keeps the backup's owner id (it is the same installation moved); a backup
 * from before owner ids gets the marker's when it was taken of this prefix, else (or of local
 * storage) a new one.
 */
function openTargetBucket(staging: string, storage: S3StorageConfig, manifest: BackupManifest): Promise<OpenedBucket> {
  // a backup from before owner ids, taken of this very prefix, is of the installation that marked it
  const sameBucket = manifest.blobs?.storage === 's3' && manifest.blobs.bucket === storage.bucket && (manifest.blobs.prefix ?? '').replace(/\/+$/, '') === storage.prefix
  const recorded = manifest.owner !== undefined ? { owner: manifest.owner } : sameBucket ? { owner: null } : undefined
  // a bucket that refuses the settings is refused as serve and backup refuse it (ConfigError, exit 2)
  return openS3Store({ ...storage, recorded }, dataDirPaths(staging), 'fill', (message, code) => new ConfigError(message, code))
}

/**
 * Restoring into S3 storage: uploads the archive's stored files into the bucket (identical ones
 * already there are kept), checks that every file the database refers to is there, removes the
 * local copies from the staging directory and records the bucket and the owner id in its
 * storage.json (the prefix's owner marker is written once the directory is in place).
 */
async function placeInBucket(staging: string, storage: S3StorageConfig, bucket: OpenedBucket, progress: (line: string) => void): Promise<void> {
  const paths = dataDirPaths(staging)
  const { store } = bucket
  const local = createLocalBlobStore(paths)
  const staged = await local.list()
  let done = 0
  for (const blob of staged) {
    if ((await store.size(blob.sha256)) !== blob.size) await store.putFile(blob.sha256, local.path(blob.sha256))
    if (++done % 20 === 0) progress(`uploading stored files ${done}/${staged.length}…`)
  }
  const missing: string[] = []
  for (const sha256 of referencedBlobsIn(paths.database)) if ((await store.size(sha256)) === null) missing.push(sha256)
  if (missing.length > 0) throw new BackupError(`the database refers to ${missing.length} stored file(s) that are neither in the archive nor in the bucket, e.g. ${store.describe(missing[0]!)}`)
  rmSync(paths.blobs, { recursive: true, force: true })
  mkdirSync(join(paths.blobs, 'sha256'), { recursive: true })
  writeStorageFile(staging, storage, bucket.ownership.owner)
}

/** Staging directories of restores running in this process right now (tests run several at once). */
const activeStagings = new Set<string>()

/** `.<name>.restore-<pid>-<hex>`: the pid lets a later restore tell a live restore's staging from a dead one's. */
function stagingPrefix(target: string): string {
  return `.${basename(target)}.restore-`
}

/** `<pid>-<12 hex>`, or `<12 hex>` as restores named it before; nothing looser (`.data.restore-x.restore-…` belongs to `data.restore-x`). */
const stagingSuffix = /^(?:(\d+)-)?[0-9a-f]{12}$/

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}


/** `.<name>.replaced-`: the directory a restore --force moved aside, removed once the new one is in place. */
function replacedPrefix(target: string): string {
  return `.${basename(target)}.replaced-`
}

/**
 * Removes the staging directories that killed restores (SIGKILL, power loss) left beside `target`,
 * and the replaced directories a killed restore --force was still removing once the new one was in
 * place: each holds a copy of a secret and a database (and the old stored files), and nothing else
 * would ever remove it. A replaced directory is left while `target` does not exist (killed between
 * the two renames: it is the only data directory there is). Spared: those of a restore still
 * running, in this process or in another live one (by the pid in the name; a name without one,
 * from before the pid was recorded, is always a leftover). Returns one line saying what was done,
 * or null when there was nothing.
 */
export function removeRestoreLeftovers(target: string): string | null {
  const parent = dirname(target)
  const prefixes = existsSync(target) ? [stagingPrefix(target), replacedPrefix(target)] : [stagingPrefix(target)]
  const suffixOf = (name: string) => name.slice(prefixes.find((prefix) => name.startsWith(prefix))!.length)
  let names: string[]
  try {
    names = readdirSync(parent).filter((name) => prefixes.some((prefix) => name.startsWith(prefix) && stagingSuffix.test(name.slice(prefix.length))))
  } catch {
    return null // no parent yet: nothing left there
  }
  const removed: string[] = []
  const failed: string[] = []
  for (const name of names) {
    const path = join(parent, name)
    if (activeStagings.has(path)) continue
    const pid = stagingSuffix.exec(suffixOf(name))![1]
    if (pid !== undefined && Number(pid) !== process.pid && processAlive(Number(pid))) continue
    try {
      rmSync(path, { recursive: true, force: true })
      removed.push(name)
    } catch (error) {
      failed.push(`${name} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`)
    }
  }
  if (removed.length === 0 && failed.length === 0) return null
  const parts: string[] = []
  if (removed.length > 0) parts.push(`removed what ${removed.length === 1 ? 'an interrupted restore' : `${removed.length} interrupted restores`} left beside ${target}: ${removed.join(', ')}`)
  if (failed.length > 0) parts.push(`could not remove ${failed.join(', ')}; remove ${failed.length === 1 ? 'it' : 'them'} by hand, ${failed.length === 1 ? 'it holds' : 'they hold'} a copy of the secret`)
  return parts.join('; ')
}

function isEmptyDirectory(path: string): boolean {
  return readdirSync(path).length === 0
}

/** Restores `options.archive` into `options.dataDir`. Throws BackupError naming the problem; the target is then untouched. */
export async function restoreBackup(options: RestoreOptions): Promise<RestoreResult> {
  const progress = options.progress ?? (() => {})
  const cleanup = options.cleanup ?? new Set<string>()
  // Through a symbolic link to the real directory: the swap must happen where the data lives.
  const target = existsSync(options.dataDir) ? realpathSync(options.dataDir) : resolve(options.dataDir)
  const targetExists = existsSync(target)
  let hadContents = false
  if (targetExists) {
    if (!statSync(target).isDirectory()) throw new BackupError(`${options.dataDir} exists and is not a directory`)
    const holder = lockHolder(dataDirPaths(target))
    if (holder !== null) throw dataDirInUse({ root: options.dataDir, lock: dataDirPaths(target).lock }, holder)
    hadContents = !isEmptyDirectory(target)
    if (hadContents && !options.force) {
      throw new BackupInputError(`${options.dataDir} is not empty; restore into an empty or new directory, or pass --force to replace its contents`, 'DATA_DIR_NOT_EMPTY')
    }
  }
  if (!existsSync(options.archive)) throw new BackupError(`${options.archive} does not exist`)
  const swept = removeRestoreLeftovers(target)
  if (swept !== null) (options.notice ?? (() => {}))(swept)

  progress('verifying the archive…')
  const manifest = await verifyArchive(options.archive, progress)

  // Beside the target, so that the final rename stays on one file system.
  const parent = dirname(target)
  mkdirSync(parent, { recursive: true })
  const staging = join(parent, `${stagingPrefix(target)}${process.pid}-${randomBytes(6).toString('hex')}`)
  cleanup.add(staging)
  activeStagings.add(staging)
  try {
    mkdirSync(staging, { mode: 0o700 })
    const storage = options.storage ?? { kind: 'local' }
    // the bucket first: a prefix of another installation is refused before gigabytes are unpacked
    const bucket = storage.kind === 's3' ? await openTargetBucket(staging, storage, manifest) : null
    await extractArchive(options.archive, staging, manifest, progress)
    progress('checking the database…')
    if (storage.kind === 'local' && manifest.blobs?.included === false) {
      throw new BackupError(`the backup was taken with --skip-blobs (its stored files stayed in bucket ${manifest.blobs.bucket ?? '?'}); restore it with --storage s3 and that bucket`)
    }
    const migrated = prepareDatabase(staging, manifest, storage.kind === 'local')
    if (storage.kind === 's3') await placeInBucket(staging, storage, bucket!, progress)
    fsyncPath(staging)

    // Synchronous from here on: a signal cannot land between moving the old directory aside and
    // moving the new one in.
    const holder = targetExists ? lockHolder(dataDirPaths(target)) : null
    if (holder !== null) throw dataDirInUse({ root: options.dataDir, lock: dataDirPaths(target).lock }, holder, ', and restore again: it started during the restore')
    const aside = join(parent, `${replacedPrefix(target)}${process.pid}-${randomBytes(6).toString('hex')}`)
    const replaced = existsSync(target)
    if (replaced) renameSync(target, aside)
    try {
      renameSync(staging, target)
    } catch (error) {
      if (replaced) renameSync(aside, target)
      throw error
    }
    cleanup.delete(staging)
    fsyncPath(parent)
    if (replaced) rmSync(aside, { recursive: true, force: true })
    // Only now, with storage.json in place: a marker naming an id no data directory records would
    // shut every directory out of the prefix. Should writing it fail, serve writes it at its next
    // start; should another data directory have claimed the prefix meanwhile, this one cannot use it.
    if (bucket?.ownership.kind === 'claim') {
      try {
        await bucket.store.claim(bucket.ownership.owner)
      } catch (error) {
        if (error instanceof ConfigError) throw new ConfigError(`${error.message}; ${options.dataDir} was restored but cannot serve from that prefix: restore again with a --s3-prefix of its own`)
        ;(options.notice ?? (() => {}))(`${(error as Error).message}; miniship serve writes it when it starts`)
      }
    }
    return { manifest, migrated, replaced: hadContents }
  } catch (error) {
    // a refused bucket prefix is a configuration refusal (exit 2), like serve's; a bucket that
    // cannot be reached is STORAGE_UNREACHABLE, like serve's
    if (error instanceof BackupError || error instanceof ConfigError || error instanceof StorageUnreachableError) throw error
    const code = (error as NodeJS.ErrnoException).code
    throw new BackupError(`${(error as Error).message}${code ? ` (${code})` : ''}`)
  } finally {
    if (cleanup.has(staging)) {
      rmSync(staging, { recursive: true, force: true })
      cleanup.delete(staging)
    }
    activeStagings.delete(staging)
  }
}
