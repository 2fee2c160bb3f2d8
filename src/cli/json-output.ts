// --json's error document (decisions §12: exactly one JSON document on stdout), for every command's refusals and commander's own.
import type { Command } from 'commander'

export interface ErrorBody {
  /** the server's code, a local check's code, or USAGE, NOT_SIGNED_IN, SIGN_IN_DENIED, SIGN_IN_EXPIRED, VERIFICATION_FAILED, UNREACHABLE, FAILED */
  code: string
  message: string
  /** when a server refused */
  statusCode?: number
  /** what to do next, where the text adds it after the message (e.g. the command that lists what exists): --json says it too */
  hint?: string
}

/** The error as the one JSON document on stdout; `more` adds what a script can act on (e.g. what was uploaded before the refusal). */
export function writeJsonError(error: ErrorBody, more: Record<string, unknown> = {}): void {
  process.stdout.write(`${JSON.stringify({ error, ...more }, null, 2)}\n`)
}

/** Whether a command line asks for --json (an argument after `--` is no option). */
export function asksForJson(args: readonly string[]): boolean {
  const end = args.indexOf('--')
  return (end < 0 ? args : args.slice(0, end)).includes('--json')
}

/** The program's command line as parsed (commander keeps it on the root; not in its typings). */
function rawArgsOf(command: Command): string[] {
  return command.parent ? rawArgsOf(command.parent) : ((command as Command & { rawArgs?: string[] }).rawArgs ?? [])
}

function commandPath(command: Command): string {
  return command.parent ? `${commandPath(command.parent)}${command.name()} ` : ''
}

/**
 * Commander's own refusals of a command line (unknown option or command, missing argument or
 * option, a value not among the choices, too many arguments) print the error document too in
 * --json mode, code USAGE; the line on stderr and the exit code stay as they are.
 */
/**
 * A usage error's message with a word no command is named like (over 32 characters: the base64 line
 * of a pasted key, a token) not repeated, on stderr or in --json: "unknown command 'MC4CAQAw…'" put
 * a secret in CI logs.
 */
export function withoutSecretWords(message: string): string {
  return message.replace(/unknown command '([^']{33,})'/g, (_, word: string) => `unknown command (a ${word.length}-character word, not repeated here: it may be a key or a token)`)
}

export function withJsonUsageErrors<T extends Command>(command: T): T {
  const raise = command.error.bind(command)
  command.error = (given, options) => {
    const message = withoutSecretWords(given)
    if (asksForJson(rawArgsOf(command))) {
      const text = message.replace(/^error: /, '').trim().replace(/\s*\n\s*/g, ' ')
      // the CLI's own code, not one the server answers (docs/api.md lists those)
      const code = 'USAGE'
      writeJsonError({ code, message: `${text} (see miniship ${commandPath(command)}--help)` })
    }
    return raise(message, options)
  }
  return command
}
