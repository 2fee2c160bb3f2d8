// The command line as a user (or a CI script) types it: refusals of the command line itself, with and without --json.
import { afterAll, describe, expect, test } from 'bun:test'
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { generateKeyPairSync } from 'node:crypto'
import type { Command } from 'commander'
import { jsonDocument, runCli } from '../cli/test-run'
import { clientCommands } from './index'
import { tempDir } from '../test-support'

test('a long word where a command goes (the base64 line of a pasted key, a token) is not repeated, in text or --json', async () => {
  const secret = 'MC4CAQAwBQYDK2VwBCIEIJ0123456789abcdefghijklmnopqrstuvwxyzAB'
  for (const args of [[secret], ['keys', secret], ['help', secret]]) {
    for (const json of [false, true]) {
      const run = await runCli([...args, ...(json ? ['--json'] : [])])
      expect(run.exitCode).toBe(2)
      expect(run.stdout + run.stderr).not.toContain(secret.slice(8, 40))
      expect(json ? jsonDocument(run) : run.stderr).toEqual(json ? { error: { code: 'USAGE', message: expect.stringContaining('unknown command (a 60-character word, not repeated here') } } : expect.stringContaining('unknown command (a 60-character word, not repeated here'))
    }
  }
  // a short one is still named, to see the typo
  expect((await runCli(['bogus'])).stderr).toContain("unknown command 'bogus'")
})

describe('--json: a command line commander refuses still prints one JSON document (code USAGE, exit 2)', () => {
  const table: [string, string[], string][] = [
    ['an unknown option', ['status', 'com.example.shop', '--bogus', '--json'], "unknown option '--bogus'"],
    ['a missing required option', ['push', 'build', '--version', '1.0.0', '--json'], "required option '--app <appId>' not specified"],
    ['a missing argument', ['channels', 'create', '--app', 'com.example.shop', '--json'], "missing required argument 'name'"],
    ['too many arguments', ['apps', 'ls', 'extra', '--json'], "too many arguments for 'ls'"],
    ['an unknown subcommand', ['keys', 'bogus', '--json'], "unknown command 'bogus' for 'keys'"],
    ['an unknown option of a command that is not a client of the server', ['keys', 'generate', '--bogus', '--json'], "unknown option '--bogus'"],
    ['an unknown command', ['bogus', '--json'], "unknown command 'bogus'"],
    ['an unknown option of the program itself', ['--bogus', '--json'], "unknown option '--bogus'"],
    ['an unknown option of the program itself, after --json', ['--json', '--bogus'], "unknown option '--bogus'"],
    // it was ignored, and the device sign-in waited for an approval (here: exit 3, nothing listens)
    ['login --email without --with-password', ['login', '--server', 'http://127.0.0.1:9', '--email', 'dev@example.com', '--json'], '--email goes with --with-password'],
    // it said "unknown option '--json'", as if no command took --json
    ['a group with its subcommand left out', ['keys', '--json'], "missing command for 'keys' (before --json); its commands: generate, add, ls, revoke, require"],
    // commander refuses these by showing the help on stderr, without its error(): nothing was on stdout
    ['help for a command that does not exist', ['help', 'bogus', '--json'], "unknown command 'bogus' for 'miniship'; its commands: serve, init,"],
    ['a group\'s help for a subcommand it does not have', ['keys', 'help', 'bogus', '--json'], "unknown command 'bogus' for 'keys'; its commands: generate, add, ls, revoke, require"],
    // commander gave the option the next word, --json: no JSON document, and the app "--json" looked up
    ['an option whose value was left out, before --json', ['status', '--app', '--json'], "option '--app <appId>' argument missing"],
    ['an option whose value was left out, before another option', ['push', 'build', '--version', '--app', 'com.example.shop', '--json'], "option '--version <version>' argument missing"],
    ['an operator command\'s option whose value was left out', ['create-admin', '--email', '--json'], "option '--email <email>' argument missing"],
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
  test('an unknown option is named without its value, which may be a secret typed where no option takes it', async () => {
    for (const args of [['login', '--with-password', '--email', 'dev@example.com', '--password=hunter22', '--json'], ['whoami', '--token=msk_hunter22', '--json'], ['--token=msk_hunter22', 'whoami', '--json']]) {
      const run = await runCli(args)
      expect(run.exitCode).toBe(2)
      expect(jsonDocument(run)).toEqual({ error: { code: 'USAGE', message: expect.stringMatching(/^unknown option '--(password|token)=…'/) } })
      expect(run.stdout + run.stderr).not.toContain('hunter22')
    }
  })
  // an Ed25519 PEM has no "=": "unknown option '-----BEGIN PRIVATE KEY----- …'" (the program) and "missing command for 'keys' (before -----BEGIN …)" repeated it
  const pem = generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString()
  const secret = pem.split('\n')[1]!.slice(16)
  for (const [where, args] of [
    ['the program', [pem]],
    ['a group', ['keys', pem]],
    ['a group with a default subcommand', ['apps', pem]],
    ['a command', ['keys', 'add', '--app', 'com.example.shop', pem]],
    ['the program, its line breaks as spaces', [pem.replaceAll('\n', ' ')]],
  ] as const) {
    test(`a key's PEM given to ${where} is not repeated, in text or in --json`, async () => {
      for (const json of [false, true]) {
        const run = await runCli([...args, ...(json ? ['--json'] : [])])
        expect(run.exitCode).toBe(2)
        expect(run.stderr).toStartWith('miniship: an argument is a PEM block, not an option (not repeated here: it may be a private key)')
        if (json) expect(jsonDocument(run)).toEqual({ error: { code: 'USAGE', message: expect.stringContaining('an argument is a PEM block') } })
        expect(run.stdout + run.stderr).not.toContain(secret)
        expect(run.stdout + run.stderr).not.toContain('BEGIN PRIVATE KEY')
      }
    })
  }
  test('help --json is the help, as keys help --json and push --help --json are (not a command named --json)', async () => {
    const run = await runCli(['help', '--json'])
    expect(run.exitCode).toBe(0)
    expect(run.stdout).toStartWith('Usage: miniship [options] [command]')
  })
  test('keys generate --out with its value left out writes no key to a file named after the next option', async () => {
    const dir = tempDir('miniship-out-')
    try {
      const run = await runCli(['keys', 'generate', '--out', '--json'], { cwd: dir })
      expect(run.exitCode).toBe(2)
      expect(jsonDocument(run)).toEqual({ error: { code: 'USAGE', message: expect.stringContaining("option '--out <file>' argument missing") } })
      expect(readdirSync(dir)).toEqual([])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
  test('a value given with = may look like an option', async () => {
    const run = await runCli(['rollout', 'com.example.shop', '--percent', '5', '--reason=--pause', '--json'])
    // refused for what it says (--reason without --pause), not as a missing value
    expect(run.exitCode).toBe(2)
    expect(jsonDocument(run)).toEqual({ error: { code: 'USAGE', message: '--reason goes with --pause' } })
  })
  test('without --json, stdout stays empty', async () => {
    const run = await runCli(['status', 'com.example.shop', '--bogus'])
    expect(run.exitCode).toBe(2)
    expect(run.stdout).toBe('')
  })
  // it said "unknown option '--json'", as if no command took --json: it is `miniship` alone, asked for JSON
  test('miniship --json with no command: the help on stderr as miniship alone prints it, exit 2, and USAGE listing the commands', async () => {
    const alone = await runCli([])
    expect(alone.exitCode).toBe(2)
    expect(alone.stderr).toStartWith('Usage: miniship [options] [command]\n')
    const run = await runCli(['--json'])
    expect(run.exitCode).toBe(2)
    expect(run.stderr).toBe(alone.stderr)
    expect(jsonDocument(run)).toEqual({ error: { code: 'USAGE', message: expect.stringMatching(/^missing command \(before --json\); its commands: serve, init, .*, whoami, push, .*, webhooks \(see miniship --help\)$/), hint: 'miniship --help' } })
    expect(run.stdout + run.stderr).not.toContain("unknown option '--json'")
  })
  // it said "unknown option '--json'": --json before the command is the command's own
  test('miniship --json COMMAND and miniship GROUP --json COMMAND are COMMAND --json: the same document, the same exit code', async () => {
    for (const args of [['whoami'], ['keys', 'ls', '--app', 'com.example.shop'], ['bogus'], ['status', 'com.example.shop', '--bogus'], ['apps', 'ls']]) {
      const after = await runCli([...args, '--json'])
      const before = await runCli(['--json', ...args])
      // and between a group and its command: `miniship keys --json ls`
      if (args.length > 1 && !args[1]!.startsWith('-')) {
        const between = await runCli([args[0]!, '--json', ...args.slice(1)])
        expect({ exitCode: between.exitCode, document: jsonDocument(between) }, `${args[0]} --json ${args.slice(1).join(' ')}`).toEqual({ exitCode: after.exitCode, document: jsonDocument(after) })
      }
      expect(after.stdout, args.join(' ')).not.toBe('')
      expect({ exitCode: before.exitCode, document: jsonDocument(before) }, args.join(' ')).toEqual({ exitCode: after.exitCode, document: jsonDocument(after) })
    }
  })
})

describe('a mistyped subcommand is named as one, with the list (not "too many arguments for \'ls\'")', () => {
  const groups: [string, string][] = [
    ['apps', 'ls, create'],
    ['channels', 'ls, create, rm'],
    ['versions', 'ls'],
    ['keys', 'generate, add, ls, revoke, require'],
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

describe('--json: the code of a refusal is the real one, and no sign-in is exit 2 (no server was asked)', () => {
  const root = tempDir('miniship-usage-')
  afterAll(() => rmSync(root, { recursive: true, force: true }))
  /** a build folder; nothing listens on the server's port, and nothing needs to: these are refused before a request */
  function build(name: string, manifest: object | null): string {
    const dir = join(root, name)
    mkdirSync(join(dir, 'ios', 'assets'), { recursive: true })
    mkdirSync(join(dir, 'android', 'res'), { recursive: true })
    writeFileSync(join(dir, 'main.ios.jsbundle'), 'ios')
    writeFileSync(join(dir, 'main.android.bundle'), 'android')
    if (manifest) writeFileSync(join(dir, 'app.json'), JSON.stringify(manifest))
    return dir
  }
  const push = (dir: string) => runCli(['push', dir, '--app', 'com.example.shop', '--version', '1.0.0', '--server', 'http://127.0.0.1:9', '--json'], { env: { MINISHIP_TOKEN: 'msk_test' } })

  test('a missing file: MISSING_FILE', async () => {
    const run = await push(build('missing', null))
    expect(run.exitCode).toBe(2)
    expect(jsonDocument(run)).toEqual({ error: { code: 'MISSING_FILE', message: expect.stringContaining('missing artifact app.json') } })
  })

  test('a manifest naming another app: MANIFEST_MISMATCH', async () => {
    const run = await push(build('mismatch', { appId: 'com.example.other' }))
    expect(run.exitCode).toBe(2)
    expect(jsonDocument(run)).toEqual({ error: { code: 'MANIFEST_MISMATCH', message: expect.stringContaining('app.json') } })
  })

  for (const args of [['whoami'], ['status', 'com.example.shop'], ['push', '.', '--app', 'com.example.shop', '--version', '1.0.0']]) {
    test(`not signed in (${args[0]}): NOT_SIGNED_IN, exit 2`, async () => {
      const run = await runCli([...args, '--server', 'http://127.0.0.1:9', '--json'])
      expect(run.exitCode).toBe(2)
      expect(jsonDocument(run)).toEqual({ error: { code: 'NOT_SIGNED_IN', message: expect.stringContaining('run miniship login --server http://127.0.0.1:9/api') } })
    })
    // no --server, MINISHIP_SERVER or saved sign-in: it was USAGE ("no server: …"), so a script could not tell it from a typo
    test(`no server anywhere (${args[0]}): NOT_SIGNED_IN too, exit 2, and the login line to type`, async () => {
      const run = await runCli([...args, '--json'])
      expect(run.exitCode).toBe(2)
      expect(run.stderr).toBe('miniship: not signed in: run miniship login --server URL (in CI, set MINISHIP_SERVER and MINISHIP_TOKEN to an API key)\n')
      expect(jsonDocument(run)).toEqual({ error: { code: 'NOT_SIGNED_IN', message: expect.stringContaining('run miniship login --server URL') } })
      const withKey = await runCli([...args, '--json'], { env: { MINISHIP_TOKEN: 'msk_test' } })
      expect(withKey.exitCode).toBe(2)
      expect(jsonDocument(withKey)).toEqual({ error: { code: 'NOT_SIGNED_IN', message: expect.stringContaining('MINISHIP_TOKEN is set but no server is; set MINISHIP_SERVER') } })
    })
  }

  // the two commands that need no sign-in: a server left out is bad usage of them, not "not signed in"
  test('login and verify with no server anywhere: USAGE, exit 2, naming what to pass', async () => {
    const login = await runCli(['login', '--json'])
    expect(login.exitCode).toBe(2)
    expect(jsonDocument(login)).toEqual({ error: { code: 'USAGE', message: expect.stringContaining('miniship login needs the server: run miniship login --server URL') } })
    const verify = await runCli(['verify', '--app', 'com.example.shop', '--public-key', 'SqaHDz0TqEC6uCM1DQhnVH9hf3maJrtzgZKnVQEMhJQ=', '--json'])
    expect(verify.exitCode).toBe(2)
    expect(jsonDocument(verify)).toEqual({ error: { code: 'USAGE', message: expect.stringContaining('verify needs the server: pass --server URL') } })
  })
})

describe('--help says which options are required', () => {
  const table: [string[], string[]][] = [
    [['apps', 'create'], ['--name <name>']],
    [['push'], ['--app <appId>', '--version <version>']],
    [['channels', 'ls'], ['--app <appId>']],
    [['create-admin'], ['--email <email>']],
  ]
  for (const [command, required] of table) {
    test(command.join(' '), async () => {
      const help = (await runCli([...command, '--help'])).stdout.replace(/\n\s+(?=[^\s-])/g, ' ')
      for (const flag of required) expect(help).toMatch(new RegExp(`\\n\\s+${flag}\\s.*\\(required\\)\\n`))
      // and only those
      expect(help.match(/\(required\)/g)).toHaveLength(required.length)
    })
  }
})

test('the help of every developer command calls it a miniapp, as the console, README and server do (not "mini app")', () => {
  const texts: string[] = []
  const walk = (command: Command) => {
    texts.push(command.helpInformation())
    command.commands.forEach(walk)
  }
  clientCommands().forEach(walk)
  expect(texts.length).toBeGreaterThan(20)
  expect(texts.filter((text) => /mini apps?\b/i.test(text)).map((text) => text.split('\n')[0])).toEqual([])
})

test('output piped into a reader that has gone (`miniship … | head -1`): the command ends quietly, no EPIPE stack trace', () => {
  const dir = tempDir('miniship-epipe-')
  try {
    const main = join(import.meta.dir, '..', 'main.ts')
    // `head -0` exits before reading, as `head -1` does once the first line came: the next write finds no reader
    const script = `"${process.execPath}" "${main}" keys generate --out "${join(dir, 'release.pem')}" 2>"${join(dir, 'stderr')}" | head -0; echo "exit \${PIPESTATUS[0]}"`
    const run = Bun.spawnSync(['bash', '-c', script], { env: { ...process.env, XDG_CONFIG_HOME: dir } })
    const stderr = readFileSync(join(dir, 'stderr'), 'utf8')
    expect(stderr).not.toContain('EPIPE')
    expect(run.stdout.toString().trim()).toBe('exit 0')
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test("the program's list of commands shows a required version as each command's --help does: publish [options] [appId] <version>", async () => {
  const help = (await runCli(['--help'])).stdout
  for (const name of ['publish', 'rollback']) {
    // it read `[appId] [version]`, as if the version could be left out
    expect(help).toContain(`${name} [options] [appId] <version>`)
    expect((await runCli([name, '--help'])).stdout).toContain(`Usage: miniship ${name} [options] [appId] <version>`)
  }
  // a command without a usage of its own is listed as before
  expect(help).toContain('status [options] [appId]')
})
