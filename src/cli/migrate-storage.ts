// `miniship migrate-storage --to s3`: move a data directory's stored files into a bucket and switch to it.
import { Command, Option } from 'commander'
import { configFrom, fail, runAction, withDataDirOption, withJsonOption, withStorageOptions } from './common'
import { terminalProgress } from '../terminal/progress'
import { migrateToS3, MigrateError } from '../storage/migrate'

export function migrateStorageCommand(): Command {
  return withJsonOption(withStorageOptions(withDataDirOption(new Command('migrate-storage'))))
    .description('copy every stored file into an S3 bucket, verify each by reading it back, then switch the data directory to it (stop serve first)')
    .addOption(new Option('--to <kind>', 'the storage to move to').choices(['s3']).makeOptionMandatory())
    .addHelpText(
      'after',
      '\nCredentials come from MINISHIP_S3_ACCESS_KEY_ID/MINISHIP_S3_SECRET_ACCESS_KEY (or AWS_*). The switch is\nrecorded in the data directory\'s storage.json, which serve reads; the local copies stay until you remove them.\n\nExample:\n  $ miniship migrate-storage --to s3 --data-dir /var/lib/miniship --s3-bucket miniship-artifacts --s3-region eu-west-1\n  $ miniship migrate-storage --to s3 --data-dir /var/lib/miniship --s3-bucket miniship-artifacts --json    # {"dataDir", "bucket", "copied", …}',
    )
    .action(({ to: _to, json, ...flags }) =>
      runAction(async () => {
        // the one command that may name another place than storage.json records (it writes a new one)
        const config = configFrom({ ...flags, storage: 's3' }, { storageMayMove: true })
        if (config.storage.kind !== 's3') throw new Error('unreachable')
        const progress = terminalProgress()
        try {
          const result = await migrateToS3(config.dataDir, config.storage, progress)
          progress.done()
          if (json) {
            const document = { dataDir: config.dataDir, bucket: config.storage.bucket, prefix: config.storage.prefix || null, copied: result.copied, bytes: result.bytes, alreadyThere: result.alreadyThere }
            process.stdout.write(`${JSON.stringify(document, null, 2)}\n`)
            return
          }
          console.log(
            `Moved ${config.dataDir} to bucket ${config.storage.bucket}: ${result.copied} stored file(s) copied (${(result.bytes / 1024 / 1024).toFixed(1)} MB), ${result.alreadyThere} already there, every one verified. serve now uses the bucket (storage.json); the copies in ${config.dataDir}/blobs/ are no longer read and may be removed.`,
          )
        } catch (error) {
          progress.done()
          if (error instanceof MigrateError) fail(`migrate-storage failed: ${error.message}`, 1, 'MIGRATE_FAILED')
          throw error
        }
      }, { json, oneShot: true }),
    )
}
