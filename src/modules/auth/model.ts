// TypeBox schemas of the account endpoints (auth, admin users), shared by validation and OpenAPI.
import { t } from 'elysia'
import { lengthPattern, singleLinePattern } from '../../http/text'

// Length bounds only: trimming, lower-casing and the email pattern are the service's job (they
// apply to create-admin too, which has no TypeBox in front of it).
export const emailField = t.String({ maxLength: 254, error: 'must be an email address of at most 254 characters', examples: ['alice@example.com'] })
// Counted in characters (code points), as every text limit: an emoji is one, not two UTF-16 units. The
// server's --password-min-length (6 by default) is the service's to apply.
export const passwordField = t.String({ pattern: lengthPattern(6, 1024), error: 'must be 6 to 1024 characters', description: '6 to 1024 characters (code points: an emoji is one), and at least the server\'s passwordMinLength (GET /api/info)' })
export const displayNameField = t.String({ minLength: 1, pattern: singleLinePattern(100), error: 'must be 1 to 100 characters without control characters' })
export const roleField = t.Union([t.Literal('ADMIN'), t.Literal('USER')], { error: 'must be "ADMIN" or "USER"' })
export const statusField = t.Union([t.Literal('ACTIVE'), t.Literal('DISABLED')], { error: 'must be "ACTIVE" or "DISABLED"' })

export const registerBody = t.Object({
  email: emailField,
  password: passwordField,
  displayName: t.Optional(displayNameField),
})

// No minimum on a login password: a short one simply does not match (401, not 400). Its maximum counts
// characters as passwordField's does, so every password that could be set can sign in.
export const loginBody = t.Object({
  email: t.String({ maxLength: 254, error: 'must be an email address of at most 254 characters' }),
  password: t.String({ pattern: lengthPattern(0, 1024), error: 'must be a string of at most 1024 characters' }),
})

export const personSchema = t.Object({ id: t.String(), email: t.String(), displayName: t.String() })

export const userSchema = t.Object({
  id: t.String(),
  email: t.String(),
  displayName: t.String(),
  role: roleField,
  status: statusField,
  createdAt: t.String({ description: 'ISO 8601 UTC' }),
})

export const registerResponse = t.Object({
  id: t.String(),
  email: t.String(),
  accessToken: t.String(),
  displayName: t.String(),
  user: t.Object({ id: t.String(), email: t.String(), displayName: t.String(), role: t.String() }),
})
export const loginResponse = t.Object({ accessToken: t.String(), user: personSchema })
export const meResponse = t.Object({
  id: t.String(),
  email: t.String(),
  displayName: t.String(),
  role: roleField,
  status: statusField,
  apiKey: t.Optional(
    t.Object(
      { id: t.String(), name: t.String(), prefix: t.String(), scopes: t.Array(t.String()), miniAppIds: t.Union([t.Array(t.String()), t.Null()]) },
      { description: 'present when the caller used an API key (its role is then USER: keys reach what membership grants)' },
    ),
  ),
})
