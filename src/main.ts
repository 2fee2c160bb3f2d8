// The `miniship` executable: one commander subcommand per file in cli/.
import { Command } from 'commander'
import { productVersion } from './version'
import { serveCommand } from './cli/serve'
import { initCommand } from './cli/init'
import { doctorCommand } from './cli/doctor'
import { createAdminCommand } from './cli/create-admin'
import { backupCommand } from './cli/backup'
import { restoreCommand } from './cli/restore'
import { migrateStorageCommand } from './cli/migrate-storage'

const program = new Command('miniship')
  .description('Self-hosted server for React Native miniapps: upload, review, publish, roll back and download them.')
  .version(productVersion, '-v, --version', 'print the version')
  .addHelpText(
    'after',
    '\nExamples:\n  $ miniship serve                      # serve on :3001 with data in ./data (initialised on first run)\n  $ miniship create-admin --email admin@example.com\n  $ miniship doctor --data-dir /var/lib/miniship',
  )
  .addCommand(serveCommand())
  .addCommand(initCommand())
  .addCommand(createAdminCommand())
  .addCommand(doctorCommand())
  .addCommand(backupCommand())
  .addCommand(restoreCommand())
  .addCommand(migrateStorageCommand())

// A bad invocation (unknown command or option, missing or invalid value) is one line naming the
// problem and exit code 2, like a bad configuration value; help and --version exit 0.
for (const command of [program, ...program.commands]) {
  command
    .configureOutput({ outputError: (text, write) => write(`miniship: ${text.replace(/^error: /, '').trim().replace(/\s*\n\s*/g, ' ')} (see miniship ${command === program ? '' : `${command.name()} `}--help)\n`) })
    .exitOverride((error) => {
      process.exit(error.exitCode === 0 ? 0 : 2)
    })
}

await program.parseAsync(process.argv)
