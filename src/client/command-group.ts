// A command that groups subcommands (apps, channels, keys, versions, webhooks): a mistyped subcommand is named as one, with the list.
import type { Command } from 'commander'
import { withJsonUsageErrors } from '../cli/json-output'

/**
 * `miniship apps bogus` said "too many arguments for 'ls'" (the group's default subcommand took the
 * word as its argument) and `miniship keys bogus` "unknown command 'bogus'" without the list: both
 * now say "unknown command 'bogus' for 'apps'; its commands: ls, create". Call once the
 * subcommands are added; a default subcommand that takes arguments of its own is left alone.
 */
export function asCommandGroup<T extends Command>(group: T): T {
  const unknownCommand = (): never => {
    const names = group.commands.map((command) => command.name())
    return group.error(`error: unknown command '${group.args[0]}' for '${group.name()}'; its commands: ${names.join(', ')}`, { code: 'commander.unknownCommand' })
  }
  // commander's own (not in its typings) is what it calls for a word that names no subcommand
  ;(group as Command as Command & { unknownCommand(): never }).unknownCommand = unknownCommand
  // `miniship keys --json` said "unknown option '--json'", as if --json were not taken anywhere: the
  // subcommand is what is missing (a group with a default subcommand hands options to it)
  const typed = group as Command as Command & { unknownOption(flag: string): never }
  const unknownOption = typed.unknownOption.bind(group)
  typed.unknownOption = (flag) => {
    if (!group.args.some((arg) => !arg.startsWith('-'))) {
      const names = group.commands.map((command) => command.name()).filter((name) => name !== 'help')
      return group.error(`error: missing command for '${group.name()}' (before ${flag}); its commands: ${names.join(', ')}`, { code: 'commander.missingCommand' })
    }
    return unknownOption(flag)
  }
  group.hook('preSubcommand', (_group, subcommand) => {
    const first = group.args[0]
    // dispatched to the default subcommand with a word that names no subcommand
    if (first !== undefined && !first.startsWith('-') && first !== subcommand.name() && subcommand.registeredArguments.length === 0) unknownCommand()
  })
  return withJsonUsageErrors(group)
}
