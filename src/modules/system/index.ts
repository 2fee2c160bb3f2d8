// Health, metrics and the OpenAPI document.
import { Elysia, t } from 'elysia'
import type { AppDeps } from '../deps'
import { openApiDocument } from '../../http/openapi'
import { canWrite } from '../../db/open'
import { productVersion } from '../../version'
import { authoriseScrape, renderMetrics } from './metrics'
import { hasActiveAdmin } from '../auth/service'

interface HasRoutes {
  routes: readonly { method: string; path: string; hooks?: Record<string, unknown> }[]
}

/**
 * `{ status, version, uptimeSeconds }`: `ok`; `degraded` (still 200) when reads work but no write can
 * be made (another process holds the write lock); `unavailable` and 503 when the database does not answer. A plain function:
 * `serve` also answers it straight from Bun's router, so that a probe (and the first request after
 * start-up) does not wait for Elysia to compile its handlers.
 */
export function healthResponse(deps: Pick<AppDeps, 'db' | 'clock' | 'startedAt'>, detail?: Record<string, unknown>): Response {
  const uptimeSeconds = Math.floor((deps.clock() - deps.startedAt) / 1000)
  let status = 'ok'
  try {
    deps.db.$client.query('SELECT 1').get()
    // Reads still work while another process holds the write lock: the server answers, but
    // writes fail with 503 DATABASE_BUSY. Still 200, so a balancer does not pull the only instance.
    if (!canWrite(deps.db.$client)) status = 'degraded'
  } catch {
    status = 'unavailable'
  }
  const body = JSON.stringify({ status, version: productVersion, uptimeSeconds, ...detail })
  return new Response(body, {
    status: status === 'unavailable' ? 503 : 200,
    headers: { 'content-type': 'application/json; charset=utf-8', 'content-length': String(Buffer.byteLength(body)), 'cache-control': 'no-store' },
  })
}

const kindBacklog = t.Object({ pending: t.Integer(), running: t.Integer(), failed: t.Integer(), oldestPendingSeconds: t.Integer() })
const healthBody = t.Object({
  status: t.String(),
  version: t.String(),
  uptimeSeconds: t.Integer(),
  /** only for an administrator (or the metrics token): the background queue's backlog */
  jobs: t.Optional(t.Object({ pending: t.Integer(), running: t.Integer(), failed: t.Integer(), oldestPendingSeconds: t.Integer(), byKind: t.Record(t.String(), kindBacklog) })),
})

/**
 * The health answer, with the background queue's backlog for a caller who sends an administrator's
 * token (or the metrics token). A probe sends none; a token that is not good enough gets the plain
 * answer too, so health never turns into an error for a balancer.
 */
function healthWithDetail(deps: AppDeps, request?: Request): Response | Promise<Response> {
  const header = request?.headers.get('authorization') ?? undefined
  if (header === undefined) return healthResponse(deps)
  return authoriseScrape(header, deps.config.metricsToken, deps.db, deps.tokens).then(
    () => {
      try {
        return healthResponse(deps, { jobs: deps.jobs.backlog() })
      } catch {
        return healthResponse(deps)
      }
    },
    () => healthResponse(deps),
  )
}
const serverInfo = t.Object({
  version: t.String(),
  setupRequired: t.Boolean({ description: 'no administrator exists yet: register answers 403 SETUP_REQUIRED' }),
  registration: t.Union([t.Literal('open'), t.Literal('closed')]),
  passwordMinLength: t.Integer(),
  uploadLimitBytes: t.Integer({ description: 'the largest upload request (--upload-limit-mb)' }),
})

export function systemRoutes(deps: AppDeps, api: HasRoutes) {
  let document: Record<string, unknown> | null = null
  const health = (request?: Request) => healthWithDetail(deps, request)
  // this module's own routes, for the document (with their answers' schemas and security)
  let own: HasRoutes | null = null
  const system = new Elysia({ prefix: '/api' })
    .state('health', health)
    // `serve` starts the insight timers and feeds the request log's observations
    .state('insights', deps.insights)
    .state('requestMetrics', deps.requestMetrics)
    .get('/health', ({ request }) => health(request), {
      detail: { summary: 'Liveness and database check; with an administrator\'s token (or the metrics token) also the background jobs\' backlog', tags: ['system'] },
      response: { 200: healthBody, 503: healthBody },
    })
    .get(
      '/metrics',
      async ({ request }) => {
        await authoriseScrape(request.headers.get('authorization') ?? undefined, deps.config.metricsToken, deps.db, deps.tokens)
        const text = renderMetrics({
          db: deps.db,
          paths: deps.paths,
          clock: deps.clock,
          startedAt: deps.startedAt,
          requestMetrics: deps.requestMetrics,
          totals: deps.insights.counters.totals,
          flushInsights: deps.insights.flush,
          jobs: deps.jobs,
        })
        return new Response(text, { headers: { 'content-type': 'text/plain; version=0.0.4; charset=utf-8', 'cache-control': 'no-store' } })
      },
      {
        detail: {
          summary: 'Prometheus metrics (text format 0.0.4): Bearer of an administrator or the --metrics-token',
          tags: ['system'],
          security: [{ bearer: [] }],
          // text, not JSON: described here rather than by a `response` schema
          responses: { 200: { description: 'Counters, gauges and histograms in the Prometheus text format 0.0.4', content: { 'text/plain; version=0.0.4': { schema: { type: 'string' } } } } },
        },
      },
    )
    .get(
      '/info',
      () => ({
        version: productVersion,
        // decisions §13: until an administrator exists nobody can register; the console's sign-in page says how to finish set-up
        setupRequired: !hasActiveAdmin(deps.db),
        registration: deps.config.registration,
        passwordMinLength: deps.config.passwordMinLength,
        // the CLI refuses a bigger push before sending it
        uploadLimitBytes: deps.config.uploadLimitBytes,
      }),
      {
        response: { 200: serverInfo },
        detail: { summary: 'What clients need to know before they act (public): set-up state, registration, password length, upload limit', tags: ['system'] },
      },
    )
    .get(
      '/openapi.json',
      () => {
        // this module's routes as declared (health's answer schema, metrics' Bearer), not bare paths
        document ??= openApiDocument([...api.routes, ...(own?.routes ?? [])], productVersion)
        return document
      },
      {
        detail: {
          summary: 'This document',
          tags: ['system'],
          // described, not checked on every answer: a `response` schema would validate (and trim) the whole document each time
          responses: {
            200: {
              description: 'OpenAPI 3.1 (its schemas are JSON Schema 2020-12)',
              content: { 'application/json': { schema: { type: 'object', required: ['openapi', 'info', 'paths'], properties: { openapi: { type: 'string', enum: ['3.1.0'] }, info: { type: 'object' }, servers: { type: 'array', items: { type: 'object' } }, paths: { type: 'object' }, components: { type: 'object' } } } } },
            },
          },
        },
      },
    )
  own = system as unknown as HasRoutes
  return system
}
