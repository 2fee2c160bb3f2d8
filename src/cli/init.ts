// `miniship init`: create the data directory, secret and database (idempotent).
import { Command } from 'commander'
import { configFrom, runAction, withDataDirOption, withJsonOption } from './common'
import { isInitialised, openDataDir } from '../data-dir'
import { closeDatabase, schemaVersion } from '../db/open'
import { createAdminCommandLine } from './startup-notes'
import { hasActiveAdmin } from '../modules/auth/service'

export function initCommand(): Command {
  return withJsonOption(withDataDirOption(new Command('init')))
    .description('create the data directory, signing secret and database; safe to run again')
    .addHelpText('after', '\nExamples:\n  $ miniship init --data-dir /var/lib/miniship\n  $ miniship init --data-dir /var/lib/miniship --json    # {"dataDir", "created", "schemaVersion", "next"}')
    .action(({ json, ...flags }) =>
      runAction(
        () => {
          const config = configFrom(flags)
          const existed = isInitialised(config.dataDir)
          const { db } = openDataDir(config.dataDir)
          // the next step is the first administrator for as long as there is none, also when init runs again
          // (said only on a first run, a directory initialised earlier without one was just "already initialised")
          const next = hasActiveAdmin(db) ? null : createAdminCommandLine(config.dataDir)
          closeDatabase(db)
          if (json) {
            process.stdout.write(`${JSON.stringify({ dataDir: config.dataDir, created: !existed, schemaVersion, next }, null, 2)}\n`)
            return
          }
          const done = existed ? `Data directory ${config.dataDir} is already initialised (schema version ${schemaVersion}).` : `Initialised data directory ${config.dataDir} (schema version ${schemaVersion}).`
          console.log(next === null ? done : existed ? `${done} It has no administrator yet. Next: ${next}` : `${done} Next: ${next}`)
        },
        { json, oneShot: true },
      ),
    )
}
