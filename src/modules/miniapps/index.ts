// Routes of miniapp management and membership: /api/mini-apps, /api/mini-apps/{miniAppId}[/members].
import { Elysia, t } from 'elysia'
import { AppError } from '../../http/errors'
import { clientAddress } from '../../http/client'
import { budgetKey } from '../../http/rate-limit'
import type { AppDeps } from '../deps'
import { jsonAnswer } from '../../http/openapi'
import { addMemberBody, createMiniAppBody, memberParams, memberRecord, memberRemoved, miniAppIdParams, miniAppRecord as miniAppSchema, updateMiniAppBody } from './model'
import { addMember, createMiniApp, listMembers, listMiniApps, miniAppRecord, removeMember, requireVisibleMiniApp, updateMiniApp } from './service'

/**
 * Elysia strips unknown properties during validation instead of refusing them, so they are noted
 * before (transform) and refused after the guard and validation have run (beforeHandle): a caller
 * without a token still learns 401 first, and an `appId` in the payload is a 400, not a no-op.
 */
function refuseUnknownProperties(schema: { properties: Record<string, unknown> }) {
  const unknownByRequest = new WeakMap<Request, string[]>()
  return {
    transform({ body, request }: { body: unknown; request: Request }) {
      if (typeof body !== 'object' || body === null || Array.isArray(body)) return
      const unknown = Object.keys(body).filter((key) => !(key in schema.properties))
      if (unknown.length > 0) unknownByRequest.set(request, unknown)
    },
    beforeHandle({ request }: { request: Request }) {
      const unknown = unknownByRequest.get(request)
      if (!unknown) return
      const details = unknown.map((field) => ({ field, message: field === 'appId' ? 'cannot be changed' : 'is not allowed' }))
      throw new AppError(400, 'VALIDATION_ERROR', `Invalid body: ${details.map((d) => `${d.field} ${d.message}`).join('; ')}`, details)
    },
  }
}

const updateMiniAppChecks = refuseUnknownProperties(updateMiniAppBody)

export function miniAppRoutes(deps: AppDeps) {
  const { db, clock } = deps
  return new Elysia({ prefix: '/mini-apps' })
    .use(deps.guard)
    .get('', ({ user }) => listMiniApps(db, user), {
      auth: 'read',
      detail: { responses: jsonAnswer(200, t.Array(miniAppSchema)), summary: 'Miniapps the caller can see (all of them for admins)', tags: ['mini-apps'] },
    })
    .post(
      '',
      ({ user, body, set }) => {
        const record = createMiniApp(db, clock, user, body)
        set.status = 201
        return record
      },
      { auth: true, body: createMiniAppBody, detail: { responses: jsonAnswer(201, miniAppSchema), summary: 'Register a miniapp; the caller becomes its OWNER', tags: ['mini-apps'] } },
    )
    .get('/:miniAppId', ({ user, params }) => miniAppRecord(db, requireVisibleMiniApp(db, user, params.miniAppId)), {
      auth: 'read',
      params: miniAppIdParams,
      detail: { responses: jsonAnswer(200, miniAppSchema), summary: 'One miniapp', tags: ['mini-apps'] },
    })
    .patch('/:miniAppId', ({ user, params, body }) =>
      // not in atomically(): a body that changes nothing must not take the write lock (it answers while a backup holds it)
      updateMiniApp(db, clock, user, params.miniAppId, body, ({ miniAppId, changed }) => {
        // the release mirror's install.json names the miniapp as the server's install info does (queued in the change's own transaction)
        if (changed.includes('name')) deps.mirror?.miniAppChanged(miniAppId)
      }), {
      auth: true,
      params: miniAppIdParams,
      ...updateMiniAppChecks,
      body: updateMiniAppBody,
      detail: { responses: jsonAnswer(200, miniAppSchema), summary: 'Change name, description, icon, experiencePublic or requireSignature (owners; appId is immutable)', tags: ['mini-apps'] },
    })
    .get('/:miniAppId/members', ({ user, params }) => listMembers(db, user, params.miniAppId), {
      auth: true,
      params: miniAppIdParams,
      detail: { responses: jsonAnswer(200, t.Array(memberRecord)), summary: 'Members of a miniapp (owners and admins)', tags: ['mini-apps'] },
    })
    .post(
      '/:miniAppId/members',
      ({ user, params, body, set, request, server }) => {
        // "No user with the email …" tells whether an address has an account: a budget of such
        // answers per user and per address, checked before the lookup so that a used-up budget
        // answers 429 for registered and unregistered emails alike.
        const keys = [`user:${user.id}`, `address:${budgetKey(clientAddress(request, server, deps.config))}`]
        const limit = deps.config.rateLimits.memberUnknownEmail
        for (const key of keys) deps.rateLimiter.check('member-unknown-email', key, limit)
        try {
          const member = addMember(db, clock, user, params.miniAppId, body)
          set.status = 201
          return member
        } catch (error) {
          if (error instanceof AppError && error.code === 'USER_NOT_FOUND') for (const key of keys) deps.rateLimiter.hit('member-unknown-email', key, limit)
          throw error
        }
      },
      { auth: true, params: miniAppIdParams, body: addMemberBody, detail: { responses: jsonAnswer(201, memberRecord), summary: 'Add a member by email as OWNER or DEVELOPER', tags: ['mini-apps'] } },
    )
    .delete('/:miniAppId/members/:userId', ({ user, params }) => removeMember(db, clock, user, params.miniAppId, params.userId), {
      auth: true,
      params: memberParams,
      detail: { responses: jsonAnswer(200, memberRemoved), summary: 'Remove a member (the last owner stays)', tags: ['mini-apps'] },
    })
}
