// `miniship guard`: show or set a channel's release guard (decisions §15), which pauses the newest release when too many devices fail.
import { Command } from 'commander'
import { connect, withClientOptions, type ClientFlags } from './config'
import { timeText } from '../terminal/time'
import { CliError, createOutput, runClient } from './http'
import { findMiniApp } from './publish'
import type { ChannelRecord } from '../modules/channels/service'
import { failedText, guardPauseText, guardStateText, heldText, overThreshold, watchedState } from '../modules/channels/guard-text'

interface GuardFlags extends ClientFlags {
  app: string
  channel: string
  enable?: boolean
  disable?: boolean
  maxFailureRate?: string
  minDevices?: string
}

type GuardedChannel = Pick<ChannelRecord, 'name' | 'state' | 'guard'> & { release: Pick<NonNullable<ChannelRecord['release']>, 'version' | 'paused' | 'pausedBy'> | null }

/** The settings the flags change, checked here so a typo is exit 2 before anything is sent; {} shows the guard. */
export function guardChanges(flags: Pick<GuardFlags, 'enable' | 'disable' | 'maxFailureRate' | 'minDevices'>): Record<string, unknown> {
  if (flags.enable && flags.disable) throw new CliError(2, '--enable and --disable cannot both be given')
  const changes: Record<string, unknown> = {}
  if (flags.enable) changes.enabled = true
  if (flags.disable) changes.enabled = false
  if (flags.maxFailureRate !== undefined) {
    const rate = Number(flags.maxFailureRate)
    if (flags.maxFailureRate.trim() === '' || !Number.isFinite(rate) || rate <= 0 || rate > 1) throw new CliError(2, `--max-failure-rate must be a number above 0 and at most 1, such as 0.05 for 5 % (got "${flags.maxFailureRate}")`)
    changes.maxFailureRate = rate
  }
  if (flags.minDevices !== undefined) {
    const count = Number(flags.minDevices)
    if (!/^\d+$/.test(flags.minDevices.trim()) || !Number.isSafeInteger(count) || count < 1) throw new CliError(2, `--min-devices must be a whole number of at least 1 (got "${flags.minDevices}")`)
    changes.minDevices = count
  }
  return changes
}

/** The lines shown for a channel's guard: its state, the last count of the newest release, and why it paused it. */
export function guardLines(appId: string, channel: GuardedChannel): string[] {
  const { guard, release } = channel
  const lines = [`${appId} ${channel.name}: ${guardStateText(guard)}`]
  if (release && guard.lastCheck) lines.push(`  ${release.version}: ${failedText(guard.lastCheck, guard.maxFailureRate)}, counted ${timeText(guard.lastCheck.at)}`)
  // no count yet (just switched on, or a new release): the devices that reported are counted at the next check, so "none reported" would not be true
  else if (release && guard.enabled) lines.push(`  ${release.version}: not counted yet: the guard counts its devices at its next check, within a minute`)
  // over the line and still running (not paused, not reverted): say why, or "pauses when more than 5 %" next to 5.01 % reads as broken
  const held = guard.enabled && release && watchedState(channel.state) && overThreshold(guard) ? heldText(guard) : null
  if (held) lines.push(`  ${release!.version}: ${held}`)
  // the whole command, as ROLLOUT_PAUSED's message gives it: `miniship rollout --resume` alone is refused (no app id)
  const resume = `miniship rollout ${appId}${channel.name === 'stable' ? '' : ` --channel ${channel.name}`} --resume`
  if (release?.paused && release.pausedBy === 'release-guard' && guard.trip) lines.push(`  ${release.version} ${guardPauseText(guard.trip)}; ${resume} resumes it`)
  return lines
}

/**
 * `miniship channels guard [channel]` (issue 28's name; the channel as an argument, as `channels
 * create` and `rm` take it) and `miniship guard`, the same command: `invokedAs` is what its help
 * examples and its messages call it.
 */
export function guardCommand(invokedAs: 'guard' | 'channels guard' = 'guard'): Command {
  return withClientOptions(new Command('guard'))
    .description("show or set a channel's release guard: it pauses the channel's newest release when more than a share of its devices report failed or rolled_back")
    .argument('[channel]', 'the channel (the same as --channel)')
    .requiredOption('--app <appId>', 'the app id')
    .option('--channel <name>', 'the channel (default: "stable")')
    .option('--enable', 'turn the guard on')
    .option('--disable', 'turn the guard off')
    .option('--max-failure-rate <rate>', 'pause when more than this share of devices failed, above 0 and at most 1 (default 0.05)')
    .option('--min-devices <n>', 'but only once at least this many devices reported (default 20)')
    .addHelpText(
      'after',
      [
        '',
        'Devices are counted, not events: one device reporting 50 failures counts once, and events',
        'without a deviceId are not counted. After a person resumes a release, it pauses it again',
        'only once more devices fail than had then. Without --enable, --disable or a setting it',
        'shows the guard and its last count.',
        '',
        'Examples:',
        invokedAs === 'guard'
          ? '  $ miniship guard --app com.example.shop --channel stable --enable --max-failure-rate 0.05 --min-devices 20'
          : '  $ miniship channels guard stable --app com.example.shop --enable --max-failure-rate 0.05 --min-devices 20',
        `  $ miniship ${invokedAs} --app com.example.shop --json`,
      ].join('\n'),
    )
    .action((channelArgument: string | undefined, flags: GuardFlags) =>
      runClient(flags.json === true, async () => {
        const out = createOutput(flags.json === true)
        if (channelArgument !== undefined && flags.channel !== undefined && channelArgument !== flags.channel) {
          throw new CliError(2, `Name the channel once: the argument says ${channelArgument}, --channel says ${flags.channel}`)
        }
        flags.channel = channelArgument ?? flags.channel ?? 'stable'
        const changes = guardChanges(flags)
        const setting = Object.keys(changes).length > 0
        const api = connect(flags, { command: invokedAs, scopes: setting ? ['read', 'release'] : ['read'] })
        const app = await findMiniApp(api, flags.app)
        const base = `/mini-apps/${encodeURIComponent(app.id)}/channels`
        let channel: GuardedChannel
        if (setting) {
          channel = (await api.request<GuardedChannel>('PATCH', `${base}/${encodeURIComponent(flags.channel)}`, { json: { guard: changes } })).body
        } else {
          const { body } = await api.request<{ channels: GuardedChannel[] }>('GET', base)
          const found = body.channels.find((candidate) => candidate.name === flags.channel)
          if (!found) throw new CliError(1, `${flags.app} has no channel "${flags.channel}" (CHANNEL_NOT_FOUND); it has ${body.channels.map((candidate) => candidate.name).join(', ')}`, { statusCode: 404, code: 'CHANNEL_NOT_FOUND', message: `There is no channel "${flags.channel}"` })
          channel = found
        }
        if (!channel.guard) throw new CliError(1, `${api.server} has no release guard (an older miniship); upgrade the server`)
        for (const line of guardLines(flags.app, channel)) out.line(line)
        out.result({ appId: flags.app, channel: channel.name, state: channel.state, version: channel.release?.version ?? null, guard: channel.guard })
      }),
    )
}
