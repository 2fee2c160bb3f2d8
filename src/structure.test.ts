// The import graph of src/ (tests left out): no file imports itself back through others, and the floors
// below the feature modules (storage/, db/, http/, terminal/, config, ids) import no module; the update
// client (sdk/) imports nothing outside itself, and nothing on the server imports the developer CLI.
import { describe, expect, test } from 'bun:test'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'

const root = resolve(import.meta.dir)
const isTestFile = (path: string) => /\.test\.ts$/.test(path) || path.includes('/e2e/') || /\/test-[^/]+\.ts$/.test(path)

function sourceFiles(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) sourceFiles(path, out)
    else if (name.endsWith('.ts') && !isTestFile(path)) out.push(path)
  }
  return out
}

const importPattern = /(?:^|\n)\s*(?:import|export)\s+(?:type\s+)?(?:[^'"]*?\s+from\s+)?['"](\.{1,2}\/[^'"]+)['"]|import\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g

/** Each source file's relative imports, resolved to files (relative to src/). */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>()
  for (const file of sourceFiles(root)) {
    const targets: string[] = []
    for (const match of readFileSync(file, 'utf8').matchAll(importPattern)) {
      const target = resolve(dirname(file), match[1] ?? match[2]!)
      const found = [target, `${target}.ts`, join(target, 'index.ts')].find((candidate) => existsSync(candidate) && statSync(candidate).isFile())
      if (found && found.startsWith(root) && found.endsWith('.ts')) targets.push(relative(root, found))
    }
    graph.set(relative(root, file), targets)
  }
  return graph
}

function cycles(graph: Map<string, string[]>): string[][] {
  const found: string[][] = []
  const state = new Map<string, 'open' | 'done'>()
  const stack: string[] = []
  const visit = (node: string) => {
    state.set(node, 'open')
    stack.push(node)
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === 'open') found.push([...stack.slice(stack.indexOf(next)), next])
      else if (!state.has(next)) visit(next)
    }
    stack.pop()
    state.set(node, 'done')
  }
  for (const node of graph.keys()) if (!state.has(node)) visit(node)
  return found
}

const lowerFloors = ['storage/', 'db/', 'http/', 'terminal/', 'jobs/', 'deps.ts', 'config.ts', 'ids.ts', 'data-dir.ts', 'version.ts']

describe('the import graph of src/', () => {
  const graph = importGraph()

  test('is read: every module index and the app are in it', () => {
    expect(graph.has('app.ts')).toBe(true)
    expect(graph.get('app.ts')!.length).toBeGreaterThan(10)
    expect([...graph.keys()].filter((file) => /^modules\/[^/]+\/index\.ts$/.test(file)).length).toBeGreaterThanOrEqual(10)
  })

  test('has no circle', () => {
    expect(cycles(graph).map((cycle) => cycle.join(' → '))).toEqual([])
  })

  test('no floor below the feature modules imports one', () => {
    const upward: string[] = []
    for (const [file, targets] of graph) {
      if (!lowerFloors.some((floor) => file === floor || file.startsWith(floor))) continue
      for (const target of targets) if (target.startsWith('modules/') || target === 'app.ts') upward.push(`${file} → ${target}`)
    }
    expect(upward).toEqual([])
  })

  test('no feature module imports the app, the subcommands or the developer CLI', () => {
    const wrong: string[] = []
    for (const [file, targets] of graph) {
      if (!file.startsWith('modules/')) continue
      for (const target of targets) if (target === 'app.ts' || target.startsWith('cli/') || target.startsWith('client/')) wrong.push(`${file} → ${target}`)
    }
    expect(wrong).toEqual([])
  })

  test('folders import each other one way only: no arrow runs back up between floors', () => {
    // a file-level circle is caught above; this is the folder-level one (the developer CLI uses the
    // subcommands' JSON errors and help, so subcommands must not import the developer CLI back; the
    // request log reads its mode's type from config, so config must not import http/)
    const folderOf = (file: string) => (file.includes('/') ? file.slice(0, file.indexOf('/') + 1) : file)
    const pairs = new Set<string>()
    for (const [file, targets] of graph) for (const target of targets) if (folderOf(file) !== folderOf(target)) pairs.add(`${folderOf(file)} → ${folderOf(target)}`)
    const both = [...pairs].filter((pair) => {
      const [from, to] = pair.split(' → ')
      return pairs.has(`${to} → ${from}`)
    })
    expect(both).toEqual([])
  })

  test('the update client (sdk/) imports nothing outside itself', () => {
    const wrong: string[] = []
    for (const [file, targets] of graph) {
      if (!file.startsWith('sdk/')) continue
      for (const target of targets) if (!target.startsWith('sdk/')) wrong.push(`${file} → ${target}`)
    }
    expect(wrong).toEqual([])
  })

  test('the check finds a circle and an upward import when there is one', () => {
    const made = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['a.ts']],
    ])
    expect(cycles(made)).toEqual([['a.ts', 'b.ts', 'a.ts']])
  })
})
