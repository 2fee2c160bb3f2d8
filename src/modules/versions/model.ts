// TypeBox schemas of the version endpoints (validation and OpenAPI).
import { t } from 'elysia'
import { multiLinePattern } from '../../http/text'

export { releaseTypes, versionPattern, type ReleaseType } from './version-rules'

export const uploadParams = t.Object({ appId: t.String() })
export const miniAppIdParams = t.Object({ miniAppId: t.String() })
export const versionParams = t.Object({ miniAppId: t.String(), versionId: t.String() })

// no control characters or bidi overrides, like every other free text (http/text.ts): notes are shown in the console's History and the audit log
const notes = t.String({ pattern: multiLinePattern(2000), error: 'must be text of at most 2000 characters without control characters (line breaks and tabs are fine)' })
/** notes, or null for none; the union names what it takes (Elysia's own words were "expected union value") */
const optionalNotes = t.Optional(t.Union([notes, t.Null()], { error: 'must be text of at most 2000 characters without control characters (line breaks and tabs are fine), or null' }))

const channel = t.String({ maxLength: 64, description: 'a channel name (default: the channel the version was uploaded to)', error: 'must be a channel name such as stable or beta' })

/** rolloutPercent, hostVersionRange and mandatory are checked by the channel rules (their own error codes). */
export const publishBody = t.Optional(
  t.Object({
    notes: optionalNotes,
    channel: t.Optional(channel),
    rolloutPercent: t.Optional(t.Unknown({ description: 'a whole number 1–100 (default 100): the share of devices that get it' })),
    hostVersionRange: t.Optional(t.Unknown({ description: 'a semver range the host app version must satisfy, e.g. ">=2.3.0 <3" (default: any)' })),
    mandatory: t.Optional(t.Unknown({ description: 'true makes the update mandatory (default false)' })),
  }),
)

export const rollbackBody = t.Object({
  targetVersionId: t.String({ minLength: 1, error: 'must be the id of a published version' }),
  notes: optionalNotes,
  channel: t.Optional(channel),
})

export const workspaceQuery = t.Object({
  // The range and wholeness are checked by the service: Elysia reports a Numeric's own minimum/maximum
  // failure without the field's name, and 1.5 reached SQLite's LIMIT (500 "datatype mismatch").
  limit: t.Optional(t.Numeric({ error: 'must be a whole number from 1 to 200', description: 'versions per page, 1 to 200 (default 50)' })),
  cursor: t.Optional(t.String({ maxLength: 200 })),
  status: t.Optional(t.Union([t.Literal('DRAFT'), t.Literal('IN_REVIEW'), t.Literal('PUBLISHED')], { error: 'must be DRAFT, IN_REVIEW or PUBLISHED' })),
})
