// `miniship init`: create the data directory, secret and database (idempotent).
import { Command } from 'commander'
import { configFrom, runAction, withDataDirOption } from './common'
import { isInitialised, openDataDir } from '../data-dir'
import { closeDatabase, schemaVersion } from '../db/open'
import { createAdminCommandLine } from './startup-notes'

export function initCommand(): Command {
  return withDataDirOption(new Command('init'))
    .description('create the data directory, signing secret and database; safe to run again')
    .addHelpText('after', '\nExample:\n  $ miniship init --data-dir /var/lib/miniship')
    .action((flags) =>
      runAction(() => {
        const config = configFrom(flags)
        const existed = isInitialised(config.dataDir)
        closeDatabase(openDataDir(config.dataDir).db)
        console.log(
          existed
            ? `Data directory ${config.dataDir} is already initialised (schema version ${schemaVersion}).`
            : `Initialised data directory ${config.dataDir} (schema version ${schemaVersion}). Next: ${createAdminCommandLine(config.dataDir)}`,
        )
      }),
    )
}
