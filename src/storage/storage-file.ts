// storage.json: the data directory's record of where its stored files live and, with S3, its installation id (read by config, written by serve, migrate-storage and restore).
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
