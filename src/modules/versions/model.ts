// TypeBox schemas of the version endpoints (validation and OpenAPI).
import { t } from 'elysia'

export const releaseTypes = ['RELEASE', 'BETA', 'ALPHA'] as const
export type ReleaseType = (typeof releaseTypes)[number]

/** decisions §2: MAJOR.MINOR.PATCH with an optional -prerelease (semver, without build metadata). */
export const versionPattern = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*))*)?$/

export const uploadParams = t.Object({ appId: t.String() })
export const miniAppIdParams = t.Object({ miniAppId: t.String() })
export const versionParams = t.Object({ miniAppId: t.String(), versionId: t.String() })

const notes = t.String({ maxLength: 2000, error: 'must be text of at most 2000 characters' })

export const publishBody = t.Optional(t.Object({ notes: t.Optional(t.Union([notes, t.Null()])) }))

export const rollbackBody = t.Object({
  targetVersionId: t.String({ minLength: 1, error: 'must be the id of a published version' }),
  notes: t.Optional(t.Union([notes, t.Null()])),
})
