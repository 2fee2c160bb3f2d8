// What the docs must keep up with, read from the sources: the settings of config.ts and the error
// codes thrown under src/ (for docs.test.ts).
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

export const repoRoot = join(import.meta.dir, '..', '..')

/** Every setting of config.ts's `settings` table: its flag, environment variable and fallback text. */
export function configSettings(): { name: string; env: string; flag: string }[] {
  const source = readFileSync(join(repoRoot, 'src', 'config.ts'), 'utf8')
  const table = source.slice(source.indexOf('const settings = {'))
  return [...table.slice(0, table.indexOf('} as const')).matchAll(/^\s*(\w+): \{ env: '(MINISHIP_\w+)', flag: '(--[\w-]+)'/gm)].map((m) => ({ name: m[1]!, env: m[2]!, flag: m[3]! }))
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    // the command-line tool and the update client only relay the server's codes; this folder names codes in its comments
    if (entry.isDirectory()) return ['client', 'docs', 'e2e'].includes(entry.name) && dir.endsWith('src') ? [] : sourceFiles(path)
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') && !entry.name.startsWith('test-') ? [path] : []
  })
}

/**
 * Every error code the server can answer, as written in src/: the literal codes of `new AppError(status, …)`
 * (also inside a conditional), of helpers that take the code first (`badField('CODE', …)`), and the
 * `code: 'CODE'` of refusal tables (the version lifecycle).
 */
export function thrownErrorCodes(): Set<string> {
  const codes = new Set<string>()
  const code = /'([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|[A-Z]{4,})'/g
  for (const file of sourceFiles(join(repoRoot, 'src'))) {
    const text = readFileSync(file, 'utf8')
    for (const m of text.matchAll(/new AppError\(\s*\d{3}\s*,\s*([^,]+?),/g)) for (const c of m[1]!.matchAll(code)) codes.add(c[1]!)
    for (const m of text.matchAll(/\bbadField\(\s*'([A-Z_]+)'/g)) codes.add(m[1]!)
    for (const m of text.matchAll(/\{ code: '([A-Z_]+)', message:/g)) codes.add(m[1]!)
  }
  return codes
}
