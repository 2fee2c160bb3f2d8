// What a version number and a release type may be (decisions §2); pure, so `miniship push` checks with it too.

export const releaseTypes = ['RELEASE', 'BETA', 'ALPHA'] as const
export type ReleaseType = (typeof releaseTypes)[number]

/** decisions §2: MAJOR.MINOR.PATCH with an optional -prerelease (semver, without build metadata). */
export const versionPattern = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*))*)?$/
