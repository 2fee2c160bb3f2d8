// The drizzle tables; `npm run db:generate` turns changes here into SQL under migrations/.
import { sql } from 'drizzle-orm'
import { sqliteTable, text, integer, real, blob, primaryKey, index, uniqueIndex } from 'drizzle-orm/sqlite-core'

export const users = sqliteTable(
  'users',
  {
    id: text('id').primaryKey(),
    email: text('email').notNull().unique(),
    displayName: text('display_name').notNull(),
    passwordHash: text('password_hash').notNull(),
    role: text('role', { enum: ['ADMIN', 'USER'] }).notNull(),
    status: text('status', { enum: ['ACTIVE', 'DISABLED'] }).notNull(),
    /** bumped on disable, password reset and role change: tokens carrying an older `tv` stop working */
    tokenVersion: integer('token_version').notNull().default(1),
    /**
     * bumped whenever this user's authority shrinks (disable, role change, password reset, removal
     * from a miniapp): draft links handed to them (or issued through their API keys) carry the value
     * they were issued under and stop working once it moves (decisions §18)
     */
    grantGeneration: integer('grant_generation').notNull().default(0),
    createdAt: text('created_at').notNull(),
    updatedAt: text('updated_at').notNull(),
  },
  // the administrators' user list pages in this order: without it every page read and sorted all users (issue 30)
  (table) => [index('users_created_at').on(table.createdAt, table.id)],
)

export const auditLogs = sqliteTable(
  'audit_logs',
  {
    id: text('id').primaryKey(),
    actorId: text('actor_id'),
    actorEmail: text('actor_email'),
    action: text('action').notNull(),
    targetType: text('target_type').notNull(),
    targetId: text('target_id'),
    summary: text('summary').notNull(),
    /** JSON text */
    metadata: text('metadata').notNull().default('{}'),
    createdAt: text('created_at').notNull(),
  },
  // newest first, ties by id: the log pages in this order (one change can write several entries in a
  // millisecond), and with id in the index a page after a cursor starts in it instead of sorting every
  // older entry (200 ms at 200k entries; issue 30)
  (table) => [index('audit_logs_created_at_id').on(table.createdAt, table.id)],
)

export const cliSessions = sqliteTable('cli_sessions', {
  code: text('code').primaryKey(),
  /** pending → approved → consumed (the poll that handed out the token), or pending → denied */
  status: text('status', { enum: ['pending', 'approved', 'consumed', 'denied'] }).notNull(),
  userId: text('user_id').references(() => users.id),
  expiresAt: text('expires_at').notNull(),
  createdAt: text('created_at').notNull(),
  approvedAt: text('approved_at'),
  /** who started the sign-in, shown on the approval page so a person can spot a login they did not start */
  requesterAddress: text('requester_address'),
  requesterUserAgent: text('requester_user_agent'),
})

export const miniApps = sqliteTable('mini_apps', {
  id: text('id').primaryKey(),
  appId: text('app_id').notNull().unique(),
  name: text('name').notNull(),
  description: text('description'),
  iconUrl: text('icon_url'),
  currentExperienceVersionId: text('current_experience_version_id'),
  currentReviewVersionId: text('current_review_version_id'),
  /** the `stable` channel's newest release (the contract's "current release version") */
  currentReleaseVersionId: text('current_release_version_id'),
  /** the experience install answers without a token (decisions §9) */
  experiencePublic: integer('experience_public', { mode: 'boolean' }).notNull().default(false),
  /** uploads and publishes of unsigned versions are refused (decisions §14) */
  requireSignature: integer('require_signature', { mode: 'boolean' }).notNull().default(false),
  /** the buildNumber the next upload gets; never reused */
  nextBuildNumber: integer('next_build_number').notNull().default(1),
  createdBy: text('created_by').references(() => users.id),
  createdAt: text('created_at').notNull(),
  updatedAt: text('updated_at').notNull(),
})

export const miniAppMembers = sqliteTable(
  'mini_app_members',
  {
    miniAppId: text('mini_app_id')
      .notNull()
      .references(() => miniApps.id, { onDelete: 'cascade' }),
    userId: text('user_id')
      .notNull()
      .references(() => users.id),
    role: text('role', { enum: ['OWNER', 'DEVELOPER'] }).notNull(),
    createdAt: text('created_at').notNull(),
  },
  (table) => [primaryKey({ columns: [table.miniAppId, table.userId] }), index('mini_app_members_user').on(table.userId)],
)

export const versions = sqliteTable(
  'versions',
  {
    id: text('id').primaryKey(),
    miniAppId: text('mini_app_id')
      .notNull()
      .references(() => miniApps.id, { onDelete: 'cascade' }),
    version: text('version').notNull(),
    buildNumber: integer('build_number').notNull(),
    releaseType: text('release_type', { enum: ['RELEASE', 'BETA', 'ALPHA'] }).notNull(),
    status: text('status', { enum: ['DRAFT', 'IN_REVIEW', 'PUBLISHED'] }).notNull(),
    changelog: text('changelog'),
    /** the channel its upload named (decisions §10); publish defaults to it */
    channel: text('channel').notNull().default('stable'),
    createdBy: text('created_by').references(() => users.id),
    createdAt: text('created_at').notNull(),
    updatedAt: text('updated_at').notNull(),
    publishedAt: text('published_at'),
  },
  (table) => [
    uniqueIndex('versions_mini_app_version').on(table.miniAppId, table.version),
    index('versions_mini_app_build').on(table.miniAppId, table.buildNumber),
    // the workspace filtered by status (the console's versions tab): without it, ?status=PUBLISHED walks
    // every version of the miniapp to find a page (52 ms at 100k drafts against 5 ms; issue 30)
    index('versions_mini_app_status_build').on(table.miniAppId, table.status, table.buildNumber),
  ],
)

/** The kinds of file a version has (decisions §2's `files` keys). */
export const versionFileKinds = ['bundleIos', 'bundleAndroid', 'manifest', 'assetsIos', 'assetsAndroid'] as const

/**
 * A version's files, one row each: what the blob store holds for it. Indexed by sha256, so "does
 * any version still use this blob" is one index lookup however many versions there are.
 */
export const versionFiles = sqliteTable(
  'version_files',
  {
    versionId: text('version_id')
      .notNull()
      .references(() => versions.id, { onDelete: 'cascade' }),
    kind: text('kind', { enum: versionFileKinds }).notNull(),
    sha256: text('sha256').notNull(),
    size: integer('size').notNull(),
  },
  (table) => [primaryKey({ columns: [table.versionId, table.kind] }), index('version_files_sha256').on(table.sha256)],
)

/**
 * The Ed25519 public keys a miniapp trusts (decisions §14). A revoked key is kept (`revokedAt`), so
 * the versions it signed still name it; `keyId` is derived from the key, so one key is one row.
 */
export const signingKeys = sqliteTable(
  'signing_keys',
  {
    miniAppId: text('mini_app_id')
      .notNull()
      .references(() => miniApps.id, { onDelete: 'cascade' }),
    keyId: text('key_id').notNull(),
    name: text('name').notNull(),
    /** base64 of the raw 32 bytes */
    publicKey: text('public_key').notNull(),
    createdBy: text('created_by').references(() => users.id),
    createdAt: text('created_at').notNull(),
    revokedAt: text('revoked_at'),
  },
  (table) => [primaryKey({ columns: [table.miniAppId, table.keyId] })],
)

/**
 * A version's signature (decisions §14): the statement exactly as signed and the signature over it,
 * stored once at signing so install info never builds or verifies anything per request. Replaced
 * by a re-upload (new files) or a later signature.
 */
export const versionSignatures = sqliteTable('version_signatures', {
  versionId: text('version_id')
    .primaryKey()
    .references(() => versions.id, { onDelete: 'cascade' }),
  keyId: text('key_id').notNull(),
  statement: text('statement').notNull(),
  /** base64 of the 64-byte signature */
  value: text('value').notNull(),
  signedBy: text('signed_by').references(() => users.id),
  signedAt: text('signed_at').notNull(),
})

export const releaseHistory = sqliteTable(
  'release_history',
  {
    id: text('id').primaryKey(),
    miniAppId: text('mini_app_id')
      .notNull()
      .references(() => miniApps.id, { onDelete: 'cascade' }),
    action: text('action', { enum: ['PUBLISH', 'ROLLBACK', 'ROLLOUT'] }).notNull(),
    channel: text('channel').notNull().default('stable'),
    versionId: text('version_id').notNull(),
    version: text('version').notNull(),
    previousVersionId: text('previous_version_id'),
    /** the release's rollout after this change (null on rows written before channels) */
    rolloutPercent: integer('rollout_percent'),
    notes: text('notes'),
    actorId: text('actor_id'),
    /** the API key's name when the change was made with one (actorId is then its owner); null for a person's own */
    actorKeyName: text('actor_key_name'),
    createdAt: text('created_at').notNull(),
  },
  (table) => [index('release_history_mini_app').on(table.miniAppId, table.createdAt)],
)

/** Channels other than `stable`, which always exists and has no row (decisions §10). */
export const channels = sqliteTable(
  'channels',
  {
    miniAppId: text('mini_app_id')
      .notNull()
      .references(() => miniApps.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    createdBy: text('created_by').references(() => users.id),
    createdAt: text('created_at').notNull(),
  },
  (table) => [primaryKey({ columns: [table.miniAppId, table.name] })],
)

/**
 * Every release a channel has had, in order (`seq` grows per miniapp). The channel's live releases
 * are the rows not withdrawn, newest first: the first is what it serves (to `rolloutPercent` of
 * devices), the next is its previous release. A rollback withdraws the rows above its target.
 */
export const channelReleases = sqliteTable(
  'channel_releases',
  {
    id: text('id').primaryKey(),
    miniAppId: text('mini_app_id')
      .notNull()
      .references(() => miniApps.id, { onDelete: 'cascade' }),
    channel: text('channel').notNull(),
    versionId: text('version_id')
      .notNull()
      .references(() => versions.id),
    seq: integer('seq').notNull(),
    rolloutPercent: integer('rollout_percent').notNull(),
    hostVersionRange: text('host_version_range'),
    mandatory: integer('mandatory', { mode: 'boolean' }).notNull().default(false),
    withdrawnAt: text('withdrawn_at'),
    createdBy: text('created_by').references(() => users.id),
    createdAt: text('created_at').notNull(),
    /** set while the rollout is paused (decisions §13): no new device gets the release; who paused it (a user's email, `API key "name" of email`, or `release-guard`) and why */
    pausedAt: text('paused_at'),
    pausedBy: text('paused_by'),
    pauseReason: text('pause_reason'),
  },
  (table) => [index('channel_releases_channel').on(table.miniAppId, table.channel, table.seq), index('channel_releases_version').on(table.versionId)],
)

/**
 * API keys for CI (issue 11): the key itself is never stored, only its sha256; `prefix` is what
 * people recognise it by. `knownAddresses` (JSON array, most recent last, bounded) is how the first
 * use from a new client address is noticed and audited.
 */
export const apiKeys = sqliteTable(
  'api_keys',
  {
    id: text('id').primaryKey(),
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    /** sha256 of the whole key, hex */
    keyHash: text('key_hash').notNull(),
    prefix: text('prefix').notNull(),
    /** JSON array of 'read' | 'upload' | 'release' */
    scopes: text('scopes').notNull(),
    /** JSON array of miniapp ids, or null for every miniapp its owner is a member of */
    miniAppIds: text('mini_app_ids'),
    knownAddresses: text('known_addresses').notNull().default('[]'),
    createdAt: text('created_at').notNull(),
    expiresAt: text('expires_at'),
    lastUsedAt: text('last_used_at'),
    revokedAt: text('revoked_at'),
  },
  (table) => [uniqueIndex('api_keys_key_hash').on(table.keyHash), index('api_keys_user').on(table.userId)],
)

/**
 * What phones did, per (version, UTC day, platform, channel): written by the insight counters'
 * flush as `count = count + excluded.count`. No foreign keys: a flush must not fail because a
 * version was deleted a second earlier; the daily prune removes rows of versions that are gone.
 * `platform` is 'unknown' for install info, which names none.
 */
export const insightCounts = sqliteTable(
  'insight_counts',
  {
    versionId: text('version_id').notNull(),
    day: text('day').notNull(),
    platform: text('platform', { enum: ['ios', 'android', 'unknown'] }).notNull(),
    channel: text('channel').notNull(),
    miniAppId: text('mini_app_id').notNull(),
    installInfos: integer('install_infos').notNull().default(0),
    updateChecks: integer('update_checks').notNull().default(0),
    downloads: integer('downloads').notNull().default(0),
    installed: integer('installed').notNull().default(0),
    launched: integer('launched').notNull().default(0),
    failed: integer('failed').notNull().default(0),
    rolledBack: integer('rolled_back').notNull().default(0),
  },
  (table) => [primaryKey({ columns: [table.versionId, table.day, table.platform, table.channel] }), index('insight_counts_app_day').on(table.miniAppId, table.day)],
)

/**
 * The distinct devices seen per version and UTC day, as one sketch (modules/insights/sketch.ts):
 * `hashes`, the devices' keyed hashes (an HMAC of the device id, never the id) concatenated, while
 * there are at most 2,048 (up to 45 KB); past that `registers`, a 16 KB HyperLogLog. Kept 90 days. A
 * flush rewrites one row per version and day instead of inserting a row per new device (schema 6
 * had insight_devices).
 */
export const insightDeviceSketches = sqliteTable(
  'insight_device_sketches',
  {
    versionId: text('version_id').notNull(),
    day: text('day').notNull(),
    hashes: text('hashes'),
    registers: blob('registers', { mode: 'buffer' }),
  },
  (table) => [primaryKey({ columns: [table.versionId, table.day] })],
)

/**
 * The same distinct devices per version, UTC day **and channel** (since schema 14): what a report for
 * one channel (`/insights?channel=`) counts, where insight_device_sketches holds the devices of all
 * channels together. Kept 90 days, like it.
 */
export const insightChannelDeviceSketches = sqliteTable(
  'insight_channel_device_sketches',
  {
    versionId: text('version_id').notNull(),
    day: text('day').notNull(),
    channel: text('channel').notNull(),
    hashes: text('hashes'),
    registers: blob('registers', { mode: 'buffer' }),
  },
  (table) => [primaryKey({ columns: [table.versionId, table.day, table.channel] })],
)

/** The last failure messages devices reported, a bounded number per version and channel. */
export const insightFailures = sqliteTable(
  'insight_failures',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    versionId: text('version_id').notNull(),
    miniAppId: text('mini_app_id').notNull(),
    platform: text('platform', { enum: ['ios', 'android'] }).notNull(),
    message: text('message').notNull(),
    at: text('at').notNull(),
    /** the channel the device reported it on; null for failures stored before schema 15, whose channel is not known */
    channel: text('channel'),
  },
  (table) => [index('insight_failures_version').on(table.versionId, table.id), index('insight_failures_app').on(table.miniAppId, table.id)],
)

/**
 * The durable queue (src/jobs/): work that runs after the request that caused it has answered (the
 * release mirror, webhook deliveries). `pending` rows run when `run_after` (ms since the epoch) has
 * come; a `running` row found at start belongs to a process that died and runs again. Done jobs are
 * deleted; `failed` ones (retries used up) stay for health and doctor. At most one pending job per
 * `dedupe_key` (one mirror write per channel, however many changes came meanwhile).
 */
export const jobs = sqliteTable(
  'jobs',
  {
    id: text('id').primaryKey(),
    kind: text('kind').notNull(),
    /** JSON text */
    payload: text('payload').notNull(),
    state: text('state', { enum: ['pending', 'running', 'failed'] }).notNull(),
    attempts: integer('attempts').notNull().default(0),
    runAfter: integer('run_after').notNull(),
    dedupeKey: text('dedupe_key'),
    lastError: text('last_error'),
    createdAt: text('created_at').notNull(),
    updatedAt: text('updated_at').notNull(),
  },
  (table) => [
    index('jobs_due').on(table.state, table.runAfter),
    uniqueIndex('jobs_pending_dedupe').on(table.dedupeKey).where(sql`state = 'pending'`),
  ],
)

/** Webhooks of a miniapp (decisions §16). The secret signs deliveries, so it is kept as it is; it is shown once. */
export const webhooks = sqliteTable(
  'webhooks',
  {
    id: text('id').primaryKey(),
    miniAppId: text('mini_app_id')
      .notNull()
      .references(() => miniApps.id, { onDelete: 'cascade' }),
    url: text('url').notNull(),
    /** JSON array of event names */
    events: text('events').notNull(),
    format: text('format', { enum: ['json', 'slack'] }).notNull(),
    secret: text('secret').notNull(),
    createdBy: text('created_by').references(() => users.id, { onDelete: 'set null' }),
    createdAt: text('created_at').notNull(),
  },
  (table) => [index('webhooks_mini_app').on(table.miniAppId)],
)

/** One event sent (or being sent) to one webhook: the exact body, so every retry signs the same bytes. */
export const webhookDeliveries = sqliteTable(
  'webhook_deliveries',
  {
    id: text('id').primaryKey(),
    webhookId: text('webhook_id')
      .notNull()
      .references(() => webhooks.id, { onDelete: 'cascade' }),
    event: text('event').notNull(),
    body: text('body').notNull(),
    status: text('status', { enum: ['pending', 'delivered', 'failed'] }).notNull(),
    attempts: integer('attempts').notNull().default(0),
    responseStatus: integer('response_status'),
    lastError: text('last_error'),
    createdAt: text('created_at').notNull(),
    updatedAt: text('updated_at').notNull(),
  },
  (table) => [index('webhook_deliveries_webhook').on(table.webhookId, table.createdAt)],
)

/**
 * The release guard of a channel (decisions §15): its settings, and what it last saw of the
 * channel's newest release (`releaseId`): F (`failedDevices`) and T (`totalDevices`) at `checkedAt`.
 * `trip*` are the numbers with which it paused the release `tripReleaseId`; `resumedFailedDevices` is F as it last
 * stood while the release was paused or reverted, so a person's resume is not undone for the same F.
 * A row exists only once someone set the guard; `stable` has no `channels` row, hence no foreign key to it.
 */
export const channelGuards = sqliteTable(
  'channel_guards',
  {
    miniAppId: text('mini_app_id')
      .notNull()
      .references(() => miniApps.id, { onDelete: 'cascade' }),
    channel: text('channel').notNull(),
    enabled: integer('enabled', { mode: 'boolean' }).notNull().default(false),
    maxFailureRate: real('max_failure_rate').notNull().default(0.05),
    minDevices: integer('min_devices').notNull().default(20),
    updatedAt: text('updated_at').notNull(),
    releaseId: text('release_id'),
    failedDevices: integer('failed_devices'),
    totalDevices: integer('total_devices'),
    checkedAt: text('checked_at'),
    resumedFailedDevices: integer('resumed_failed_devices'),
    tripReleaseId: text('trip_release_id'),
    tripFailedDevices: integer('trip_failed_devices'),
    tripTotalDevices: integer('trip_total_devices'),
    tripMaxFailureRate: real('trip_max_failure_rate'),
    trippedAt: text('tripped_at'),
  },
  (table) => [primaryKey({ columns: [table.miniAppId, table.channel] })],
)

/**
 * The release guard's devices of one watched release (a channel_releases id): `kind` 'all' (any
 * event) or 'failed' (`failed` or `rolled_back`), as a sketch like insight_device_sketches (exact up
 * to 2,048 hashes, HyperLogLog past). Only releases the guard watches have rows; the guard removes
 * the others. No foreign key: the guard's flush must not fail because a release row went a moment ago.
 */
export const guardDeviceSketches = sqliteTable(
  'guard_device_sketches',
  {
    releaseId: text('release_id').notNull(),
    kind: text('kind', { enum: ['all', 'failed'] }).notNull(),
    hashes: text('hashes'),
    registers: blob('registers', { mode: 'buffer' }),
  },
  (table) => [primaryKey({ columns: [table.releaseId, table.kind] })],
)

export type UserRow = typeof users.$inferSelect
export type MiniAppRow = typeof miniApps.$inferSelect
export type VersionRow = typeof versions.$inferSelect
export type ChannelReleaseRow = typeof channelReleases.$inferSelect
export type ApiKeyRow = typeof apiKeys.$inferSelect
export type SigningKeyRow = typeof signingKeys.$inferSelect
