// What `serve` tells the operator at start beyond "listening": settings that look wrong, and how to get a first administrator.
import type { Config } from '../config'

/** `--public-url https://host` (no /api) is accepted, but every URL built on it would 404. */
export function publicUrlWarning(config: Pick<Config, 'publicUrl'>): string | null {
  if (config.publicUrl === null) return null
  const path = new URL(config.publicUrl).pathname.replace(/\/+$/, '')
  if (path.endsWith('/api')) return null
  return `warning: --public-url ${config.publicUrl} does not end in /api; install info and links are built on it and would answer 404 (did you mean ${config.publicUrl}/api?)`
}

/** A path as one shell word: as it is when it needs no quoting, else in single quotes. */
export function shellWord(text: string): string {
  return /^[A-Za-z0-9_\/.,:@%+=-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`
}

/** The command that creates the first administrator in this data directory, ready to copy. */
export function createAdminCommandLine(dataDir: string): string {
  return `miniship create-admin --data-dir ${shellWord(dataDir)} --email you@example.com`
}

/** The one-time link that creates the first administrator in the browser, on the public URL's origin when there is one. */
export function setupUrl(config: Pick<Config, 'publicUrl' | 'host'>, port: number, setupToken: string): string {
  const host = config.host === '0.0.0.0' || config.host === '::' ? 'localhost' : config.host.includes(':') ? `[${config.host}]` : config.host
  const origin = config.publicUrl ? new URL(config.publicUrl).origin : `http://${host}:${port}`
  return `${origin}/setup?token=${setupToken}`
}

/**
 * While no administrator exists: how to make one from the command line, and the one-time link to
 * make one in the browser (on the public URL's origin when there is one).
 */
export function firstAdminAdvice(config: Pick<Config, 'publicUrl' | 'host' | 'dataDir'>, port: number, setupToken: string | null): string[] {
  if (setupToken === null) return []
  return [
    'no administrator exists yet. Create one with:',
    `  ${createAdminCommandLine(config.dataDir)}`,
    'or open this one-time link to create it in the browser (it works once, until the next restart):',
    `  ${setupUrl(config, port, setupToken)}`,
  ]
}

/** The address `serve` listens on, as a URL (an IPv6 address in brackets). */
export function listeningUrl(host: string, port: number): string {
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`
}

/** `serve --json`: the start-up lines, as one object (one line on stdout, before the request log's lines). */
export interface StartupDocument {
  version: string
  listening: string
  port: number
  dataDir: string
  /** while no administrator exists: the one-time setup link and the command that makes one; null once one exists */
  setup: { url: string; createAdmin: string } | null
  /** what `serve` tells a person beside "listening" (warnings, start-up clean-up, the first-admin advice), a sentence each, in the same words */
  notes: string[]
}

/**
 * What `serve` prints for a person at start, as `serve --json` prints it. `startupLines` are the
 * clean-up lines of the start (`startup: …`), before the settings' warnings and the first-admin advice.
 */
export function startupDocument(config: Pick<Config, 'publicUrl' | 'host' | 'dataDir'>, version: string, port: number, setupToken: string | null, startupLines: string[] = []): StartupDocument {
  const warning = publicUrlWarning(config)
  const advice = firstAdminAdvice(config, port, setupToken)
  return {
    version,
    listening: listeningUrl(config.host, port),
    port,
    dataDir: config.dataDir,
    setup: setupToken === null ? null : { url: setupUrl(config, port, setupToken), createAdmin: createAdminCommandLine(config.dataDir) },
    notes: [...startupLines, ...(warning ? [warning] : []), ...(advice.length > 0 ? [advice.map((line) => line.trim()).join(' ')] : [])],
  }
}
