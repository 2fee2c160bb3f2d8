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
