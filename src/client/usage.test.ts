// The command line as a user (or a CI script) types it: refusals of the command line itself, with and without --json.
import { describe, expect, test } from 'bun:test'
import { jsonDocument, runCli } from '../cli/test-run'

describe('--json: a command line commander refuses still prints one JSON document (code USAGE, exit 2)', () => {
  const table: [string, string[], string][] = [
    ['an unknown option', ['status', 'com.example.shop', '--bogus', '--json'], "unknown option '--bogus'"],
    ['a missing required option', ['push', 'build', '--version', '1.0.0', '--json'], "required option '--app <appId>' not specified"],
    ['a missing argument', ['channels', 'create', '--app', 'com.example.shop', '--json'], "missing required argument 'name'"],
    ['too many arguments', ['apps', 'ls', 'extra', '--json'], "too many arguments for 'ls'"],
    ['an unknown subcommand', ['keys', 'bogus', '--json'], "unknown command 'bogus' for 'keys'"],
    ['an unknown option of a command that is not a client of the server', ['keys', 'generate', '--bogus', '--json'], "unknown option '--bogus'"],
  ]
  for (const [what, args, message] of table) {
    test(what, async () => {
      const run = await runCli(args)
      expect(run.exitCode).toBe(2)
      const document = jsonDocument(run) as { error: { code: string; message: string } }
      expect(document.error.code).toBe('USAGE')
      expect(document.error.message).toContain(message)
      // the line on stderr stays
      expect(run.stderr).toContain(message)
    })
  }
  test('without --json, stdout stays empty', async () => {
    const run = await runCli(['status', 'com.example.shop', '--bogus'])
    expect(run.exitCode).toBe(2)
    expect(run.stdout).toBe('')
  })
})

describe('a mistyped subcommand is named as one, with the list (not "too many arguments for \'ls\'")', () => {
  const groups: [string, string][] = [
    ['apps', 'ls, create'],
    ['channels', 'ls, create, rm'],
    ['versions', 'ls'],
    ['keys', 'generate, add, ls, revoke'],
    ['webhooks', 'ls, create, rm, test, deliveries'],
  ]
  for (const [group, commands] of groups) {
    test(group, async () => {
      const run = await runCli([group, 'bogus'])
      expect(run.exitCode).toBe(2)
      expect(run.stderr).toContain(`unknown command 'bogus' for '${group}'; its commands: ${commands}`)
    })
  }
  test('an argument the subcommand named does not take is still "too many arguments"', async () => {
    const run = await runCli(['apps', 'ls', 'extra'])
    expect(run.exitCode).toBe(2)
    expect(run.stderr).toContain("too many arguments for 'ls'")
  })
})
