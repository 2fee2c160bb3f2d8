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

/**
 * While no administrator exists: how to make one from the command line, and the one-time link to
 * make one in the browser (on the public URL's origin when there is one).
 */
export function firstAdminAdvice(config: Pick<Config, 'publicUrl' | 'host' | 'dataDir'>, port: number, setupToken: string | null): string[] {
  if (setupToken === null) return []
  const host = config.host === '0.0.0.0' || config.host === '::' ? 'localhost' : config.host.includes(':') ? `[${config.host}]` : config.host
  const origin = config.publicUrl ? new URL(config.publicUrl).origin : `http://${host}:${port}`
  return [
    'no administrator exists yet. Create one with:',
    `  ${createAdminCommandLine(config.dataDir)}`,
    'or open this one-time link to create it in the browser (it works once, until the next restart):',
    `  ${origin}/setup?token=${setupToken}`,
  ]
}
