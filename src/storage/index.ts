// Stored files (decisions §8): uploads received into tmp/ while hashed, the store the configuration picks, and doctor's check.
import { open, rm } from 'node:fs/promises'
import { join } from 'node:path'
import type { Readable } from 'node:stream'
import type { Database } from 'bun:sqlite'
import { hasStoredFiles, type DataDirPaths } from '../data-dir'
import { ConfigError, readStorageFile, type Config } from '../config'
import { sha256Pattern, type BlobStore, type TempFile } from './blob-store'
import { createLocalBlobStore } from './local'
import { idleTimeoutStream } from './idle'
import { createS3BlobStore, isS3BlobStore, openS3Store } from './s3'

export type { BlobStore, TempFile } from './blob-store'
export { blobPath, createLocalBlobStore } from './local'

function tempPath(paths: Pick<DataDirPaths, 'tmp'>): string {
  return join(paths.tmp, `upload-${Bun.randomUUIDv7()}`)
}

/**
 * Streams `source` into a new file in tmp/, hashing as it goes. Awaiting each write before taking
 * the next chunk is the backpressure: the source (and behind it the socket) waits for the disk,
 * so memory stays at a chunk or two whatever the file size. On any error the temp file is removed.
 */
export async function writeTemp(paths: Pick<DataDirPaths, 'tmp'>, source: Readable | AsyncIterable<Uint8Array> | Iterable<Uint8Array>): Promise<TempFile> {
  const path = tempPath(paths)
  const handle = await open(path, 'wx', 0o600)
  const hasher = new Bun.CryptoHasher('sha256')
  let size = 0
  try {
    for await (const chunk of source as AsyncIterable<Uint8Array>) {
      hasher.update(chunk)
      size += chunk.byteLength
      await handle.write(chunk)
    }
    await handle.sync()
  } catch (error) {
    await handle.close().catch(() => {})
    await rm(path, { force: true })
    throw error
  }
  await handle.close()
  return { path, sha256: hasher.digest('hex'), size }
}

/** Writes bytes already in memory (a rewritten manifest) the same way. */
export function writeTempBytes(paths: Pick<DataDirPaths, 'tmp'>, bytes: Uint8Array): Promise<TempFile> {
  return writeTemp(paths, [bytes])
}

export async function removeTemp(file: Pick<TempFile, 'path'>): Promise<void> {
  await rm(file.path, { force: true })
}

/**
 * The store a command that only reads (backup, doctor) opens: with S3, the prefix's owner marker
 * is read first (no probe object is written, so read-only credentials do), so refused
 * credentials, a missing bucket or another data directory's prefix stop it with one line naming
 * the setting (ConfigError, exit 2).
 */
export async function openBlobStore(config: Pick<Config, 'storage'>, paths: Pick<DataDirPaths, 'root' | 'blobs' | 'tmp'>): Promise<BlobStore> {
  if (config.storage.kind !== 's3') return createLocalBlobStore(paths)
  // as serve refuses it: the files are still in the data directory (a migrate-storage not done, or
  // killed before its switch), and the bucket would answer that every one of them is missing
  if (readStorageFile(paths.root)?.storage !== 's3' && hasStoredFiles(paths)) {
    throw new ConfigError(`--storage s3: ${paths.root} keeps its stored files in the data directory; copy them to the bucket first with miniship migrate-storage --to s3`)
  }
  return (await openS3Store(config.storage, paths, 'read', (message, code) => new ConfigError(message, code))).store
}

/** The store the configuration names: the data directory's blobs/ (default) or an S3 bucket. */
export function createBlobStore(config: Pick<Config, 'storage'>, paths: Pick<DataDirPaths, 'blobs' | 'tmp'>, log?: (line: string) => void): BlobStore {
  return config.storage.kind === 's3' ? createS3BlobStore(config.storage, paths, log) : createLocalBlobStore(paths)
}

/**
 * The sha256 of a stored blob's bytes, read as a stream (a file or an S3 object alike); with
 * `idleMs`, a source that sends nothing for that long fails the hash instead of hanging it.
 */
export async function hashBlob(blob: Blob, idleMs?: number): Promise<string> {
  const hasher = new Bun.CryptoHasher('sha256')
  const stream = idleMs === undefined ? blob.stream() : idleTimeoutStream(blob.stream().getReader(), idleMs)
  for await (const chunk of stream) hasher.update(chunk)
  return hasher.digest('hex')
}

/** How long a read from `store` may wait for bytes: the bucket's timeout; a local disk does not stall that way. */
export const idleOf = (store: BlobStore): number | undefined => (isS3BlobStore(store) ? store.timeoutMs : undefined)

/** How doctor names a file kind in a sentence. */
const kindNames: Record<string, string> = { bundleIos: 'iOS bundle', bundleAndroid: 'Android bundle', manifest: 'manifest', assetsIos: 'iOS assets', assetsAndroid: 'Android assets' }

/**
 * For `doctor`: every blob a version refers to must exist, have the recorded size and hash to
 * its name, in either store, and every version must have its five files. Takes the raw SQLite
 * handle so it works on a database opened read-only. Returns one sentence per problem; an empty
 * list means every stored file is intact. A bucket prefix that belongs to another data directory
 * is one problem, and nothing in it is looked at.
 */
export async function checkStoredFiles(database: Database, store: BlobStore): Promise<string[]> {
  if (isS3BlobStore(store)) {
    try {
      await store.ensureOwned()
    } catch (error) {
      return [(error as Error).message]
    }
  }
  // per stored file: each version using it, with the files it is to that version (one blob is often
  // both assets zips of a version: "com.example.shop 1.0.0" was listed twice, and not as what)
  const referenced = new Map<string, { size: number; versions: Map<string, string[]> }>()
  const problems: string[] = []
  const incomplete = database
    .query(`SELECT v.id AS id, v.version AS version, m.app_id AS app_id, count(f.kind) AS files FROM versions v JOIN mini_apps m ON m.id = v.mini_app_id LEFT JOIN version_files f ON f.version_id = v.id GROUP BY v.id HAVING count(f.kind) <> 5`)
    .all() as { id: string; version: string; app_id: string; files: number }[]
  for (const row of incomplete) problems.push(`version ${row.app_id} ${row.version} (${row.id}) records ${row.files} of its 5 files`)
  const rows = database
    .query(`SELECT v.id AS id, v.version AS version, m.app_id AS app_id, f.kind AS kind, f.sha256 AS sha256, f.size AS size FROM version_files f JOIN versions v ON v.id = f.version_id JOIN mini_apps m ON m.id = v.mini_app_id`)
    .all() as { id: string; version: string; app_id: string; kind: string; sha256: string; size: number }[]
  for (const row of rows) {
    const label = `${row.app_id} ${row.version}`
    if (!sha256Pattern.test(row.sha256)) {
      problems.push(`version ${label} (${row.id}) records an invalid hash for its ${kindNames[row.kind] ?? row.kind} file`)
      continue
    }
    const entry = referenced.get(row.sha256) ?? { size: row.size, versions: new Map<string, string[]>() }
    entry.versions.set(label, [...(entry.versions.get(label) ?? []), kindNames[row.kind] ?? row.kind])
    referenced.set(row.sha256, entry)
  }
  for (const [sha256, { size, versions }] of referenced) {
    const path = store.describe(sha256)
    // what to do: a backup holds the file under the name it has in the data directory, but not one made with --skip-blobs
    const usedBy = `used by ${[...versions].map(([label, kinds]) => `${label}: ${kinds.join(', ')}`).join('; ')}; a backup archive (unless it was made with --skip-blobs) holds it as blobs/sha256/${sha256.slice(0, 2)}/${sha256}, to put back`
    let actualSize: number | null
    let actual: string
    try {
      actualSize = await store.size(sha256)
      actual = actualSize === null || actualSize !== size ? '' : await hashBlob(store.read(sha256), idleOf(store))
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code
      if (code !== 'EACCES' && code !== 'EPERM') throw error
      // there, but not readable by this user: restoring it from a backup (the advice for a missing one) is wrong
      problems.push(`stored file ${path} cannot be read by this user (permission denied): run doctor as the user serve runs as, or give the data directory back to that user`)
      continue
    }
    if (actualSize === null) {
      problems.push(`stored file ${path} is missing (${usedBy})`)
      continue
    }
    if (actualSize !== size) {
      problems.push(`stored file ${path} has ${actualSize} bytes, ${size} expected (${usedBy})`)
      continue
    }
    if (actual !== sha256) problems.push(`stored file ${path} is damaged: its content hashes to ${actual} (${usedBy})`)
  }
  return problems
}
