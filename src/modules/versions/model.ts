// TypeBox schemas of the version endpoints (validation and OpenAPI).
import { t, type TSchema } from 'elysia'
import { multiLinePattern, notesMaxLength } from '../../http/text'
import { miniAppRecord, userSummary } from '../miniapps/model'
import { channelRecord } from '../channels/model'
import { versionPattern } from './version-rules'
import type { FileField, TextField } from './upload'

export { releaseTypes, versionPattern, type ReleaseType } from './version-rules'

export const uploadParams = t.Object({ appId: t.String() })

const formFile = (description: string) => t.String({ format: 'binary', description })

/**
 * The upload's multipart form (service-interface.md, decisions §9 and §14), for the OpenAPI document
 * only: the route leaves the body unread (busboy streams it) and service.ts checks each field. Typed
 * against upload.ts's field lists, so a field read but not described (or described but not read) is a
 * type error.
 */
export const uploadForm = t.Object(
  {
    version: t.String({ pattern: versionPattern.source, maxLength: 64, description: 'the version number: MAJOR.MINOR.PATCH with an optional -prerelease, such as 1.0.0 or 2.1.0-beta.1', examples: ['1.0.0'] }),
    changelog: t.Optional(t.String({ description: 'what changed: at most 10000 characters, no control characters (line breaks and tabs are fine)' })),
    releaseType: t.Optional(t.Union([t.Literal('RELEASE'), t.Literal('BETA'), t.Literal('ALPHA')], { default: 'RELEASE', description: 'RELEASE (default), BETA or ALPHA, in any letter case' })),
    channel: t.Optional(t.String({ default: 'stable', description: 'the channel the version is for, where publishing it releases it by default (decisions §10)' })),
    signatureKeyId: t.Optional(t.String({ description: 'the keyId of a trusted signing key of the miniapp; send with signature (decisions §14)' })),
    signature: t.Optional(t.String({ description: 'base64 of the 64-byte Ed25519 signature over the statement of the uploaded files; send with signatureKeyId' })),
    bundleIos: formFile('the iOS JS bundle (conventionally main.ios.jsbundle); not empty'),
    bundleAndroid: formFile('the Android JS bundle (conventionally main.android.bundle); not empty'),
    manifest: formFile('the manifest, app.json: a JSON object of at most 1 MB'),
    assetsIos: formFile('the iOS assets archive (conventionally assets-ios.zip)'),
    assetsAndroid: formFile('the Android assets archive (conventionally assets-android.zip)'),
  } satisfies Record<TextField | FileField, TSchema>,
  { description: 'The five files are required; a file field sent twice is 400 DUPLICATE_FILE, a text field sent twice 400 VALIDATION_ERROR' },
)
export const miniAppIdParams = t.Object({ miniAppId: t.String() })
export const versionParams = t.Object({ miniAppId: t.String(), versionId: t.String() })

// no control characters or bidi overrides, like every other free text (http/text.ts): notes are shown in the console's History and the audit log
const notes = t.String({ pattern: multiLinePattern(notesMaxLength), error: `must be text of at most ${notesMaxLength} characters without control characters (line breaks and tabs are fine)` })
/** notes, or null for none; the union names what it takes (Elysia's own words were "expected union value") */
const optionalNotes = t.Optional(t.Union([notes, t.Null()], { error: `must be text of at most ${notesMaxLength} characters without control characters (line breaks and tabs are fine), or null` }))

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

const fileInfo = t.Object({ size: t.Integer(), sha256: t.String() })

/** decisions §2's Version record: what upload, review, publish and signing answer, and the workspace lists */
export const versionRecord = t.Object({
  id: t.String(),
  miniAppId: t.String(),
  version: t.String(),
  buildNumber: t.Integer(),
  releaseType: t.Union([t.Literal('RELEASE'), t.Literal('BETA'), t.Literal('ALPHA')]),
  status: t.Union([t.Literal('DRAFT'), t.Literal('IN_REVIEW'), t.Literal('PUBLISHED')]),
  changelog: t.Union([t.String(), t.Null()]),
  channel: t.String({ description: 'the channel its upload named (decisions §10)' }),
  createdAt: t.String(),
  updatedAt: t.String(),
  createdBy: t.Union([userSummary, t.Null()]),
  publishedAt: t.Union([t.String(), t.Null()]),
  files: t.Object({ bundleIos: fileInfo, bundleAndroid: fileInfo, manifest: fileInfo, assetsIos: fileInfo, assetsAndroid: fileInfo }),
  signature: t.Union(
    [
      t.Object({
        algorithm: t.Literal('ed25519'),
        keyId: t.String(),
        keyName: t.Union([t.String(), t.Null()], { description: 'null when the key is no longer on the miniapp\'s list' }),
        keyRevokedAt: t.Union([t.String(), t.Null()]),
        statement: t.String(),
        value: t.String(),
        signedAt: t.String(),
      }),
      t.Null(),
    ],
    { description: 'who signed its files (decisions §14); null when unsigned' },
  ),
})

/** The upload's answer (decisions §5, §9): the version record and what the server changed or noticed. */
export const uploadAnswer = t.Composite([
  versionRecord,
  t.Object({
    warnings: t.Array(t.Object({ code: t.Union([t.Literal('MANIFEST_VERSION_SET'), t.Literal('MANIFEST_WITHOUT_PAGES')]), message: t.String() })),
  }),
])

export const rollbackAnswer = t.Object({
  miniApp: miniAppRecord,
  version: versionRecord,
  warnings: t.Array(t.Object({ code: t.Union([t.Literal('ROLLBACK_CLEARS_PAUSE'), t.Literal('ROLLBACK_OF_REVERTED')]), message: t.String() }), {
    description:
      'ROLLBACK_CLEARS_PAUSE: the version was a paused release below the newest (decisions §13); the rollback cleared its pause and sends it to every device of the channel. ROLLBACK_OF_REVERTED: the version was a reverted release below the newest, which no device gets; the rollback sends it to every device of the channel',
  }),
})

export const versionDeleted = t.Object({ success: t.Literal(true), versionId: t.String() })

const releaseHistoryRecord = t.Object({
  id: t.String(),
  action: t.Union([t.Literal('PUBLISH'), t.Literal('ROLLBACK'), t.Literal('ROLLOUT')]),
  channel: t.String(),
  versionId: t.String(),
  version: t.String(),
  previousVersionId: t.Union([t.String(), t.Null()]),
  rolloutPercent: t.Union([t.Integer(), t.Null()]),
  notes: t.Union([t.String(), t.Null()]),
  actor: t.Union([userSummary, t.Null()]),
  apiKey: t.Union([t.Object({ name: t.String() }), t.Null()], { description: 'the API key the change was made with (actor is its owner); null: by the person, or before keys were recorded' }),
  createdAt: t.String(),
})

const accessLink = t.Object({
  versionId: t.String(),
  version: t.String(),
  installUrl: t.String(),
  deepLink: t.String({ description: 'opens the test install in the host app (decisions §9); the console\'s QR code encodes it' }),
  expiresAt: t.Union([t.String(), t.Null()], { description: "when the link's download token stops working; null for published versions (never)" }),
})

export const workspaceAnswer = t.Object({
  miniApp: miniAppRecord,
  versions: t.Array(
    t.Composite([
      versionRecord,
      t.Object({
        revertedIn: t.Array(t.String(), {
          description: 'the channels where this version was reverted last (0 %: no device gets it there, whether still below the newest or withdrawn since by a rollback); a rollback to it there warns ROLLBACK_OF_REVERTED',
        }),
        releaseOf: t.Array(t.String(), {
          description:
            'the channels this version is still a release of (the newest or below it, paused or reverted included: every release no rollback withdrew), stable first: publishing it into one is refused with 409 VERSION_ALREADY_PUBLISHED (roll back there instead)',
        }),
      }),
    ]),
    { description: 'one page, newest first' },
  ),
  releaseHistory: t.Array(releaseHistoryRecord, { description: 'newest first' }),
  accessLinks: t.Array(accessLink, { description: 'one per version of the page' }),
  channels: t.Array(channelRecord),
  nextCursor: t.Union([t.String(), t.Null()], { description: 'pass as cursor for the next page; null on the last' }),
  viewer: t.Object({
    memberRole: t.Union([t.Literal('OWNER'), t.Literal('DEVELOPER'), t.Null()]),
    isAdmin: t.Boolean(),
    canManageMembers: t.Boolean(),
  }),
})
