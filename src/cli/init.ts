// `miniship init`: create the data directory, secret and database (idempotent).
import { Command } from 'commander'
import { configFrom, runAction, withDataDirOption, withJsonOption } from './common'
import { isInitialised, openDataDir } from '../data-dir'
import { closeDatabase, schemaVersion } from '../db/open'
import { createAdminCommandLine } from './startup-notes'

export function initCommand(): Command {
  return withJsonOption(withDataDirOption(new Command('init')))
    .description('create the data directory, signing secret and database; safe to run again')
    .addHelpText('after', '\nExamples:\n  $ miniship init --data-dir /var/lib/miniship\n  $ miniship init --data-dir /var/lib/miniship --json    # {"dataDir", "created", "schemaVersion", "next"}')
    .action(({ json, ...flags }) =>
      runAction(
        () => {
          const config = configFrom(flags)
          const existed = isInitialised(config.dataDir)
          closeDatabase(openDataDir(config.dataDir).db)
          const next = createAdminCommandLine(config.dataDir)
          if (json) {
            process.stdout.write(`${JSON.stringify({ dataDir: config.dataDir, created: !existed, schemaVersion, next: existed ? null : next }, null, 2)}\n`)
            return
          }
          console.log(
            existed
              ? `Data directory ${config.dataDir} is already initialised (schema version ${schemaVersion}).`
              : `Initialised data directory ${config.dataDir} (schema version ${schemaVersion}). Next: ${next}`,
          )
        },
        { json },
      ),
    )
}
