// The docs keep up with the code: every setting of config.ts is in docs/operating.md's table with its
// flag and environment variable, and every error code thrown under src/ is in docs/api.md.
import { describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { configSettings, repoRoot, thrownErrorCodes } from './sources'

const read = (path: string) => readFileSync(join(repoRoot, path), 'utf8')

describe('docs/operating.md', () => {
  const rows = read('docs/operating.md')
    .split('\n')
    .filter((line) => line.startsWith('| ') && line.includes('`MINISHIP_'))

  test('config.ts has settings to document (the reader of its table still works)', () => {
    expect(configSettings().length).toBeGreaterThan(20)
    expect(configSettings()).toContainEqual({ name: 'dataDir', env: 'MINISHIP_DATA_DIR', flag: '--data-dir' })
  })

  test('every setting of config.ts has a row with its flag and its environment variable', () => {
    const missing = configSettings()
      .filter(({ env, flag }) => !rows.some((row) => row.includes(`\`${env}\``) && new RegExp(`\`${flag}[\\s\`]`).test(row)))
      .map(({ name, env, flag }) => `${name} (${flag}, ${env})`)
    expect(missing).toEqual([])
  })
})

describe('docs/api.md', () => {
  test('the codes are read from the sources (AppError, field helpers, refusal tables)', () => {
    const codes = thrownErrorCodes()
    for (const code of ['MINI_APP_NOT_FOUND', 'TOKEN_EXPIRED', 'EMPTY_BUNDLE', 'VERSION_NOT_PUBLISHED', 'RANGE_NOT_SATISFIABLE']) expect(codes).toContain(code)
  })

  test('every error code thrown in src/ is in its table', () => {
    const api = read('docs/api.md')
    const missing = [...thrownErrorCodes()].filter((code) => !api.includes(`\`${code}\``)).sort()
    expect(missing).toEqual([])
  })
})
