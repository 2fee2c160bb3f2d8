// Routes of insights: device events (public) and the per-miniapp report (members).
import { Elysia } from 'elysia'
import type { AppDeps } from '../deps'
import { clientAddress } from '../../http/client'
import { eventsAnswer, eventsBody, insightsAnswer, insightsParams, insightsQuery } from './model'

export function insightRoutes(deps: AppDeps) {
  const { insights } = deps
  return new Elysia({ prefix: '/mini-apps' })
    .use(deps.guard)
    .post(
      '/access/events',
      ({ body, set }) => {
        set.status = 202
        return insights.recordEvents(body.events)
      },
      {
        // before validation: a flood of bad bodies is limited like good ones
        transform: ({ request, server }) => deps.rateLimiter.hit('events', clientAddress(request, server, deps.config), deps.config.rateLimits.events),
        body: eventsBody,
        response: { 202: eventsAnswer },
        detail: {
          summary:
            'Runtime events of devices (installed, launched, failed, rolled_back), at most 100 per call and 64 KB. Each event counts or is refused on its own (errors: index, code); an unknown or withdrawn version counts in the `other` row, an unknown channel is CHANNEL_NOT_FOUND. `counted: false` when the server runs with --insights off: accepted events then reach only the release guard',
          tags: ['insights'],
        },
      },
    )
    .get('/:miniAppId/insights', ({ user, params, query }) => insights.report(user, params.miniAppId, { days: query.days === undefined ? 30 : Number(query.days), channel: query.channel ?? null }), {
      // the read scope reads insights (docs/api.md), as it reads workspaces and channels
      auth: 'read',
      params: insightsParams,
      query: insightsQuery,
      response: { 200: insightsAnswer },
      detail: { summary: 'Downloads, installs, failures and active devices per day and version, totals, adoption of the current release and the last failures', tags: ['insights'] },
    })
}
