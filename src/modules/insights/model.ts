// TypeBox schemas of the insight endpoints: device events in, the per-miniapp report out.
import { t } from 'elysia'

/** Channel names as decisions §10 has them. */
const channelName = t.String({ pattern: '^[a-z][a-z0-9-]{0,31}$', error: 'must be a channel name such as stable or beta' })

export const eventsPerRequest = 100
/** Device events are small; a body past this is refused with 413 before it is parsed. */
export const eventsBodyLimitBytes = 64 * 1024

/** One event as documented; the service checks each on its own (events.ts), so one bad event does not refuse its batch. */
export const deviceEvent = t.Object({
  appId: t.String({ minLength: 1, maxLength: 128 }),
  versionId: t.Optional(t.String({ minLength: 1, maxLength: 64, description: 'the version id, or name `version` instead' })),
  version: t.Optional(t.String({ minLength: 1, maxLength: 64, description: 'the version string the device runs, such as 1.2.0' })),
  platform: t.Union([t.Literal('ios'), t.Literal('android')], { error: 'must be ios or android' }),
  event: t.Union([t.Literal('installed'), t.Literal('launched'), t.Literal('failed'), t.Literal('rolled_back')], { error: 'must be one of installed, launched, failed, rolled_back' }),
  channel: t.Optional(channelName),
  // checked by the service, which answers 400 INVALID_DEVICE_ID as every endpoint taking a deviceId does (decisions §18)
  deviceId: t.Optional(t.String({ description: '1–200 characters of A-Z a-z 0-9 . _ : - (not "." or ".."); stored only as a keyed hash' })),
  hostVersion: t.Optional(t.String({ maxLength: 64 })),
  message: t.Optional(t.String({ maxLength: 8000, description: `kept for failures, cut to 500 characters` })),
  at: t.Optional(t.String({ format: 'date-time', error: 'must be an ISO 8601 date-time such as 2026-11-22T10:00:00Z' })),
})

export const eventsBody = t.Object({
  events: t.Array(t.Unknown({ description: 'an event as `deviceEvent` describes it' }), { minItems: 1, maxItems: eventsPerRequest, error: `must be a list of 1 to ${eventsPerRequest} events` }),
})

export const eventsAnswer = t.Object({
  accepted: t.Integer(),
  rejected: t.Integer(),
  errors: t.Array(t.Object({ index: t.Integer(), code: t.String(), message: t.String() }), { description: 'one per refused event: VALIDATION_ERROR, INVALID_DEVICE_ID, MINI_APP_NOT_FOUND or CHANNEL_NOT_FOUND' }),
  counted: t.Boolean({
    description: 'whether the accepted events were counted in insights and metrics: false while the server runs with --insights off, when they reach only the release guard',
  }),
})

export const insightsParams = t.Object({ miniAppId: t.String() })
export const insightsQuery = t.Object({
  // digits only, read by the route and range-checked by the service: a Numeric took 0x10 as 16 and
  // reported Infinity without the field's name
  days: t.Optional(t.String({ pattern: '^[0-9]{1,6}$', error: 'must be a whole number of days from 1 to 90', description: 'days up to today (UTC), 1 to 90 (default 30)' })),
  channel: t.Optional(channelName),
})

const perPlatform = t.Object({ ios: t.Integer(), android: t.Integer() })
export const insightsAnswer = t.Object({
  from: t.String(),
  to: t.String(),
  channel: t.Union([t.String(), t.Null()]),
  days: t.Array(
    t.Object({
      day: t.String(),
      devices: t.Integer({ description: 'distinct devices seen that day: the denominator of that day\'s shares' }),
      versions: t.Array(
        t.Object({
          versionId: t.Union([t.String(), t.Null()], { description: 'null for the `other` row: versions unknown or withdrawn from the channel' }),
          version: t.String(),
          downloads: perPlatform,
          installInfoRequests: t.Integer({ description: 'install-info answers' }),
          installs: t.Integer({ description: 'former name of installInfoRequests, kept one release' }),
          failures: t.Integer(),
          activeDevices: t.Integer(),
          updateChecks: t.Integer(),
          installed: t.Integer(),
          launched: t.Integer(),
          rolledBack: t.Integer(),
        }),
      ),
    }),
  ),
  totals: t.Object({
    downloads: perPlatform,
    installInfoRequests: t.Integer({ description: 'install-info answers' }),
    installs: t.Integer({ description: 'former name of installInfoRequests, kept one release' }),
    installed: t.Integer({ description: "devices' installed events" }),
    launched: t.Integer(),
    failures: t.Integer(),
    rolledBack: t.Integer(),
    activeDevices: t.Integer(),
    updateChecks: t.Integer(),
  }),
  adoption: t.Object({
    versionId: t.Union([t.String(), t.Null()], { description: 'the current release: the channel\'s newest (stable\'s without `channel`), or, when that one is reverted, the release its devices fall back to' }),
    share: t.Number({ description: 'the current release\'s share of `devices`' }),
    day: t.Union([t.String(), t.Null()]),
    devices: t.Integer({ description: 'the denominator: distinct devices seen on `day`' }),
  }),
  recentFailures: t.Array(
    t.Object({
      versionId: t.Union([t.String(), t.Null()]),
      version: t.String(),
      platform: t.String(),
      channel: t.Union([t.String(), t.Null()], { description: 'the channel the device reported it on; null for failures stored by a miniship before 0.3.0, which a `?channel=` report leaves out' }),
      message: t.String(),
      at: t.String(),
    }),
    { description: 'the last 20 failures, newest first; with `?channel=`, that channel\'s' },
  ),
})
