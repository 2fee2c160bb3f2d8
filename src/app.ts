// createApp(deps) → the Elysia app, not listening: `serve` binds it to a port, tests call app.handle.
import { Elysia } from 'elysia'
import { AppError, errorHandler } from './http/errors'
import { createGuard } from './http/guards'
import { createRateLimiter } from './http/rate-limit'
import { createTokenService } from './modules/auth/tokens'
import { systemClock, type Clock } from './ids'
import type { Config } from './config'
import type { AppDeps } from './modules/deps'
import type { Db } from './db/open'
import type { DataDirPaths } from './data-dir'
import { systemRoutes } from './modules/system'
import { authRoutes } from './modules/auth'
import { cliSessionRoutes } from './modules/cli-sessions'
import { adminRoutes } from './modules/admin'
import { miniAppRoutes } from './modules/miniapps'
import { findVisibleMiniApp } from './modules/miniapps/service'
import { versionRoutes } from './modules/versions'
import { runtimeRoutes } from './modules/runtime'
import { insightRoutes } from './modules/insights'
import { createInsightsService } from './modules/insights/service'
import { eventsBodyLimitBytes } from './modules/insights/model'
import { createRequestMetrics } from './modules/system/metrics'
import { readOrCreateInsightsKey } from './data-dir'
import { createBlobStore, type BlobStore } from './storage'
import { createReleaseMirror } from './modules/mirror/service'
import { isS3BlobStore } from './storage/s3'
import { apiKeyRoutes } from './modules/api-keys'
import { createApiKeyAuthenticator, isApiKey } from './modules/api-keys/service'
import { userFromAccessToken } from './modules/auth/access'
import { channelRoutes } from './modules/channels'
import { createReleaseGuard } from './modules/channels/guard'
import { liveVersionsSignedBy } from './modules/channels/service'
import { setupRoutes } from './modules/setup'
import { signingRoutes } from './modules/signing'
import { createSetupGate, type SetupGate } from './modules/setup/service'
import { createWriteWatch, watchingWrites } from './db/write-watch'
import { createJobQueue, type JobQueueOptions } from './jobs/queue'
import { webhookRoutes } from './modules/webhooks'
import { emitWebhookEvent, registerWebhookDelivery, releaseGuardActor, type RolloutPausedData } from './modules/webhooks/service'

export interface AppInput {
  config: Config
  db: Db
  paths: DataDirPaths
  secret: Uint8Array
  clock?: Clock
  log?: (line: string) => void
  /** the store the configuration names when not given (serve passes the one it probed) */
  blobs?: BlobStore
  /** the first-admin setup link's token (serve prints it); made here when not given */
  setup?: SetupGate
  /** the background queue's knobs (tests shorten the attempt timeout); `serve` starts its worker */
  jobs?: Pick<JobQueueOptions, 'attemptTimeoutMs' | 'pollMs'>
}

export const uploadPathPattern = /^\/api\/mini-apps\/by-app-id\/[^/]+\/versions\/upload\/?$/
const eventsPath = '/api/mini-apps/access/events'

/** "64 KB", "1 MB": the limit in the unit it was set in. */
function sizeText(bytes: number): string {
  return bytes < 1024 * 1024 ? `${Math.floor(bytes / 1024)} KB` : `${Math.floor(bytes / 1024 / 1024)} MB`
}

/**
 * Refuses, before any body is read, what no route accepts: a declared body over the limit (413)
 * and a body whose content type the route cannot take (415).
 */
export function checkRequestBody(request: Request, config: Config): void {
  if (request.method === 'GET' || request.method === 'HEAD' || request.method === 'OPTIONS') return
  const pathname = new URL(request.url).pathname
  const isUpload = uploadPathPattern.test(pathname)
  const declared = request.headers.get('content-length')
  const hasBody = declared !== null ? declared !== '0' : request.body !== null
  if (!hasBody) return
  // device events come from phones in the field: a small body, refused early when it is not
  const limit = isUpload ? config.uploadLimitBytes : pathname === eventsPath ? eventsBodyLimitBytes : config.jsonLimitBytes
  if (declared !== null && Number(declared) > limit) {
    throw new AppError(413, 'PAYLOAD_TOO_LARGE', `The request body is larger than the limit of ${sizeText(limit)}${isUpload ? '; an operator raises it with --upload-limit-mb (env MINISHIP_UPLOAD_LIMIT_MB)' : ''}`)
  }
  const type = (request.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase()
  // the setup page is a plain HTML form (no script may run there)
  if (pathname === '/setup' && type === 'application/x-www-form-urlencoded') return
  if (isUpload) {
    if (type !== 'multipart/form-data') {
      throw new AppError(415, 'UNSUPPORTED_MEDIA_TYPE', 'An upload must be sent as multipart/form-data')
    }
  } else if (type !== 'application/json') {
    throw new AppError(415, 'UNSUPPORTED_MEDIA_TYPE', `Send the request body as application/json (got ${type || 'no content type'})`)
  }
}

export function createApp(input: AppInput) {
  const clock = input.clock ?? systemClock
  const tokens = createTokenService(input.secret, clock, input.config.tokenTtlSeconds)
  const log = input.log ?? ((line: string) => console.log(line))
  const blobs = input.blobs ?? createBlobStore(input.config, input.paths, log)
  const rateLimiter = createRateLimiter(clock, input.config.rateLimit)
  // failed key authentication is limited per client address like login (decisions §18)
  const keyFailures = { check: (address: string) => rateLimiter.check('api-key', address, input.config.rateLimits.apiKeyFailures), failed: (address: string) => rateLimiter.hit('api-key', address, Number.MAX_SAFE_INTEGER) }
  const apiKeys = createApiKeyAuthenticator({ db: input.db, clock, failures: keyFailures })
  const jobs = createJobQueue({ db: input.db, clock, log, ...input.jobs })
  const insightsKey = readOrCreateInsightsKey(input.paths)
  const insights = createInsightsService({
    db: input.db,
    clock,
    key: insightsKey,
    enabled: input.config.insights,
    flushSeconds: input.config.insightsFlushSeconds,
    log: input.log ?? ((line) => console.log(line)),
  })
  const mirror = input.config.mirrorReleases && isS3BlobStore(blobs) ? createReleaseMirror({ db: input.db, config: input.config, tokens, blobs, jobs }) : null
  const releaseGuard = createReleaseGuard({ db: input.db, clock, key: insightsKey, log })
  insights.observe(releaseGuard.observer)
  // a pause by the guard is announced like any other (decisions §15, §16) and moves the mirror like a person's;
  // its data has the names docs/webhooks.md and the Slack text use (RolloutPausedData)
  releaseGuard.onPaused((pause) => {
    mirror?.releaseChanged(pause.miniAppId, pause.channel)
    emitWebhookEvent(input.db, clock, pause.miniAppId, 'rollout.paused', {
      channel: pause.channel,
      version: { id: pause.versionId, version: pause.version },
      rolloutPercent: pause.rolloutPercent,
      previousPercent: pause.previousPercent,
      state: 'paused',
      previousState: pause.previousState,
      reason: pause.reason,
      failedDevices: pause.failedDevices,
      devices: pause.totalDevices,
      failureRate: pause.failureRate,
      maxFailureRate: pause.threshold,
      by: releaseGuardActor,
      ...(pause.warnings.length ? { warnings: pause.warnings } : {}),
    } satisfies RolloutPausedData)
  })
  const deps: AppDeps = {
    config: input.config,
    db: input.db,
    paths: input.paths,
    clock,
    log,
    tokens,
    rateLimiter,
    guard: createGuard(
      {
        isApiKey,
        accessToken: (token) => userFromAccessToken(input.db, tokens, token),
        apiKey: (key, scope, address) => apiKeys.authenticate(key, scope, address),
        miniAppIdOf: (idOrAppId, caller) => findVisibleMiniApp(input.db, caller, idOrAppId)?.id ?? null,
      },
      input.config,
    ),
    apiKeys,
    startedAt: clock(),
    writes: createWriteWatch(),
    insights,
    releaseGuard,
    liveVersionsSignedBy: (miniAppId, keyId) => liveVersionsSignedBy(input.db, miniAppId, keyId),
    requestMetrics: createRequestMetrics(),
    blobs,
    jobs,
    mirror,
  }
  registerWebhookDelivery(jobs, { db: input.db, clock, log, allowPrivate: input.config.webhooksAllowPrivate })
  const api = new Elysia({ prefix: '/api' })
    .use(authRoutes(deps))
    .use(cliSessionRoutes(deps))
    .use(adminRoutes(deps))
    .use(miniAppRoutes(deps))
    .use(versionRoutes(deps))
    .use(channelRoutes(deps))
    .use(runtimeRoutes(deps))
    .use(insightRoutes(deps))
    .use(apiKeyRoutes(deps))
    .use(webhookRoutes(deps))
    .use(signingRoutes(deps))
  const app = new Elysia()
    // serve reaches the release mirror through the app (issue 14): it catches up after start
    .state('mirror', deps.mirror)
    // the durable queue's worker: `serve` starts and stops it, tests drain it
    .state('jobs', jobs)
    .use(errorHandler)
    .onRequest(({ request }) => checkRequestBody(request, deps.config))
    .use(api)
    .use(systemRoutes(deps, api))
    .use(setupRoutes({ ...deps, setup: input.setup ?? createSetupGate(input.db) }))
    // `serve` flushes the batched last-use times of API keys on shutdown
    .state('apiKeyUsage', apiKeys.usage)
    // `serve` starts the guard's own timer when the insights flush is slower than its 60 s budget
    .state('releaseGuard', releaseGuard)
  // every request that may write is counted while it runs (serve and the tests both call handle)
  app.handle = watchingWrites(app.handle, deps.writes)
  return app
}

export type App = ReturnType<typeof createApp>
