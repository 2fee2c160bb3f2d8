// `miniship apps`, `versions ls`, `publish`, `rollback` and `rollout`: the release side of the CLI, over the channel API of decisions §10.
import { Command } from 'commander'
import { connect, withClientOptions, type ClientFlags } from './config'
import { CliError, createOutput, runClient, type ApiClient } from './http'
import type { ChannelRelease as ServedChannelRelease } from '../modules/channels/service'
import { isSemverRange } from '../modules/channels/semver-range'
import { asCommandGroup } from './command-group'
import { appArguments, withAppArgument, type AppFlag } from './app-option'
import { channelState, channelText, publishedText, rolledBackVersions, stateText, versionStandingText, type HistoryView, type ReleaseState, type ReleaseWarning } from '../modules/channels/words'

export interface MiniApp {
  id: string
  appId: string
  name: string
  currentExperienceVersionId: string | null
  currentReviewVersionId: string | null
  currentReleaseVersionId: string | null
  /** decisions §14: unsigned uploads, and the publish of or rollback to an unsigned version, are refused */
  requireSignature: boolean
}

export interface VersionSummary {
  id: string
  version: string
  buildNumber: number
  status: string
  releaseType: string
  channel?: string
  createdAt: string
  publishedAt: string | null
  /** the channels it is still a release of, where a publish is refused (the workspace's; absent on older servers) */
  releaseOf?: string[]
}

export interface Workspace {
  miniApp: MiniApp
  versions: VersionSummary[]
  channels?: Channel[]
  releaseHistory?: HistoryView[]
  nextCursor?: string | null
}

/** A channel's release as the workspace answers it (the CLI does not show who released it); servers before §13 send no pause fields. */
export type ChannelRelease = Omit<ServedChannelRelease, 'releasedBy' | 'paused' | 'pausedAt' | 'pausedBy' | 'pauseReason'> & Partial<Pick<ServedChannelRelease, 'paused' | 'pausedAt' | 'pausedBy' | 'pauseReason'>>

export interface Channel {
  name: string
  /** decisions §13; absent on older servers */
  state?: ReleaseState | null
  release: ChannelRelease | null
  previousRelease: ChannelRelease | null
  /** paused releases between the newest and previousRelease (§13); absent on older servers */
  pausedReleases?: ChannelRelease[]
  /** reverted releases below the newest (§13): no device gets them; absent on older servers */
  revertedReleases?: ChannelRelease[]
  /** every paused release below the newest (§13): a rollback to one clears its pause (ROLLBACK_CLEARS_PAUSE); absent on older servers */
  pausedBelow?: ChannelRelease[]
  defaultRelease?: ChannelRelease | null
  /** the release guard's settings and what it paused on (§15); absent on older servers */
  guard?: { trip?: { failedDevices: number; totalDevices: number; failureRate: number; maxFailureRate: number } | null }
}

export async function findMiniApp(api: ApiClient, appId: string): Promise<MiniApp> {
  const { body } = await api.request<MiniApp[]>('GET', '/mini-apps')
  const found = body.find((app) => app.appId === appId)
  // --json says what the text says (it said the server's shorter "Miniapp X not found")
  const message = `no miniapp ${appId} that you can see on ${api.server}`
  if (!found) throw new CliError(1, `${message} (MINI_APP_NOT_FOUND); miniship apps lists them`, { statusCode: 404, code: 'MINI_APP_NOT_FOUND', message, hint: 'miniship apps lists them' })
  return found
}

/** The first workspace page, and the following ones until `stop` says enough (the workspace is paged). */
export async function readWorkspace(api: ApiClient, miniAppId: string, stop: (page: Workspace) => boolean = () => true): Promise<Workspace> {
  let first: Workspace | null = null
  let cursor: string | null | undefined
  for (let pages = 0; pages < 1000; pages++) {
    const query = cursor ? `?cursor=${encodeURIComponent(cursor)}` : ''
    const { body } = await api.request<Workspace>('GET', `/mini-apps/${encodeURIComponent(miniAppId)}/workspace${query}`)
    if (first) first.versions.push(...body.versions)
    else first = body
    cursor = body.nextCursor
    if (!cursor || stop(body)) break
  }
  return first!
}

export async function findVersion(api: ApiClient, app: MiniApp, version: string): Promise<VersionSummary> {
  const workspace = await readWorkspace(api, app.id, (page) => page.versions.some((v) => v.version === version))
  const found = workspace.versions.find((v) => v.version === version)
  if (!found) throw new CliError(1, `${app.appId} has no version ${version} (VERSION_NOT_FOUND); miniship versions ls ${app.appId} lists them`, { statusCode: 404, code: 'VERSION_NOT_FOUND', message: `Version ${version} not found`, hint: `miniship versions ls ${app.appId} lists them` })
  return found
}

export interface ReleaseFlags {
  channel?: string
  notes?: string
  rollout?: string
  mandatory?: boolean
  hostRange?: string
}

/** The publish body of PLAN.md from the flags; only what was given is sent (the server has the defaults). */
export function publishBody(flags: ReleaseFlags): Record<string, unknown> {
  const body: Record<string, unknown> = {}
  if (flags.notes !== undefined) body.notes = flags.notes
  if (flags.channel !== undefined) body.channel = flags.channel
  if (flags.rollout !== undefined) body.rolloutPercent = percent(flags.rollout, 1, '--rollout')
  if (flags.hostRange !== undefined) {
    // the server's own check: a push with a bad range fails before its upload, not after
    if (flags.hostRange !== '' && !isSemverRange(flags.hostRange)) throw new CliError(2, `--host-range must be a semver range such as ">=2.3.0 <3" or "^2.1.0" (got ${JSON.stringify(flags.hostRange)})`)
    body.hostVersionRange = flags.hostRange
  }
  if (flags.mandatory) body.mandatory = true
  return body
}

export function percent(text: string, min: number, flag: string): number {
  const value = Number(text)
  if (!/^\d+$/.test(text) || value < min || value > 100) throw new CliError(2, `${flag} must be a whole number from ${min} to 100 (got ${JSON.stringify(text)})`)
  return value
}

export function withReleaseOptions(command: Command): Command {
  return command
    .option('--channel <name>', 'release channel (default: the channel the version was uploaded to, else stable)')
    .option('--notes <text>', 'release notes, kept in the release history')
    .option('--rollout <percent>', 'staged rollout: share of devices that get it, 1-100 (default 100)')
    .option('--mandatory', 'devices must install this update')
    .option('--host-range <range>', 'only host apps whose version satisfies this semver range, e.g. ">=2.3.0 <3"')
}

function describeRelease(record: { version: string; channel?: string }, body: Record<string, unknown>): string {
  const channel = (body.channel as string | undefined) ?? record.channel ?? 'stable'
  // the console's notice says the same (decisions §13: "10 %")
  return publishedText(record.version, channel, { rolloutPercent: body.rolloutPercent as number | undefined, mandatory: body.mandatory === true, hostVersionRange: body.hostVersionRange as string | undefined })
}

export async function publishVersion(api: ApiClient, miniAppId: string, versionId: string, flags: ReleaseFlags) {
  const body = publishBody(flags)
  const { body: record } = await api.request<VersionSummary>('POST', `/mini-apps/${encodeURIComponent(miniAppId)}/versions/${encodeURIComponent(versionId)}/publish`, { json: body })
  return { record, summary: describeRelease(record, body) }
}

export function appsCommand(): Command {
  const apps = new Command('apps').description('list the miniapps you can see, or create one').addHelpText('after', '\nExamples:\n  $ miniship apps\n  $ miniship apps create com.example.shop --name "Shop"')
  const list = withClientOptions(new Command('ls'))
    .description('list the miniapps you can see')
    .addHelpText('after', '\nExample:\n  $ miniship apps ls --json')
    .action((flags: ClientFlags) =>
      runClient(flags.json === true, async () => {
        const out = createOutput(flags.json === true)
        const { body } = await connect(flags, { command: 'apps', scopes: ['read'] }).request<MiniApp[]>('GET', '/mini-apps')
        if (body.length === 0) out.line('No miniapps yet: miniship apps create APPID --name NAME')
        for (const app of body) out.line(`${app.appId.padEnd(32)} ${app.name}`)
        out.result({ miniApps: body })
      }),
    )
  const create = withClientOptions(new Command('create'))
    .description('register a miniapp; you become its owner')
    .argument('<appId>', 'the app id, e.g. com.example.shop')
    .requiredOption('--name <name>', 'display name')
    .option('--description <text>', 'a description')
    .addHelpText('after', '\nExample:\n  $ miniship apps create com.example.shop --name "Shop"')
    .action((appId: string, flags: ClientFlags & { name: string; description?: string }) =>
      runClient(flags.json === true, async () => {
        const out = createOutput(flags.json === true)
        const { body } = await connect(flags).request<MiniApp>('POST', '/mini-apps', { json: { appId, name: flags.name, ...(flags.description ? { description: flags.description } : {}) } })
        out.line(`Created ${body.appId} (${body.name}), id ${body.id}.`)
        out.result(body)
      }),
    )
  apps.addCommand(list, { isDefault: true })
  apps.addCommand(create)
  return asCommandGroup(apps)
}

export function versionsCommand(): Command {
  const versions = new Command('versions').description('the versions of a miniapp').addHelpText('after', '\nExample:\n  $ miniship versions ls com.example.shop')
  versions.addCommand(
    withAppArgument(withClientOptions(new Command('ls')).description('list the versions of a miniapp, newest first'))
      .addHelpText('after', '\nExamples:\n  $ miniship versions ls com.example.shop --json\n  $ miniship versions ls --app com.example.shop')
      .action((positional: string | undefined, flags: ClientFlags & AppFlag, command: Command) => {
        const [appId] = appArguments(command, [positional], flags.app)
        return runClient(flags.json === true, async () => {
          const out = createOutput(flags.json === true)
          const api = connect(flags, { command: 'versions', scopes: ['read'] })
          const app = await findMiniApp(api, appId)
          const workspace = await readWorkspace(api, app.id, () => false)
          const channels = workspace.channels ?? []
          const rolledBack = rolledBackVersions(workspace.releaseHistory ?? [])
          // the same words as the console (decisions §13): live only where some device can get it
          const versions = workspace.versions.map((v) => ({ ...v, standing: versionStandingText(v, channels, rolledBack) }))
          for (const v of versions) {
            const marks = [v.id === app.currentExperienceVersionId ? 'experience' : '', v.id === app.currentReviewVersionId ? 'review' : ''].filter(Boolean)
            out.line(`${v.version.padEnd(20)} build ${String(v.buildNumber).padEnd(5)} ${v.standing}${marks.length ? `  (${marks.join(', ')})` : ''}`)
          }
          if (workspace.versions.length === 0) out.line(`${appId} has no versions yet: miniship push --app ${appId} --version 1.0.0`)
          out.result({ miniApp: app, versions, channels })
        })
      }),
  )
  return asCommandGroup(versions)
}

export function publishCommand(): Command {
  return withReleaseOptions(withAppArgument(withClientOptions(new Command('publish')).description('publish an uploaded version: it becomes the release of its channel'), [{ name: 'version', description: 'the version, e.g. 1.2.0' }]))
    .addHelpText('after', '\nExamples:\n  $ miniship publish com.example.shop 1.2.0 --notes "Checkout fixes"\n  $ miniship publish com.example.shop 1.3.0-beta.1 --channel beta --rollout 10\n  $ miniship publish --app com.example.shop 1.2.0')
    .action((first: string | undefined, second: string | undefined, flags: ClientFlags & AppFlag & ReleaseFlags, command: Command) => {
      const [appId, version] = appArguments(command, [first, second], flags.app, ['version']) as [string, string]
      return runClient(flags.json === true, async () => {
        const out = createOutput(flags.json === true)
        publishBody(flags) // bad flags are exit 2 before any request
        const api = connect(flags, { command: 'publish', scopes: ['read', 'release'] })
        const app = await findMiniApp(api, appId)
        const target = await findVersion(api, app, version)
        const { record, summary } = await publishVersion(api, app.id, target.id, flags)
        out.line(`Published ${appId} ${summary}.`)
        out.result(record)
      })
    })
}

export function rollbackCommand(): Command {
  return withAppArgument(withClientOptions(new Command('rollback')).description('make an earlier published version the release of its channel again'), [{ name: 'version', description: 'the published version to go back to' }])
    .option('--channel <name>', 'the channel to roll back (default: the version\'s channel, else stable)')
    .option('--notes <text>', 'why, kept in the release history')
    .addHelpText('after', '\nExamples:\n  $ miniship rollback com.example.shop 1.1.0 --notes "1.2.0 crashes on Android 9"\n  $ miniship rollback --app com.example.shop 1.1.0')
    .action((first: string | undefined, second: string | undefined, flags: ClientFlags & AppFlag & { channel?: string; notes?: string }, command: Command) => {
      const [appId, version] = appArguments(command, [first, second], flags.app, ['version']) as [string, string]
      return runClient(flags.json === true, async () => {
        const out = createOutput(flags.json === true)
        const api = connect(flags, { command: 'rollback', scopes: ['read', 'release'] })
        const app = await findMiniApp(api, appId)
        const target = await findVersion(api, app, version)
        const body: Record<string, unknown> = { targetVersionId: target.id }
        if (flags.notes !== undefined) body.notes = flags.notes
        if (flags.channel !== undefined) body.channel = flags.channel
        const { body: answer } = await api.request<{ miniApp: MiniApp; version: VersionSummary; warnings?: ReleaseWarning[] }>('POST', `/mini-apps/${encodeURIComponent(app.id)}/rollback`, { json: body })
        out.line(`Rolled ${appId} back to ${answer.version.version} on ${flags.channel ?? answer.version.channel ?? 'stable'}.`)
        // the server's words, as the console shows them (ROLLBACK_CLEARS_PAUSE, ROLLBACK_OF_REVERTED); older servers send none
        const warnings = answer.warnings ?? []
        for (const warning of warnings) out.note(`warning: ${warning.message} (${warning.code})`)
        out.result({ ...answer, warnings })
      })
    })
}

interface RolloutFlags extends ClientFlags, AppFlag {
  channel: string
  percent?: string
  pause?: boolean
  resume?: boolean
  revert?: boolean
  reason?: string
}

/** The PATCH body of one rollout action; exactly one of --pause, --resume, --revert, --percent (exit 2 otherwise). */
export function rolloutBody(flags: Omit<RolloutFlags, 'channel' | 'app'>): Record<string, unknown> {
  const chosen = [flags.pause && '--pause', flags.resume && '--resume', flags.revert && '--revert', flags.percent !== undefined && '--percent'].filter(Boolean)
  if (chosen.length !== 1) throw new CliError(2, chosen.length ? `choose one of ${chosen.join(', ')}` : 'say what to do: --pause, --resume, --revert or --percent N')
  if (flags.reason !== undefined && !flags.pause) throw new CliError(2, '--reason goes with --pause')
  if (flags.pause) return flags.reason !== undefined ? { paused: true, reason: flags.reason } : { paused: true }
  if (flags.resume) return { paused: false }
  if (flags.revert) return { rolloutPercent: 0 }
  return { rolloutPercent: percent(flags.percent!, 0, '--percent') }
}

/**
 * `--resume` of a release that is not paused: the channel as it is when there is nothing to resume
 * (rolling-out or complete: exit 0, the devices get what a resume would give them), null when the
 * server is to answer (paused, no release, no such channel). A reverted release is refused like
 * `--pause` of one (the server's 409 ROLLOUT_REVERTED, exit 1): no device gets it, and resuming
 * would not change that.
 */
async function resumable(api: ApiClient, app: MiniApp, name: string): Promise<Channel | null> {
  const { body } = await api.request<{ channels: Channel[] }>('GET', `/mini-apps/${encodeURIComponent(app.id)}/channels`)
  const channel = body.channels.find((candidate) => candidate.name === name)
  const state = channel && channelState(channel)
  if (!channel?.release || !state || state === 'paused') return null
  if (state === 'reverted') {
    const message = `${app.appId} ${name}: ${channel.release.version} is reverted (0 %), not paused: nothing to resume, and no device gets it; roll it out again with --percent N`
    // the text names the code, as every refusal's does
    throw new CliError(1, `${message} (ROLLOUT_REVERTED)`, { code: 'ROLLOUT_REVERTED', message })
  }
  return channel
}

/**
 * `--percent N` (or `--revert`, 0) where the newest release already is at N and not paused: the
 * channel as it is (the server changes nothing, records nothing and sends no webhook), null when
 * the server is to answer. It printed the line of a real change; --pause and --resume say so.
 */
async function alreadyAt(api: ApiClient, app: MiniApp, name: string, percent: number): Promise<Channel | null> {
  const { body } = await api.request<{ channels: Channel[] }>('GET', `/mini-apps/${encodeURIComponent(app.id)}/channels`)
  const channel = body.channels.find((candidate) => candidate.name === name)
  const state = channel && channelState(channel)
  return channel?.release && state && state !== 'paused' && channel.release.rolloutPercent === percent ? channel : null
}

/**
 * `--pause` of a release already paused: the channel as it is (the server would answer it unchanged,
 * keeping the first pause's reason), null when the server is to answer (any other state, no release,
 * no such channel).
 */
async function alreadyPaused(api: ApiClient, app: MiniApp, name: string): Promise<Channel | null> {
  const { body } = await api.request<{ channels: Channel[] }>('GET', `/mini-apps/${encodeURIComponent(app.id)}/channels`)
  const channel = body.channels.find((candidate) => candidate.name === name)
  return channel?.release && channelState(channel) === 'paused' ? channel : null
}

export function rolloutCommand(): Command {
  return withAppArgument(withClientOptions(new Command('rollout')).description("pause, resume, revert or change the rollout of a channel's newest release"))
    .option('--channel <name>', 'the channel', 'stable')
    .option('--pause', 'no new device gets the release; devices that run it keep it (older clients and the release mirror, which name no version, still get a release paused at 100 %: only --revert stops those)')
    .option('--reason <text>', 'why you pause (kept on the release and in the audit log; not recorded when it is already paused)')
    .option('--resume', 'resume a paused rollout at the same percent')
    .option('--revert', 'every device goes back to the previous release, including those that run this one (0 %); a first release goes to no device, and those on it keep it')
    .option('--percent <n>', 'share of devices that get it, 1-100 (100 completes it; 0 is --revert)')
    .addHelpText(
      'after',
      `
States (the console uses the same words): complete, rolling-out, paused, reverted.

Examples:
  $ miniship rollout com.example.shop --percent 50
  $ miniship rollout com.example.shop --pause --reason "crash on Android 9"
  $ miniship rollout com.example.shop --resume
  $ miniship rollout com.example.shop --channel beta --revert --json
  $ miniship rollout --app com.example.shop --percent 100`,
    )
    .action((positional: string | undefined, flags: RolloutFlags, command: Command) => {
      const [appId] = appArguments(command, [positional], flags.app)
      return runClient(flags.json === true, async () => {
        const out = createOutput(flags.json === true)
        const body = rolloutBody(flags)
        const api = connect(flags, { command: 'rollout', scopes: ['read', 'release'] })
        const app = await findMiniApp(api, appId)
        if (flags.pause) {
          const before = await alreadyPaused(api, app, flags.channel)
          if (before) {
            const release = before.release!
            const why = release.pauseReason ? ` (${release.pauseReason})` : ''
            out.line(`${appId} ${before.name}: ${release.version} is already paused (${stateText('paused', release.rolloutPercent)})${release.pausedBy ? ` by ${release.pausedBy}` : ''}${why}; nothing changed${flags.reason !== undefined ? ', and --reason was not recorded' : ''}.`)
            // one shape for every --json result of rollout: nothing changed, so nothing to warn of
            out.result({ ...before, warnings: [], paused: false, changed: false })
            return
          }
        }
        if (flags.resume) {
          const before = await resumable(api, app, flags.channel)
          if (before) {
            out.line(`${appId} ${before.name}: ${before.release!.version} is not paused (${stateText(channelState(before)!, before.release!.rolloutPercent)}); nothing to resume.`)
            out.result({ ...before, warnings: [], resumed: false, changed: false })
            return
          }
        }
        const percent = typeof body.rolloutPercent === 'number' ? body.rolloutPercent : null
        if (percent !== null) {
          const before = await alreadyAt(api, app, flags.channel, percent)
          if (before) {
            out.line(`${appId} ${before.name}: ${before.release!.version} is already ${stateText(channelState(before)!, percent)}; nothing changed.`)
            out.result({ ...before, warnings: [], changed: false })
            return
          }
        }
        const { body: answer } = await api.request<Channel & { warnings?: ReleaseWarning[] }>('PATCH', `/mini-apps/${encodeURIComponent(app.id)}/channels/${encodeURIComponent(flags.channel)}/rollout`, { json: body })
        // a pause, revert or lower percent whose fallback signature rules refuse (FALLBACK_UNSIGNED, FALLBACK_KEY_REVOKED): the server's words, as the console shows them
        const channel = { ...answer, warnings: answer.warnings ?? [] }
        out.line(`${appId} ${channel.name}: ${channelText(channel)}.`)
        for (const warning of channel.warnings) out.note(`warning: ${warning.message} (${warning.code})`)
        // `changed` in every result: one field a script reads whatever the flag (`paused` and `resumed` stay beside it)
        out.result(flags.resume ? { ...channel, resumed: true, changed: true } : flags.pause ? { ...channel, paused: true, changed: true } : { ...channel, changed: true })
      })
    })
}
