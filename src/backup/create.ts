// `miniship backup`: a consistent .tar.gz of a data directory (database snapshot, the blobs it refers to,
// the signing secret, backup.json), taken while a server may be running and writing.
import { createReadStream, createWriteStream, existsSync, linkSync, copyFileSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, type Stats } from 'node:fs'
import { basename, dirname, join, resolve, sep } from 'node:path'
import { Database } from 'bun:sqlite'
import type { TarArchive as TarArchiveType } from 'archiver'
import { backupRunning, backupStagingName, dataDirPaths, deadBackupStagings, fsyncPath, type DataDirPaths } from '../data-dir'
import { appliedMigrationCount, refuseNewerSchema } from '../db/open'
import { blobPath, createLocalBlobStore, idleOf, type BlobStore } from '../storage'
import { idleTimeoutStream } from '../storage/idle'
import { isS3BlobStore, storageErrorText } from '../storage/s3'
import { referencedBlobs } from '../storage/gc'
import { productVersion } from '../version'
import { databaseBytes, freeBytesAt } from '../disk-space'
import { sizeText } from '../terminal/size'
import { BackupError, BackupInputError, blobArchivePath, manifestFormat, manifestFormatVersion, manifestName, type BackupManifest, type ManifestFile } from './manifest'

export interface BackupProgress {
  (line: string): void
}

export interface BackupOptions {
  dataDir: string
  /** the archive to write; `<out>.partial` is used until it is complete */
  out: string
  now?: () => Date
  progress?: BackupProgress
  /** paths to delete if the process is interrupted (the CLI removes them on SIGINT/SIGTERM) */
  cleanup?: Set<string>
  /** where the stored files are (default: the data directory); a bucket's are copied out of it */
  store?: BlobStore
  /** leave the stored files out (a bucket with its own versioning keeps them); backup.json says so */
  skipBlobs?: boolean
}

export interface BackupResult {
  out: string
  manifest: BackupManifest
  archiveBytes: number
}

/** `miniship-backup-20261122T100000Z.tar.gz` */
export function defaultBackupName(now: Date): string {
  return `miniship-backup-${now.toISOString().replace(/[-:]/g, '').replace(/\.\d{3}Z$/, 'Z')}.tar.gz`
}

/**
 * What is at `path`, or undefined when nothing is there, also when a directory on the way is a
 * file: statSync throws ENOTDIR then, even with throwIfNoEntry false, and `--out /etc/passwd/x.tar.gz`
 * ended as "ENOTDIR: not a directory, stat …" (exit 1) instead of naming the missing directory.
 */
function statIfAny(path: string): Stats | undefined {
  try {
    return statSync(path)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined
    throw error
  }
}

/**
 * The archive path `--out` asks for. No `--out`: the default name in `cwd`. An `--out` that ends in
 * `/` or names an existing directory: the default name inside that directory, made (0700, as the
 * archive holds the secret) when missing; without this, `--out backups/` wrote a file named
 * `backups`. Anything else: that file.
 */
export function backupTarget(out: string | undefined, now: Date, cwd = process.cwd()): string {
  if (out === undefined) return resolve(cwd, defaultBackupName(now))
  const path = resolve(cwd, out)
  const existing = statIfAny(path)
  const namesDirectory = out.endsWith('/') || out.endsWith(sep) || existing?.isDirectory() === true
  if (!namesDirectory) return path
  if (existing !== undefined && !existing.isDirectory()) throw new BackupInputError(`${path} is a file, not a directory to put the archive in`, 'OUT_DIR_NOT_FOUND')
  try {
    mkdirSync(path, { recursive: true, mode: 0o700 })
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOTDIR') throw new BackupInputError(`could not create the directory ${path}: a directory on its way is a file`, 'OUT_DIR_NOT_FOUND')
    throw new BackupError(`could not create the directory ${path}: ${(error as Error).message}`)
  }
  return join(path, defaultBackupName(now))
}

/** A deleted version can remove a blob between snapshot and staging; a fresh snapshot no longer needs it. */
const snapshotAttempts = 5

async function hashFile(path: string): Promise<{ sha256: string; size: number }> {
  const hasher = new Bun.CryptoHasher('sha256')
  let size = 0
  for await (const chunk of createReadStream(path)) {
    hasher.update(chunk as Buffer)
    size += (chunk as Buffer).byteLength
  }
  return { sha256: hasher.digest('hex'), size }
}

/** A write that failed for want of room: ENOSPC from the file system, SQLITE_FULL from VACUUM INTO. */
export function isDiskFull(error: unknown): boolean {
  const code = String((error as { code?: unknown }).code ?? '')
  return code === 'ENOSPC' || code.startsWith('SQLITE_FULL') || /database or disk is full|no space left on device/i.test((error as Error).message ?? '')
}

/**
 * The line for a backup whose staging does not fit: which directory's file system is full, how
 * much the database copy needs there and how much is free, and what to do. Null when it fits (a
 * tenth more than the database, as VACUUM INTO writes a little beside the pages).
 */
export function stagingSpaceProblem(tmp: string, databaseBytes: number, freeBytes: number): string | null {
  const needed = databaseBytes + Math.ceil(databaseBytes / 10)
  if (freeBytes >= needed) return null
  return `the file system of ${tmp} is full: the backup copies the database there first and needs about ${sizeText(needed)}, ${sizeText(freeBytes)} are free; free space on it (miniship doctor says how much uploads and backups need), then run the backup again`
}

/**
 * What a backup says when a disk filled while it ran. From a bucket the stored files are downloaded
 * into the staging in tmp/; a local store's files are linked there, not copied, so what filled a disk
 * is the archive being written (or the database copy, which stagingSpaceProblem checks first).
 */
export function diskFullText(fromBucket: boolean, tmp: { dir: string; free: number }, out: { dir: string; free: number }): string {
  if (fromBucket) return `the file system of ${tmp.dir} is full: the backup stages the stored files it downloads from the bucket there (${sizeText(tmp.free)} free); free space on it, then run the backup again`
  return `a file system is full: ${sizeText(out.free)} free where the archive is written (${out.dir}), ${sizeText(tmp.free)} in ${tmp.dir}; free space, then run the backup again`
}

/** Copies the live database with VACUUM INTO: a consistent snapshot read inside one read transaction. */
function snapshotDatabase(paths: DataDirPaths, target: string): void {
  rmSync(target, { force: true })
  const source = new Database(paths.database, { readonly: true, strict: true })
  try {
    source.exec('PRAGMA busy_timeout = 10000')
    source.query('VACUUM INTO ?').run(target)
  } catch (error) {
    // the copy took what was free after all (a server wrote meanwhile): say where, not SQLite's words
    rmSync(target, { force: true })
    if (isDiskFull(error)) throw new BackupError(stagingSpaceProblem(paths.tmp, databaseBytes(paths.database), freeBytesAt(paths.tmp)) ?? `the file system of ${paths.tmp} filled up while the database was copied there; free space on it, then run the backup again`)
    throw new BackupError(`could not snapshot the database ${paths.database}: ${(error as Error).message}`)
  } finally {
    source.close()
  }
}

/**
 * A hard link keeps a blob's bytes ours even if the server deletes it a moment later; a copy
 * does the same where links are not supported. False when the blob is gone already.
 */
function stageBlob(source: string, target: string): boolean {
  mkdirSync(dirname(target), { recursive: true })
  try {
    linkSync(source, target)
    return true
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ENOENT') return false
    if (code === 'EEXIST') return true
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EXDEV' && code !== 'EMLINK') throw error
  }
  try {
    copyFileSync(source, target)
    return true
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false
    throw error
  }
}

/** A blob of a bucket, downloaded into the staging directory; false when the object is gone. */
async function copyOutOfStore(store: BlobStore, sha256: string, target: string): Promise<boolean> {
  mkdirSync(dirname(target), { recursive: true })
  if ((await store.size(sha256)) === null) return false
  const idle = idleOf(store)
  const blob = store.read(sha256)
  // a bucket that stops sending fails the backup after its timeout instead of holding it open
  if (idle === undefined) {
    await Bun.write(target, blob)
    return true
  }
  let cause: Error | null = null
  try {
    await Bun.write(target, new Response(idleTimeoutStream(blob.stream().getReader(), idle, null, (error) => (cause = error))))
  } catch (error) {
    // Bun.write says only "an unexpected error has occurred" of a body that failed: say what the bucket did
    if (isDiskFull(error)) throw error
    throw new BackupError(`downloading stored file ${store.describe(sha256)} from the bucket: ${storageErrorText(cause ?? error)}; nothing was written, run the backup again once the bucket answers`)
  }
  return true
}

interface Staged {
  snapshot: string
  schemaVersion: number
  /** sha256 → staged path */
  blobs: Map<string, string>
}

/**
 * Snapshot, then pin every blob it refers to. If one vanished in between (its version was deleted
 * and the blob collected), the snapshot is stale: take a new one, which no longer refers to it.
 */
async function stageSnapshot(paths: DataDirPaths, staging: string, progress: BackupProgress, store: BlobStore, skipBlobs: boolean): Promise<Staged> {
  const snapshot = join(staging, 'miniship.db')
  const blobs = new Map<string, string>()
  for (let attempt = 1; attempt <= snapshotAttempts; attempt++) {
    progress('snapshotting the database…')
    snapshotDatabase(paths, snapshot)
    const database = new Database(snapshot, { readonly: true, strict: true })
    let referenced: Set<string>
    let schemaVersion: number
    try {
      schemaVersion = appliedMigrationCount(database)
      const hasVersions = database.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'versions'").get()
      referenced = hasVersions && !skipBlobs ? referencedBlobs(database) : new Set()
    } finally {
      database.close()
    }
    const missing: string[] = []
    let done = 0
    for (const sha256 of referenced) {
      if (!/^[0-9a-f]{64}$/.test(sha256)) throw new BackupError(`the database refers to a stored file by an invalid hash (${JSON.stringify(sha256)}); run miniship doctor`)
      if (!blobs.has(sha256)) {
        const target = join(staging, blobArchivePath(sha256))
        const staged = store.kind === 'local' ? stageBlob(blobPath(paths, sha256), target) : await copyOutOfStore(store, sha256, target)
        if (staged) blobs.set(sha256, target)
        else missing.push(sha256)
      }
      if (++done % 200 === 0) progress(`pinning stored files ${done}/${referenced.size}…`)
    }
    if (missing.length === 0) {
      // Files pinned for an earlier snapshot that this one no longer needs stay out of the archive.
      for (const [sha256, path] of blobs) {
        if (!referenced.has(sha256)) {
          rmSync(path, { force: true })
          blobs.delete(sha256)
        }
      }
      return { snapshot, schemaVersion, blobs }
    }
    if (attempt === snapshotAttempts) {
      throw new BackupError(`the database refers to ${missing.length} stored file(s) that do not exist, e.g. ${store.describe(missing[0]!)}; run miniship doctor`)
    }
  }
  throw new BackupError('unreachable')
}

/**
 * Removes the partial archives that killed runs (SIGKILL, a cron timeout, power loss) left beside
 * `out`: `<out>.<pid>.partial` (or `<out>.partial`, as runs named it before) and default-named
 * `miniship-backup-….tar.gz.<pid>.partial`. Each is a copy of the secret and the database that
 * nothing else would remove. A run still writing (its pid a live backup) keeps its own.
 */
function removeKilledPartials(out: string): void {
  const directory = dirname(out)
  const name = basename(out)
  let names: string[]
  try {
    names = readdirSync(directory)
  } catch {
    return
  }
  for (const entry of names) {
    const partial = /^(.+)\.(\d+)\.partial$/.exec(entry)
    const ours = entry === `${name}.partial` || (partial !== null && (partial[1] === name || /^miniship-backup-\d{8}T\d{6}Z\.tar\.gz$/.test(partial[1]!)) && !backupRunning(Number(partial[2])))
    if (ours) rmSync(join(directory, entry), { force: true })
  }
}

/**
 * Writes the archive to `<out>.<pid>.partial` beside `out`, fsyncs it and renames it over `out`: an
 * existing archive (last night's) is replaced in one step, and stays whole if this run fails.
 */
async function writeArchive(out: string, manifest: BackupManifest, sources: Map<string, string>, inline: Map<string, Uint8Array>, progress: BackupProgress, cleanup: Set<string>): Promise<number> {
  const partial = `${out}.${process.pid}.partial`
  removeKilledPartials(out)
  rmSync(partial, { force: true })
  cleanup.add(partial)
  const date = new Date(manifest.createdAt)
  /** after a failure: stops reading and writing, so no stream is left open */
  let stop = () => {}
  try {
    const output = createWriteStream(partial, { flags: 'wx', mode: 0o600 })
    stop = () => output.destroy()
    // loaded here, not at the top: archiver is a fifth of the binary's start-up, and only backup needs it
    const { TarArchive } = (await import('archiver')) as { TarArchive: typeof TarArchiveType }
    const archive = new TarArchive({ gzip: true, gzipOptions: { level: 1 } })
    stop = () => {
      archive.abort()
      output.destroy()
    }
    const totalBytes = manifest.files.reduce((sum, file) => sum + file.size, 0)
    let lastReport = 0
    archive.on('progress', (data) => {
      const now = Date.now()
      if (now - lastReport < 100) return
      lastReport = now
      const percent = totalBytes === 0 ? 100 : Math.floor((data.fs.processedBytes / totalBytes) * 100)
      progress(`archiving ${data.entries.processed}/${manifest.files.length + 1} files, ${percent}%…`)
    })
    let fail: (error: Error) => void = () => {}
    const written = new Promise<void>((resolve, reject) => {
      fail = reject
      output.on('close', resolve)
      output.on('error', reject)
      archive.on('error', reject)
      // archiver reports an unreadable source file as a warning; for a backup it is a failure.
      archive.on('warning', reject)
    })
    archive.pipe(output)
    // One entry at a time, each file opened when its turn comes: archiver's `file()` opens its
    // stream lazily but leaves that stream's errors unhandled (a staged file removed by hand
    // mid-archive hung the backup, then killed it with an uncaught ENOENT), and `append()` of a
    // stream starts reading at once (every file of a large backup open together).
    const pending = manifest.files.slice()
    const appendNext = () => {
      const file = pending.shift()
      if (file === undefined) {
        archive.finalize().catch(fail)
        return
      }
      const content = inline.get(file.path)
      if (content !== undefined) {
        archive.append(Buffer.from(content), { name: file.path, mode: 0o600, date })
        return
      }
      const path = sources.get(file.path)!
      const stream = createReadStream(path)
      stream.on('error', fail)
      // stats: the entry's size up front, so the file is streamed, not gathered in memory first
      archive.append(stream, { name: file.path, mode: 0o600, date, stats: statSync(path) })
    }
    archive.on('entry', () => {
      try {
        appendNext()
      } catch (error) {
        fail(error as Error)
      }
    })
    // backup.json first: restore checks each later entry against it as it streams by.
    archive.append(Buffer.from(JSON.stringify(manifest, null, 2) + '\n'), { name: manifestName, mode: 0o600, date })
    await written
    fsyncPath(partial)
    renameSync(partial, out)
    cleanup.delete(partial)
    fsyncPath(dirname(out))
    return statSync(out).size
  } catch (error) {
    stop()
    rmSync(partial, { force: true })
    cleanup.delete(partial)
    if (error instanceof BackupError) throw error
    if (isDiskFull(error)) throw new BackupError(`the file system of ${dirname(out)} is full: the archive could not be written there (${sizeText(freeBytesAt(dirname(out)))} free); free space on it or give another --out, then run the backup again`)
    throw new BackupError(`could not write ${out}: ${(error as Error).message}`)
  }
}

/** Backs up the data directory at `options.dataDir` into `options.out`. Throws BackupError on any failure. */
export async function createBackup(options: BackupOptions): Promise<BackupResult> {
  const progress = options.progress ?? (() => {})
  const cleanup = options.cleanup ?? new Set<string>()
  const now = (options.now ?? (() => new Date()))()
  const paths = dataDirPaths(options.dataDir)
  if (!existsSync(paths.database)) throw new BackupError(`there is no miniship database in ${options.dataDir}; nothing to back up`)
  if (!existsSync(paths.secret)) throw new BackupError(`the signing secret ${paths.secret} is missing; run miniship doctor`)
  refuseNewerSchema(paths.database)
  // a device or a socket where the archive would go (/dev/null): bad input, as a directory that does not exist
  if (statIfAny(options.out)?.isFile() === false) throw new BackupInputError(`${options.out} exists and is not a file; choose another --out`, 'OUT_NOT_A_FILE')
  const outDirectory = statIfAny(dirname(options.out))
  if (outDirectory === undefined) throw new BackupInputError(`the directory ${dirname(options.out)} for ${basename(options.out)} does not exist; create it, or give an --out in one that does`, 'OUT_DIR_NOT_FOUND')
  if (!outDirectory.isDirectory()) throw new BackupInputError(`${dirname(options.out)}, where ${basename(options.out)} would go, is a file, not a directory`, 'OUT_DIR_NOT_FOUND')

  const store = options.store ?? createLocalBlobStore(paths)
  // A bucket prefix of another data directory (its owner marker) is refused as serve refuses it (ConfigError).
  if (isS3BlobStore(store)) await store.ensureOwned()

  // A backup killed midway left its staging (a copy of the database, password hashes included) in
  // tmp/ until the next server start or doctor --fix; a nightly backup beside a server that runs
  // for months never swept it. The next backup does: only those of backups no longer running.
  for (const name of deadBackupStagings(paths.tmp)) rmSync(join(paths.tmp, name), { recursive: true, force: true })
  // Staged inside the data directory so that hard links work (same file system); tmp/ is swept
  // at server startup and by the next backup, so a backup killed midway leaves nothing behind for long.
  const staging = join(paths.tmp, backupStagingName(Bun.randomUUIDv7()))
  try {
    mkdirSync(staging, { recursive: true, mode: 0o700 })
  } catch (error) {
    if (isDiskFull(error)) throw new BackupError(stagingSpaceProblem(paths.tmp, databaseBytes(paths.database), 0)!)
    throw new BackupError(`cannot create a staging directory in ${paths.tmp}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`)
  }
  // a full data disk: said before anything is written, with the numbers (VACUUM INTO said "database or disk is full")
  const short = stagingSpaceProblem(paths.tmp, databaseBytes(paths.database), freeBytesAt(paths.tmp))
  if (short !== null) {
    rmSync(staging, { recursive: true, force: true })
    throw new BackupError(short)
  }
  cleanup.add(staging)
  try {
    const skipBlobs = options.skipBlobs === true
    const staged = await stageSnapshot(paths, staging, progress, store, skipBlobs)
    const secret = readFileSync(paths.secret)
    const sources = new Map<string, string>([['miniship.db', staged.snapshot]])
    const files: ManifestFile[] = [
      { path: 'miniship.db', ...(await hashFile(staged.snapshot)) },
      { path: 'secret.key', size: secret.byteLength, sha256: new Bun.CryptoHasher('sha256').update(secret).digest('hex') },
    ]
    // the keys are read once and archived from memory, so the hash listed is the content written
    const inline = new Map<string, Uint8Array>([['secret.key', secret]])
    // the insights key (device ids are hashed with it): without it a restored server counts every device as new once
    if (existsSync(paths.insightsKey)) {
      const insightsKey = readFileSync(paths.insightsKey)
      files.push({ path: 'insights.key', size: insightsKey.byteLength, sha256: new Bun.CryptoHasher('sha256').update(insightsKey).digest('hex') })
      inline.set('insights.key', insightsKey)
    }
    let checked = 0
    for (const [sha256, path] of [...staged.blobs].sort(([a], [b]) => a.localeCompare(b))) {
      const actual = await hashFile(path)
      // A blob is named after its content: one that is not was damaged on disk after it was stored.
      if (actual.sha256 !== sha256) throw new BackupError(`stored file ${store.describe(sha256)} is damaged (its content hashes to ${actual.sha256}); run miniship doctor`)
      const archivePath = blobArchivePath(sha256)
      files.push({ path: archivePath, ...actual })
      sources.set(archivePath, path)
      if (++checked % 50 === 0) progress(`checking stored files ${checked}/${staged.blobs.size}…`)
    }
    const manifest: BackupManifest = {
      format: manifestFormat,
      formatVersion: manifestFormatVersion,
      productVersion,
      schemaVersion: staged.schemaVersion,
      createdAt: now.toISOString(),
      files,
      blobs: { included: !skipBlobs, storage: store.kind, ...(isS3BlobStore(store) ? { bucket: store.bucket, prefix: store.objectKey('') } : {}) },
      // the installation id: a restore is the same installation moved, and keeps owning its prefix
      ...(isS3BlobStore(store) && store.owner !== null ? { owner: store.owner } : {}),
    }
    const archiveBytes = await writeArchive(options.out, manifest, sources, inline, progress, cleanup)
    return { out: options.out, manifest, archiveBytes }
  } catch (error) {
    if (error instanceof BackupError) throw error
    const code = (error as NodeJS.ErrnoException).code
    // a bucket's stored files are downloaded into the staging: they too need room in tmp/
    if (isDiskFull(error)) throw new BackupError(diskFullText(isS3BlobStore(store), { dir: paths.tmp, free: freeBytesAt(paths.tmp) }, { dir: dirname(options.out), free: freeBytesAt(dirname(options.out)) }))
    if (code === 'ENOENT') throw new BackupError(`a file disappeared while the backup ran (${(error as Error).message}); did a server start on ${options.dataDir}? Run the backup again`)
    // the CLI says "backup failed:" before it
    throw new BackupError((error as Error).message)
  } finally {
    rmSync(staging, { recursive: true, force: true })
    cleanup.delete(staging)
  }
}
