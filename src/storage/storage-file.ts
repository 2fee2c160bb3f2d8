// storage.json: the data directory's record of where its stored files live (read by config, written by serve and migrate-storage).
import { join } from 'node:path'
import { storageFileName, type StorageConfig, type StorageFile } from '../config'
import { writeFileAtomic } from '../data-dir'

/** What storage.json records for a configuration: the location, never the credentials. */
export function storageFileOf(storage: StorageConfig): StorageFile {
  if (storage.kind === 'local') return { storage: 'local' }
  return { storage: 's3', s3: { bucket: storage.bucket, endpoint: storage.endpoint, region: storage.region, prefix: storage.prefix } }
}

export function writeStorageFile(dataDir: string, storage: StorageConfig): void {
  writeFileAtomic(join(dataDir, storageFileName), JSON.stringify(storageFileOf(storage), null, 2) + '\n')
}
