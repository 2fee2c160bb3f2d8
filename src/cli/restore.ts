// `miniship restore FILE`: verify a backup archive completely, then put it in place of the data directory.
import { Command } from 'commander'
import { resolve } from 'node:path'
import { accessSync, constants, rmSync, statSync } from 'node:fs'
import { configFrom, fail, runAction, withDataDirOption, withJsonOption, withStorageOptions } from './common'
import { restoreBackup } from '../backup/restore'
import type { ConfigFlags } from '../config'
import { BackupError, BackupInputError, storedFileCount } from '../backup/manifest'
import { removeOnInterrupt, terminalProgress } from '../terminal/progress'
import { timeText } from '../terminal/time'

/**
 * An archive path that names no readable file is bad input (exit 2, like any other), not a failed
 * restore; one that names nothing, or a directory, has its own code, as backup's --out in a
 * directory that does not exist has.
 */
function checkArchivePath(file: string): void {
  const failed = (error: unknown): never => {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ENOENT' || code === 'ENOTDIR') fail(`${file} does not exist; name the archive miniship backup wrote`, 2, 'ARCHIVE_NOT_FOUND')
    return fail(`${file} cannot be read: ${(error as Error).message}`, 2, 'ARCHIVE_UNREADABLE')
  }
  let isFile = false
  try {
    isFile = statSync(file).isFile()
  } catch (error) {
    failed(error)
  }
  // a directory is the wrong thing named, readable or not
  if (!isFile) fail(`${file} is not a file; name the archive miniship backup wrote`, 2, 'ARCHIVE_NOT_FOUND')
  try {
    accessSync(file, constants.R_OK)
  } catch (error) {
    failed(error)
  }
}

export function restoreCommand(): Command {
  return withJsonOption(withStorageOptions(withDataDirOption(new Command('restore'))))
    .description('restore a backup archive into the data directory; checks every file before writing anything')
    .argument('<file>', 'archive written by miniship backup')
    .option('--force', 'replace a data directory that is not empty (never one a running server holds)')
    .addHelpText(
      'after',
      '\nNothing is written until every file in the archive matches backup.json; the restore is unpacked\nbeside the data directory and renamed into place, so a failed restore leaves it as it was.\n\nExamples:\n  $ miniship restore miniship-backup-20261122T100000Z.tar.gz --data-dir /var/lib/miniship\n  $ miniship restore nightly.tar.gz --data-dir /var/lib/miniship --force\n  $ miniship restore nightly.tar.gz --data-dir /var/lib/miniship --json    # {"file", "dataDir", "takenAt", "storedFiles", …}\n  $ miniship restore nightly.tar.gz --data-dir /var/lib/miniship --storage s3 --s3-bucket miniship-artifacts   # stored files into the bucket',
    )
    .action((file: string, { force, json, ...flags }: { force?: boolean; json?: boolean } & ConfigFlags) =>
      runAction(async () => {
        // the restored directory gets the storage.json of this restore (--force replaces one that named another place)
        const config = configFrom(flags, { storageMayMove: true })
        checkArchivePath(file)
        const progress = terminalProgress()
        const cleanup = new Set<string>()
        const uninstall = removeOnInterrupt(cleanup, (path) => rmSync(path, { recursive: true, force: true }))
        try {
          const result = await restoreBackup({ archive: file, dataDir: config.dataDir, force: force === true, progress, cleanup, storage: config.storage, notice: (line) => process.stderr.write(`miniship: ${line}\n`) })
          progress.done()
          const blobs = storedFileCount(result.manifest)
          const migrated = result.migrated > 0 ? `, migrated from schema version ${result.manifest.schemaVersion}` : ''
          if (json) {
            const { createdAt, productVersion, schemaVersion } = result.manifest
            const document = { file: resolve(file), dataDir: config.dataDir, takenAt: createdAt, productVersion, schemaVersion, migrations: result.migrated, storedFiles: blobs, replaced: result.replaced }
            process.stdout.write(`${JSON.stringify(document, null, 2)}\n`)
            return
          }
          console.log(
            `Restored ${file} (taken ${timeText(result.manifest.createdAt)} by miniship ${result.manifest.productVersion}, ${blobs} stored file${blobs === 1 ? '' : 's'}${migrated}) into ${config.dataDir}${result.replaced ? ', replacing what was there' : ''}.`,
          )
        } catch (error) {
          progress.done()
          // a backup of a newer schema: bad input, as a newer database is for every command
          if (error instanceof BackupInputError) fail(error.message, 2, error.code)
          if (error instanceof BackupError) fail(`restore failed: ${error.message}. ${config.dataDir} was left as it was.`, 1, 'RESTORE_FAILED')
          throw error
        } finally {
          uninstall()
        }
      }, { json, oneShot: true }),
    )
}
