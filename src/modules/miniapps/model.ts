// TypeBox schemas of the miniapp and membership endpoints (validation and OpenAPI).
import { t } from 'elysia'
import { multiLinePattern, singleLinePattern } from '../../http/text'

export const appIdPattern = '^[a-zA-Z][a-zA-Z0-9._-]{1,63}$'

const appIdError = 'must be 2–64 characters: a letter, then letters, digits, ".", "_" or "-"'

export const miniAppIdParams = t.Object({ miniAppId: t.String() })

export const memberParams = t.Object({ miniAppId: t.String(), userId: t.String() })

// lengths in characters, not UTF-16 units: the pattern counts them (http/text.ts)
const name = t.String({ minLength: 1, pattern: singleLinePattern(100), error: 'must be 1–100 characters without control characters' })
const description = t.Union([t.String({ pattern: multiLinePattern(2000) }), t.Null()], { error: 'must be text of at most 2000 characters without control characters (line breaks and tabs are fine)' })
const iconUrl = t.Union([t.String({ maxLength: 2048 }), t.Null()], { error: 'must be an http(s) URL of at most 2048 characters' })

export const createMiniAppBody = t.Object(
  {
    appId: t.String({ pattern: appIdPattern, error: appIdError }),
    name,
    description: t.Optional(description),
    iconUrl: t.Optional(iconUrl),
  },
  { additionalProperties: false },
)

/** `appId` is immutable: sending it (or anything unknown) is 400. */
export const updateMiniAppBody = t.Object(
  {
    name: t.Optional(name),
    description: t.Optional(description),
    iconUrl: t.Optional(iconUrl),
    experiencePublic: t.Optional(t.Boolean({ error: 'must be true or false' })),
    requireSignature: t.Optional(t.Boolean({ error: 'must be true or false' })),
  },
  { additionalProperties: false },
)

export const addMemberBody = t.Object(
  {
    email: t.String({ minLength: 3, maxLength: 254, error: 'must be an email address' }),
    role: t.Union([t.Literal('OWNER'), t.Literal('DEVELOPER')], { error: 'must be OWNER or DEVELOPER' }),
  },
  { additionalProperties: false },
)

export const userSummary = t.Object({ id: t.String(), email: t.String(), displayName: t.String() })

/** decisions §2's MiniApp record: what create, get, update and the workspace answer */
export const miniAppRecord = t.Object({
  id: t.String(),
  appId: t.String(),
  name: t.String(),
  description: t.Union([t.String(), t.Null()]),
  iconUrl: t.Union([t.String(), t.Null()]),
  currentExperienceVersionId: t.Union([t.String(), t.Null()]),
  currentReviewVersionId: t.Union([t.String(), t.Null()]),
  currentReleaseVersionId: t.Union([t.String(), t.Null()]),
  experiencePublic: t.Boolean(),
  requireSignature: t.Boolean(),
  createdAt: t.String(),
  updatedAt: t.String(),
  createdBy: t.Union([userSummary, t.Null()]),
})

export const memberRecord = t.Object({
  userId: t.String(),
  email: t.String(),
  displayName: t.String(),
  role: t.Union([t.Literal('OWNER'), t.Literal('DEVELOPER')]),
  createdAt: t.String(),
})

export const memberRemoved = t.Object({ success: t.Literal(true), userId: t.String() })
