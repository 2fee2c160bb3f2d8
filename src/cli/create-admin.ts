// `miniship create-admin`: writes an active administrator into the data directory, through the same service as the API.
import { Command } from 'commander'
import { withDataDirOption, withJsonOption } from './common'
import { passwordFromStdinText, promptHiddenOnTerminal } from '../terminal/prompt'
import { ConfigError, loadConfig } from '../config'
import { existsSync } from 'node:fs'
import { dataDirPaths, openDataDir } from '../data-dir'
import { isDatabaseBusy, NewerSchemaError } from '../db/open'
import { AppError } from '../http/errors'
import { textLength } from '../http/text'
import { systemClock } from '../ids'
import { createUser, emailProblem, findUserByEmail, normaliseEmail, requireDisplayName, requirePassword } from '../modules/auth/service'

/** Everything the command touches outside the data directory, so a test can stand in for the terminal. */
export interface CreateAdminIo {
  readStdin(): Promise<string>
  stdinIsTTY(): boolean
  /** Reads one line without echoing it. */
  promptHidden(label: string): Promise<string>
  out(line: string): void
  err(line: string): void
  exit(code: number): void
}

/** An expected failure: one line on stderr and this exit code (2 for a bad invocation); `code` names it in --json's error document. */
class CommandFailure extends Error {
  constructor(
    readonly exitCode: number,
    message: string,
    readonly code = exitCode === 2 ? 'USAGE' : 'FAILED',
  ) {
    super(message)
  }
}

const processIo: CreateAdminIo = {
  readStdin: () => Bun.stdin.text(),
  stdinIsTTY: () => process.stdin.isTTY === true,
  promptHidden: (label) => promptHiddenOnTerminal(label, () => new CommandFailure(130, 'cancelled')),
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
  exit: (code) => process.exit(code),
}

interface CreateAdminFlags {
  email: string
  displayName?: string
  passwordStdin?: boolean
  dataDir?: string
  passwordMinLength?: string
  json?: boolean
}

async function readPassword(flags: CreateAdminFlags, io: CreateAdminIo): Promise<string> {
  if (flags.passwordStdin) return passwordFromStdinText(await io.readStdin())
  const first = await io.promptHidden('Password: ')
  const again = await io.promptHidden('Repeat the password: ')
  if (first !== again) throw new CommandFailure(1, 'the two passwords differ; nothing was created', 'PASSWORDS_DIFFER')
  return first
}

async function createAdmin(flags: CreateAdminFlags, io: CreateAdminIo): Promise<void> {
  // Everything that can be refused without touching the data directory is refused first.
  const email = normaliseEmail(flags.email)
  if (email === null) throw new CommandFailure(2, `--email ${emailProblem(flags.email)}, got "${flags.email.slice(0, 100)}"`)
  const displayName = flags.displayName === undefined ? undefined : requireDisplayName(flags.displayName)
  // On a terminal, reading stdin would show no prompt and echo the password as it is typed.
  if (flags.passwordStdin && io.stdinIsTTY()) {
    throw new CommandFailure(2, '--password-stdin reads the password from a pipe or file; leave it out to be prompted')
  }
  if (!flags.passwordStdin && !io.stdinIsTTY()) {
    throw new CommandFailure(2, 'no terminal to ask for the password on: pipe it in with --password-stdin')
  }
  const config = loadConfig({ dataDir: flags.dataDir, passwordMinLength: flags.passwordMinLength })
  const passwordMinLength = config.passwordMinLength
  // An admin made in a directory no server uses cannot sign in anywhere: run without --data-dir (as the
  // console's first-run page once said) beside a server on /var/lib/miniship, it silently made ./data.
  const newDataDir = !existsSync(dataDirPaths(config.dataDir).database)
  const { db } = openDataDir(config.dataDir)
  try {
    if (findUserByEmail(db, email)) throw new CommandFailure(2, `a user with the email ${email} already exists; nothing was created`, 'EMAIL_TAKEN')
    const password = await readPassword(flags, io)
    // characters (code points), as the API counts them
    if (textLength(password) < passwordMinLength) throw new CommandFailure(1, `the password must be at least ${passwordMinLength} characters; nothing was created`, 'PASSWORD_TOO_SHORT')
    requirePassword(password, passwordMinLength)
    const user = await createUser(db, systemClock, { email, displayName, password, role: 'ADMIN', status: 'ACTIVE', passwordMinLength }, null, 'cli')
    if (flags.json) io.out(JSON.stringify({ id: user.id, email: user.email, displayName: user.displayName, role: user.role, status: user.status, dataDir: config.dataDir, newDataDir }, null, 2))
    else {
      const fresh = newDataDir ? `, a new data directory (there was no database in it): if your server runs with another --data-dir, run this again with that one` : ''
      io.out(`Created admin ${user.email} (id ${user.id}) in ${config.dataDir}${fresh}`)
    }
  } finally {
    db.$client.close()
  }
}

export function createAdminCommand(io: CreateAdminIo = processIo): Command {
  return withJsonOption(withDataDirOption(new Command('create-admin')))
    .description('create an active administrator account (the password is asked for on the terminal, or read from a pipe with --password-stdin)')
    .requiredOption('--email <email>', 'email address of the new administrator')
    .option('--display-name <name>', 'display name (default: the part of the email before @)')
    .option('--password-stdin', 'read the password from stdin (one trailing newline is dropped)')
    .option('--password-min-length <n>', 'shortest password accepted, in characters (an emoji is one), 6-128 (env MINISHIP_PASSWORD_MIN_LENGTH, default 6)')
    .addHelpText('after', '\nExamples:\n  $ miniship create-admin --email admin@example.com --password-stdin < pw.txt\n  $ miniship create-admin --email admin@example.com --password-stdin --json < pw.txt    # {"id", "email", …}')
    .action(async (flags: CreateAdminFlags) => {
      const refuse = (message: string, exitCode: number, code: string) => {
        io.err(`miniship: ${message}`)
        if (flags.json) io.out(JSON.stringify({ error: { code, message } }, null, 2))
        io.exit(exitCode)
      }
      try {
        await createAdmin(flags, io)
      } catch (error) {
        if (error instanceof CommandFailure) {
          refuse(error.message, error.exitCode, error.code)
        } else if (error instanceof ConfigError || error instanceof NewerSchemaError) {
          refuse(error.message, 2, error instanceof NewerSchemaError ? 'NEWER_SCHEMA' : error.code)
        } else if (error instanceof AppError) {
          // The service's own refusals (a taken email after a race, a bad display name or password).
          const detail = error.details?.[0]
          refuse(detail ? `${detail.field === 'displayName' ? '--display-name' : detail.field} ${detail.message}` : error.message, error.status === 400 ? 2 : 1, error.code)
        } else if (isDatabaseBusy(error)) {
          // a server mid-write holds the lock longer than the wait (or another tool has it open for writing)
          refuse('the database is busy with another writer; nothing was created: try again in a moment', 1, 'DATABASE_BUSY')
        } else if (Bun.env.MINISHIP_DEBUG === '1') {
          throw error
        } else {
          // one line, as every command says what failed: never a trace of our source files on an operator's terminal
          refuse(`${error instanceof Error ? error.message.split('\n')[0] : String(error)} (run with MINISHIP_DEBUG=1 for details)`, 1, 'FAILED')
        }
      }
    })
}
