// The docs keep up with the code: every setting of config.ts is in docs/operating.md's table with its
// flag and environment variable, every error code thrown under src/ is in docs/api.md, and api.md
// names each /api route its OpenAPI document leaves out.
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

describe('docs/api.md and /api/openapi.json', () => {
  test('every route under /api is in the OpenAPI document, or api.md names it as the exception', async () => {
    const { createTestContext } = await import('../test-support')
    const context = createTestContext()
    try {
      const document = (await context.call('GET', '/api/openapi.json')).body as { paths: Record<string, Record<string, unknown>> }
      const described = new Set(Object.entries(document.paths).flatMap(([path, operations]) => Object.keys(operations).map((method) => `${method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`)))
      const routes = (context.app as unknown as { routes: { method: string; path: string }[] }).routes.filter((route) => route.path.startsWith('/api/')).map((route) => `${route.method} ${route.path}`)
      expect(routes.length).toBeGreaterThan(40)
      const api = read('docs/api.md')
      const leftOut = routes.filter((route) => !described.has(route))
      expect(leftOut.filter((route) => !api.includes(`\`${route}\``))).toEqual([])
    } finally {
      context.close()
    }
  })
})
