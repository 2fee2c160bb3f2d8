// storage.json: the data directory's record of where its stored files live and, with S3, its installation id (read by config, written by serve, migrate-storage and restore).
import { existsSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { storageFileName, type StorageConfig, type StorageFile } from '../config'
import { writeFileAtomic } from '../data-dir'

/** What storage.json records for a configuration: the location and the owner id, never the credentials. */
export function storageFileOf(storage: StorageConfig, owner?: string | null): StorageFile {
  if (storage.kind === 'local') return { storage: 'local' }
  return { storage: 's3', s3: { bucket: storage.bucket, endpoint: storage.endpoint, region: storage.region, prefix: storage.prefix }, ...(owner ? { owner } : {}) }
}

/** `owner`: the installation id also named by the prefix's owner marker (S3 only). */
export function writeStorageFile(dataDir: string, storage: StorageConfig, owner?: string | null): void {
  writeFileAtomic(join(dataDir, storageFileName), JSON.stringify(storageFileOf(storage, owner), null, 2) + '\n')
}

/**
 * Writes storage.json, then runs `next` (claiming the prefix's owner marker: in this order a crash
 * between the two leaves an id the next start writes to the marker). When `next` fails, the
 * previous storage.json is put back (or the new one removed), so a refused claim changes nothing.
 */
export async function writeStorageFileThen(dataDir: string, storage: StorageConfig, owner: string | null, next: () => Promise<void>): Promise<void> {
  const path = join(dataDir, storageFileName)
  const previous = existsSync(path) ? readFileSync(path, 'utf8') : null
  writeStorageFile(dataDir, storage, owner)
  try {
    await next()
  } catch (error) {
    if (previous === null) rmSync(path, { force: true })
    else writeFileAtomic(path, previous)
    throw error
  }
}
