// Which release of a channel a device gets, and whether it must take it (decisions §10): one pure function.

/** A live release of a channel, as the decision needs it. */
export interface LiveRelease {
  versionId: string
  version: string
  /** 0–100; the newest release's percent, and a paused older release's frozen one (its adopters) */
  rolloutPercent: number
  /** a semver range the host app's version must satisfy; null: any */
  hostVersionRange: string | null
  mandatory: boolean
  /** decisions §13: a paused release goes to no new device, newest or not (see decideRelease) */
  paused?: boolean
}

export interface Device {
  deviceId?: string
  hostVersion?: string
  /** the miniapp version the device runs now */
  currentVersion?: string
}

export interface Decision<R extends LiveRelease = LiveRelease> {
  /** the release the device gets; null when none fits (no release, outside a first rollout, no compatible host range) */
  release: R | null
  /** true when a release newer than `currentVersion` up to the one it gets is mandatory */
  mandatory: boolean
  /** the device's bucket for the newest release when it is mid-rollout and a deviceId was sent */
  bucket: number | null
}

/** sha256 output, reused: one digest per request on the update check's hot path */
const digest = new Uint8Array(32)
const digestView = new DataView(digest.buffer)

/**
 * The rollout bucket of decisions §10: the first 4 bytes of sha256(appId + ":" + versionId + ":" +
 * deviceId), UTF-8, read as a big-endian unsigned 32-bit integer, mod 100. Other tools compute
 * the same number, so this must not change.
 */
export function rolloutBucket(appId: string, versionId: string, deviceId: string): number {
  // Bun.SHA256 hashes a string as UTF-8, into the buffer given: no hasher object, no encoded copy
  Bun.SHA256.hash(`${appId}:${versionId}:${deviceId}`, digest)
  return digestView.getUint32(0) % 100
}

/**
 * Bun.semver's order, which throws on a number past 2^64: a release stored before uploads refused
 * such versions (15 digits at most) is taken as newer than the device's, so its mandatory flag holds.
 */
function isNewer(version: string, than: string): boolean {
  try {
    return Bun.semver.order(version, than) > 0
  } catch {
    return true
  }
}

function satisfies(hostVersion: string, range: string | null): boolean {
  return range === null || Bun.semver.satisfies(hostVersion, range)
}

/**
 * Whether a device keeps a paused release below the newest (§13): it says it runs it, or, naming no
 * version, it adopted it while it rolled out (its bucket below the frozen percent). Hashes only here.
 */
function keepsPaused(appId: string, release: LiveRelease, device: Device): boolean {
  if (device.currentVersion !== undefined) return device.currentVersion === release.version
  if (!device.deviceId) return false
  return release.rolloutPercent >= 100 || rolloutBucket(appId, release.versionId, device.deviceId) < release.rolloutPercent
}

/**
 * `releases` are the channel's live releases, newest first. While the newest is below 100 %, a
 * device gets it when its bucket is below the percent; otherwise (and whenever no deviceId is
 * sent) the releases after it are the candidates. A device that sends `hostVersion` gets the first
 * candidate whose range it satisfies. The update is mandatory when any release published after the
 * device's `currentVersion`, up to the one it gets, is mandatory: by position in the channel when
 * the channel holds `currentVersion`, else by semver order.
 *
 * A paused newest release (§13) goes to a device that says it runs it (`currentVersion`), and to
 * no other device that sends `currentVersion`; a request without one (the legacy release-stable
 * URLs) follows the bucket rule at the frozen percent, so a device that adopted keeps it.
 *
 * A paused release below the newest (a fix published over it) keeps that promise: it is a
 * candidate only for a device that says it runs it, or, for a request without `currentVersion`,
 * a device whose bucket for it is below its frozen percent (no deviceId: not a candidate). Every
 * other device passes over it to the release before it; else the paused (bad) release would be
 * what the devices outside the new rollout fall back to, at 100 %. A reverted release below the
 * newest (0 %) goes to no device, those on it included, as it did while newest. Both still count
 * for `mandatory`: a mandatory release is never skipped silently (§10).
 */
export function decideRelease<R extends LiveRelease>(appId: string, releases: readonly R[], device: Device): Decision<R> {
  let start = 0
  let bucket: number | null = null
  const newest = releases[0]
  if (newest && newest.paused && device.currentVersion !== undefined) {
    if (device.currentVersion !== newest.version) start = 1
  } else if (newest && newest.rolloutPercent < 100) {
    if (device.deviceId) bucket = rolloutBucket(appId, newest.versionId, device.deviceId)
    if (bucket === null || bucket >= newest.rolloutPercent) start = 1
  }
  let chosen = -1
  for (let index = start; index < releases.length; index++) {
    const candidate = releases[index]!
    // below the newest: a reverted release (0 %) goes to no device, those on it included (§13), and
    // one paused goes only to its own devices; a fix published over either must not bring it back
    if (index > 0 && (candidate.rolloutPercent === 0 || (candidate.paused && !keepsPaused(appId, candidate, device)))) continue
    if (device.hostVersion === undefined || satisfies(device.hostVersion, candidate.hostVersionRange)) {
      chosen = index
      break
    }
  }
  if (chosen === -1) return { release: null, mandatory: false, bucket }
  const release = releases[chosen]!
  const current = device.currentVersion
  let mandatory = false
  if (current !== undefined && current !== release.version) {
    const held = releases.findIndex((candidate) => candidate.version === current)
    const end = held === -1 ? releases.length : held
    for (let index = chosen; index < end && !mandatory; index++) {
      const candidate = releases[index]!
      mandatory = candidate.mandatory && (held !== -1 || isNewer(candidate.version, current))
    }
  }
  return { release, mandatory, bucket }
}
