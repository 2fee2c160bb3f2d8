// The `miniship` executable: the operator's subcommands (one per file in cli/) and the developer's (client/).
import { Command, type Option } from 'commander'
import { productVersion } from './version'
import { allocatorTunedEnv, reexecArguments } from './allocator-tuning'

// `miniship --json serve` is `miniship serve --json` from here on (withJsonAfterCommand), for every check of the command
const argv = withJsonAfterCommand(process.argv)

// `serve` starts again with the allocator tuned for serving (allocator-tuning.ts): before anything
// else is loaded, so the first start costs little
const tunedEnv = allocatorTunedEnv(argv, process.env, process.execArgv)
if (tunedEnv !== null && typeof process.execve === 'function') {
  try {
    process.execve(process.execPath, reexecArguments(process.execPath, argv), tunedEnv)
  } catch {
    // a platform without execve serves with the allocator's defaults
  }
}

// `serve` loads its own command only: the others' modules (archives for backup and restore, the
// developer's CLI) would be evaluated for nothing on every start (issue 30: start to first 200)
const commands =
  argv[2] === 'serve'
    ? [(await import('./cli/serve')).serveCommand()]
    : [...(await import('./cli')).serverCommands(), ...(await import('./client')).clientCommands()]

// `miniship versions ls APP | head -3`: once the reader has gone, the rest of the output has nowhere to
// go; end as the other tools of a pipeline do, instead of printing an EPIPE stack trace
if (argv[2] !== 'serve') {
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(0)
    throw error
  })
}

const { asksForJson, withJsonUsageErrors, writeJsonError } = await import('./cli/json-output')
const { withCommandsListedByUsage } = await import('./cli/help')
// `miniship bogus --json`: the program's own refusals print the JSON error document too
const program = withJsonUsageErrors(new Command('miniship'))
  .description('Self-hosted server for React Native miniapps: upload, review, publish, roll back and download them.')
  .version(productVersion, '-v, --version', 'print the version')
  // `push --version 1.2.0` is the push's option, not the program's: program options only before the command
  .enablePositionalOptions()
  .addHelpText(
    'after',
    '\nExamples (operator):\n  $ miniship serve                      # serve on :3001 with data in ./data (initialised on first run)\n  $ miniship create-admin --email admin@example.com\n  $ miniship doctor --data-dir /var/lib/miniship\n\nExamples (developer):\n  $ miniship login --server https://apps.example.com\n  $ miniship push build --app com.example.shop --version 1.2.0 --publish\n  $ miniship status com.example.shop',
  )
for (const command of commands) program.addCommand(command)

// A bad invocation (unknown command or option, missing or invalid value) is one line naming the
// problem and exit code 2, like a bad configuration value; help and --version exit 0.
for (const command of allCommands(program)) {
  command
    .configureOutput({ outputError: (text, write) => write(`miniship: ${text.replace(/^error: /, '').trim().replace(/\s*\n\s*/g, ' ')} (see miniship ${commandPath(command)}--help)\n`) })
    .exitOverride((error) => {
      process.exit(error.exitCode === 0 ? 0 : 2)
    })
  withoutValuesOfUnknownOptions(command)
  if (command.commands.length === 0) {
    reportUnknownOptionsFirst(command)
    refuseOptionsAsValues(command)
  } else {
    refuseUnknownHelpTopics(command)
    withCommandsListedByUsage(command)
  }
}
// after the loop: another unknown option beside --json is still named, without what follows its "="
answerJsonWithoutCommand(program)

/**
 * `miniship --json` said "unknown option '--json'", as if no command took --json. It is `miniship`
 * alone asked for JSON: the help on stderr as `miniship` alone prints it, exit 2, and the error
 * document (USAGE, the commands) on stdout, as `miniship keys --json` says of the keys group.
 */
function answerJsonWithoutCommand(root: Command): void {
  const typed = root as Command & { unknownOption(flag: string): never }
  const unknownOption = typed.unknownOption.bind(root)
  typed.unknownOption = (flag) => {
    // a command after it never gets here (withJsonAfterCommand moves --json after the command)
    if (flag !== '--json' || root.args.some((arg) => !arg.startsWith('-'))) return unknownOption(flag)
    // `miniship --json --bogus`: the option no command takes is the problem
    const other = root.args.find((arg) => arg !== '--json')
    if (other !== undefined) return unknownOption(other)
    const names = root.commands.map((command) => command.name()).filter((name) => name !== 'help')
    // the CLI's own code, not one the server answers (docs/api.md lists those)
    const message = `missing command (before --json); its commands: ${names.join(', ')} (see miniship --help)`
    writeJsonError({ code: 'USAGE', message, hint: 'miniship --help' })
    return root.help({ error: true })
  }
}

/**
 * `miniship help bogus` and `miniship keys help bogus` were refused by commander with the whole help
 * on stderr, not through error(): no line naming the problem, and with --json nothing on stdout.
 * They are an unknown command like `miniship keys bogus`. `miniship help --json` took --json for
 * the command to explain; it is the help, as `miniship keys help --json` and `push --help --json` are.
 */
function refuseUnknownHelpTopics(command: Command): void {
  const help = command.help.bind(command)
  command.help = ((context?: { error?: boolean }) => {
    if (context?.error === true && command.args[0] === 'help') {
      const topic = command.args.slice(1).find((arg) => !arg.startsWith('-'))
      const names = command.commands.map((subcommand) => subcommand.name()).filter((name) => name !== 'help')
      if (topic !== undefined) command.error(`error: unknown command '${topic}' for '${command.name()}'; its commands: ${names.join(', ')}`, { code: 'commander.unknownCommand' })
      if (asksForJson(process.argv.slice(2))) return help()
    }
    return help(context as never)
  }) as Command['help']
}

/**
 * Commander gives an option that takes a value the next word whatever it is, so a value left out
 * took the option after it: `status --app --json` looked up a miniapp called "--json" (exit 1, and
 * no JSON document though --json was typed), `keys generate --out --json` wrote the private key to
 * a file named --json. A value that is one of the command's own options is a missing value, as at
 * the end of the line (exit 2, USAGE); `--notes=--json` still gives that text.
 */
function refuseOptionsAsValues(command: Command): void {
  const parseOptions = command.parseOptions.bind(command)
  command.parseOptions = (args) => {
    const flags = new Set(['--help', '-h', ...command.options.flatMap((option) => [option.long, option.short].filter((flag): flag is string => flag !== undefined))])
    for (let index = 0; index < args.length; index++) {
      const arg = args[index]!
      if (arg === '--') break
      const option = command.options.find((candidate) => candidate.long === arg || candidate.short === arg)
      if (!option?.required) continue
      if (flags.has(args[index + 1] ?? '')) (command as Command & { optionMissingArgument(option: Option): never }).optionMissingArgument(option)
      index++
    }
    return parseOptions(args)
  }
}

/**
 * "unknown option '--password=hunter2'": an unknown option is named without what follows its "=",
 * which is as likely as not a secret typed where no option takes it (--password=, --token=). A key's
 * PEM pasted as a word begins with dashes and is not named at all: "unknown option '-----BEGIN PRIVATE
 * KEY----- …'" repeated the key (an Ed25519 PEM has no "="), from the program and the groups too
 * ("missing command for 'keys' (before -----BEGIN …)"), which is why the test is here, on every command.
 */
function withoutValuesOfUnknownOptions(command: Command): void {
  const typed = command as Command & { unknownOption(flag: string): never }
  const unknownOption = typed.unknownOption.bind(command)
  typed.unknownOption = (flag) => {
    if (flag.startsWith('-----')) command.error('error: an argument is a PEM block, not an option (not repeated here: it may be a private key); give the file that holds it instead')
    return unknownOption(flag.startsWith('--') && flag.includes('=') ? `${flag.slice(0, flag.indexOf('='))}=…` : flag)
  }
}

/**
 * Commander checks required options before unknown ones, so a mistyped `--ap` was reported as
 * "required option '--app' not specified". A leaf command reports the unknown option first, with
 * commander's own suggestion ("Did you mean --app?").
 */
function reportUnknownOptionsFirst(command: Command): void {
  const parseOptions = command.parseOptions.bind(command)
  command.parseOptions = (args) => {
    const parsed = parseOptions(args)
    const first = parsed.unknown[0]
    // help is answered from the unknown arguments, after this: it still wins
    const asksHelp = parsed.unknown.some((arg) => arg === '--help' || arg === '-h')
    if (!asksHelp && first !== undefined && first.length > 1 && first.startsWith('-')) (command as Command & { unknownOption(flag: string): never }).unknownOption(first)
    return parsed
  }
}

/** "apps create " for a nested command, "" for the program itself. */
function commandPath(command: Command): string {
  return command.parent ? `${commandPath(command.parent)}${command.name()} ` : ''
}

function allCommands(root: Command): Command[] {
  return [root, ...root.commands.flatMap((command) => allCommands(command))]
}

await program.parseAsync(argv)

/**
 * `miniship --json status …`, `miniship keys --json ls …`: --json typed among the command's words is
 * the command's --json (every command takes it), put after them; it was refused as an unknown option
 * of the program or the group. Only while nothing but command words stand before it (`--notes --json`
 * is a missing value, said as such), and before a `--` (what follows it is not options).
 */
function withJsonAfterCommand(args: readonly string[]): string[] {
  const words = args.slice(2)
  const at = words.indexOf('--json')
  const end = words.indexOf('--')
  if (at === -1 || (end !== -1 && at > end) || words.slice(0, at).some((word) => word.startsWith('-'))) return [...args]
  // `miniship --json` alone, or before another option: as typed (answerJsonWithoutCommand)
  const next = words[at + 1]
  if (next === undefined || next.startsWith('-')) return [...args]
  const without = [...words.slice(0, at), ...words.slice(at + 1)]
  const stop = without.indexOf('--')
  return [args[0]!, args[1]!, ...(stop === -1 ? [...without, '--json'] : [...without.slice(0, stop), '--json', ...without.slice(stop)])]
}
