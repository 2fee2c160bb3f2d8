// `miniship status APPID`: the release of every channel with its rollout, and the experience and review versions.
import { Command } from 'commander'
import { connect, withClientOptions, type ClientFlags } from './config'
import { createOutput, runClient } from './http'
import { findMiniApp, readWorkspace, type Channel, type VersionSummary } from './publish'
import { appArguments, withAppArgument, type AppFlag } from './app-option'
import { channelDevicesText, channelText } from '../modules/channels/words'
import { guardPauseText } from '../modules/channels/guard-text'

/**
 * "1.1.0 reverted 0 %. Every device gets 1.0.0, those on 1.1.0 too." in the console's words
 * (decisions §13): `status` and `channels ls` say the same of a channel.
 */
export function describeChannel(channel: Channel): string {
  const release = channel.release
  if (!release) return 'nothing released'
  const extras: string[] = []
  if (release.mandatory) extras.push('mandatory')
  if (release.hostVersionRange) extras.push(`host ${release.hostVersionRange}`)
  return `${channelText(channel)}${extras.length ? ` (${extras.join(', ')})` : ''}. ${channelDevicesText(channel)}${pausedByText(channel)}`
}

/**
 * Who paused the newest release and why, as the console's channel card says it: " Paused by
 * ana@example.test: crash spike." or the guard's badge, " Paused by the release guard: 12 of 140
 * devices failed (8.6 %) — threshold 5 %."; empty when it is not paused (or the server does not say).
 */
function pausedByText(channel: Channel): string {
  const release = channel.release
  if (!release?.paused || !release.pausedBy) return ''
  const trip = channel.guard?.trip
  if (release.pausedBy === 'release-guard' && trip) return ` P${guardPauseText(trip).slice(1)}.`
  const by = release.pausedBy === 'release-guard' ? 'the release guard' : release.pausedBy
  // one line: a reason may hold line breaks
  const reason = release.pauseReason?.replace(/\s+/g, ' ').trim()
  return ` Paused by ${by}${reason ? `: ${reason}` : ''}.`
}

export function statusCommand(): Command {
  return withAppArgument(withClientOptions(new Command('status')).description('what each channel of a miniapp serves, its rollout, and the experience and review versions'))
    .addHelpText('after', '\nExamples:\n  $ miniship status com.example.shop\n  $ miniship status --app com.example.shop --json')
    .action((positional: string | undefined, flags: ClientFlags & AppFlag, command: Command) => {
      const [appId] = appArguments(command, [positional], flags.app)
      return runClient(flags.json === true, async () => {
        const out = createOutput(flags.json === true)
        const api = connect(flags, { command: 'status', scopes: ['read'] })
        const app = await findMiniApp(api, appId)
        const workspace = await readWorkspace(api, app.id)
        const miniApp = workspace.miniApp
        const byId = new Map<string, VersionSummary>(workspace.versions.map((v) => [v.id, v]))
        const versionName = (id: string | null) => (id === null ? 'none' : (byId.get(id)?.version ?? id))
        // Servers without channels answer only the current release: shown as the stable channel.
        const channels: Channel[] = workspace.channels ?? [
          {
            name: 'stable',
            release: miniApp.currentReleaseVersionId
              ? { versionId: miniApp.currentReleaseVersionId, version: versionName(miniApp.currentReleaseVersionId), rolloutPercent: 100, hostVersionRange: null, mandatory: false, releasedAt: '' }
              : null,
            previousRelease: null,
          },
        ]
        out.line(`${miniApp.appId} (${miniApp.name}) on ${api.server}`)
        for (const channel of channels) {
          out.line(`  channel ${channel.name.padEnd(12)} ${describeChannel(channel)}`)
        }
        out.line(`  experience       ${versionName(miniApp.currentExperienceVersionId)}`)
        out.line(`  review           ${versionName(miniApp.currentReviewVersionId)}`)
        out.result({
          miniApp,
          channels,
          experience: miniApp.currentExperienceVersionId ? (byId.get(miniApp.currentExperienceVersionId) ?? { id: miniApp.currentExperienceVersionId }) : null,
          review: miniApp.currentReviewVersionId ? (byId.get(miniApp.currentReviewVersionId) ?? { id: miniApp.currentReviewVersionId }) : null,
        })
      })
    })
}
