// TypeBox schemas of the admin endpoints.
import { t } from 'elysia'
import { displayNameField, emailField, passwordField, roleField, statusField, userSchema } from '../auth/model'

export const listQuery = t.Object({
  // The range is checked by the service: Elysia reports a Numeric's own minimum/maximum failure
  // without the field's name.
  auditLimit: t.Optional(t.Numeric({ error: 'must be a whole number from 1 to 1000', description: 'audit entries to return, 1 to 1000 (default 100)' })),
  auditBefore: t.Optional(t.String({ maxLength: 40, description: 'only audit entries created before this ISO timestamp (to page back)' })),
  userLimit: t.Optional(t.Numeric({ error: 'must be a whole number from 1 to 1000', description: 'users to return, 1 to 1000 (default 200), oldest first' })),
  userCursor: t.Optional(t.String({ maxLength: 200, description: 'the usersNextCursor of the previous page' })),
  auditBeforeId: t.Optional(
    t.String({ maxLength: 64, description: 'with auditBefore: the id of the oldest entry shown, so that entries sharing its createdAt are neither lost nor repeated' }),
  ),
})

// displayName is optional here too (it defaults to the part of the email before "@"), as on register.
export const createUserBody = t.Object({
  email: emailField,
  displayName: t.Optional(displayNameField),
  password: passwordField,
  role: t.Optional(roleField),
})

export const updateUserBody = t.Object({
  displayName: t.Optional(displayNameField),
  role: t.Optional(roleField),
  status: t.Optional(statusField),
  password: t.Optional(passwordField),
})

export const userIdParams = t.Object({ userId: t.String({ maxLength: 100 }) })

export const auditLogSchema = t.Object({
  id: t.String(),
  actorId: t.Nullable(t.String()),
  actorEmail: t.Nullable(t.String()),
  action: t.String(),
  targetType: t.String(),
  targetId: t.Nullable(t.String()),
  summary: t.String(),
  metadata: t.Unknown(),
  createdAt: t.String(),
  actorName: t.Nullable(t.String({ description: 'who, in words: the email, or API key "name" of its owner' })),
  targetName: t.Nullable(t.String({ description: 'the target by the name people know: an appId, "appId 1.2.0", an email, a key; null when it is gone' })),
})

export const listResponse = t.Object({ users: t.Array(userSchema), usersNextCursor: t.Union([t.String(), t.Null()]), auditLogs: t.Array(auditLogSchema) })
