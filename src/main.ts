// The `miniship` executable: one commander subcommand per file in cli/.
import { Command } from 'commander'
import { productVersion } from './version'
import { serveCommand } from './cli/serve'
import { initCommand } from './cli/init'
import { doctorCommand } from './cli/doctor'
import { createAdminCommand } from './cli/create-admin'
import { backupCommand } from './cli/backup'
import { restoreCommand } from './cli/restore'

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
  .showHelpAfterError()

await program.parseAsync(process.argv)
