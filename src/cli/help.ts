// How --help shows a command's options: one the command cannot run without says so.
import { Help, type Command } from 'commander'

/** `--name <name>  display name (required)`: commander's help does not tell a required option from the others. */
export function withRequiredOptionsMarked<T extends Command>(command: T): T {
  return command.configureHelp({
    optionDescription(option) {
      const description = new Help().optionDescription(option)
      return option.mandatory ? `${description} (required)` : description
    },
  })
}

/**
 * A group's list of its commands shows each as its own --help does: `publish [options] [appId]
 * <version>`, not commander's `[appId] [version]`, which read the version as optional (its
 * arguments are declared optional and checked when it runs, see withAppArgument). Commands without
 * a usage of their own are listed as commander lists them.
 */
export function withCommandsListedByUsage<T extends Command>(group: T): T {
  return group.configureHelp({
    ...group.configureHelp(),
    subcommandTerm(command) {
      const usage = (command as unknown as { _usage?: string })._usage
      return usage ? `${command.name()} ${usage}` : new Help().subcommandTerm(command)
    },
  })
}
