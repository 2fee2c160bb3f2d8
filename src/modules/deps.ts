// AppDeps: everything a feature module may use — the floors below (../deps.ts) and the services the app
// builds once from the modules themselves. Types only; app.ts fills it in, and no module imports app.ts.
import type { BaseDeps } from '../deps'
import type { TokenService } from './auth/tokens'
import type { ApiKeyAuthenticator } from './api-keys/service'
import type { InsightsService } from './insights/service'
import type { RequestMetrics } from './system/metrics'
import type { ReleaseMirror } from './mirror/service'
import type { ReleaseGuard } from './channels/guard'
import type { LiveVersionsSignedBy } from './signing/service'

/** Everything a feature module may use; services take the parts they need from it. */
export interface AppDeps extends BaseDeps {
  tokens: TokenService
  /** API keys as callers: the guard and the runtime's `?token=` use it */
  apiKeys: ApiKeyAuthenticator
  /** the in-memory counters of what phones do, and the report built from them */
  insights: InsightsService
  /** request counts and latencies, fed by the request log under `serve` */
  requestMetrics: RequestMetrics
  /** with --mirror-releases on: queues a write of each channel's release to the bucket on every change */
  mirror: ReleaseMirror | null
  /** decisions §15: counts failing devices of guarded channels' newest releases (fed by insights), pauses them */
  releaseGuard: ReleaseGuard
  /** the versions a signing key signed that devices get now, with their channels (what revoking it warns of) */
  liveVersionsSignedBy: LiveVersionsSignedBy
}
