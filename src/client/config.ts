// The developer CLI's saved sign-in ($XDG_CONFIG_HOME/miniship/config.json, mode 0600) and where server and token come from (decisions §12).
import { chmodSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { dirname, join } from 'node:path'
import { CliError, createApiClient, type ApiClient, type RequestOptions, type StreamBody } from './http'
import { withJsonUsageErrors } from '../cli/json-output'
import { withRequiredOptionsMarked } from '../cli/help'

export interface SavedConfig {
  /** the API base including /api */
  server?: string
  token?: string
  user?: { id: string; email: string; displayName: string }
}

export function configPath(env: Record<string, string | undefined> = Bun.env): string {
  const base = env.XDG_CONFIG_HOME && env.XDG_CONFIG_HOME.startsWith('/') ? env.XDG_CONFIG_HOME : join(env.HOME || homedir(), '.config')
  return join(base, 'miniship', 'config.json')
}

export function readConfig(path = configPath()): SavedConfig {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {}
    throw new CliError(2, `cannot read ${path}: ${(error as Error).message}`)
  }
  try {
    const parsed = JSON.parse(text) as unknown
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as SavedConfig) : {}
  } catch {
    throw new CliError(2, `${path} is not valid JSON; remove it and run miniship login again`)
  }
}

/** Written to a temp file created 0600 and renamed, so the token is never readable by others, even briefly. */
export function writeConfig(config: SavedConfig, path = configPath()): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 })
  const temp = `${path}.${process.pid}.tmp`
  writeFileSync(temp, JSON.stringify(config, null, 2) + '\n', { mode: 0o600 })
  chmodSync(temp, 0o600)
  renameSync(temp, path)
}

/**
 * Forget the saved token; with `server`, only when it is that server's (a `logout --server` naming
 * another server must not sign the saved one out). False when nothing was removed.
 */
export function removeConfigToken(path = configPath(), server?: string): boolean {
  const config = readConfig(path)
  if (config.token === undefined) return false
  if (server !== undefined && (config.server === undefined || normaliseServerUrl(config.server) !== server)) return false
  const { token: _removed, user: _user, ...rest } = config
  if (Object.keys(rest).length === 0) rmSync(path, { force: true })
  else writeConfig(rest, path)
  return true
}

/**
 * decisions §12: the API base including `/api`; a URL with no path gets `/api`; a trailing slash
 * is ignored. Null when it is not an http(s) URL.
 */
export function normaliseServerUrl(input: string): string | null {
  let url: URL
  try {
    url = new URL(input.trim())
  } catch {
    return null
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return null
  if (url.search || url.hash || url.username || url.password) return null
  const path = url.pathname.replace(/\/+$/, '')
  return `${url.origin}${path === '' ? '/api' : path}`
}

/**
 * A server URL as a message may repeat it, parsed or not: nothing after the first `?` or `#` (an
 * install link's ?token=, a #token= fragment) and `***` for whatever comes before an `@` (a user
 * and password). Worked on the text, not on a parsed URL: `ci:hunter22@apps.example.com` parses
 * with the scheme `ci:`, and `apps.example.com/install?token=…` does not parse at all, and both
 * were repeated whole. An `@` in the path hides what precedes it too: showing less costs nothing.
 */
export function redactedServerUrl(given: string): { shown: string; hidden: 'user' | 'query' | 'fragment' | null } {
  const text = given.trim()
  const cut = text.search(/[?#]/)
  const head = cut < 0 ? text : text.slice(0, cut)
  const at = head.lastIndexOf('@')
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(head)?.[0] ?? ''
  const kept = at < 0 ? head : `${scheme}***${head.slice(at)}`
  const shown = cut < 0 ? kept : `${kept}${text[cut]}…`
  return { shown, hidden: at >= 0 ? 'user' : cut < 0 ? null : text[cut] === '?' ? 'query' : 'fragment' }
}

/**
 * A server URL normaliseServerUrl refused, as a usage error that repeats what was given, but never
 * a password or token in it: `https://ci:PASSWORD@apps.example.com` was echoed whole, into CI logs too.
 */
export function badServerUrl(given: string): CliError {
  const { shown, hidden } = redactedServerUrl(given)
  const why = {
    user: ', which names a user or password: miniship signs in with miniship login or MINISHIP_TOKEN instead',
    query: ': the server URL takes no query (not repeated here: it may hold a token)',
    fragment: ': the server URL takes no #fragment (not repeated here: it may hold a token)',
  }
  return new CliError(2, `--server must be an http(s) URL such as https://apps.example.com (got ${JSON.stringify(shown)}${hidden === null ? '' : why[hidden]})`)
}

export interface ClientFlags {
  server?: string
  json?: boolean
}

export interface Target {
  server: string
  token: string | null
  /** where the token came from, for messages */
  tokenSource: 'MINISHIP_TOKEN' | 'config' | null
}

/**
 * `--server` > MINISHIP_SERVER > the saved server; MINISHIP_TOKEN > the saved token. The saved token
 * is only sent to the server it was issued by (never to another server named by a flag).
 */
export function resolveTarget(
  flags: ClientFlags,
  env: Record<string, string | undefined> = Bun.env,
  saved: SavedConfig = readConfig(configPath(env)),
  /** what to say when no server is named anywhere: a command that needs a sign-in is not signed in */
  noServer: (env: Record<string, string | undefined>) => CliError = notSignedInAnywhere,
): Target {
  const given = flags.server ?? (env.MINISHIP_SERVER || undefined) ?? saved.server
  if (given === undefined) throw noServer(env)
  const server = normaliseServerUrl(given)
  if (server === null) throw badServerUrl(given)
  // what fetch trims anyway; a push's own request line would have sent it
  const token = env.MINISHIP_TOKEN?.trim()
  // set to spaces or a line break (a CI secret that did not arrive, say) it was dropped without a word: the
  // saved sign-in was used instead, or "not signed in" said to set what is set; empty is unset, as MINISHIP_SERVER
  if (token === '' && env.MINISHIP_TOKEN !== '') throw new CliError(2, 'MINISHIP_TOKEN is set but blank (only spaces or line breaks); set it to the token or API key, or unset it')
  if (token) {
    // a line break inside was "cannot reach the server" (exit 3), and in a push's raw request a header of its own
    if (/[^\x21-\x7e]/.test(token)) throw new CliError(2, 'MINISHIP_TOKEN holds a space, line break or other character no token has; set it to the token or API key alone')
    return { server, token, tokenSource: 'MINISHIP_TOKEN' }
  }
  if (saved.token && saved.server && normaliseServerUrl(saved.server) === server) return { server, token: saved.token, tokenSource: 'config' }
  return { server, token: null, tokenSource: null }
}

/** `--server` and `--json`, on every client command; with --json, a command line it refuses prints the error document too; --help marks required options. */
export function withClientOptions<T extends import('commander').Command>(command: T): T {
  command.option('--server <url>', 'server URL, e.g. https://apps.example.com (env MINISHIP_SERVER; default: the one you logged in to)')
  command.option('--json', 'print one JSON document on stdout instead of text')
  return withRequiredOptionsMarked(withJsonUsageErrors(command))
}

/** What a command needs of an API key: its name and every scope its requests take. */
export interface KeyNeeds {
  command: string
  scopes: readonly ('read' | 'upload' | 'release')[]
}

/** No token for the server: exit 2 like bad usage (no server was asked), code NOT_SIGNED_IN, and what to do. */
export function notSignedIn(server: string): CliError {
  const message = `not signed in to ${server}: run miniship login --server ${server}, or set MINISHIP_TOKEN to an API key`
  return new CliError(2, message, { code: 'NOT_SIGNED_IN', message })
}

/**
 * No server named anywhere (no --server, MINISHIP_SERVER or saved sign-in) for a command that needs a
 * sign-in: NOT_SIGNED_IN, exit 2, as for a server without a token. It was USAGE ("no server: …"), so
 * a script could not tell "sign in first" from a mistyped command line.
 */
export function notSignedInAnywhere(env: Record<string, string | undefined> = Bun.env): CliError {
  const message = env.MINISHIP_TOKEN?.trim()
    ? 'not signed in: MINISHIP_TOKEN is set but no server is; set MINISHIP_SERVER to its URL or pass --server URL (or run miniship login --server URL)'
    : 'not signed in: run miniship login --server URL (in CI, set MINISHIP_SERVER and MINISHIP_TOKEN to an API key)'
  return new CliError(2, message, { code: 'NOT_SIGNED_IN', message })
}

/**
 * A client for the resolved server with the resolved token; not signed in is exit 2 with what to do.
 * With `needs`, a key refused for a missing scope (403 SCOPE_REQUIRED) is told every scope the
 * command takes, not only the one its first refused request names.
 */
export function connect(flags: ClientFlags, needs?: KeyNeeds): ApiClient {
  const target = resolveTarget(flags)
  if (!target.token) throw notSignedIn(target.server)
  const api = createApiClient(target.server, target.token)
  // what no API key may do (the server says "sign in with an account (miniship login)"): with
  // MINISHIP_TOKEN set, a login is saved but not used, so the way there is to unset it
  const fromEnv = target.tokenSource === 'MINISHIP_TOKEN'
  if (!needs && !fromEnv) return api
  const scopes = needs?.scopes.map((scope) => `"${scope}"`) ?? []
  const all = scopes.length === 1 ? `the ${scopes[0]} scope` : `the ${scopes.slice(0, -1).join(', ')} and ${scopes.at(-1)} scopes`
  const explained = (error: unknown): never => {
    if (error instanceof CliError && error.body?.code === 'SCOPE_REQUIRED') {
      const noKey = /no scope allows it/.test(error.body.message)
      const hint =
        noKey && fromEnv
          ? 'MINISHIP_TOKEN holds an API key and is used before a saved sign-in: unset it, and miniship login (if you have not) to act as your account'
          : needs
            ? `miniship ${needs.command} needs an API key with ${all}`
            : null
      if (hint !== null) throw new CliError(error.exitCode, `${error.message}; ${hint}`, { ...error.body, hint })
    }
    throw error
  }
  return {
    server: api.server,
    request: <T>(method: string, path: string, options?: RequestOptions) => api.request<T>(method, path, options).catch(explained),
    send: <T>(method: string, path: string, body: StreamBody) => api.send<T>(method, path, body).catch(explained),
  }
}
