// TypeBox schemas of the webhook endpoints (validation and OpenAPI).
import { t } from 'elysia'
import { webhookUrlLimit } from './address'

export const webhooksParams = t.Object({ miniAppId: t.String() })
export const webhookParams = t.Object({ miniAppId: t.String(), webhookId: t.String({ maxLength: 64 }) })

/** Event names and the URL are checked by the service, so their messages live in one place. */
export const createWebhookBody = t.Object({
  url: t.String({ minLength: 1, maxLength: webhookUrlLimit, description: `at most ${webhookUrlLimit} characters, also once percent-encoded (as it is stored)`, error: 'must be the receiver\'s http(s) URL', examples: ['https://hooks.slack.com/services/T000/B000/XXXX'] }),
  events: t.Optional(
    t.Array(t.String({ maxLength: 64 }), {
      maxItems: 10,
      error: 'must list events such as release.published',
      description: 'version.uploaded, release.published, release.rolled_back, rollout.changed, rollout.paused (default: all of them)',
    }),
  ),
  format: t.Optional(t.Union([t.Literal('json'), t.Literal('slack')], { error: 'must be "json" or "slack"', description: 'json (default): the event as JSON; slack: a { text } body for a Slack, Mattermost or Discord (/slack) incoming webhook' })),
})

export const webhookRecord = t.Object({
  id: t.String(),
  url: t.String(),
  events: t.Array(t.String()),
  format: t.String(),
  createdAt: t.String(),
})

export const createdWebhook = t.Object({
  id: t.String(),
  url: t.String(),
  events: t.Array(t.String()),
  format: t.String(),
  createdAt: t.String(),
  secret: t.String({ description: 'signs every delivery (X-Miniship-Signature); shown in this answer only' }),
})

export const deliveryRecord = t.Object({
  id: t.String(),
  event: t.String(),
  status: t.Union([t.Literal('pending'), t.Literal('delivered'), t.Literal('failed')]),
  attempts: t.Integer(),
  responseStatus: t.Union([t.Integer(), t.Null()]),
  error: t.Union([t.String(), t.Null()]),
  createdAt: t.String(),
  updatedAt: t.String(),
})
