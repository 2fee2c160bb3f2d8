// The commands the docs show are the commands `--help` describes: each `Usage: miniship …` line in
// README.md and docs/ is exactly the first line of that command's `--help`, every command has one,
// and every `--flag` the docs write after `miniship <command>` is an option of that command.
import { beforeAll, describe, expect, test } from 'bun:test'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { repoRoot } from './sources'

const docFiles = ['README.md', ...readdirSync(join(repoRoot, 'docs')).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)]
const docs = docFiles.map((path) => ({ path, text: readFileSync(join(repoRoot, path), 'utf8') }))

async function help(command: string[]): Promise<string> {
  const child = Bun.spawn([process.execPath, join(repoRoot, 'src', 'main.ts'), ...command, '--help'], { cwd: repoRoot, stdout: 'pipe', stderr: 'pipe', env: { ...process.env, COLUMNS: '200' } })
  const [stdout, exitCode] = await Promise.all([new Response(child.stdout).text(), child.exited])
  if (exitCode !== 0) throw new Error(`miniship ${command.join(' ')} --help exited ${exitCode}`)
  return stdout
}

/** `Commands:` of a help text: the first word of each entry, `help` left out. */
function commandsIn(helpText: string): string[] {
  const section = helpText.split('\nCommands:\n')[1] ?? ''
  return section
    .split('\n\n')[0]!
    .split('\n')
    .map((line) => /^ {2}([a-z][a-z-]*)\b/.exec(line)?.[1])
    .filter((name): name is string => !!name && name !== 'help')
}

describe('the docs and --help agree', () => {
  /** every command path (`serve`, `apps create`) → its --help text */
  const helps = new Map<string, string>()

  beforeAll(async () => {
    // in parallel: each is a process start of a second or two on a busy machine
    const tops = commandsIn(await help([]))
    const texts = await Promise.all(tops.map((top) => help([top])))
    const subs: string[][] = []
    tops.forEach((top, index) => {
      const subcommands = commandsIn(texts[index]!)
      if (subcommands.length === 0) helps.set(top, texts[index]!)
      for (const sub of subcommands) subs.push([top, sub])
    })
    const subTexts = await Promise.all(subs.map((command) => help(command)))
    subs.forEach((command, index) => helps.set(command.join(' '), subTexts[index]!))
  }, 120_000)

  test('there are commands to check', () => {
    expect(helps.size).toBeGreaterThan(15)
    expect(helps.has('apps create')).toBe(true)
  })

  test('each usage line in the docs is the first line of that command’s --help, and every command has one', () => {
    const shown = new Map<string, string>()
    for (const { path, text } of docs) {
      for (const line of text.split('\n')) {
        const usage = /^Usage: miniship ([a-z][a-z-]*(?: [a-z][a-z-]*)?)(?= \[| <|$)/.exec(line.trim())
        if (usage) shown.set(usage[1]!, `${path}: ${line.trim()}`)
      }
    }
    const wrong: string[] = []
    for (const [command, where] of shown) {
      const text = helps.get(command)
      if (!text) wrong.push(`${where}: no such command`)
      else if (where.slice(where.indexOf(': ') + 2) !== text.split('\n')[0]) wrong.push(`${where}: --help says "${text.split('\n')[0]}"`)
    }
    expect(wrong).toEqual([])
    expect([...helps.keys()].filter((command) => !shown.has(command))).toEqual([])
  })

  test('every --flag written after `miniship <command>` in the docs is an option of that command', () => {
    const wrong: string[] = []
    for (const { path, text } of docs) {
      // a command and what follows it on the line, up to the end of a code span, a table cell or a comment
      for (const match of text.matchAll(/\bminiship ([a-z][a-z-]*(?: (?:ls|create))?)([^`|#\n]*)/g)) {
        const command = helps.has(match[1]!) ? match[1]! : match[1]!.split(' ')[0]!
        const helpText = helps.get(command) ?? (command === 'apps' ? helps.get('apps ls') : undefined)
        if (!helpText) continue // prose such as "miniship is", or a log prefix
        for (const flag of match[2]!.matchAll(/(?<![\w-])--[a-z][a-z0-9-]*/g)) {
          if (!new RegExp(`(^|[\\s,])${flag[0]}\\b`, 'm').test(helpText)) wrong.push(`${path}: miniship ${command} … ${flag[0]}`)
        }
      }
    }
    expect(wrong).toEqual([])
  })
})
