// Routes of webhooks: /api/mini-apps/{miniAppId}/webhooks — create, list, delete, test, deliveries (owners and admins).
import { Elysia, t } from 'elysia'
import type { AppDeps } from '../deps'
import { createdWebhook, createWebhookBody, deliveryRecord, webhookParams, webhookRecord, webhooksParams } from './model'
import { createWebhook, deleteWebhook, listDeliveries, listWebhooks, testWebhook, webhookTestsPerMinute } from './service'

export function webhookRoutes(deps: AppDeps) {
  const services = { db: deps.db, clock: deps.clock, allowPrivate: deps.config.webhooksAllowPrivate }
  // `auth: true`: people only, no API key scope reaches webhooks (they hold a secret and send data out)
  return new Elysia({ prefix: '/mini-apps' })
    .use(deps.guard)
    .post(
      '/:miniAppId/webhooks',
      async ({ user, params, body, set }) => {
        const created = await createWebhook(services, user, params.miniAppId, body)
        set.status = 201
        return created
      },
      {
        auth: true,
        params: webhooksParams,
        body: createWebhookBody,
        response: { 201: createdWebhook },
        detail: { summary: 'Add a webhook (owners and admins); the secret is in this answer only', tags: ['webhooks'] },
      },
    )
    .get('/:miniAppId/webhooks', ({ user, params }) => ({ webhooks: listWebhooks(deps.db, user, params.miniAppId) }), {
      auth: true,
      params: webhooksParams,
      response: { 200: t.Object({ webhooks: t.Array(webhookRecord) }) },
      detail: { summary: 'Webhooks of a miniapp (never their secrets)', tags: ['webhooks'] },
    })
    .delete('/:miniAppId/webhooks/:webhookId', ({ user, params }) => deleteWebhook(services, user, params.miniAppId, params.webhookId), {
      auth: true,
      params: webhookParams,
      response: { 200: t.Object({ success: t.Literal(true), id: t.String() }) },
      detail: { summary: 'Remove a webhook and its deliveries, those waiting for a retry too', tags: ['webhooks'] },
    })
    .post('/:miniAppId/webhooks/:webhookId/test', ({ user, params }) => testWebhook(services, user, params.miniAppId, params.webhookId, (id) => deps.rateLimiter.hit('webhook-test', id, webhookTestsPerMinute)), {
      auth: true,
      params: webhookParams,
      response: { 200: deliveryRecord },
      detail: { summary: 'Queue a webhook.test delivery to this webhook (5 a minute, then 429 RATE_LIMITED); see its deliveries for the outcome', tags: ['webhooks'] },
    })
    .get('/:miniAppId/webhooks/:webhookId/deliveries', ({ user, params }) => ({ deliveries: listDeliveries(deps.db, user, params.miniAppId, params.webhookId) }), {
      auth: true,
      params: webhookParams,
      response: { 200: t.Object({ deliveries: t.Array(deliveryRecord) }) },
      detail: { summary: 'The latest 50 deliveries of a webhook: event, status, attempts, response status, time', tags: ['webhooks'] },
    })
}
