// How the commands that act on one miniapp (`versions ls`, `status`, `publish`, `rollback`, `rollout`) are told which: `--app <appId>` or the word before the others.
import type { Command } from 'commander'

/**
 * The `[appId]` argument and the `--app <appId>` option, worded alike on every such command (as
 * channels ls, keys ls, webhooks ls and guard take it; the word alone still works). `more` names
 * the required arguments after the app id (`<version>`): they are declared optional here and
 * checked by `appArguments`, so that `publish --app com.example.shop 1.2.0` reads 1.2.0 as the
 * version, not as the app id.
 */
export function withAppArgument(command: Command, more: { name: string; description: string }[] = []): Command {
  command.argument('[appId]', 'the app id (or --app)')
  for (const argument of more) command.argument(`[${argument.name}]`, argument.description)
  if (more.length > 0) command.usage(`[options] [appId] ${more.map((argument) => `<${argument.name}>`).join(' ')}`)
  return command.option('--app <appId>', 'the app id, e.g. com.example.shop')
}

/**
 * The app id and the arguments after it, from the words given and `--app`: a usage error (exit 2,
 * before any request) when no app is named, when the word and `--app` name two different ones, or
 * when an argument after the app id is missing.
 */
export function appArguments(command: Command, words: (string | undefined)[], app: string | undefined, more: string[] = []): [string, ...string[]] {
  const given = words.filter((word): word is string => word !== undefined)
  // with --app, the words are the arguments after the app id, or the app id again and them
  const named = app !== undefined && given.length <= more.length ? undefined : given.shift()
  if (named !== undefined && app !== undefined && named !== app) command.error(`error: two app ids: ${named} and --app ${app}; give one`)
  const appId = app ?? named
  if (appId === undefined) command.error("error: missing required argument 'appId' (or --app <appId>)")
  const missing = more[given.length]
  if (missing !== undefined) command.error(`error: missing required argument '${missing}'`)
  return [appId!, ...given]
}

export interface AppFlag {
  app?: string
}
