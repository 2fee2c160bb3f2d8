// Garbage in the data directory: blobs no version row refers to (a crash between the file rename and the
// row commit, or during a delete) and leftovers in tmp/. Collecting is safe only while no server runs:
// a live upload has blobs renamed into place whose row is not committed yet.
import { readdirSync, rmSync, statSync, existsSync } from 'node:fs'
import { join } from 'node:path'
import { Database } from 'bun:sqlite'
import { tmpLeftovers as leftoversIn, type DataDirPaths } from '../data-dir'
import type { BlobStore } from './blob-store'
import { isS3BlobStore } from './s3'
import { blobPath } from './local'

const sha256Pattern = /^[0-9a-f]{64}$/

/** Every blob hash some version refers to (the `version_files` table holds every reference to the blob store). */
export function referencedBlobs(database: Database): Set<string> {
  const referenced = new Set<string>()
  for (const row of database.query('SELECT DISTINCT sha256 FROM version_files').all() as { sha256: string }[]) referenced.add(row.sha256)
  return referenced
}

/** `referencedBlobs` of the database file at `path`, opened read-only for the question and closed. */
export function referencedBlobsIn(path: string): Set<string> {
  const database = new Database(path, { readonly: true, strict: true })
  try {
    return referencedBlobs(database)
  } finally {
    database.close()
  }
}

export interface StoredFile {
  path: string
  size: number
  /** null for a file that is not a correctly placed blob (a stray) */
  sha256: string | null
}

/** Every regular file under blobs/ (walked by hand, so strays anywhere below are found too). */
export function storedFiles(paths: Pick<DataDirPaths, 'blobs'>): StoredFile[] {
  const files: StoredFile[] = []
  const walk = (directory: string, depth: number) => {
    for (const entry of readdirSync(directory, { withFileTypes: true })) {
      const path = join(directory, entry.name)
      if (entry.isDirectory()) walk(path, depth + 1)
      else {
        const placed = depth === 2 && sha256Pattern.test(entry.name) && entry.isFile() && path === blobPath(paths, entry.name)
        files.push({ path, size: entry.isFile() ? statSync(path).size : 0, sha256: placed ? entry.name : null })
      }
    }
  }
  if (existsSync(paths.blobs)) walk(paths.blobs, 0)
  return files
}

export interface Garbage {
  unreferenced: StoredFile[]
  /** names of entries in tmp/ */
  tmpLeftovers: string[]
}

export function findGarbage(paths: Pick<DataDirPaths, 'blobs' | 'tmp'>, database: Database): Garbage {
  const referenced = referencedBlobs(database)
  const unreferenced = storedFiles(paths).filter((file) => file.sha256 === null || !referenced.has(file.sha256))
  return { unreferenced, tmpLeftovers: leftoversIn(paths.tmp) }
}

export interface CollectedGarbage {
  removedFiles: number
  removedBytes: number
  removedTmp: number
}

/**
 * Removes what `findGarbage` finds. The caller must hold the data directory's lock (the server at
 * startup, or doctor --fix): the referenced set is read now, and no upload may commit in between.
 */
export function collectGarbage(paths: Pick<DataDirPaths, 'blobs' | 'tmp'>, database: Database, report: (line: string) => void = () => {}): CollectedGarbage {
  const { unreferenced, tmpLeftovers } = findGarbage(paths, database)
  let removedBytes = 0
  for (const file of unreferenced) {
    rmSync(file.path, { force: true })
    removedBytes += file.size
  }
  for (const name of tmpLeftovers) rmSync(join(paths.tmp, name), { recursive: true, force: true })
  const collected = { removedFiles: unreferenced.length, removedBytes, removedTmp: tmpLeftovers.length }
  const summary = describeCollected(collected)
  if (summary) report(summary)
  return collected
}

/** One sentence for the operator, or null when there was nothing to remove. */
export function describeCollected(collected: CollectedGarbage): string | null {
  const parts: string[] = []
  if (collected.removedFiles > 0) parts.push(`${collected.removedFiles} stored file(s) no version refers to (${collected.removedBytes} bytes)`)
  if (collected.removedTmp > 0) parts.push(`${collected.removedTmp} leftover(s) in tmp/`)
  return parts.length > 0 ? `removed ${parts.join(' and ')}` : null
}

// ---- either store (issue 14): the same collection through the BlobStore interface --------------

/** Whether any version row refers to `sha256`, read now (the server's writes included). */
export function isReferencedNow(database: Database, sha256: string): boolean {
  return database.query('SELECT 1 FROM version_files WHERE sha256 = ? LIMIT 1').get(sha256) !== null
}

/** Blobs in `store` (a bucket, or the data directory) that no version row refers to. */
export async function findStoreGarbage(store: BlobStore, database: Database): Promise<StoredFile[]> {
  return (await storeGarbage(store, database)).files
}

/** The unreferenced blobs of `store` and, in a bucket, the strays under blobs/ (one listing). */
async function storeGarbage(store: BlobStore, database: Database): Promise<{ files: StoredFile[]; strays: { relative: string; size: number }[] }> {
  const referenced = referencedBlobs(database)
  const { blobs, strays } = isS3BlobStore(store) ? await store.listObjects() : { blobs: await store.list(), strays: [] }
  const files: StoredFile[] = blobs.filter((blob) => !referenced.has(blob.sha256)).map((blob) => ({ path: store.describe(blob.sha256), size: blob.size, sha256: blob.sha256 }))
  // a bucket's strays under blobs/ are garbage as a directory's are
  if (isS3BlobStore(store)) for (const stray of strays) files.push({ path: `s3://${store.bucket}/${store.objectKey(stray.relative)}`, size: stray.size, sha256: null })
  return { files, strays }
}

/**
 * Removes unreferenced blobs from `store`. Safe while a server on the same store runs only when
 * it is that server's own store object (its upload holds are then respected): `serve` runs it in
 * the background after start for a bucket; doctor --fix runs it under the data directory's lock,
 * and only it (`removeStrays`) removes a bucket's strays: an operator asked for it.
 */
export async function collectStoreGarbage(store: BlobStore, database: Database, report: (line: string) => void = () => {}, removeStrays = false): Promise<CollectedGarbage> {
  const { files: garbage, strays } = await storeGarbage(store, database)
  const sizes = new Map(garbage.filter((file) => file.sha256 !== null).map((file) => [file.sha256!, file.size]))
  const removed = await store.removeUnreferenced(sizes.keys(), (sha256) => isReferencedNow(database, sha256))
  const collected = { removedFiles: removed.length, removedBytes: removed.reduce((sum, sha256) => sum + (sizes.get(sha256) ?? 0), 0), removedTmp: 0 }
  if (removeStrays && isS3BlobStore(store)) {
    for (const stray of strays) {
      // one that cannot be removed now is found again by the next doctor
      if (!(await store.deleteObject(stray.relative).then(() => true, () => false))) continue
      collected.removedFiles++
      collected.removedBytes += stray.size
    }
  }
  const summary = describeCollected(collected)
  if (summary) report(summary)
  return collected
}
