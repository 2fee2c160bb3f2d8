// The operator's subcommands: they work on a data directory (the developer's, in client/, talk HTTP).
import type { Command } from 'commander'
import { serveCommand } from './serve'
import { initCommand } from './init'
import { doctorCommand } from './doctor'
import { createAdminCommand } from './create-admin'
import { backupCommand } from './backup'
import { restoreCommand } from './restore'
import { migrateStorageCommand } from './migrate-storage'

export function serverCommands(): Command[] {
  return [serveCommand(), initCommand(), createAdminCommand(), doctorCommand(), backupCommand(), restoreCommand(), migrateStorageCommand()]
}
