// What a version number and a release type may be (decisions §2); pure, so `miniship push` checks with it too.

export const releaseTypes = ['RELEASE', 'BETA', 'ALPHA'] as const
export type ReleaseType = (typeof releaseTypes)[number]

/**
 * decisions §2: MAJOR.MINOR.PATCH with an optional -prerelease (semver, without build metadata).
 * Each of the three numbers has at most 15 digits: Bun.semver (the update check's order of
 * versions) throws on one past 2^64, and node-semver and the SDK read them as JS numbers, which are
 * exact only up to 2^53; 15 digits stay below both.
 */
export const versionPattern = /^(0|[1-9]\d{0,14})\.(0|[1-9]\d{0,14})\.(0|[1-9]\d{0,14})(?:-(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*))*)?$/
