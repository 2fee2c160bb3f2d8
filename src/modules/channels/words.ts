// The words of decisions §13 for a release's state and a version's standing, shared by the console and the CLI (pure, imports only other words).
import { signAgainText } from '../signing/words'

/** A channel's newest release is in one of these; the API, the console and the CLI use no others. */
export type ReleaseState = 'complete' | 'rolling-out' | 'paused' | 'reverted'

export interface ReleaseView {
  versionId: string
  version: string
  rolloutPercent: number
  paused?: boolean
  /** a semver range of host app versions; null or absent: any. A device outside it gets an older release (decide.ts) */
  hostVersionRange?: string | null
}

export interface ChannelView {
  name: string
  /** absent on servers from before §13: derived from the release */
  state?: ReleaseState | null
  release: ReleaseView | null
  previousRelease: ReleaseView | null
  /** paused releases between the newest and `previousRelease`: only the devices that run them keep them; absent on older servers */
  pausedReleases?: readonly ReleaseView[]
  /** reverted releases below the newest: no device gets them; absent on older servers */
  revertedReleases?: readonly ReleaseView[]
  /** every paused release below the newest (a rollback to one clears its pause); absent on older servers */
  pausedBelow?: readonly PausedView[]
  /** what a request that names no device and no version gets (the release mirror serves it); absent on older servers */
  defaultRelease?: ReleaseView | null
}

export interface HistoryView {
  action: string
  versionId: string
  previousVersionId?: string | null
}

/** The channel's state as the server says it, or derived the same way for an older server. */
export function channelState(channel: ChannelView): ReleaseState | null {
  if (channel.state !== undefined) return channel.state
  const release = channel.release
  if (!release) return null
  if (release.paused) return 'paused'
  return release.rolloutPercent === 0 ? 'reverted' : release.rolloutPercent === 100 ? 'complete' : 'rolling-out'
}

/**
 * What a publish did, for its notice in the console and its line in the CLI: "1.2.0 to beta (10 %)",
 * "1.2.0 to stable (100 %, mandatory, host >=2.0.0)". A publish goes *to* a channel; "on <channel>"
 * is what a version is once there (its standing, "live on stable").
 */
export function publishedText(version: string, channel: string, options: { rolloutPercent?: number; mandatory?: boolean; hostVersionRange?: string | null } = {}): string {
  const extras = [`${options.rolloutPercent ?? 100} %`]
  if (options.mandatory) extras.push('mandatory')
  if (options.hostVersionRange) extras.push(`host ${options.hostVersionRange}`)
  return `${version} to ${channel} (${extras.join(', ')})`
}

/** "rolling-out 30 %", "paused 30 %", "complete 100 %", "reverted 0 %": the state word and the percent, as everywhere. */
export function stateText(state: ReleaseState, percent: number): string {
  return `${state} ${percent} %`
}

/** The channel's newest release in words: "1.1.0 rolling-out 30 %", or "nothing released". */
export function channelText(channel: ChannelView): string {
  const state = channelState(channel)
  if (!channel.release || !state) return 'nothing released'
  return `${channel.release.version} ${stateText(state, channel.release.rolloutPercent)}`
}

/** What the channel's devices get, in one sentence (the console's cards and `miniship status`). */
export function channelDevicesText(channel: ChannelView): string {
  const state = channelState(channel)
  const release = channel.release
  if (!release || !state) return 'No release yet.'
  // short enough for one line of a console card
  const previous = channel.previousRelease?.version
  const others = previous ?? 'nothing'
  // an older release paused, then published over: the others pass over it, its devices keep it (§13)
  const kept = channel.pausedReleases?.length ? `; ${pausedKeptText(channel.pausedReleases)}` : ''
  switch (state) {
    case 'complete':
      // a release for some host versions only: a device that sends one outside the range gets the
      // release before it (decide.ts), so "every device" would be untrue
      if (release.hostVersionRange) {
        // previousRelease is what they get when it is for any host; one for some hosts may not fit them either
        const fallback = hostFallback(channel)
        const they = !channel.previousRelease ? 'none' : fallback?.hostVersionRange ? `an earlier release that fits their host, if any (${fallback.version} is for host ${fallback.hostVersionRange})` : fallback ? fallback.version : 'an earlier release that fits their host, if any'
        return `Every device gets ${release.version} except host apps outside ${release.hostVersionRange}: they get ${they}${kept}.`
      }
      return `Every device gets ${release.version}.`
    case 'rolling-out':
      return `${release.rolloutPercent} % get ${release.version}; the others get ${others}${kept}.`
    case 'paused':
      // paused complete (100 %), the frozen bucket still hands it to every request that names no
      // version (§13): older clients and the release mirror; say so, not "the others get" the previous
      if (channel.defaultRelease?.versionId === release.versionId) {
        return `Devices on ${release.version} keep it; those that name their version get ${others}${kept}. Requests that name none (older clients, the release mirror) still get ${release.version}: revert to stop that.`
      }
      return `Devices on ${release.version} keep it; the others get ${others}${kept}.`
    case 'reverted':
      // with no earlier release the server answers every device 404: nothing to send back, so a device
      // that installed the release (the update client) keeps running it
      if (!previous) return `No device gets ${release.version}; those on it keep it${kept}.`
      // those on a paused older release are the exception: said first, so "every" is not untrue
      return kept ? `${capitalised(pausedKeptText(channel.pausedReleases!))}; every other device gets ${previous}, those on ${release.version} too.` : `Every device gets ${previous}, those on ${release.version} too.`
  }
}

/**
 * Of a complete newest release for some host versions only: the release below it that host apps
 * outside its range may get (decide.ts), `previousRelease` unless it is for the same range (then
 * no such host fits it: null). Older releases further down are not in the channel record.
 */
function hostFallback(channel: ChannelView): ReleaseView | null {
  const range = channel.release?.hostVersionRange
  const previous = channel.previousRelease
  if (!range || !previous || previous.hostVersionRange === range) return null
  // both lower bounds alone (`>=3.0.0`, the usual form: a new host baseline): a host below the
  // newest's bound fits the previous one only when that bound is lower; other forms are not compared
  // here (this runs in the browser too, without a semver library), and previousRelease is named
  const newestFrom = lowerBoundOf(range)
  const previousFrom = previous.hostVersionRange ? lowerBoundOf(previous.hostVersionRange) : null
  if (newestFrom && previousFrom && compareVersions(previousFrom, newestFrom) >= 0) return null
  return previous
}

/** `[3, 0, 0]` of a range that is one lower bound, `>=3.0.0` (spaces allowed); null for any other form. */
function lowerBoundOf(range: string): number[] | null {
  const match = /^\s*>=\s*v?(\d+)\.(\d+)\.(\d+)\s*$/.exec(range)
  return match ? [Number(match[1]), Number(match[2]), Number(match[3])] : null
}

function compareVersions(a: number[], b: number[]): number {
  for (let index = 0; index < 3; index++) if (a[index] !== b[index]) return a[index]! - b[index]!
  return 0
}

const capitalised = (text: string) => text.charAt(0).toUpperCase() + text.slice(1)

/** Of a channel's `pausedReleases`: "devices on 1.1.0 (paused) keep it", "devices on 1.1.0 or 1.0.5 (paused) keep theirs". */
export function pausedKeptText(paused: readonly { version: string }[]): string {
  const versions = paused.map((release) => release.version)
  return versions.length === 1 ? `devices on ${versions[0]} (paused) keep it` : `devices on ${versions.join(' or ')} (paused) keep theirs`
}

/** A warning an answer carries beside what it did (`{ code, message }`, as an upload's): the CLI prints `warning: <message> (<code>)` on stderr, the console a warning line. */
export interface ReleaseWarning<Code extends string = string> {
  code: Code
  message: string
}

/**
 * A rollback to a paused release below the newest (§13) serves it to every device and ends the pause:
 * "1.1.0 was paused by ana@example.test (crash spike); rolling back to it clears the pause and sends
 * it to every device on stable". The console's rollback dialog says it before, the answer after.
 */
export function rollbackClearsPauseText(version: string, channel: string, pause: { pausedBy?: string | null; pauseReason?: string | null }): string {
  const by = pause.pausedBy ? ` by ${pause.pausedBy}` : ''
  // one line, wherever it is printed: a reason may hold line breaks
  const reason = pause.pauseReason?.replace(/\s+/g, ' ').trim()
  const why = reason ? ` (${reason})` : ''
  return `${version} was paused${by}${why}; rolling back to it clears the pause and sends it to every device on ${channel}`
}

/**
 * A rollback to a reverted release below the newest (no device gets it, decide.ts) sends it to every
 * device again: "1.1.0 was reverted on stable (no device gets it); rolling back to it sends it to
 * every device on stable". Said before (the console's Roll back… dialog) and after (the answer's
 * ROLLBACK_OF_REVERTED), as for a paused one.
 */
export function rollbackOfRevertedText(version: string, channel: string): string {
  return `${version} was reverted on ${channel} (no device gets it); rolling back to it sends it to every device on ${channel}`
}

/** A paused release with who paused it and why, as a channel record lists it. */
export interface PausedView extends ReleaseView {
  pausedBy?: string | null
  pauseReason?: string | null
}

/**
 * What a rollback to `version` on `channel` undoes, said before it happens (the console's Roll back…
 * dialog) by the server's rule: the version is a reverted release below the newest (`revertedReleases`:
 * the answer will warn ROLLBACK_OF_REVERTED) or a paused one (`pausedBelow`: ROLLBACK_CLEARS_PAUSE),
 * in the answer's words; null otherwise. An older server sends no `pausedBelow`: its
 * `pausedReleases` hold the paused releases above the previous one.
 */
export function rollbackClearsPauseFor(
  channel: { name: string; pausedBelow?: readonly PausedView[]; pausedReleases?: readonly PausedView[]; revertedReleases?: readonly ReleaseView[] },
  version: { id: string; version: string; revertedIn?: readonly string[] },
): string | null {
  // reverted (and maybe paused before): no device gets it, which is the stronger thing to say (ROLLBACK_OF_REVERTED);
  // the version's revertedIn (the workspace's) also knows one a rollback withdrew since
  if (channel.revertedReleases?.some((release) => release.versionId === version.id) || version.revertedIn?.includes(channel.name)) return rollbackOfRevertedText(version.version, channel.name)
  const paused = (channel.pausedBelow ?? channel.pausedReleases)?.find((release) => release.versionId === version.id)
  return paused ? rollbackClearsPauseText(version.version, channel.name, paused) : null
}

/** How a version is signed, as far as the fallback warnings need it (a version record's `signature`). */
export interface SignatureView {
  keyId: string
  keyName?: string | null
  /** set when the key was revoked after signing */
  keyRevokedAt?: string | null
}

/**
 * A change that sends devices of a channel back to its `previousRelease`: a pause (the devices that
 * do not run the newest), a revert (all of them), or a lower percent (`lowerTo`, 1–99 below the one
 * it had: the devices whose bucket is at or above it, adopters included; decide.ts).
 */
export type FallbackAction = 'pause' | 'revert' | { lowerTo: number }

/**
 * After a pause, a revert or a lowered percent (§13) devices of the channel fall back to
 * `previousRelease`. When today's signature rules (§14) would refuse that release (unsigned while
 * the miniapp requires signatures, or signed by a key revoked since), host apps that check
 * signatures refuse it: the change still happens, and its answer, the CLI and the console warn, in
 * these words. `signature` is the fallback's (null: unsigned; undefined: not known here, so nothing
 * is said). `channel` is the channel before or after the change: below the newest nothing moves.
 */
export function fallbackSignatureWarning(
  app: { appId: string; requireSignature?: boolean },
  action: FallbackAction,
  channel: ChannelView,
  signature: SignatureView | null | undefined,
): ReleaseWarning<'FALLBACK_UNSIGNED' | 'FALLBACK_KEY_REVOKED'> | null {
  const newest = channel.release
  const fallback = channel.previousRelease
  if (!newest || !fallback || signature === undefined) return null
  const revoked = signature?.keyRevokedAt ? signature : null
  if (!revoked && (signature !== null || !app.requireSignature)) return null
  // devices on a paused release between them keep theirs (decide.ts): "every device" would be untrue
  const except = channel.pausedReleases?.length ? `, except those on ${channel.pausedReleases.map((release) => release.version).join(' or ')} (paused)` : ''
  const who =
    action === 'pause'
      ? `Devices on ${channel.name} that do not run ${newest.version}${except}${except ? ',' : ''} fall back to ${fallback.version}`
      : action === 'revert'
        ? `Devices on ${channel.name}, those on ${newest.version} too${except}, fall back to ${fallback.version}`
        : `Devices on ${channel.name} outside the new ${action.lowerTo} %${except}${except ? ',' : ''} fall back to ${fallback.version}`
  if (revoked) {
    const key = revoked.keyName ? `"${revoked.keyName}" (${revoked.keyId})` : revoked.keyId
    return { code: 'FALLBACK_KEY_REVOKED', message: `${who}, which was signed by the key ${key}, revoked since: host apps that no longer trust that key will refuse it; ${signAgainText(app.appId, fallback.version)}` }
  }
  return { code: 'FALLBACK_UNSIGNED', message: `${who}, which is not signed: host apps that require signatures will refuse it; sign it (miniship sign ${fallback.version} --app ${app.appId} --sign-key FILE)` }
}

/** Where a version stands on one channel. */
export interface Standing {
  channel: string
  /** some device on this channel can get it */
  live: boolean
  /** "live on stable, rolling-out 30 %", "previous on stable (devices outside the rollout get it)", "live on stable for the devices that run it (paused 30 %)", "reverted on stable", "replaced on stable" */
  text: string
}

/** The versions a rollback moved a channel away from (from the release history). */
export function rolledBackVersions(history: readonly HistoryView[]): Set<string> {
  const ids = new Set<string>()
  for (const entry of history) if (entry.action === 'ROLLBACK' && entry.previousVersionId) ids.add(entry.previousVersionId)
  return ids
}

/**
 * Where a version stands on each channel that mentions it: live only where some device can get it
 * (the newest release unless reverted; the previous release, and a paused one above it for the
 * devices that run it, unless the newest is complete). A reverted release stays "reverted" once a
 * fix is published over it: no device gets it, so "replaced" would hide why.
 */
export function versionStandings(versionId: string, channels: readonly ChannelView[]): Standing[] {
  const standings: Standing[] = []
  for (const channel of channels) {
    const state = channelState(channel)
    if (channel.release?.versionId === versionId && state) {
      standings.push(
        state === 'reverted'
          ? { channel: channel.name, live: false, text: `reverted on ${channel.name}` }
          : { channel: channel.name, live: true, text: `live on ${channel.name}, ${stateText(state, channel.release.rolloutPercent)}` },
      )
    } else if (channel.previousRelease?.versionId === versionId && state) {
      const newest = channel.release!.version
      // a complete newest release for some host versions only: the host apps outside it still get this one
      const range = hostFallback(channel) ? channel.release!.hostVersionRange : null
      // devices on a paused release between them keep theirs
      const except = channel.pausedReleases?.length ? `, except those on ${channel.pausedReleases.map((release) => release.version).join(' or ')} (paused)` : ''
      const text: Record<ReleaseState, string> = {
        complete: range ? `live on ${channel.name} for host apps outside ${range}${except}` : `replaced on ${channel.name}`,
        'rolling-out': `live on ${channel.name} for the devices outside the rollout of ${newest}${except}`,
        paused: `live on ${channel.name} for the devices that do not run ${newest}${except}`,
        reverted: `live on ${channel.name} (${newest} is reverted)${except}`,
      }
      standings.push({ channel: channel.name, live: state !== 'complete' || !!range, text: text[state] })
    } else if (state) {
      // paused, then published over: only the devices that run it keep it, unless the newest is complete
      const paused = channel.pausedReleases?.find((release) => release.versionId === versionId)
      if (channel.revertedReleases?.some((release) => release.versionId === versionId)) {
        // reverted, then published over: still no device gets it, whatever the newest does (decide.ts)
        standings.push({ channel: channel.name, live: false, text: `reverted on ${channel.name}` })
      } else if (paused) {
        standings.push(
          state === 'complete' && !channel.release?.hostVersionRange
            ? { channel: channel.name, live: false, text: `replaced on ${channel.name}` }
            : { channel: channel.name, live: true, text: `live on ${channel.name} for the devices that run it (${stateText('paused', paused.rolloutPercent)})` },
        )
      }
    }
  }
  return standings
}

/**
 * A version's one-line standing: its live channels, else what happened to it. `status` is the
 * version's lifecycle status; a published version that no device can get is "rolled back" (when a
 * rollback moved off it) or "replaced", never "live".
 */
export function versionStandingText(version: { id: string; status: string }, channels: readonly ChannelView[], rolledBack: ReadonlySet<string>): string {
  const standings = versionStandings(version.id, channels)
  const live = standings.filter((standing) => standing.live)
  if (live.length) return live.map((standing) => standing.text).join('; ')
  if (standings.length) return standings.map((standing) => standing.text).join('; ')
  if (version.status !== 'PUBLISHED') return version.status.toLowerCase().replace('_', '-')
  return rolledBack.has(version.id) ? 'rolled back' : 'replaced'
}
