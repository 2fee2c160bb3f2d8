// drizzle-kit only generates SQL from src/db/schema.ts; the server applies it (src/db/open.ts).
import { defineConfig } from 'drizzle-kit'

export default defineConfig({
  dialect: 'sqlite',
  schema: './src/db/schema.ts',
  out: './migrations',
})
