// Routes of the CLI device flow: create a session, poll it, approve it (decisions §4).
import { Elysia, t } from 'elysia'
import type { AppDeps } from '../../app'
import { clientAddress, publicOrigin } from '../../http/client'
import { personSchema } from '../auth/model'
import { approveCliSession, createCliSession, pollCliSession, verificationUrl } from './service'

const codeParams = t.Object({ code: t.String({ maxLength: 64, description: 'the session code, e.g. ABCD-1234' }) })

export function cliSessionRoutes(deps: AppDeps) {
  return new Elysia({ prefix: '/auth/cli/sessions' })
    .use(deps.guard)
    .post(
      '',
      ({ request, server, set }) => {
        deps.rateLimiter.hit('cli-session-create', clientAddress(request, server, deps.config), deps.config.rateLimits.cliSessionCreate)
        const session = createCliSession(deps.db, deps.clock, deps.config)
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
        // Each try at a code is an answer about it: a budget per user and per address.
        deps.rateLimiter.hit('cli-session-approve-user', user.id, deps.config.rateLimits.cliSessionApprove)
        deps.rateLimiter.hit('cli-session-approve-address', clientAddress(request, server, deps.config), deps.config.rateLimits.cliSessionApprove)
        return approveCliSession(deps.db, deps.clock, user, params.code)
      },
      {
        auth: true,
        params: codeParams,
        response: { 200: t.Object({ code: t.String(), status: t.Literal('approved') }) },
        detail: { summary: 'Approve a sign-in session as the signed-in user (410 alike for an unknown and an expired code)', tags: ['auth'] },
      },
    )
}
