// `miniship backup`: write a consistent .tar.gz of the data directory, even while `serve` runs.
import { Command } from 'commander'
import { rmSync } from 'node:fs'
import { resolve } from 'node:path'
import { configFrom, fail, runAction, withDataDirOption, withJsonOption, withStorageOptions } from './common'
import type { ConfigFlags } from '../config'
import { dataDirPaths } from '../data-dir'
import { openBlobStore } from '../storage'
import { backupTarget, createBackup } from '../backup/create'
import { BackupError, BackupInputError, storedFileCount } from '../backup/manifest'
import { removeOnInterrupt, terminalProgress } from '../terminal/progress'
import { sizeText } from '../terminal/size'

export function backupCommand(): Command {
  return withJsonOption(withStorageOptions(withDataDirOption(new Command('backup'))))
    .description('write the database, every stored file and the signing secret to one .tar.gz; safe while serve runs')
    .option(
      '--out <path>',
      'archive to write; an existing file there is replaced atomically once the new archive is complete (default ./miniship-backup-<UTC timestamp>.tar.gz); a path ending in / or naming an existing directory puts the default-named archive in that directory, created if missing',
    )
    .addHelpText(
      'after',
      '\nThe archive holds the signing secret: keep it as private as the data directory.\n\nExamples:\n  $ miniship backup --data-dir /var/lib/miniship\n  $ miniship backup --data-dir /var/lib/miniship --out /backups/miniship-nightly.tar.gz\n  $ miniship backup --data-dir /var/lib/miniship --out /backups/    # /backups/miniship-backup-<UTC timestamp>.tar.gz\n  $ miniship backup --data-dir /var/lib/miniship --json    # {"file", "archiveBytes", "storedFiles", …}',
    )
    .option('--skip-blobs', 'with S3 storage: leave the stored files in the bucket (which should keep versions of its own); backup.json records it')
    .action(({ out, skipBlobs, json, ...flags }: { out?: string; skipBlobs?: boolean; json?: boolean } & ConfigFlags) =>
      runAction(async () => {
        const config = configFrom(flags)
        if (skipBlobs && config.storage.kind !== 's3') fail('--skip-blobs is for S3 storage only: a local data directory\'s stored files exist nowhere else')
        const now = new Date()
        const progress = terminalProgress()
        const cleanup = new Set<string>()
        const uninstall = removeOnInterrupt(cleanup, (path) => rmSync(path, { recursive: true, force: true }))
        try {
          const target = backupTarget(out, now)
          const store = await openBlobStore(config, dataDirPaths(config.dataDir))
          const result = await createBackup({ dataDir: config.dataDir, out: target, now: () => now, progress, cleanup, store, skipBlobs: skipBlobs === true })
          progress.done()
          const blobs = storedFileCount(result.manifest)
          const where = skipBlobs ? `stored files left in bucket ${result.manifest.blobs?.bucket}` : `${blobs} stored file${blobs === 1 ? '' : 's'}`
          if (json) {
            const { createdAt, productVersion, schemaVersion } = result.manifest
            const document = { file: resolve(result.out), archiveBytes: result.archiveBytes, createdAt, productVersion, schemaVersion, storedFiles: blobs, storedFilesInArchive: !skipBlobs, bucket: skipBlobs ? (result.manifest.blobs?.bucket ?? null) : null }
            process.stdout.write(`${JSON.stringify(document, null, 2)}\n`)
            return
          }
          console.log(`Backup written to ${result.out} (${where}, schema version ${result.manifest.schemaVersion}, ${sizeText(result.archiveBytes)})`)
        } catch (error) {
          progress.done()
          // a wrong --out is bad input, as restore's wrong archive path is: exit 2, not a failed backup
          if (error instanceof BackupInputError) fail(error.message, 2, error.code)
          if (error instanceof BackupError) fail(`backup failed: ${error.message}`, 1, 'BACKUP_FAILED')
          throw error
        } finally {
          uninstall()
        }
      }, { json, oneShot: true }),
    )
}
