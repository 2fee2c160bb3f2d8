// `miniship channels ls|create|rm|guard`: a miniapp's release channels, in the state words of decisions §13 (guard: ./guard.ts).
import { Command } from 'commander'
import { guardCommand } from './guard'
import { connect, withClientOptions, type ClientFlags } from './config'
import { CliError, createOutput, runClient } from './http'
import { findMiniApp, type Channel } from './publish'
import { describeChannel } from './status'
import { asCommandGroup } from './command-group'

interface ChannelFlags extends ClientFlags {
  app: string
}

/** The command that creates a channel, as the CLI suggests it wherever a channel is missing. */
export function createChannelHint(channel: string, appId: string): string {
  return `miniship channels create ${channel} --app ${appId}`
}

function channelPath(miniAppId: string, channel?: string): string {
  return `/mini-apps/${encodeURIComponent(miniAppId)}/channels${channel === undefined ? '' : `/${encodeURIComponent(channel)}`}`
}

export function channelsCommand(): Command {
  const channels = new Command('channels')
    .description("a miniapp's release channels: list, create, remove, and each one's release guard")
    .addHelpText(
      'after',
      `
Devices ask for a channel (stable unless they say otherwise); each channel has its own release.

Examples:
  $ miniship channels ls --app com.example.shop
  $ miniship channels create beta --app com.example.shop
  $ miniship push build --app com.example.shop --version 1.3.0-beta.1 --channel beta --publish
  $ miniship channels rm beta --app com.example.shop
  $ miniship channels guard stable --app com.example.shop --enable`,
    )
  const list = withClientOptions(new Command('ls'))
    .description('list the channels with what each serves (complete, rolling-out, paused or reverted)')
    .requiredOption('--app <appId>', 'the app id, e.g. com.example.shop')
    .addHelpText('after', '\nExamples:\n  $ miniship channels ls --app com.example.shop\n  $ miniship channels ls --app com.example.shop --json')
    .action((flags: ChannelFlags) =>
      runClient(flags.json === true, async () => {
        const out = createOutput(flags.json === true)
        const api = connect(flags, { command: 'channels ls', scopes: ['read'] })
        const app = await findMiniApp(api, flags.app)
        const { body } = await api.request<{ channels: Channel[] }>('GET', channelPath(app.id))
        // the words of status and the console for every state (a reverted release's devices all get the previous one)
        for (const channel of body.channels) out.line(`${channel.name.padEnd(16)} ${describeChannel(channel)}`)
        out.result({ miniApp: app, channels: body.channels })
      }),
    )
  const create = withClientOptions(new Command('create'))
    .description('create a channel (names like beta or qa-team: a lower-case letter, then lower-case letters, digits or "-", 32 characters at most)')
    .argument('<name>', 'the channel name')
    .requiredOption('--app <appId>', 'the app id, e.g. com.example.shop')
    .addHelpText('after', '\nExample:\n  $ miniship channels create beta --app com.example.shop')
    .action((name: string, flags: ChannelFlags) =>
      runClient(flags.json === true, async () => {
        const out = createOutput(flags.json === true)
        const api = connect(flags, { command: 'channels create', scopes: ['read', 'release'] })
        const app = await findMiniApp(api, flags.app)
        const { body } = await api.request<Channel>('POST', channelPath(app.id), { json: { name } })
        out.line(`Created channel ${body.name} of ${app.appId}. Publish to it with: miniship publish ${app.appId} VERSION --channel ${body.name}`)
        out.result(body)
      }),
    )
  const remove = withClientOptions(new Command('rm'))
    .description('remove a channel that serves no release (stable cannot be removed)')
    .argument('<name>', 'the channel name')
    .requiredOption('--app <appId>', 'the app id, e.g. com.example.shop')
    .addHelpText('after', '\nExample:\n  $ miniship channels rm qa-team --app com.example.shop')
    .action((name: string, flags: ChannelFlags) =>
      runClient(flags.json === true, async () => {
        const out = createOutput(flags.json === true)
        const api = connect(flags, { command: 'channels rm', scopes: ['read', 'release'] })
        const app = await findMiniApp(api, flags.app)
        const { body } = await api.request<{ success: true; name: string }>('DELETE', channelPath(app.id, name)).catch((error: unknown) => {
          // the server's "create it first" is no advice to someone removing it: say which channels there are
          if (error instanceof CliError && error.body?.code === 'CHANNEL_NOT_FOUND') {
            const hint = `miniship channels ls --app ${app.appId} lists them`
            throw new CliError(error.exitCode, `${app.appId} has no channel "${name}" (CHANNEL_NOT_FOUND), so there is nothing to remove; ${hint}`, error.body && { ...error.body, hint })
          }
          throw error
        })
        out.line(`Removed channel ${body.name} of ${app.appId}.`)
        out.result(body)
      }),
    )
  channels.addCommand(list, { isDefault: true })
  channels.addCommand(create)
  channels.addCommand(remove)
  // the release guard is a channel's setting: here as issue 28 names it, and as `miniship guard`
  channels.addCommand(guardCommand('channels guard'))
  return asCommandGroup(channels)
}
