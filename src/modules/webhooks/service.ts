// Webhooks of a miniapp (decisions §16): the rules of creating, listing, deleting and testing them, the events, and the delivery job.
import { createHmac, randomBytes } from 'node:crypto'
import { and, desc, eq, inArray, ne, sql } from 'drizzle-orm'
import { jobs as jobRows, miniApps, webhookDeliveries, webhooks } from '../../db/schema'
import type { Db } from '../../db/open'
import { AppError } from '../../http/errors'
import { isoAt, newId, type Clock } from '../../ids'
import { enqueueJob, type JobQueue } from '../../jobs/queue'
import { recordAudit } from '../audit/service'
import { failedText, thresholdText } from '../channels/guard-text'
import { pausedKeptText, publishedText } from '../channels/words'
import { memberRole, requireVisibleMiniApp, type Caller } from '../miniapps/service'
import { checkWebhookTarget, parseWebhookUrl, pinnedTarget, systemResolve, type Resolve } from './address'

export const webhookEvents = ['version.uploaded', 'release.published', 'release.rolled_back', 'rollout.changed', 'rollout.paused'] as const
export type WebhookEvent = (typeof webhookEvents)[number]
/** what `POST …/webhooks/{id}/test` sends, whatever events the webhook takes */
export const testEvent = 'webhook.test'
export type WebhookFormat = 'json' | 'slack'

export const webhookJobKind = 'webhook-delivery'
/** the waits after the 1st … 5th failed attempt (decisions §16); the 6th failure marks the delivery failed */
export const deliveryRetryDelaysMs = [10_000, 30_000, 120_000, 600_000, 3_600_000] as const
export const deliveryTimeoutMs = 10_000
/** deliveries kept per webhook (the API shows the latest 50) */
const keptDeliveries = 200

export interface WebhookRecord {
  id: string
  url: string
  events: WebhookEvent[]
  format: WebhookFormat
  createdAt: string
}

export interface DeliveryRecord {
  id: string
  event: string
  status: 'pending' | 'delivered' | 'failed'
  attempts: number
  responseStatus: number | null
  error: string | null
  createdAt: string
  updatedAt: string
}

type Writer = Pick<Db, 'select' | 'insert' | 'update' | 'delete'>

/** `sha256=<hex HMAC-SHA256 of the raw body with the secret>`: the X-Miniship-Signature header (decisions §16). */
export function signatureOf(secret: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(body, 'utf8').digest('hex')}`
}

/** Webhooks are managed by the miniapp's owners and administrators; other members get 403, the rest 404. */
function requireOwner(db: Db, user: Caller, miniAppId: string) {
  const row = requireVisibleMiniApp(db, user, miniAppId)
  if (user.role !== 'ADMIN' && memberRole(db, user.id, row.id) !== 'OWNER') {
    throw new AppError(403, 'OWNER_REQUIRED', 'Only owners of this miniapp and administrators may manage its webhooks')
  }
  return row
}

function toRecord(row: typeof webhooks.$inferSelect): WebhookRecord {
  return { id: row.id, url: row.url, events: JSON.parse(row.events) as WebhookEvent[], format: row.format, createdAt: row.createdAt }
}

function requireWebhook(db: Db, miniAppId: string, webhookId: string) {
  const row = db.select().from(webhooks).where(and(eq(webhooks.id, webhookId), eq(webhooks.miniAppId, miniAppId))).get()
  if (!row) throw new AppError(404, 'WEBHOOK_NOT_FOUND', `Webhook ${webhookId} not found in this miniapp`)
  return row
}

export interface WebhookDeps {
  db: Db
  clock: Clock
  allowPrivate: boolean
  resolve?: Resolve
}

export interface CreateWebhookInput {
  url: string
  events?: string[]
  format?: WebhookFormat
}

/** Creates a webhook; the answer carries its secret, which is never shown again. */
export async function createWebhook(deps: WebhookDeps, user: Caller, miniAppId: string, input: CreateWebhookInput): Promise<WebhookRecord & { secret: string }> {
  const { db, clock } = deps
  const app = requireOwner(db, user, miniAppId)
  const url = parseWebhookUrl(input.url)
  try {
    await checkWebhookTarget(url, deps.allowPrivate, deps.resolve ?? systemResolve)
  } catch (error) {
    // a name that does not resolve now may later: each delivery checks it again
    if (!(error as { unresolved?: boolean }).unresolved) throw error
  }
  const events = [...new Set(input.events ?? webhookEvents)]
  const unknown = events.filter((event) => !(webhookEvents as readonly string[]).includes(event))
  if (unknown.length > 0 || events.length === 0) {
    throw new AppError(400, 'VALIDATION_ERROR', `Invalid body: events must list one or more of ${webhookEvents.join(', ')}`, [{ field: 'events', message: unknown.length > 0 ? `unknown: ${unknown.join(', ')}` : 'must not be empty' }])
  }
  const format = input.format ?? 'json'
  const secret = `whsec_${randomBytes(24).toString('base64url')}`
  const id = newId()
  const now = isoAt(clock)
  db.transaction((tx) => {
    tx.insert(webhooks).values({ id, miniAppId: app.id, url: url.href, events: JSON.stringify(events), format, secret, createdBy: user.id, createdAt: now }).run()
    recordAudit(tx, clock, {
      actor: user,
      action: 'webhook.create',
      targetType: 'miniapp',
      targetId: app.id,
      summary: `${user.email} added a webhook to ${app.appId}: ${url.origin} (${events.join(', ')})`,
      // the origin only: a Slack or Discord webhook's path is its credential, and the audit log outlives the webhook
      metadata: { appId: app.appId, webhookId: id, origin: url.origin, events, format },
    })
  })
  return { id, url: url.href, events: events as WebhookEvent[], format, createdAt: now, secret }
}

export function listWebhooks(db: Db, user: Caller, miniAppId: string): WebhookRecord[] {
  const app = requireOwner(db, user, miniAppId)
  return db.select().from(webhooks).where(eq(webhooks.miniAppId, app.id)).orderBy(webhooks.createdAt).all().map(toRecord)
}

/**
 * Deletes a webhook, its deliveries and their jobs: waiting ones (which would find nothing and end,
 * up to an hour later) and given-up ones (kept 30 days), so health, metrics and doctor no longer
 * report the work of a webhook that is gone. One in flight finishes, and finds its rows gone.
 */
export function deleteWebhook(deps: Pick<WebhookDeps, 'db' | 'clock'>, user: Caller, miniAppId: string, webhookId: string): { success: true; id: string } {
  const { db, clock } = deps
  const app = requireOwner(db, user, miniAppId)
  const row = requireWebhook(db, app.id, webhookId)
  db.transaction((tx) => {
    tx.delete(jobRows)
      .where(and(eq(jobRows.kind, webhookJobKind), inArray(sql`json_extract(${jobRows.payload}, '$.deliveryId')`, tx.select({ id: webhookDeliveries.id }).from(webhookDeliveries).where(eq(webhookDeliveries.webhookId, row.id)))))
      .run()
    tx.delete(webhooks).where(eq(webhooks.id, row.id)).run()
    recordAudit(tx, clock, {
      actor: user,
      action: 'webhook.delete',
      targetType: 'miniapp',
      targetId: app.id,
      summary: `${user.email} removed the webhook ${new URL(row.url).origin} from ${app.appId}`,
      metadata: { appId: app.appId, webhookId: row.id, origin: new URL(row.url).origin },
    })
  })
  return { success: true, id: row.id }
}

/** Queues a `webhook.test` delivery to this webhook alone; the answer is the delivery (pending). */
/** Test deliveries a webhook takes per minute: each is retried up to six times, so an owner cannot make the server post without end. */
export const webhookTestsPerMinute = 5

export function testWebhook(deps: Pick<WebhookDeps, 'db' | 'clock'>, user: Caller, miniAppId: string, webhookId: string, limit: (webhookId: string) => void = () => {}): DeliveryRecord {
  const { db, clock } = deps
  const app = requireOwner(db, user, miniAppId)
  const row = requireWebhook(db, app.id, webhookId)
  // counted once the caller may test it: 429 RATE_LIMITED past the budget
  limit(row.id)
  return db.transaction((tx) => {
    const delivery = queueDelivery(tx, clock, row, { id: app.id, appId: app.appId, name: app.name }, testEvent, { message: 'A test delivery from miniship', by: actorOf(user) })
    recordAudit(tx, clock, {
      actor: user,
      action: 'webhook.test',
      targetType: 'miniapp',
      targetId: app.id,
      summary: `${user.email} sent a test delivery to the webhook ${new URL(row.url).origin} of ${app.appId}`,
      metadata: { appId: app.appId, webhookId: row.id, deliveryId: delivery.id },
    })
    return delivery
  })
}

export function listDeliveries(db: Db, user: Caller, miniAppId: string, webhookId: string): DeliveryRecord[] {
  const app = requireOwner(db, user, miniAppId)
  const row = requireWebhook(db, app.id, webhookId)
  return db
    .select()
    .from(webhookDeliveries)
    .where(eq(webhookDeliveries.webhookId, row.id))
    .orderBy(desc(webhookDeliveries.createdAt), desc(webhookDeliveries.id))
    .limit(50)
    .all()
    .map(toDeliveryRecord)
}

function toDeliveryRecord(row: typeof webhookDeliveries.$inferSelect): DeliveryRecord {
  return { id: row.id, event: row.event, status: row.status, attempts: row.attempts, responseStatus: row.responseStatus, error: row.lastError, createdAt: row.createdAt, updatedAt: row.updatedAt }
}

// ---- events ---------------------------------------------------------------------------------

/** Who caused an event, as deliveries name them: a person, an API key (with its owner), or the server itself (`release-guard`). */
export type EventActor = { type: 'user'; id: string; email: string } | { type: 'api-key'; id: string; name: string; ownerEmail: string } | { type: 'system'; name: string }

export function actorOf(user: Caller & { apiKey?: { miniAppIds: readonly string[] | null; id?: string; name?: string } }): EventActor {
  return user.apiKey ? { type: 'api-key', id: user.apiKey.id ?? '', name: user.apiKey.name ?? '', ownerEmail: user.email } : { type: 'user', id: user.id, email: user.email }
}

/**
 * A rollout change (channels/service.ts's RolloutChange) as its webhook: `rollout.paused` for a pause
 * (by a person, a key or the release guard), `rollout.changed` for every other percent, pause or resume move.
 */
export function emitRolloutChange(
  db: Writer,
  clock: Clock,
  change: { action: string; miniAppId: string; channel: string; versionId: string; version: string; previousPercent: number; rolloutPercent: number; previousState: string; state: string; reason: string | null; fallback?: { id: string; version: string } | null; pausedReleases?: { id: string; version: string }[] },
  by: EventActor,
  extra: Record<string, unknown> = {},
): number {
  const event: WebhookEvent = change.action === 'pause' ? 'rollout.paused' : 'rollout.changed'
  return emitWebhookEvent(db, clock, change.miniAppId, event, {
    channel: change.channel,
    version: { id: change.versionId, version: change.version },
    rolloutPercent: change.rolloutPercent,
    previousPercent: change.previousPercent,
    state: change.state,
    previousState: change.previousState,
    reason: change.reason,
    ...(change.fallback !== undefined ? { fallback: change.fallback } : {}),
    ...(change.pausedReleases !== undefined ? { pausedReleases: change.pausedReleases } : {}),
    by,
    ...extra,
  })
}

/** The actor of what the server itself does: the release guard pausing a rollout (decisions §15). */
export const releaseGuardActor: EventActor = { type: 'system', name: 'release-guard' }

/**
 * The data of `rollout.paused`, for the pause route and the release guard alike:
 * `emitWebhookEvent(db, clock, miniAppId, 'rollout.paused', { channel, version: { id, version }, by, … } satisfies RolloutPausedData)`.
 * The guard adds its figures (F, T, the rate and its threshold); a person's pause has none.
 */
export interface RolloutPausedData {
  channel: string
  version: { id: string; version: string }
  rolloutPercent: number
  by: EventActor
  /** F: distinct devices that reported failed or rolled_back for the release */
  failedDevices?: number
  /** T: distinct devices that reported any event for it */
  devices?: number
  /** F / T */
  failureRate?: number
  /** the guard's threshold */
  maxFailureRate?: number
  [key: string]: unknown
}


interface MiniAppSummary {
  id: string
  appId: string
  name: string
}

/** A rollout change's warnings (FALLBACK_UNSIGNED: the devices sent back get a release host apps refuse), as the CLI prints them. */
function warningsText(data: Record<string, unknown>): string {
  const warnings = Array.isArray(data.warnings) ? (data.warnings as { code?: unknown; message?: unknown }[]) : []
  return warnings
    .filter((warning) => typeof warning?.message === 'string')
    .map((warning) => `; warning: ${String(warning.message)} (${String(warning.code)})`)
    .join('')
}

function actorText(by: unknown): string {
  const actor = by as Partial<{ type: string; email: string; name: string; ownerEmail: string }> | undefined
  if (!actor) return ''
  if (actor.type === 'user') return ` by ${actor.email}`
  if (actor.type === 'api-key') return ` by the API key "${actor.name}" of ${actor.ownerEmail}`
  if (actor.type === 'system') return ` by ${actor.name}`
  return ''
}

/**
 * Text as Slack (and Discord's Slack-compatible hook) reads it, on one line: a run of whitespace
 * (a reason typed with line breaks) is one space, and `&`, `<`, `>` are escaped as Slack asks, so
 * a name or reason holding `<!channel>` or `<https://x|text>` neither pings the channel nor links.
 */
function slackEscape(text: string): string {
  return text.replace(/[\s\u0085]+/g, ' ').trim().replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
}

/**
 * The one line a chat shows for an event (`format: slack`). Every part of it is escaped at once:
 * the app's name, the version, the channel, a host range, a key's name and a person's reason are
 * all typed by someone, and none of the fixed words holds `&`, `<` or `>`.
 */
export function slackText(miniApp: MiniAppSummary, event: string, data: Record<string, unknown>): string {
  return slackEscape(slackLine(miniApp, event, data))
}

function slackLine(miniApp: MiniAppSummary, event: string, data: Record<string, unknown>): string {
  const version = (data.version as { version?: string } | undefined)?.version ?? '?'
  const channel = typeof data.channel === 'string' ? data.channel : 'stable'
  const by = actorText(data.by)
  const app = `${miniApp.name} (${miniApp.appId})`
  switch (event) {
    case 'version.uploaded': {
      const build = (data.version as { buildNumber?: number } | undefined)?.buildNumber
      return `${app}: version ${version}${build !== undefined ? ` (build ${build})` : ''} was uploaded${by}`
    }
    case 'release.published': {
      // the words of the CLI's publish line and the console's notice: "published 1.4.0 to stable (20 %, mandatory)"
      const rolloutPercent = typeof data.rolloutPercent === 'number' ? data.rolloutPercent : 100
      return `${app}: published ${publishedText(version, channel, { rolloutPercent, mandatory: data.mandatory === true, hostVersionRange: typeof data.hostVersionRange === 'string' ? data.hostVersionRange : null })}${by}`
    }
    case 'release.rolled_back':
      return `${app}: ${channel} was rolled back to ${version}${by}`
    case 'rollout.changed': {
      const percent = data.rolloutPercent
      const resumed = data.previousState === 'paused' && data.state !== 'paused'
      // a revert names what devices get now (data.fallback; a delivery queued before it was sent had none)
      const fallback = data.fallback as { version?: string } | null | undefined
      // devices on a paused release between keep it (data.pausedReleases), as status and the console say
      const paused = Array.isArray(data.pausedReleases) ? (data.pausedReleases as { version?: string }[]).map((release) => ({ version: release.version ?? '?' })) : []
      const kept = paused.length ? pausedKeptText(paused) : null
      const reverted =
        fallback === undefined
          ? 'reverted (every device gets the previous release)'
          : fallback === null
            ? kept
              ? `reverted (no device gets it; those on it keep it; ${kept})`
              : 'reverted (no device gets it; there is no earlier release, so those on it keep it)'
            : kept
              ? `reverted (${kept}; every other device gets ${fallback.version ?? '?'})`
              : `reverted (every device gets ${fallback.version ?? '?'})`
      const what = percent === 0 ? reverted : resumed ? `resumed at ${String(percent)} %` : percent === 100 ? 'completed (100 %)' : `set to ${String(percent)} %`
      return `${app}: the rollout of ${version} on ${channel} was ${what}${by}${warningsText(data)}`
    }
    case 'rollout.paused': {
      const { failedDevices, devices, failureRate, maxFailureRate } = data as Partial<RolloutPausedData>
      const figures =
        typeof failedDevices === 'number' && typeof devices === 'number' && typeof failureRate === 'number'
          ? // the console's badge and the CLI's words (guard-text.ts), so the chat quotes the same figure
            `: ${failedText({ failedDevices, totalDevices: devices, failureRate }, typeof maxFailureRate === 'number' ? maxFailureRate : undefined)}${typeof maxFailureRate === 'number' ? ` — threshold ${thresholdText(maxFailureRate)}` : ''}`
          : ''
      // a person's reason, as the audit entry and `status` keep it: the chat said only who paused, not why
      const reason = figures === '' && typeof data.reason === 'string' && data.reason.trim() !== '' ? `: ${data.reason.trim()}` : ''
      return `${app}: the rollout of ${version} on ${channel} was paused${by}${figures}${reason}${warningsText(data)}`
    }
    case testEvent:
      return `${app}: a test delivery from miniship${by}`
    default:
      return `${app}: ${event}${by}`
  }
}

/** Writes the delivery row (with the exact body every attempt sends) and its job, in the caller's transaction. */
function queueDelivery(tx: Writer, clock: Clock, webhook: typeof webhooks.$inferSelect, miniApp: MiniAppSummary, event: string, data: Record<string, unknown>): DeliveryRecord {
  const id = newId()
  const now = isoAt(clock)
  const body =
    webhook.format === 'slack'
      ? JSON.stringify({ text: slackText(miniApp, event, data) })
      : JSON.stringify({ id, event, occurredAt: now, miniApp: { id: miniApp.id, appId: miniApp.appId, name: miniApp.name }, data })
  tx.insert(webhookDeliveries).values({ id, webhookId: webhook.id, event, body, status: 'pending', attempts: 0, responseStatus: null, lastError: null, createdAt: now, updatedAt: now }).run()
  enqueueJob(tx, clock, webhookJobKind, { deliveryId: id })
  // the oldest finished deliveries beyond what anyone reads go
  const stale = tx
    .select({ id: webhookDeliveries.id })
    .from(webhookDeliveries)
    .where(eq(webhookDeliveries.webhookId, webhook.id))
    .orderBy(desc(webhookDeliveries.createdAt), desc(webhookDeliveries.id))
    .limit(100)
    .offset(keptDeliveries)
    .all()
  // failed ones too (a receiver down for good would otherwise keep every one); a pending one still runs
  for (const row of stale) tx.delete(webhookDeliveries).where(and(eq(webhookDeliveries.id, row.id), ne(webhookDeliveries.status, 'pending'))).run()
  return { id, event, status: 'pending', attempts: 0, responseStatus: null, error: null, createdAt: now, updatedAt: now }
}

/**
 * Tells every webhook of the miniapp that takes `event`: one delivery each, queued. Call it inside
 * the transaction of the change (pass the transaction as `db`) or right after its commit; it never
 * waits on a receiver. `data` is the event's own part of the body (decisions §16), e.g.
 * `{ channel, version: { id, version }, by: actorOf(user) }`. Answers how many deliveries were queued.
 */
export function emitWebhookEvent(db: Writer, clock: Clock, miniAppId: string, event: WebhookEvent, data: Record<string, unknown>): number {
  const hooks = db.select().from(webhooks).where(eq(webhooks.miniAppId, miniAppId)).all()
  const listening = hooks.filter((hook) => (JSON.parse(hook.events) as string[]).includes(event))
  if (listening.length === 0) return 0
  const app = db.select({ id: miniApps.id, appId: miniApps.appId, name: miniApps.name }).from(miniApps).where(eq(miniApps.id, miniAppId)).get()
  if (!app) return 0
  for (const hook of listening) queueDelivery(db, clock, hook, app, event, data)
  return listening.length
}

// ---- delivery (a job) -------------------------------------------------------------------------

interface DeliveryJob {
  deliveryId: string
}

/**
 * An error message with every URL in it cut to its origin. Some of fetch's errors quote the URL
 * (`InvalidContentLength fetching "https://…/services/T0/B0/XYZ"`), and a webhook's path and query
 * are often its credential (Slack's, Discord's): the message goes to the server log and the
 * deliveries list, where the URL must not.
 */
export function withoutUrlPaths(message: string): string {
  return message.replace(/\b(https?:\/\/[^\s"'/?#]+)[^\s"']*/gi, '$1')
}

/** Registers the delivery handler: POST the stored body, signed, to an address checked again after DNS, no redirects followed. */
export function registerWebhookDelivery(jobs: JobQueue, deps: WebhookDeps & { log: (line: string) => void }): void {
  const { db, clock } = deps
  const record = (deliveryId: string, fields: Partial<typeof webhookDeliveries.$inferInsert>) =>
    db.update(webhookDeliveries).set({ ...fields, updatedAt: isoAt(clock) }).where(eq(webhookDeliveries.id, deliveryId)).run()

  async function deliver({ deliveryId }: DeliveryJob, attempt: number, final: boolean, signal: AbortSignal): Promise<void> {
    const row = db
      .select({ delivery: webhookDeliveries, webhook: webhooks })
      .from(webhookDeliveries)
      .innerJoin(webhooks, eq(webhooks.id, webhookDeliveries.webhookId))
      .where(eq(webhookDeliveries.id, deliveryId))
      .get()
    // the webhook was deleted meanwhile: nothing to send
    if (!row) return
    const { delivery, webhook } = row
    // the receiver took it already (the process stopped, or the database was locked, before its job was marked done): not again
    if (delivery.status === 'delivered') return
    record(deliveryId, { attempts: attempt })
    let responseStatus: number | null = null
    try {
      const url = parseWebhookUrl(webhook.url)
      let addresses: string[]
      try {
        addresses = await checkWebhookTarget(url, deps.allowPrivate, deps.resolve ?? systemResolve)
      } catch (error) {
        throw new Error(`refused: ${(error as Error).message}`)
      }
      const target = pinnedTarget(url, addresses)
      const response = await fetch(target.url, {
        method: 'POST',
        body: delivery.body,
        ...(target.serverName !== null ? { tls: { serverName: target.serverName } } : {}),
        headers: {
          host: target.host,
          'content-type': 'application/json',
          'user-agent': 'miniship-webhooks',
          'x-miniship-event': delivery.event,
          'x-miniship-delivery': delivery.id,
          'x-miniship-signature': signatureOf(webhook.secret, delivery.body),
        },
        // a redirect could lead anywhere, past the address rule: it counts as a failure
        redirect: 'manual',
        signal: AbortSignal.any([signal, AbortSignal.timeout(deliveryTimeoutMs)]),
      })
      responseStatus = response.status
      await response.body?.cancel().catch(() => {})
      if (response.status < 200 || response.status > 299) throw new Error(`the receiver answered ${response.status}`)
    } catch (error) {
      const message = (error as Error).name === 'TimeoutError' ? `no answer within ${deliveryTimeoutMs / 1000} s` : withoutUrlPaths((error as Error).message)
      record(deliveryId, { status: final ? 'failed' : 'pending', responseStatus, lastError: message.slice(0, 500) })
      throw new Error(message)
    }
    await recordDelivered(deliveryId, responseStatus, signal)
  }

  /**
   * The receiver took the delivery: that must be written down, or the retry sends it again. A write
   * lock held past the busy timeout (a sqlite3 shell, a long write) is waited out within the attempt;
   * only a lock longer than that leaves the delivery to be sent once more (at least once, as promised).
   */
  async function recordDelivered(deliveryId: string, responseStatus: number, signal: AbortSignal): Promise<void> {
    for (;;) {
      try {
        record(deliveryId, { status: 'delivered', responseStatus, lastError: null })
        return
      } catch (error) {
        if (signal.aborted) throw error
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
    }
  }

  jobs.register<DeliveryJob>(webhookJobKind, {
    run: (job, { attempt, final, signal }) => deliver(job, attempt, final, signal),
    // the receiver's 10 s plus DNS and the database
    timeoutMs: deliveryTimeoutMs + 5_000,
    retryDelaysMs: deliveryRetryDelaysMs,
    maxAttempts: deliveryRetryDelaysMs.length + 1,
    onGiveUp: ({ deliveryId }, lastError) => record(deliveryId, { status: 'failed', lastError: lastError.slice(0, 500) }),
  })
}
