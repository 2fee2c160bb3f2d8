// Pure rules the pages apply: lifecycle buttons, install URLs, dropped files, rollout steps, localhost links, the push command.
import type { Channel, FileKey, MiniApp, Version } from './api.ts'

export interface AllowedActions {
  review: boolean
  publish: boolean
  rollback: boolean
  remove: boolean
}

/** A channel as far as the release rules read it (older servers send fewer lists; tests leave out the name). */
export type ChannelLike = Pick<Channel, 'release' | 'previousRelease'> & Partial<Pick<Channel, 'pausedReleases' | 'revertedReleases'>> & { name?: string }

/**
 * The channel still holds the version, as a release of it (the newest or any below it, paused or
 * reverted included): the server refuses to publish it there (409 VERSION_ALREADY_PUBLISHED; roll
 * back instead). The workspace's `releaseOf` names every such channel, releases far below the
 * newest included; without it (an older server) only the releases the channel record lists tell.
 */
export function holdsVersion(channel: ChannelLike, version: Pick<Version, 'id' | 'releaseOf'>): boolean {
  if (channel.name !== undefined && version.releaseOf?.includes(channel.name)) return true
  return (
    channel.release?.versionId === version.id ||
    channel.previousRelease?.versionId === version.id ||
    [...(channel.pausedReleases ?? []), ...(channel.revertedReleases ?? [])].some((r) => r.versionId === version.id)
  )
}

/**
 * The version lifecycle of decisions.md §5, as buttons: shown only where the server would accept.
 * With release channels a version live on one channel may still be published into another that
 * does not have it yet (beta → stable), and rolled back to only in a channel it was released in
 * (`releasedIn`, from the release history) that has another release now.
 */
export function allowedActions(
  version: Pick<Version, 'id' | 'status' | 'releaseOf'>,
  miniApp: Pick<MiniApp, 'currentReviewVersionId' | 'currentReleaseVersionId'>,
  channels: ChannelLike[] | null = null,
  releasedIn: ReadonlySet<string> | null = null,
): AllowedActions {
  const unpublished = version.status === 'DRAFT' || version.status === 'IN_REVIEW'
  const published = version.status === 'PUBLISHED'
  // promotion: live on one channel, and some channel does not hold it (the server refuses a second
  // release into a channel; one below the newest, however far, is still one)
  const promotable = published && channels !== null && channels.some((c) => c.release?.versionId === version.id) && channels.some((c) => !holdsVersion(c, version))
  // a published version the history does not mention was released before channels existed: on stable
  const released = releasedIn && releasedIn.size ? releasedIn : new Set(['stable'])
  const rollback =
    channels !== null
      ? published && channels.some((c) => released.has(c.name ?? 'stable') && c.release?.versionId !== version.id)
      : published && miniApp.currentReleaseVersionId !== version.id
  return {
    // re-submitting the version that already is the review version would change nothing
    review: unpublished && miniApp.currentReviewVersionId !== version.id,
    publish: unpublished || promotable,
    rollback,
    remove: version.status !== 'PUBLISHED' && miniApp.currentReleaseVersionId !== version.id,
  }
}

/** Which channels each version was published or rolled back into, from the release history. */
export function channelsReleasedIn(history: { versionId: string; channel?: string | null; action: string }[]): Map<string, Set<string>> {
  const found = new Map<string, Set<string>>()
  for (const entry of history) {
    if (entry.action === 'ROLLOUT') continue
    const set = found.get(entry.versionId) ?? new Set<string>()
    set.add(entry.channel ?? 'stable')
    found.set(entry.versionId, set)
  }
  return found
}

/**
 * Install URLs follow the runtime's resolution rules: an absolute path joins this origin,
 * a full URL stays as it is, and a relative path joins the API root `/api/`.
 */
export function absoluteInstallUrl(installUrl: string, origin: string): string {
  if (installUrl.startsWith('/')) return origin + installUrl
  if (/^[a-z][a-z0-9+.-]*:/i.test(installUrl)) return installUrl
  return `${origin}/api/${installUrl}`
}

/**
 * Which upload field a dropped file fills, by the names the build tools give them
 * (main.ios.jsbundle, index.android.bundle, app.json, assets-ios.zip…); null when unclear.
 */
export function fileFieldFor(fileName: string): FileKey | null {
  const name = fileName.toLowerCase()
  const ios = /(^|[^a-z])ios([^a-z]|$)/.test(name)
  const android = /(^|[^a-z])android([^a-z]|$)/.test(name)
  if (name.endsWith('.json')) return 'manifest'
  if (name.endsWith('.zip')) return ios && !android ? 'assetsIos' : android && !ios ? 'assetsAndroid' : null
  if (name.endsWith('.jsbundle') || name.endsWith('.bundle') || name.endsWith('.js') || name.endsWith('.hbc')) {
    if (ios && !android) return 'bundleIos'
    if (android && !ios) return 'bundleAndroid'
    return name.endsWith('.jsbundle') ? 'bundleIos' : null
  }
  return null
}

/** The next step of a staged rollout: the first of 1, 5, 10, 25, 50, 100 % above `percent`. */
export function nextRolloutStep(percent: number): number {
  for (const step of [1, 5, 10, 25, 50, 100]) if (step > percent) return step
  return 100
}

/** A phone cannot reach this machine's localhost: links on such an origin only work on this computer. */
export function isLocalOnly(url: string): boolean {
  try {
    const host = new URL(url).hostname
    return host === 'localhost' || host.endsWith('.localhost') || host === '[::1]' || /^127\./.test(host) || host === '0.0.0.0'
  } catch {
    return false
  }
}

/**
 * Whether a channel card says what devices get below its state: everywhere but a complete release
 * for any host ("complete 100 %" says it). One that targets host versions does not reach every
 * device: host apps outside its range get an earlier release, or none (channelDevicesText says which).
 */
export function cardSaysWhatDevicesGet(channel: { release: { hostVersionRange?: string | null } | null }, state: string): boolean {
  return state !== 'complete' || !!channel.release?.hostVersionRange
}

/**
 * The push command for `app` (the first miniapp on the Tokens page and in the first-steps checklist,
 * the miniapp itself on its Upload page). A miniapp that requires signed versions refuses an
 * unsigned push (SIGNATURE_REQUIRED): the command then signs, with the file
 * `miniship keys generate --out release.pem` wrote. It names no channel: a new miniapp has only
 * `stable` (the default), and a push to a channel it lacks is refused.
 */
export function pushCommandFor(app: Pick<MiniApp, 'appId' | 'requireSignature'> | undefined): string {
  return `miniship push ./build --app ${app?.appId ?? 'com.example.app'} --version 1.0.0${app?.requireSignature ? ' --sign-key release.pem' : ''}`
}
