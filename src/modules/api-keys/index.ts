// Routes of API keys: /api/auth/api-keys (the caller's own) and /api/admin/api-keys (every key, admins).
import { Elysia } from 'elysia'
import type { AppDeps } from '../deps'
import { adminApiKeyList, apiKeyIdParams, apiKeyList, createApiKeyBody, createdApiKey, revokedApiKey } from './model'
import { createApiKey, listAllApiKeys, listApiKeys, revokeApiKey } from './service'

export function apiKeyRoutes(deps: AppDeps) {
  const services = { db: deps.db, clock: deps.clock }
  const usage = deps.apiKeys.usage
  // `auth: true` (no scope): keys can neither create keys nor list or revoke them.
  const own = new Elysia({ prefix: '/auth/api-keys' })
    .use(deps.guard)
    .post(
      '',
      ({ user, body, set }) => {
        const created = createApiKey(services, user, body)
        set.status = 201
        return created
      },
      {
        auth: true,
        body: createApiKeyBody,
        response: { 201: createdApiKey },
        detail: { summary: 'Create an API key for CI (the key is in this answer only)', tags: ['api-keys'] },
      },
    )
    .get('', ({ user }) => ({ apiKeys: listApiKeys(services, usage, user.id) }), {
      auth: true,
      response: { 200: apiKeyList },
      detail: { summary: "The caller's API keys (never the keys themselves)", tags: ['api-keys'] },
    })
    .delete('/:id', ({ user, params }) => revokeApiKey(services, user, params.id, { anyOwner: false }), {
      auth: true,
      params: apiKeyIdParams,
      response: { 200: revokedApiKey },
      detail: { summary: 'Revoke one of your API keys; it stops working at once', tags: ['api-keys'] },
    })
  const admin = new Elysia({ prefix: '/admin/api-keys' })
    .use(deps.guard)
    .get('', () => ({ apiKeys: listAllApiKeys(services, usage) }), {
      admin: true,
      response: { 200: adminApiKeyList },
      detail: { summary: 'Every API key with its owner', tags: ['admin', 'api-keys'] },
    })
    .delete('/:id', ({ user, params }) => revokeApiKey(services, user, params.id, { anyOwner: true }), {
      admin: true,
      params: apiKeyIdParams,
      response: { 200: revokedApiKey },
      detail: { summary: "Revoke anyone's API key", tags: ['admin', 'api-keys'] },
    })
  return new Elysia().use(own).use(admin)
}
