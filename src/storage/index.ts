// The blob store (decisions §8): content-addressed files under blobs/sha256/<ab>/<hash>, written via tmp/.
import { open, rename, rm, stat, mkdir, readdir } from 'node:fs/promises'
import { existsSync, createReadStream, rmSync } from 'node:fs'
import { join } from 'node:path'
import type { Readable } from 'node:stream'
import type { Database } from 'bun:sqlite'
import { fsyncPath, type DataDirPaths } from '../data-dir'

const sha256Pattern = /^[0-9a-f]{64}$/

/** A file written to tmp/, hashed while it streamed; not yet in the store. */
export interface TempFile {
  path: string
  sha256: string
  size: number
}

/** Where the blob with this hash lives (whether or not it exists). */
export function blobPath(paths: Pick<DataDirPaths, 'blobs'>, sha256: string): string {
  if (!sha256Pattern.test(sha256)) throw new Error('not a sha256 hex digest')
  return join(paths.blobs, 'sha256', sha256.slice(0, 2), sha256)
}

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
 * The store for one data directory. It remembers which hashes uploads in flight are about to
 * refer to, so that deleting a version (or cleaning up a failed upload) never removes a blob
 * another upload has just moved into place but not yet recorded in the database.
 */
export interface BlobStore {
  paths: Pick<DataDirPaths, 'blobs' | 'tmp'>
  /**
   * Moves a temp file into the store (fsync, rename, fsync the directory) and holds its hash
   * until `release`. `created` is false when an identical blob was already stored: the temp
   * file is then dropped, so identical files are stored once.
   */
  commit(file: TempFile): Promise<{ sha256: string; created: boolean }>
  release(sha256s: Iterable<string>): void
  /** Removes each blob that no database row refers to (`isReferenced`) and no upload holds. */
  removeUnreferenced(sha256s: Iterable<string>, isReferenced: (sha256: string) => boolean): Promise<string[]>
  path(sha256: string): string
  exists(sha256: string): boolean
  list(): Promise<string[]>
}

export function createBlobStore(paths: Pick<DataDirPaths, 'blobs' | 'tmp'>): BlobStore {
  const held = new Map<string, number>()
  const hold = (sha256: string) => held.set(sha256, (held.get(sha256) ?? 0) + 1)
  const release = (sha256s: Iterable<string>) => {
    for (const sha256 of sha256s) {
      const count = (held.get(sha256) ?? 0) - 1
      if (count > 0) held.set(sha256, count)
      else held.delete(sha256)
    }
  }

  return {
    paths,
    async commit(file) {
      const target = blobPath(paths, file.sha256)
      hold(file.sha256)
      try {
        if (existsSync(target)) {
          await rm(file.path, { force: true })
          return { sha256: file.sha256, created: false }
        }
        const directory = join(paths.blobs, 'sha256', file.sha256.slice(0, 2))
        await mkdir(directory, { recursive: true, mode: 0o700 })
        await rename(file.path, target)
        fsyncPath(directory)
        return { sha256: file.sha256, created: true }
      } catch (error) {
        release([file.sha256])
        throw error
      }
    },
    release,
    async removeUnreferenced(sha256s, isReferenced) {
      const removed: string[] = []
      for (const sha256 of new Set(sha256s)) {
        if (held.has(sha256) || isReferenced(sha256)) continue
        // Synchronous on purpose: between the check above and the unlink no upload's `commit` may
        // run, or it could find this blob, drop its own copy, and record a row for a file that goes.
        rmSync(blobPath(paths, sha256), { force: true })
        removed.push(sha256)
      }
      return removed
    },
    path: (sha256) => blobPath(paths, sha256),
    exists: (sha256) => existsSync(blobPath(paths, sha256)),
    async list() {
      const root = join(paths.blobs, 'sha256')
      if (!existsSync(root)) return []
      const found: string[] = []
      for (const prefix of await readdir(root)) {
        for (const name of await readdir(join(root, prefix))) {
          if (sha256Pattern.test(name) && name.startsWith(prefix)) found.push(name)
        }
      }
      return found.sort()
    },
  }
}

async function hashFile(path: string): Promise<string> {
  const hasher = new Bun.CryptoHasher('sha256')
  for await (const chunk of createReadStream(path)) hasher.update(chunk as Buffer)
  return hasher.digest('hex')
}

/** How doctor names a file kind in a sentence. */
const kindNames: Record<string, string> = { bundleIos: 'iOS bundle', bundleAndroid: 'Android bundle', manifest: 'manifest', assetsIos: 'iOS assets', assetsAndroid: 'Android assets' }

/**
 * For `doctor`: every blob a version refers to must exist, have the recorded size and hash to
 * its name, and every version must have its five files. Takes the raw SQLite handle so it works on
 * a database opened read-only. Returns one sentence per problem; an empty list means every stored
 * file is intact.
 */
export async function checkStoredFiles(database: Database, paths: Pick<DataDirPaths, 'blobs'>): Promise<string[]> {
  const referenced = new Map<string, { size: number; versions: string[] }>()
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
    const entry = referenced.get(row.sha256) ?? { size: row.size, versions: [] }
    entry.versions.push(label)
    referenced.set(row.sha256, entry)
  }
  for (const [sha256, { size, versions }] of referenced) {
    const path = blobPath(paths, sha256)
    const usedBy = `used by ${versions.join(', ')}`
    let actualSize: number
    try {
      actualSize = (await stat(path)).size
    } catch {
      problems.push(`stored file ${path} is missing (${usedBy})`)
      continue
    }
    if (actualSize !== size) {
      problems.push(`stored file ${path} has ${actualSize} bytes, ${size} expected (${usedBy})`)
      continue
    }
    const actual = await hashFile(path)
    if (actual !== sha256) problems.push(`stored file ${path} is damaged: its content hashes to ${actual} (${usedBy})`)
  }
  return problems
}
