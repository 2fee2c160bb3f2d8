// TypeBox schemas of the channel endpoints (validation and OpenAPI).
import { t } from 'elysia'

export const channelsParams = t.Object({ miniAppId: t.String() })
export const channelParams = t.Object({ miniAppId: t.String(), channel: t.String() })

export const createChannelBody = t.Object({ name: t.String({ maxLength: 64, error: 'must be a channel name such as beta' }) })

/** Checked by the channel rules, so that 0–100 and its messages live in one place. */
export const rolloutBody = t.Object({
  rolloutPercent: t.Optional(t.Unknown({ description: 'a whole number 0 (revert: every device back to the previous release; a first release then goes to no device, and those that installed it keep it) to 100 (complete); the percent the release already has changes nothing and writes nothing' })),
  paused: t.Optional(t.Unknown({ description: 'true pauses (no new device gets the release; devices that run it keep it; a request that names no version, from an older client or the release mirror, follows the frozen percent, so at 100 % it still gets the release: only a revert stops those), false resumes at the same percent; pausing a paused release or resuming a running one changes nothing and keeps the first pause\'s reason' })),
  reason: t.Optional(t.Unknown({ description: 'why it was paused (at most 2000 characters), kept on the release and in the audit log' })),
})

const userSummary = t.Object({ id: t.String(), email: t.String(), displayName: t.String() })
const channelRelease = t.Object({
  versionId: t.String(),
  version: t.String(),
  rolloutPercent: t.Integer(),
  hostVersionRange: t.Union([t.String(), t.Null()]),
  mandatory: t.Boolean(),
  releasedAt: t.String(),
  releasedBy: t.Union([userSummary, t.Null()]),
  paused: t.Boolean(),
  pausedAt: t.Union([t.String(), t.Null()]),
  pausedBy: t.Union([t.String(), t.Null()]),
  pauseReason: t.Union([t.String(), t.Null()]),
})
const guardCount = { failedDevices: t.Integer(), totalDevices: t.Integer(), failureRate: t.Number(), at: t.String() }
/** decisions §15: the release guard of a channel (guard-record.ts) */
export const guardRecord = t.Object({
  enabled: t.Boolean(),
  maxFailureRate: t.Number(),
  minDevices: t.Integer(),
  lastCheck: t.Union([t.Object(guardCount), t.Null()], { description: "F (devices that reported failed or rolled_back) and T (devices that reported anything) of the newest release, as last counted" }),
  trip: t.Union([t.Object({ ...guardCount, maxFailureRate: t.Number() }), t.Null()], { description: 'the numbers with which the guard paused the newest release' }),
  heldAtFailedDevices: t.Union([t.Integer(), t.Null()], { description: 'F as last counted while the newest release was paused or reverted (by a person or the guard), counted once more as a person resumes or raises it: after that the guard pauses it again only when more devices than this have failed; null when nothing holds it back' }),
})
/** Checked by guard.ts, so that the ranges and their messages live in one place. */
export const patchChannelBody = t.Object({
  guard: t.Unknown({ description: '{ enabled, maxFailureRate (0–1, default 0.05), minDevices (whole number ≥ 1, default 20) }; fields left out keep their value; settings the guard already has change nothing and write nothing' }),
})
export const channelRecord = t.Object({
  name: t.String(),
  createdAt: t.String(),
  state: t.Union([t.Literal('complete'), t.Literal('rolling-out'), t.Literal('paused'), t.Literal('reverted'), t.Null()], { description: "the newest release's state (decisions §13); null without a release" }),
  release: t.Union([channelRelease, t.Null()]),
  previousRelease: t.Union([channelRelease, t.Null()], { description: 'what the other devices fall back to: the first release below the newest that is not paused' }),
  pausedReleases: t.Array(channelRelease, { description: 'the paused releases between the newest and previousRelease, newest first: no other device gets them; devices that run them (or adopted them while they rolled out) keep them' }),
  revertedReleases: t.Array(channelRelease, { description: 'the reverted releases (0 %) below the newest, newest first: no device gets them, those that ran them included; a fix published over a reverted release leaves it here' }),
  pausedBelow: t.Array(channelRelease, {
    description: 'every paused release below the newest, newest first (pausedReleases are those of them above previousRelease); a rollback to one clears its pause and sends it to every device (warning ROLLBACK_CLEARS_PAUSE). Only the paused ones, not every live release',
  }),
  defaultRelease: t.Union([channelRelease, t.Null()], { description: 'what a device that sends no deviceId gets' }),
  guard: guardRecord,
})

export const channelDeleted = t.Object({ success: t.Literal(true), name: t.String() })

/** A rollout change's answer: the channel as it is now, and what a real pause, revert or lowered percent warns of (decisions §14) */
export const rolloutAnswer = t.Object({
  ...channelRecord.properties,
  warnings: t.Array(t.Object({ code: t.Union([t.Literal('FALLBACK_UNSIGNED'), t.Literal('FALLBACK_KEY_REVOKED')]), message: t.String() }), {
    description:
      'FALLBACK_UNSIGNED: the pause, the revert or the lowered percent (devices whose bucket is at or above the new one, those that ran the release too) sends devices back to previousRelease, which is unsigned while the miniapp requires signatures; FALLBACK_KEY_REVOKED: previousRelease was signed by a key revoked since. Host apps that check signatures refuse it; the change is made all the same; empty when nothing changed',
  }),
})
