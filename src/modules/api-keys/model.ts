// TypeBox schemas of the API key endpoints (validation and OpenAPI).
import { t } from 'elysia'
import { singleLinePattern } from '../../http/text'


export { apiKeyScopes, type ApiKeyScope } from '../../http/guards'

const scopeField = t.Union([t.Literal('read'), t.Literal('upload'), t.Literal('release')], { error: 'must be "read", "upload" or "release"' })

export const createApiKeyBody = t.Object({
  name: t.String({ minLength: 1, pattern: singleLinePattern(100), error: 'must be 1 to 100 characters without control characters', examples: ['GitHub Actions'] }),
  scopes: t.Array(scopeField, {
    minItems: 1,
    maxItems: 3,
    error: 'must list one or more of "read", "upload", "release"',
    description: 'read = list miniapps and read workspaces and downloads; upload = upload versions; release = review, publish, roll back and change rollouts',
  }),
  miniAppIds: t.Optional(
    t.Union([t.Array(t.String({ minLength: 1, maxLength: 64 }), { minItems: 1, maxItems: 100, error: 'must be a list of 1 to 100 miniapp ids, none empty' }), t.Null()], {
      description: 'the miniapps (record ids) the key may touch; absent or null: every miniapp its owner is a member of',
    }),
  ),
  expiresAt: t.Optional(t.Union([t.String({ maxLength: 40, description: 'ISO 8601 UTC, in the future' }), t.Null()])),
})

export const apiKeyIdParams = t.Object({ id: t.String({ maxLength: 64 }) })

export const apiKeyRecord = t.Object({
  id: t.String(),
  name: t.String(),
  scopes: t.Array(scopeField),
  miniAppIds: t.Union([t.Array(t.String()), t.Null()]),
  prefix: t.String({ description: 'the first characters of the key, to recognise it by' }),
  createdAt: t.String(),
  expiresAt: t.Union([t.String(), t.Null()]),
  lastUsedAt: t.Union([t.String(), t.Null()]),
  revokedAt: t.Union([t.String(), t.Null()]),
})

export const createdApiKey = t.Object({
  id: t.String(),
  name: t.String(),
  scopes: t.Array(scopeField),
  miniAppIds: t.Union([t.Array(t.String()), t.Null()]),
  prefix: t.String(),
  key: t.String({ description: 'the key itself: shown this once, stored only as its sha256' }),
  createdAt: t.String(),
  expiresAt: t.Union([t.String(), t.Null()]),
})

export const apiKeyList = t.Object({ apiKeys: t.Array(apiKeyRecord) })

const owner = t.Object({ id: t.String(), email: t.String(), displayName: t.String() })
export const adminApiKeyList = t.Object({ apiKeys: t.Array(t.Composite([apiKeyRecord, t.Object({ owner })])) })

export const revokedApiKey = t.Object({ success: t.Literal(true), id: t.String() })
