// `miniship backup`: write a consistent .tar.gz of the data directory, even while `serve` runs.
import { Command } from 'commander'
import { rmSync } from 'node:fs'
import { configFrom, fail, runAction, withDataDirOption } from './common'
import { backupTarget, createBackup } from '../backup/create'
import { BackupError } from '../backup/manifest'
import { removeOnInterrupt, terminalProgress } from '../backup/progress'

function megabytes(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`
}

export function backupCommand(): Command {
  return withDataDirOption(new Command('backup'))
    .description('write the database, every stored file and the signing secret to one .tar.gz; safe while serve runs')
    .option(
      '--out <path>',
      'archive to write; an existing file there is replaced atomically once the new archive is complete (default ./miniship-backup-<UTC timestamp>.tar.gz); a path ending in / or naming an existing directory puts the default-named archive in that directory, created if missing',
    )
    .addHelpText(
      'after',
      '\nThe archive holds the signing secret: keep it as private as the data directory.\n\nExamples:\n  $ miniship backup --data-dir /var/lib/miniship\n  $ miniship backup --data-dir /var/lib/miniship --out /backups/miniship-nightly.tar.gz\n  $ miniship backup --data-dir /var/lib/miniship --out /backups/    # /backups/miniship-backup-<UTC timestamp>.tar.gz',
    )
    .action(({ out, ...flags }: { out?: string; dataDir?: string }) =>
      runAction(async () => {
        const config = configFrom(flags)
        const now = new Date()
        const progress = terminalProgress()
        const cleanup = new Set<string>()
        const uninstall = removeOnInterrupt(cleanup, (path) => rmSync(path, { recursive: true, force: true }))
        try {
          const target = backupTarget(out, now)
          const result = await createBackup({ dataDir: config.dataDir, out: target, now: () => now, progress, cleanup })
          progress.done()
          const blobs = result.manifest.files.length - 2
          console.log(`Backup written to ${result.out} (${blobs} stored file${blobs === 1 ? '' : 's'}, schema version ${result.manifest.schemaVersion}, ${megabytes(result.archiveBytes)})`)
        } catch (error) {
          progress.done()
          if (error instanceof BackupError) fail(`backup failed: ${error.message}`, 1)
          throw error
        } finally {
          uninstall()
        }
      }),
    )
}
