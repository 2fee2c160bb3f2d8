// `miniship login` (device flow of decisions §4, or --with-password), `logout` and `whoami`.
import { Command } from 'commander'
import { passwordFromStdinText, promptHiddenOnTerminal } from '../terminal/prompt'
import { badServerUrl, configPath, normaliseServerUrl, notSignedIn, readConfig, removeConfigToken, resolveTarget, withClientOptions, writeConfig, type ClientFlags } from './config'
import { timeText } from '../terminal/time'
import { CliError, createApiClient, createOutput, runClient, type Output } from './http'
import { startSpinner } from './progress'

interface DeviceSession {
  code: string
  verificationUrl: string
  expiresAt: string
  intervalSeconds: number
}

type Poll =
  | { status: 'pending' }
  | { status: 'approved'; accessToken: string; user: { id: string; email: string; displayName: string } }
  | { status: 'expired'; reason?: string }

/** A browser is opened only where one can be shown (decisions §12); failing to open one is no error. */
export function browserCommand(url: string, platform = process.platform, env: Record<string, string | undefined> = Bun.env): string[] | null {
  if (env.MINISHIP_NO_BROWSER === '1' || env.CI) return null
  if (platform === 'darwin') return ['open', url]
  if (platform === 'win32') return ['cmd', '/c', 'start', '', url]
  if (env.DISPLAY || env.WAYLAND_DISPLAY) return ['xdg-open', url]
  return null
}

function openBrowser(url: string): void {
  const command = browserCommand(url)
  if (!command) return
  try {
    const child = Bun.spawn(command, { stdin: 'ignore', stdout: 'ignore', stderr: 'ignore' })
    child.unref()
  } catch {
    // no opener installed: the URL is printed anyway
  }
}

/** `miniship login` with no server named: bad usage of login itself (signing in is what it is for), with the line to type. */
function loginNeedsServer(): CliError {
  return new CliError(2, 'miniship login needs the server: run miniship login --server URL, e.g. https://apps.example.com (or set MINISHIP_SERVER)')
}

/**
 * A device sign-in that ends without a token has a code of its own (it was FAILED, as for a bug, so a
 * script could not tell "someone said no" from a crash): exit 1, as any refusal, and how to try again.
 */
function signInDenied(server: string, code: string): CliError {
  const message = `the sign-in with code ${code} was denied in the console`
  const hint = `if that was a mistake, run miniship login --server ${server} again and approve the new code`
  return new CliError(1, `${message}; ${hint}`, { code: 'SIGN_IN_DENIED', message, hint })
}

function signInExpired(server: string, code: string): CliError {
  const message = `the code ${code} expired before it was approved`
  const hint = `run miniship login --server ${server} again and approve the new code before it expires`
  return new CliError(1, `${message}; ${hint}`, { code: 'SIGN_IN_EXPIRED', message, hint })
}

async function deviceLogin(flags: ClientFlags, out: Output): Promise<{ server: string; accessToken: string; user: { id: string; email: string; displayName: string } }> {
  const { server } = resolveTarget(flags, undefined, undefined, loginNeedsServer)
  const api = createApiClient(server, null)
  const { body: session } = await api.request<DeviceSession>('POST', '/auth/cli/sessions')
  // On stdout even when it is not a terminal, so scripts (and tests) can read it; in --json mode
  // stdout holds only the result, so the instructions go to stderr.
  const instructions = [`To sign in, open ${session.verificationUrl}`, `and approve the code ${session.code} (valid until ${timeText(session.expiresAt)}).`]
  for (const line of instructions) (out.json ? out.note : out.line)(line)
  openBrowser(session.verificationUrl)
  const spinner = startSpinner(`Waiting for approval of ${session.code}…`)
  try {
    let waitSeconds = Math.max(1, session.intervalSeconds)
    for (;;) {
      await Bun.sleep(waitSeconds * 1000)
      const poll = await api.request<Poll>('GET', `/auth/cli/sessions/${encodeURIComponent(session.code)}`, { accept: [429] })
      if (poll.status === 429) {
        // rate limited: wait as long as the server asks, then go on polling
        waitSeconds = Math.max(session.intervalSeconds, Number(poll.headers.get('retry-after')) || session.intervalSeconds)
        continue
      }
      waitSeconds = Math.max(1, session.intervalSeconds)
      const answer = poll.body
      if (answer.status === 'approved') return { server, accessToken: answer.accessToken, user: answer.user }
      if (answer.status === 'expired') throw answer.reason === 'denied' ? signInDenied(server, session.code) : signInExpired(server, session.code)
      if (Date.parse(session.expiresAt) <= Date.now()) throw signInExpired(server, session.code)
    }
  } finally {
    spinner.stop()
  }
}

async function passwordLogin(flags: ClientFlags & { email?: string }, out: Output) {
  if (!flags.email) throw new CliError(2, '--with-password needs --email EMAIL (the password is read from stdin)')
  const { server } = resolveTarget(flags, undefined, undefined, loginNeedsServer)
  const password = process.stdin.isTTY ? await promptHiddenOnTerminal('Password: ', () => new CliError(2, 'cancelled')) : passwordFromStdinText(await Bun.stdin.text())
  if (password === '') throw new CliError(2, 'no password on stdin: pipe it in, e.g. printenv MINISHIP_PASSWORD | miniship login --with-password --email you@example.com')
  out.note(`Signing in to ${server} as ${flags.email}`)
  const api = createApiClient(server, null)
  const { body } = await api.request<{ accessToken: string; user: { id: string; email: string; displayName: string } }>('POST', '/auth/login', { json: { email: flags.email, password } })
  return { server, accessToken: body.accessToken, user: body.user }
}

export function loginCommand(): Command {
  return withClientOptions(new Command('login'))
    .description('sign in to a miniship server: approve a code in the console (or --with-password), saved for later commands')
    .option('--with-password', 'sign in with email and password instead; the password is read from stdin, never from the command line')
    .option('--email <email>', 'the account email (with --with-password)')
    .addHelpText(
      'after',
      `\nExamples:\n  $ miniship login --server https://apps.example.com\n  $ printenv PASSWORD | miniship login --server https://apps.example.com --with-password --email dev@example.com\n\nSaved to ${configPath()} (mode 0600). In CI use MINISHIP_SERVER and MINISHIP_TOKEN (an API key) instead.`,
    )
    .action((flags: ClientFlags & { withPassword?: boolean; email?: string }) =>
      runClient(flags.json === true, async () => {
        const out = createOutput(flags.json === true)
        // without --with-password it was ignored: the device sign-in started, and a script piping the password in waited for an approval
        if (flags.email !== undefined && !flags.withPassword) throw new CliError(2, '--email goes with --with-password (the password is then read from stdin); without it, miniship login asks for no email: you approve a code in the console')
        const result = flags.withPassword ? await passwordLogin(flags, out) : await deviceLogin(flags, out)
        writeConfig({ ...readConfig(), server: result.server, token: result.accessToken, user: result.user })
        out.line(`Signed in to ${result.server} as ${result.user.email}.`)
        out.result({ server: result.server, user: result.user })
      }),
    )
}

export function logoutCommand(): Command {
  return withClientOptions(new Command('logout'))
    .description('forget the saved sign-in (the access token in the config file)')
    .addHelpText('after', '\nExample:\n  $ miniship logout')
    .action((flags: ClientFlags) =>
      runClient(flags.json === true, async () => {
        const out = createOutput(flags.json === true)
        const saved = readConfig()
        const named = flags.server ?? (Bun.env.MINISHIP_SERVER || undefined)
        const server = named === undefined ? undefined : normaliseServerUrl(named)
        if (server === null) throw badServerUrl(named!)
        const savedServer = saved.server === undefined ? undefined : (normaliseServerUrl(saved.server) ?? saved.server)
        if (server !== undefined && saved.token !== undefined && savedServer !== server) {
          out.line(`Not signed in to ${server}: the saved sign-in is for ${savedServer ?? 'no server'} and was kept (miniship logout --server ${savedServer} forgets it).`)
          out.result({ signedOut: false })
          return
        }
        const removed = removeConfigToken(configPath(), server)
        out.line(removed ? 'Signed out: the saved token was removed.' : 'Not signed in: there was no saved token.')
        out.result({ signedOut: removed })
      }),
    )
}

interface Me {
  id: string
  email: string
  displayName: string
  role: string
  apiKey?: { name: string; prefix: string; scopes: string[]; miniAppIds: string[] | null }
}

export function whoamiCommand(): Command {
  return withClientOptions(new Command('whoami'))
    .description('show who the saved sign-in or MINISHIP_TOKEN is, and on which server')
    .addHelpText('after', '\nExample:\n  $ miniship whoami')
    .action((flags: ClientFlags) =>
      runClient(flags.json === true, async () => {
        const out = createOutput(flags.json === true)
        const target = resolveTarget(flags)
        if (!target.token) throw notSignedIn(target.server)
        const { body: me } = await createApiClient(target.server, target.token).request<Me>('GET', '/auth/me')
        out.line(`${me.email} (${me.displayName}) on ${target.server}`)
        // where the token came from, in --json too: the text says it, and a script checking which sign-in a CI job uses needs it
        const tokenFrom = target.tokenSource === 'MINISHIP_TOKEN' ? 'MINISHIP_TOKEN' : configPath()
        if (me.apiKey) {
          out.line(`using API key "${me.apiKey.name}" (${me.apiKey.prefix}…) with scopes ${me.apiKey.scopes.join(', ')}${me.apiKey.miniAppIds ? ` for ${me.apiKey.miniAppIds.length} miniapp(s)` : ''}`)
        } else out.line(`role ${me.role}, token from ${tokenFrom}`)
        out.result({ server: target.server, tokenFrom, user: me })
      }),
    )
}
