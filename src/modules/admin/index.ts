// Routes of user administration (decisions §7): admins only, every change audited.
import { Elysia } from 'elysia'
import type { AppDeps } from '../deps'
import { AppError } from '../../http/errors'
import { bearerToken } from '../../http/guards'
import { userFromAccessToken } from '../auth/access'
import { createUser } from '../auth/service'
import { userSchema } from '../auth/model'
import { listUsersWithAudit, updateUser } from './service'
import { createUserBody, listQuery, listResponse, updateUserBody, userIdParams } from './model'

export function adminRoutes(deps: AppDeps) {
  return (
    new Elysia({ prefix: '/admin' })
      .use(deps.guard)
      // The guard's macro resolves after body validation; checking here first means a caller who
      // is not an admin gets 401/403 for every request, never a 400 that describes the schema.
      .onTransform(async ({ headers }) => {
        const caller = await userFromAccessToken(deps.db, deps.tokens, bearerToken(headers.authorization))
        if (caller.role !== 'ADMIN') throw new AppError(403, 'ADMIN_REQUIRED', 'Only administrators may do this')
      })
      .get('/users', ({ query }) => listUsersWithAudit(deps.db, query), {
        admin: true,
        query: listQuery,
        response: { 200: listResponse },
        detail: { summary: 'A page of users (userLimit, userCursor) and of the audit log (newest first, paged with auditBefore)', tags: ['admin'] },
      })
      .post(
        '/users',
        async ({ body, user, set }) => {
          const created = await createUser(deps.db, deps.clock, { ...body, role: body.role ?? 'USER', status: 'ACTIVE', passwordMinLength: deps.config.passwordMinLength }, { id: user.id, email: user.email }, 'admin')
          set.status = 201
          return created
        },
        { admin: true, body: createUserBody, response: { 201: userSchema }, detail: { summary: 'Create a user', tags: ['admin'] } },
      )
      .patch('/users/:userId', ({ params, body, user }) => updateUser(deps.db, deps.clock, { id: user.id, email: user.email }, params.userId, body, deps.config.passwordMinLength), {
        admin: true,
        params: userIdParams,
        body: updateUserBody,
        response: { 200: userSchema },
        detail: { summary: 'Change display name, role, status or password; role, disable and password changes sign the user out', tags: ['admin'] },
      })
  )
}
