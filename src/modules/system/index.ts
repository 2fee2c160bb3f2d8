// Health and the OpenAPI document.
import { Elysia, t } from 'elysia'
import type { AppDeps } from '../../app'
import { openApiDocument } from '../../http/openapi'
import { productVersion } from '../../version'

interface HasRoutes {
  routes: readonly { method: string; path: string; hooks?: Record<string, unknown> }[]
}

export function systemRoutes(deps: AppDeps, api: HasRoutes) {
  let document: Record<string, unknown> | null = null
  return new Elysia({ prefix: '/api' })
    .get(
      '/health',
      ({ set }) => {
        const uptimeSeconds = Math.floor((deps.clock() - deps.startedAt) / 1000)
        try {
          deps.db.$client.query('SELECT 1').get()
        } catch {
          set.status = 503
          return { status: 'unavailable', version: productVersion, uptimeSeconds }
        }
        return { status: 'ok', version: productVersion, uptimeSeconds }
      },
      {
        detail: { summary: 'Liveness and database check', tags: ['system'] },
        response: { 200: t.Object({ status: t.String(), version: t.String(), uptimeSeconds: t.Integer() }), 503: t.Object({ status: t.String(), version: t.String(), uptimeSeconds: t.Integer() }) },
      },
    )
    .get(
      '/openapi.json',
      () => {
        document ??= openApiDocument([...api.routes, { method: 'GET', path: '/api/health' }, { method: 'GET', path: '/api/openapi.json' }], productVersion)
        return document
      },
      { detail: { summary: 'This document', tags: ['system'] } },
    )
}
