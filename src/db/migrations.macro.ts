// Read at build time (a Bun macro): the SQL migrations travel inside the binary, not beside it.
import { readMigrationFiles } from 'drizzle-orm/migrator'
import { join } from 'node:path'

export function embeddedMigrations() {
  return readMigrationFiles({ migrationsFolder: join(import.meta.dir, '../../migrations') })
}
