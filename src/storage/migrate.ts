// migrate-storage: copy every stored file of a data directory into a bucket, verify each by reading it back, then switch.
import { existsSync } from 'node:fs'
import { ConfigError, readStorageFile, type S3StorageConfig } from '../config'
import { acquireLock, dataDirPaths } from '../data-dir'
import { refuseNewerSchema } from '../db/open'
import { hashBlob } from '.'
import { createLocalBlobStore } from './local'
import { openS3Store } from './s3'
import { referencedBlobsIn } from './gc'
import { writeStorageFileThen } from './storage-file'

/** A migration that cannot go on; the message names the problem, and storage.json is untouched. */
export class MigrateError extends Error {}

export interface MigrateResult {
  copied: number
  alreadyThere: number
  bytes: number
}

/**
 * Copies the data directory's blobs into the bucket of `target`, then reads each back and checks
 * its sha256, then checks every file the database refers to is in the bucket, and only then writes
 * storage.json so that the next `serve` uses the bucket. Runs under the data directory's lock (no
 * server may take uploads meanwhile). The local copies stay until the operator removes them.
 * A prefix whose owner marker names another data directory is refused (ConfigError) before
 * anything is copied; an unmarked one may be filled. storage.json records a new installation id
 * and the marker names it.
 */
export async function migrateToS3(dataDir: string, target: S3StorageConfig, progress: (line: string) => void = () => {}): Promise<MigrateResult> {
  const paths = dataDirPaths(dataDir)
  if (!existsSync(paths.database)) throw new MigrateError(`there is no miniship database in ${dataDir}`)
  if (readStorageFile(dataDir)?.storage === 's3') throw new MigrateError(`${dataDir} already keeps its stored files in S3 (see storage.json)`)
  refuseNewerSchema(paths.database)
  const releaseLock = acquireLock(paths)
  // stopped midway (Ctrl-C, a SIGTERM): nothing is switched before the end, so say so and free the lock
  let switching = false
  const interrupted = (signal: NodeJS.Signals) => {
    releaseLock()
    // storage.json is written first, then the bucket's owner marker: stopped between the two, the
    // next serve writes the marker (it reads the owner id from storage.json)
    const state = switching
      ? 'it was switching: storage.json may already name the bucket, and the next serve then completes the switch; run miniship doctor to see which storage the directory uses'
      : 'nothing was switched (files copied so far stay in the bucket; run migrate-storage again)'
    process.stderr.write(`\nminiship: interrupted by ${signal}; ${state}\n`)
    process.exit(signal === 'SIGINT' ? 130 : 143)
  }
  process.once('SIGINT', interrupted)
  process.once('SIGTERM', interrupted)
  try {
    const local = createLocalBlobStore(paths)
    // a local data directory has no owner id yet: it gets a new one, or the prefix is another's
    // a bucket that refuses the settings is refused as serve and backup refuse it (ConfigError, exit 2)
    const { store: bucket, ownership } = await openS3Store({ ...target, recorded: undefined }, paths, 'fill', (message, code) => new ConfigError(message, code))
    const blobs = await local.list()
    const result: MigrateResult = { copied: 0, alreadyThere: 0, bytes: 0 }
    let done = 0
    for (const blob of blobs) {
      progress(`copying stored files ${++done}/${blobs.length}…`)
      if ((await bucket.size(blob.sha256)) === blob.size && (await hashBlob(bucket.read(blob.sha256), bucket.timeoutMs)) === blob.sha256) {
        result.alreadyThere++
        continue
      }
      // a damaged local file is the data directory's problem, not the bucket's: nothing of it is copied
      const localHash = await hashBlob(local.read(blob.sha256))
      if (localHash !== blob.sha256) throw new MigrateError(`stored file ${local.describe(blob.sha256)} is damaged: its content hashes to ${localHash}; nothing was switched, run miniship doctor`)
      await bucket.putFile(blob.sha256, local.path(blob.sha256))
      result.copied++
      result.bytes += blob.size
    }
    done = 0
    for (const blob of blobs) {
      progress(`verifying stored files in the bucket ${++done}/${blobs.length}…`)
      const actual = await hashBlob(bucket.read(blob.sha256), bucket.timeoutMs).catch((error: Error) => `unreadable (${error.message})`)
      if (actual !== blob.sha256) {
        // no bad copy stays under the good name: the next run copies it again
        await bucket.deleteObject(`blobs/sha256/${blob.sha256.slice(0, 2)}/${blob.sha256}`).catch(() => {})
        throw new MigrateError(`${bucket.describe(blob.sha256)} does not read back intact (${actual}); nothing was switched, run migrate-storage again`)
      }
    }
    for (const sha256 of referencedBlobsIn(paths.database)) {
      if ((await bucket.size(sha256)) === null) throw new MigrateError(`the database refers to ${bucket.describe(sha256)}, which is neither in the data directory nor in the bucket; run miniship doctor; nothing was switched`)
    }
    // storage.json first, then the marker: a marker naming an id no storage.json records would lock the prefix
    switching = true
    await writeStorageFileThen(dataDir, target, ownership.owner, async () => {
      if (ownership.kind !== 'claim') return
      try {
        await bucket.claim(ownership.owner)
      } catch (error) {
        // the copies stay in the bucket; another run (or the prefix's owner) finds them
        const next = error instanceof ConfigError ? '' : ', run migrate-storage again'
        throw new MigrateError(`${(error as Error).message}; nothing was switched${next}`)
      }
    })
    return result
  } finally {
    process.off('SIGINT', interrupted)
    process.off('SIGTERM', interrupted)
    releaseLock()
  }
}

