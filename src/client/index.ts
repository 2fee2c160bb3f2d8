// The developer's commands of the `miniship` executable (they talk HTTP to a server, never to a data directory).
import type { Command } from 'commander'
import { loginCommand, logoutCommand, whoamiCommand } from './login'
import { pushCommand } from './push'
import { appsCommand, publishCommand, rollbackCommand, rolloutCommand, versionsCommand } from './publish'
import { statusCommand } from './status'
import { keysCommand } from './keys'
import { signCommand } from './sign'
import { verifyCommand } from './verify'
import { guardCommand } from './guard'
import { webhooksCommand } from './webhooks'
import { channelsCommand } from './channels'

export function clientCommands(): Command[] {
  return [loginCommand(), logoutCommand(), whoamiCommand(), pushCommand(), appsCommand(), versionsCommand(), publishCommand(), rollbackCommand(), rolloutCommand(), channelsCommand(), statusCommand(), keysCommand(), signCommand(), verifyCommand(), guardCommand(), webhooksCommand()]
}
