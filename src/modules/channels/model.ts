// TypeBox schemas of the channel endpoints (validation and OpenAPI).
import { t } from 'elysia'

export const channelsParams = t.Object({ miniAppId: t.String() })
export const channelParams = t.Object({ miniAppId: t.String(), channel: t.String() })

export const createChannelBody = t.Object({ name: t.String({ maxLength: 64, error: 'must be a channel name such as beta' }) })

/** Checked by the channel rules, so that 0–100 and its messages live in one place. */
export const rolloutBody = t.Object({ rolloutPercent: t.Unknown({ description: 'a whole number 0 (halt) to 100 (complete)' }) })

const userSummary = t.Object({ id: t.String(), email: t.String(), displayName: t.String() })
const channelRelease = t.Object({
  versionId: t.String(),
  version: t.String(),
  rolloutPercent: t.Integer(),
  hostVersionRange: t.Union([t.String(), t.Null()]),
  mandatory: t.Boolean(),
  releasedAt: t.String(),
  releasedBy: t.Union([userSummary, t.Null()]),
})
export const channelRecord = t.Object({
  name: t.String(),
  createdAt: t.String(),
  release: t.Union([channelRelease, t.Null()]),
  previousRelease: t.Union([channelRelease, t.Null()]),
})
