// Routes of the CLI device flow: create a session, poll it, see who asks, approve or deny it (decisions §4).
import { Elysia, t } from 'elysia'
import type { AppDeps } from '../deps'
import { clientAddress, publicOrigin } from '../../http/client'
import { personSchema } from '../auth/model'
import { approveCliSession, cliSessionDetails, createCliSession, denyCliSession, pollCliSession, verificationUrl } from './service'

const codeParams = t.Object({ code: t.String({ maxLength: 64, description: 'the session code, e.g. ABCD-1234' }) })

export function cliSessionRoutes(deps: AppDeps) {
  /** Each try at a code (approve, deny, look at it) is an answer about it: one budget per user and per address. */
  const spendDecisionBudget = (userId: string, request: Request, server: Parameters<typeof clientAddress>[1]) => {
    deps.rateLimiter.hit('cli-session-approve-user', userId, deps.config.rateLimits.cliSessionApprove)
    deps.rateLimiter.hit('cli-session-approve-address', clientAddress(request, server, deps.config), deps.config.rateLimits.cliSessionApprove)
  }
  return new Elysia({ prefix: '/auth/cli/sessions' })
    .use(deps.guard)
    .post(
      '',
      ({ request, server, set }) => {
        const address = clientAddress(request, server, deps.config)
        deps.rateLimiter.hit('cli-session-create', address, deps.config.rateLimits.cliSessionCreate)
        const session = createCliSession(deps.db, deps.clock, deps.config, { address, userAgent: request.headers.get('user-agent') })
        set.status = 201
        return { code: session.code, verificationUrl: verificationUrl(publicOrigin(request, deps.config), session.code), expiresAt: session.expiresAt, intervalSeconds: session.intervalSeconds }
      },
      {
        response: { 201: t.Object({ code: t.String(), verificationUrl: t.String(), expiresAt: t.String(), intervalSeconds: t.Integer() }) },
        detail: { summary: 'Start a command-line sign-in: a code for a person to approve in the console', tags: ['auth'] },
      },
    )
    .get(
      '/:code',
      ({ params, request, server }) => {
        deps.rateLimiter.hit('cli-session-poll', clientAddress(request, server, deps.config), deps.config.rateLimits.cliSessionPoll)
        return pollCliSession(deps.db, deps.clock, deps.tokens, params.code)
      },
      {
        params: codeParams,
        response: {
          200: t.Object({
            status: t.Union([t.Literal('pending'), t.Literal('approved'), t.Literal('expired')]),
            reason: t.Optional(t.Literal('denied', { description: 'set when a person refused this sign-in on the approval page' })),
            accessToken: t.Optional(t.String()),
            user: t.Optional(personSchema),
          }),
        },
        detail: { summary: 'Poll a sign-in session; the approved answer carries the token once', tags: ['auth'] },
      },
    )
    .post(
      '/:code/approve',
      ({ params, user, request, server }) => {
        spendDecisionBudget(user.id, request, server)
        return approveCliSession(deps.db, deps.clock, user, params.code)
      },
      {
        auth: true,
        params: codeParams,
        response: { 200: t.Object({ code: t.String(), status: t.Literal('approved') }) },
        detail: { summary: 'Approve a sign-in session as the signed-in user (410 alike for an unknown and an expired code)', tags: ['auth'] },
      },
    )
    .post(
      '/:code/deny',
      ({ params, user, request, server }) => {
        spendDecisionBudget(user.id, request, server)
        return denyCliSession(deps.db, deps.clock, user, params.code)
      },
      {
        auth: true,
        params: codeParams,
        response: { 200: t.Object({ code: t.String(), status: t.Literal('denied') }) },
        detail: { summary: 'Refuse a sign-in session; its next poll answers expired with reason denied (410 alike for an unknown and an expired code)', tags: ['auth'] },
      },
    )
    .get(
      '/:code/details',
      ({ params, user, request, server }) => {
        spendDecisionBudget(user.id, request, server)
        return cliSessionDetails(deps.db, deps.clock, params.code)
      },
      {
        auth: true,
        params: codeParams,
        response: {
          200: t.Object({
            code: t.String(),
            status: t.Union([t.Literal('pending'), t.Literal('approved'), t.Literal('denied'), t.Literal('expired')]),
            createdAt: t.String(),
            expiresAt: t.String(),
            requestedFrom: t.Object({ address: t.Union([t.String(), t.Null()]), userAgent: t.Union([t.String(), t.Null()]) }),
          }),
        },
        detail: { summary: 'Who started a sign-in session and whether it is still open, for the approval page (410 for an unknown code)', tags: ['auth'] },
      },
    )
}
