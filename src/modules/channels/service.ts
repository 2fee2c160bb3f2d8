// Channel rules (decisions §10): which channels exist, their live releases, publish/rollback into one, rollout changes.
import { and, asc, desc, eq, gt, inArray, isNull, max, or } from 'drizzle-orm'
import { channelGuards, channelReleases, channels, miniApps, releaseHistory, signingKeys, versionSignatures, versions, type MiniAppRow } from '../../db/schema'
import type { Db } from '../../db/open'
import { AppError } from '../../http/errors'
import { cutText, isCleanText, notesMaxLength, textLength } from '../../http/text'
import { keyActorText, recordAudit } from '../audit/service'
import { newId, isoAt, type Clock } from '../../ids'
import { requireVisibleMiniApp, userSummaries, type Caller, type UserSummary } from '../miniapps/service'
import { isSemverRange } from './semver-range'
import { decideRelease } from './decide'
import { fallbackSignatureWarning, versionStandings, type FallbackAction, type ReleaseState, type ReleaseWarning, type SignatureView } from './words'
import { guardRows, toGuardRecord, type GuardRecord } from './guard-record'

export const defaultChannel = 'stable'
export const channelNamePattern = /^[a-z][a-z0-9-]{0,31}$/

type Tx = Parameters<Parameters<Db['transaction']>[0]>[0]
type Reader = Pick<Db, 'select'>

export interface ChannelRelease {
  versionId: string
  version: string
  rolloutPercent: number
  hostVersionRange: string | null
  mandatory: boolean
  releasedAt: string
  releasedBy: UserSummary | null
  /** decisions §13: while paused no new device gets the release; who paused it and why */
  paused: boolean
  pausedAt: string | null
  pausedBy: string | null
  pauseReason: string | null
}

export type { ReleaseState }

export interface ChannelRecord {
  name: string
  createdAt: string
  /** the state of `release`; null when the channel has none */
  state: ReleaseState | null
  release: ChannelRelease | null
  /** what the channel's other devices fall back to (the first release below the newest that is not paused), whatever the state */
  previousRelease: ChannelRelease | null
  /**
   * the paused releases between the newest and `previousRelease`, newest first: no other device gets
   * them, the devices that run them (or adopted them while they rolled out) keep them (§13, decide.ts)
   */
  pausedReleases: ChannelRelease[]
  /**
   * the reverted releases (0 %) below the newest, newest first: no device gets them, those that ran
   * them included (decide.ts); shown as reverted, not as replaced
   */
  revertedReleases: ChannelRelease[]
  /**
   * every paused release below the newest, newest first (`pausedReleases` are those of them above
   * `previousRelease`): a rollback to one clears its pause (ROLLBACK_CLEARS_PAUSE), which the
   * console's Roll back… dialog says before confirming; only the paused ones, not every live release
   */
  pausedBelow: ChannelRelease[]
  /** what a device that sends no deviceId gets (the legacy release-stable URLs) */
  defaultRelease: ChannelRelease | null
  /** the release guard's settings and what it last saw of `release` (decisions §15; guard.ts) */
  guard: GuardRecord
}

/** The state of a release row: paused wins over its percent, which it keeps frozen. */
export function releaseState(release: { rolloutPercent: number; paused: boolean }): ReleaseState {
  if (release.paused) return 'paused'
  if (release.rolloutPercent === 0) return 'reverted'
  return release.rolloutPercent === 100 ? 'complete' : 'rolling-out'
}

/**
 * Who changes a rollout: a signed-in user or API key (a `Caller`), or the release guard (§15),
 * which pauses on its own and is named `release-guard` in the audit log.
 */
export type RolloutActor = Caller | 'release-guard'

/** How an actor is named in the audit log and on a paused release: the user's email, the API key by name and owner, or `release-guard`. */
export function actorName(actor: RolloutActor): string {
  if (actor === 'release-guard') return 'release-guard'
  const key = actor.apiKey as { name?: string } | undefined
  return key?.name ? keyActorText(key.name, actor.email) : actor.email
}

export interface LiveReleaseRow {
  id: string
  versionId: string
  version: string
  seq: number
  rolloutPercent: number
  hostVersionRange: string | null
  mandatory: boolean
  createdAt: string
  createdBy: string | null
  pausedAt: string | null
  pausedBy: string | null
  pauseReason: string | null
  /** pausedAt is set */
  paused: boolean
}

const liveColumns = {
  id: channelReleases.id,
  versionId: channelReleases.versionId,
  version: versions.version,
  seq: channelReleases.seq,
  rolloutPercent: channelReleases.rolloutPercent,
  hostVersionRange: channelReleases.hostVersionRange,
  mandatory: channelReleases.mandatory,
  createdAt: channelReleases.createdAt,
  createdBy: channelReleases.createdBy,
  pausedAt: channelReleases.pausedAt,
  pausedBy: channelReleases.pausedBy,
  pauseReason: channelReleases.pauseReason,
}

/** A channel's live releases, newest first: the first is what it serves, the second its previous release. */
export function liveReleases(db: Reader, miniAppId: string, channel: string): LiveReleaseRow[] {
  return db
    .select(liveColumns)
    .from(channelReleases)
    .innerJoin(versions, eq(versions.id, channelReleases.versionId))
    .where(and(eq(channelReleases.miniAppId, miniAppId), eq(channelReleases.channel, channel), isNull(channelReleases.withdrawnAt)))
    .orderBy(desc(channelReleases.seq))
    .all()
    .map((row) => ({ ...row, paused: row.pausedAt !== null }))
}

/**
 * For each of `versionIds`, the channels it is still a release of (newest or below it, paused or
 * reverted included: every release no rollback withdrew), stable first, then by name. Publishing a
 * version into one of them is refused (releaseIntoChannel: 409 VERSION_ALREADY_PUBLISHED). At most
 * one entry per channel for each version: a page of versions costs one indexed query, however many
 * releases the channels hold.
 */
export function channelsHolding(db: Pick<Db, 'selectDistinct'>, miniAppId: string, versionIds: readonly string[]): Map<string, string[]> {
  const held = new Map<string, string[]>(versionIds.map((id) => [id, []]))
  if (versionIds.length === 0) return held
  const rows = db
    .selectDistinct({ versionId: channelReleases.versionId, channel: channelReleases.channel })
    .from(channelReleases)
    .where(and(eq(channelReleases.miniAppId, miniAppId), inArray(channelReleases.versionId, [...versionIds]), isNull(channelReleases.withdrawnAt)))
    .all()
  for (const row of rows) held.get(row.versionId)?.push(row.channel)
  for (const names of held.values()) names.sort((a, b) => (a === defaultChannel ? -1 : b === defaultChannel ? 1 : a < b ? -1 : a > b ? 1 : 0))
  return held
}

export function isChannelName(name: string): boolean {
  return channelNamePattern.test(name)
}

/** True when the channel exists for the miniapp (`stable` always does). */
export function channelExists(db: Reader, miniAppId: string, name: string): boolean {
  if (name === defaultChannel) return true
  if (!isChannelName(name)) return false
  return db.select({ name: channels.name }).from(channels).where(and(eq(channels.miniAppId, miniAppId), eq(channels.name, name))).get() !== undefined
}

/** Unknown channel: 404 CHANNEL_NOT_FOUND wherever a channel is named (decisions §10), in a path, a query or a body. */
export function channelNotFound(name: string): AppError {
  return new AppError(404, 'CHANNEL_NOT_FOUND', `There is no channel "${name.slice(0, 40)}"; create it first (channels are named like stable or beta-testers)`)
}

/** A channel name that cannot be one: 400 VALIDATION_ERROR naming the field, wherever it was given. */
export function badChannelName(field = 'channel'): AppError {
  return new AppError(400, 'VALIDATION_ERROR', `Invalid ${field}: a channel name is 1–32 characters: a lower-case letter, then lower-case letters, digits or "-"`, [
    { field, message: 'must match ^[a-z][a-z0-9-]{0,31}$' },
  ])
}

/** The channel, when it is well named (else 400) and exists for the miniapp (else 404). */
export function requireChannel(db: Reader, miniAppId: string, name: string): string {
  if (!isChannelName(name)) throw badChannelName()
  if (!channelExists(db, miniAppId, name)) throw channelNotFound(name)
  return name
}

function toChannelRelease(row: LiveReleaseRow | undefined, people: Map<string, UserSummary>): ChannelRelease | null {
  if (!row) return null
  return {
    versionId: row.versionId,
    version: row.version,
    rolloutPercent: row.rolloutPercent,
    hostVersionRange: row.hostVersionRange,
    mandatory: row.mandatory,
    releasedAt: row.createdAt,
    releasedBy: row.createdBy ? (people.get(row.createdBy) ?? null) : null,
    paused: row.paused,
    pausedAt: row.pausedAt,
    pausedBy: row.pausedBy,
    pauseReason: row.pauseReason,
  }
}

/**
 * Below the newest release, what the channel's other devices fall back to, by the rule of decide.ts:
 * a paused release there goes only to the devices that run it or adopted it, and a reverted one to
 * none, so the others pass over both to the first one that is neither (`previous`); `paused` are the
 * paused ones passed over (their devices keep them).
 */
export function fallbackOf(rows: readonly LiveReleaseRow[]): { previous: LiveReleaseRow | undefined; paused: LiveReleaseRow[] } {
  const paused: LiveReleaseRow[] = []
  let index = 1
  // a reverted release below (a fix published over it) goes to no device at all: passed over, and not kept
  for (; rows[index] !== undefined && (rows[index]!.paused || rows[index]!.rolloutPercent === 0); index++) if (rows[index]!.rolloutPercent > 0) paused.push(rows[index]!)
  return { previous: rows[index], paused }
}

/**
 * The paused releases below the newest, newest first: a rollback to one of them clears its pause
 * (versions/service.ts rollbackRelease warns ROLLBACK_CLEARS_PAUSE), and each channel record lists
 * them as `pausedBelow` so the console says so before confirming, by this one rule.
 */
export function pausedBelowNewest<R extends { paused: boolean }>(rows: readonly R[]): R[] {
  return rows.slice(1).filter((row) => row.paused)
}

/** Every channel of a miniapp with its release and previous release: `stable` first, then by name. */
export function channelRecords(db: Db, app: MiniAppRow): ChannelRecord[] {
  const named = db.select().from(channels).where(eq(channels.miniAppId, app.id)).orderBy(asc(channels.name)).all()
  const all = [{ name: defaultChannel, createdAt: app.createdAt }, ...named.filter((row) => row.name !== defaultChannel)]
  const lives = all.map((channel) => liveReleases(db, app.id, channel.name))
  const below = lives.map(fallbackOf)
  // the same rule devices are answered by (decide.ts), for a device that tells nothing about itself
  const fallbacks = lives.map((rows) => decideRelease(app.appId, rows, {}).release ?? undefined)
  // below the newest, a reverted release goes to no device (decide.ts), wherever it stands
  const reverted = lives.map((rows) => rows.slice(1).filter((row) => row.rolloutPercent === 0))
  const pausedBelow = lives.map(pausedBelowNewest)
  const shown = [...lives.map((rows) => rows[0]), ...below.flatMap((fallback) => [fallback.previous, ...fallback.paused]), ...reverted.flat(), ...pausedBelow.flat(), ...fallbacks]
  const people = userSummaries(db, shown.map((row) => row?.createdBy ?? null))
  const guards = guardRows(db, app.id)
  return all.map((channel, index) => {
    const rows = lives[index]!
    return {
      name: channel.name,
      createdAt: channel.createdAt,
      state: rows[0] ? releaseState(rows[0]) : null,
      release: toChannelRelease(rows[0], people),
      previousRelease: toChannelRelease(below[index]!.previous, people),
      pausedReleases: below[index]!.paused.map((row) => toChannelRelease(row, people)!),
      revertedReleases: reverted[index]!.map((row) => toChannelRelease(row, people)!),
      pausedBelow: pausedBelow[index]!.map((row) => toChannelRelease(row, people)!),
      defaultRelease: toChannelRelease(fallbacks[index], people),
      guard: toGuardRecord(guards.get(channel.name), rows[0]?.id ?? null),
    }
  })
}

/** A version signed by a key, and where devices get it now: versionStandings' live standings, in `versions ls`'s words. */
export interface LiveSignedVersion {
  versionId: string
  version: string
  /** "live on stable, complete 100 %", "live on stable for the devices outside the rollout of 1.2.0" */
  standings: string[]
}

/**
 * The versions of a miniapp signed by `keyId` that some device gets now, oldest upload first, each
 * with its live standings in channelRecords' order (stable first, then by name): after the key is revoked,
 * host apps that no longer trust it refuse them (a revoke warns of them, keys revoke prints it).
 */
export function liveVersionsSignedBy(db: Db, miniAppId: string, keyId: string): LiveSignedVersion[] {
  const signed = db
    .select({ versionId: versions.id, version: versions.version })
    .from(versionSignatures)
    .innerJoin(versions, eq(versions.id, versionSignatures.versionId))
    .where(and(eq(versions.miniAppId, miniAppId), eq(versionSignatures.keyId, keyId)))
    // ids are time-ordered (UUIDv7): upload order
    .orderBy(asc(versions.id))
    .all()
  if (signed.length === 0) return []
  const app = db.select().from(miniApps).where(eq(miniApps.id, miniAppId)).get()
  if (!app) return []
  const records = channelRecords(db, app)
  return signed
    .map((version) => ({ ...version, standings: versionStandings(version.versionId, records).filter((standing) => standing.live).map((standing) => standing.text) }))
    .filter((version) => version.standings.length > 0)
}

function channelRecord(db: Db, app: MiniAppRow, name: string): ChannelRecord {
  return channelRecords(db, app).find((channel) => channel.name === name)!
}

export function listChannels(db: Db, user: Caller, miniAppId: string): { channels: ChannelRecord[] } {
  return { channels: channelRecords(db, requireVisibleMiniApp(db, user, miniAppId)) }
}

function checkName(name: string): string {
  if (!isChannelName(name)) throw badChannelName('name')
  return name
}

export function createChannel(db: Db, clock: Clock, user: Caller, miniAppId: string, input: { name: string }): ChannelRecord {
  const app = requireVisibleMiniApp(db, user, miniAppId)
  const name = checkName(input.name)
  db.transaction(
    (tx) => {
      if (channelExists(tx, app.id, name)) throw new AppError(409, 'CHANNEL_EXISTS', `Channel ${name} already exists`)
      tx.insert(channels).values({ miniAppId: app.id, name, createdBy: user.id, createdAt: isoAt(clock) }).run()
      recordAudit(tx, clock, { actor: user, action: 'channel.create', targetType: 'miniapp', targetId: app.id, summary: `${user.email} created channel ${name} of ${app.appId}`, metadata: { appId: app.appId, channel: name } })
    },
    { behavior: 'immediate' },
  )
  return channelRecord(db, app, name)
}

export function deleteChannel(db: Db, clock: Clock, user: Caller, miniAppId: string, name: string): { success: true; name: string } {
  const app = requireVisibleMiniApp(db, user, miniAppId)
  if (name === defaultChannel) throw new AppError(409, 'CHANNEL_IS_DEFAULT', 'The stable channel always exists and cannot be deleted')
  db.transaction(
    (tx) => {
      requireChannel(tx, app.id, name)
      if (liveReleases(tx, app.id, name).length > 0) {
        throw new AppError(409, 'CHANNEL_HAS_RELEASES', `Channel ${name} has releases; only a channel that never served one (or whose releases were all rolled back) can be deleted`)
      }
      tx.delete(channels).where(and(eq(channels.miniAppId, app.id), eq(channels.name, name))).run()
      // a channel made again under this name starts with the guard off
      tx.delete(channelGuards).where(and(eq(channelGuards.miniAppId, app.id), eq(channelGuards.channel, name))).run()
      recordAudit(tx, clock, { actor: user, action: 'channel.delete', targetType: 'miniapp', targetId: app.id, summary: `${user.email} deleted channel ${name} of ${app.appId}`, metadata: { appId: app.appId, channel: name } })
    },
    { behavior: 'immediate' },
  )
  return { success: true, name }
}

export interface ReleaseOptions {
  channel: string
  rolloutPercent: number
  hostVersionRange: string | null
  mandatory: boolean
  notes: string | null
}

/** Checks publish's release options (decisions §10) into their stored form; each problem is a 400 naming its field. */
export function checkReleaseOptions(input: { rolloutPercent?: unknown; hostVersionRange?: unknown; mandatory?: unknown }): Pick<ReleaseOptions, 'rolloutPercent' | 'hostVersionRange' | 'mandatory'> {
  // absent means 100; null is no percent (as for PATCH …/rollout)
  const percent = input.rolloutPercent === undefined ? 100 : input.rolloutPercent
  if (typeof percent !== 'number' || !Number.isInteger(percent) || percent < 1 || percent > 100) {
    throw new AppError(400, 'VALIDATION_ERROR', 'Invalid body: rolloutPercent must be a whole number from 1 to 100', [{ field: 'rolloutPercent', message: 'must be a whole number from 1 to 100' }])
  }
  let range: string | null = null
  if (input.hostVersionRange !== undefined && input.hostVersionRange !== null && input.hostVersionRange !== '') {
    if (typeof input.hostVersionRange !== 'string' || !isSemverRange(input.hostVersionRange)) {
      throw new AppError(400, 'INVALID_HOST_VERSION_RANGE', `hostVersionRange must be a semver range such as ">=2.3.0 <3" or "^2.1.0" (got ${JSON.stringify(String(input.hostVersionRange).slice(0, 60))})`, [
        { field: 'hostVersionRange', message: 'must be a semver range such as >=2.3.0 <3' },
      ])
    }
    range = input.hostVersionRange.trim()
  }
  const mandatory = input.mandatory ?? false
  if (typeof mandatory !== 'boolean') throw new AppError(400, 'VALIDATION_ERROR', 'Invalid body: mandatory must be true or false', [{ field: 'mandatory', message: 'must be true or false' }])
  return { rolloutPercent: percent, hostVersionRange: range, mandatory }
}

function nextSeq(tx: Tx, miniAppId: string): number {
  const row = tx.select({ seq: max(channelReleases.seq) }).from(channelReleases).where(eq(channelReleases.miniAppId, miniAppId)).get()
  return (row?.seq ?? 0) + 1
}

/** Keeps the contract's single "current release version" equal to the stable channel's newest release. */
function syncStablePointer(tx: Tx, miniAppId: string, channel: string, now: string): void {
  if (channel !== defaultChannel) return
  const newest = liveReleases(tx, miniAppId, channel)[0]
  tx.update(miniApps).set({ currentReleaseVersionId: newest?.versionId ?? null, updatedAt: now }).where(eq(miniApps.id, miniAppId)).run()
}

interface VersionRef {
  id: string
  version: string
}

/** The API key a change was made with, as release history names it beside its owner (null: the person's own). */
export function keyNameOf(user: Caller): string | null {
  return user.apiKey?.name ?? null
}

/** Inside publish's transaction: the version becomes the channel's newest release. Returns the release it replaced. */
export function releaseIntoChannel(tx: Tx, clock: Clock, user: Caller, app: MiniAppRow, version: VersionRef, options: ReleaseOptions): LiveReleaseRow | null {
  requireChannel(tx, app.id, options.channel)
  const live = liveReleases(tx, app.id, options.channel)
  if (live.some((row) => row.versionId === version.id)) {
    throw new AppError(409, 'VERSION_ALREADY_PUBLISHED', `Version ${version.version} is already a release of channel ${options.channel}; roll back to it instead`)
  }
  const now = isoAt(clock)
  tx.insert(channelReleases)
    .values({ id: newId(), miniAppId: app.id, channel: options.channel, versionId: version.id, seq: nextSeq(tx, app.id), rolloutPercent: options.rolloutPercent, hostVersionRange: options.hostVersionRange, mandatory: options.mandatory, withdrawnAt: null, createdBy: user.id, createdAt: now })
    .run()
  tx.insert(releaseHistory)
    .values({ id: newId(), miniAppId: app.id, action: 'PUBLISH', channel: options.channel, versionId: version.id, version: version.version, previousVersionId: live[0]?.versionId ?? null, rolloutPercent: options.rolloutPercent, notes: options.notes, actorId: user.id, actorKeyName: keyNameOf(user), createdAt: now })
    .run()
  syncStablePointer(tx, app.id, options.channel, now)
  return live[0] ?? null
}

/**
 * Whether a rollback to `versionId` on `channel` brings back a release that was reverted there: its
 * latest release in the channel is at 0 %, below the newest or since withdrawn by a rollback past it.
 * No device gets it now; the rollback sends it to every device (ROLLBACK_OF_REVERTED).
 */
export function wasRevertedIn(db: Reader, miniAppId: string, channel: string, versionId: string): boolean {
  // the rule the workspace's revertedIn reads, for one version
  return channelsRevertedIn(db, miniAppId, [versionId]).get(versionId)!.includes(channel)
}

/**
 * For each of `versionIds`, the channels where its latest release is reverted (0 %, below the newest
 * or withdrawn since): a rollback to it there warns ROLLBACK_OF_REVERTED (wasRevertedIn). One
 * indexed read for a workspace page; a version has few releases.
 */
export function channelsRevertedIn(db: Reader, miniAppId: string, versionIds: readonly string[]): Map<string, string[]> {
  const reverted = new Map<string, string[]>(versionIds.map((id) => [id, []]))
  if (versionIds.length === 0) return reverted
  const rows = db
    .select({ versionId: channelReleases.versionId, channel: channelReleases.channel, rolloutPercent: channelReleases.rolloutPercent })
    .from(channelReleases)
    .where(and(eq(channelReleases.miniAppId, miniAppId), inArray(channelReleases.versionId, [...versionIds])))
    .orderBy(desc(channelReleases.seq))
    .all()
  const seen = new Set<string>()
  for (const row of rows) {
    const key = `${row.versionId}\u0000${row.channel}`
    if (seen.has(key)) continue
    seen.add(key)
    if (row.rolloutPercent === 0) reverted.get(row.versionId)?.push(row.channel)
  }
  return reverted
}

/**
 * Inside rollback's transaction: the channel serves `version` to everyone again. A live release
 * is restored by withdrawing the releases above it; one the channel served before but had
 * withdrawn (or, for data from before channels, a published version whose upload named this
 * channel) is released again on top, and what the channel released after it is withdrawn the
 * same way. A version this channel never served is refused.
 */
export function rollbackChannel(tx: Tx, clock: Clock, user: Caller, app: MiniAppRow, version: VersionRef & { channel: string; createdAt: string }, channel: string, notes: string | null): LiveReleaseRow | null {
  requireChannel(tx, app.id, channel)
  const live = liveReleases(tx, app.id, channel)
  const current = live[0] ?? null
  if (current?.versionId === version.id) {
    throw new AppError(409, 'ALREADY_CURRENT_RELEASE', `Version ${version.version} is already the current release of channel ${channel}`)
  }
  const now = isoAt(clock)
  const target = live.find((row) => row.versionId === version.id)
  if (target) {
    tx.update(channelReleases)
      .set({ withdrawnAt: now })
      .where(and(eq(channelReleases.miniAppId, app.id), eq(channelReleases.channel, channel), isNull(channelReleases.withdrawnAt), gt(channelReleases.seq, target.seq)))
      .run()
    tx.update(channelReleases).set({ rolloutPercent: 100, pausedAt: null, pausedBy: null, pauseReason: null }).where(eq(channelReleases.id, target.id)).run()
  } else {
    const earlier = tx
      .select()
      .from(channelReleases)
      .where(and(eq(channelReleases.miniAppId, app.id), eq(channelReleases.channel, channel), eq(channelReleases.versionId, version.id)))
      .orderBy(desc(channelReleases.seq))
      .limit(1)
      .get()
    if (!earlier && version.channel !== channel) {
      throw new AppError(409, 'NOT_RELEASED_IN_CHANNEL', `Version ${version.version} was never released in channel ${channel}; publish it there instead`)
    }
    // what the channel released after the target first went out is withdrawn, as for a live target;
    // data from before channels has no such release, so what was released after its upload goes
    const above = earlier
      ? gt(channelReleases.seq, earlier.seq)
      : inArray(
          channelReleases.versionId,
          // ids are time-ordered (UUIDv7): they order uploads of the same millisecond
          tx.select({ id: versions.id }).from(versions).where(and(eq(versions.miniAppId, app.id), or(gt(versions.createdAt, version.createdAt), and(eq(versions.createdAt, version.createdAt), gt(versions.id, version.id))))),
        )
    tx.update(channelReleases)
      .set({ withdrawnAt: now })
      .where(and(eq(channelReleases.miniAppId, app.id), eq(channelReleases.channel, channel), isNull(channelReleases.withdrawnAt), above))
      .run()
    tx.insert(channelReleases)
      .values({ id: newId(), miniAppId: app.id, channel, versionId: version.id, seq: nextSeq(tx, app.id), rolloutPercent: 100, hostVersionRange: earlier?.hostVersionRange ?? null, mandatory: earlier?.mandatory ?? false, withdrawnAt: null, createdBy: user.id, createdAt: now })
      .run()
  }
  tx.insert(releaseHistory)
    .values({ id: newId(), miniAppId: app.id, action: 'ROLLBACK', channel, versionId: version.id, version: version.version, previousVersionId: current?.versionId ?? null, rolloutPercent: 100, notes, actorId: user.id, actorKeyName: keyNameOf(user), createdAt: now })
    .run()
  syncStablePointer(tx, app.id, channel, now)
  return current
}

/** What a rollout change did (for the audit log, the release mirror and webhooks): null `change` when nothing changed. */
export interface RolloutChange {
  action: 'rollout' | 'pause' | 'resume'
  miniAppId: string
  appId: string
  channel: string
  versionId: string
  version: string
  previousPercent: number
  rolloutPercent: number
  previousState: ReleaseState
  state: ReleaseState
  actor: string
  reason: string | null
  /** of a revert only: the release every device gets now (the channel's previousRelease), null for a first release (no device gets any) */
  fallback?: { id: string; version: string } | null
  /** of a revert only: the paused releases between it and `fallback`, whose devices keep them (the channel's pausedReleases) */
  pausedReleases?: { id: string; version: string }[]
}

/** What a pause, a revert or a lowered percent warns of: the release devices fall back to is one signature rules refuse (§14). */
export type RolloutWarning = ReleaseWarning<'FALLBACK_UNSIGNED' | 'FALLBACK_KEY_REVOKED'>

export interface RolloutResult {
  record: ChannelRecord
  change: RolloutChange | null
  /** said only of a real pause, revert or lowered percent (a request that changes nothing warns of nothing, as the CLI's own no-op answers) */
  warnings: RolloutWarning[]
}

/** How a version is signed (null: unsigned), with its key's name and revocation. */
function signatureOf(db: Reader, miniAppId: string, versionId: string): SignatureView | null {
  const row = db
    .select({ keyId: versionSignatures.keyId, keyName: signingKeys.name, keyRevokedAt: signingKeys.revokedAt })
    .from(versionSignatures)
    .leftJoin(signingKeys, and(eq(signingKeys.miniAppId, miniAppId), eq(signingKeys.keyId, versionSignatures.keyId)))
    .where(eq(versionSignatures.versionId, versionId))
    .get()
  return row ?? null
}

/** Which change, if any, sent devices back to the channel's previous release: a pause, a revert, or a lower percent. */
function fallbackAction(change: RolloutChange | null): FallbackAction | null {
  if (change?.action === 'pause') return 'pause'
  if (change?.action !== 'rollout') return null
  if (change.rolloutPercent === 0) return 'revert'
  // devices whose bucket is at or above the new percent get the previous release, those that ran the newest too (decide.ts)
  if (change.rolloutPercent < change.previousPercent) return { lowerTo: change.rolloutPercent }
  return null
}

/** The warnings of a pause, a revert or a lowered percent that happened: what the channel's devices now fall back to. */
function fallbackWarnings(db: Reader, app: MiniAppRow, record: ChannelRecord, change: RolloutChange | null): RolloutWarning[] {
  const action = fallbackAction(change)
  const fallback = record.previousRelease
  if (!action || !fallback) return []
  const warning = fallbackSignatureWarning(app, action, record, signatureOf(db, app.id, fallback.versionId))
  return warning ? [warning] : []
}

function badPercent(): AppError {
  return new AppError(400, 'VALIDATION_ERROR', 'Invalid body: rolloutPercent must be a whole number from 0 (revert) to 100 (complete)', [{ field: 'rolloutPercent', message: 'must be a whole number from 0 to 100' }])
}

/** The miniapp a rollout actor may change: a caller must see it; the release guard acts on any. */
function rolloutApp(db: Db, actor: RolloutActor, miniAppId: string): MiniAppRow {
  if (actor !== 'release-guard') return requireVisibleMiniApp(db, actor, miniAppId)
  const row = db.select().from(miniApps).where(eq(miniApps.id, miniAppId)).get()
  if (!row) throw new AppError(404, 'MINI_APP_NOT_FOUND', `Miniapp ${miniAppId} not found`)
  return row
}

/** The audit summary of a change: "who paused the rollout of app 1.1.0 on stable at 30 % (was rolling-out 30 %): why". */
function changeSummary(change: RolloutChange): string {
  const what = `the rollout of ${change.appId} ${change.version} on ${change.channel}`
  const verb =
    change.action === 'pause'
      ? `paused ${what} at ${change.rolloutPercent} %`
      : change.action === 'resume'
        ? `resumed ${what} at ${change.rolloutPercent} %`
        : change.rolloutPercent === 0
          ? `reverted ${what}`
          : change.rolloutPercent === 100
            ? `completed ${what}`
            : `set ${what} to ${change.rolloutPercent} %`
  return `${change.actor} ${verb} (was ${change.previousState} ${change.previousPercent} %)${change.reason ? `: ${change.reason}` : ''}`
}

/**
 * Runs inside a rollout change's transaction with what changed: what it queues (the release
 * mirror's write, webhook deliveries) commits with the change or not at all.
 */
/** `warnings`: what the change's answer warns of (the fallback signature rules refuse), for its webhook */
export type OnRolloutChange = (change: RolloutChange, warnings: readonly RolloutWarning[]) => void

/**
 * What the route hooks into a rollout change. `onChanged` runs inside a real change's transaction;
 * `beforeResume` runs before the transaction of a real change that resumes a paused release or raises
 * a reverted one (never for a no-op, a pause, a revert or a percent change of a running release), with
 * the miniapp's id: the release guard's count, so the F the resume holds it at is current.
 */
export interface RolloutHooks {
  onChanged?: OnRolloutChange
  beforeResume?: (miniAppId: string) => void
}

type RolloutPlan = (newest: LiveReleaseRow, app: MiniAppRow) => { action: RolloutChange['action']; set: Partial<typeof channelReleases.$inferInsert>; percent: number; paused: boolean; reason: string | null; metadata?: Record<string, unknown> } | null

/** The channel's newest release, or 409 NO_RELEASE when it has none to roll out. */
function newestRelease(db: Reader, miniAppId: string, channel: string): LiveReleaseRow {
  requireChannel(db, miniAppId, channel)
  const newest = liveReleases(db, miniAppId, channel)[0]
  if (!newest) throw new AppError(409, 'NO_RELEASE', `Channel ${channel} has no release to roll out; publish a version to it first`)
  return newest
}

/**
 * One change of the newest release's rollout, in one transaction with its history row, audit entry
 * and `onChanged`'s writes. A request that changes nothing (the plan answers null) is found by a
 * read first and writes nothing: no transaction, so it answers even while another process holds
 * the write lock. The plan is made again inside the transaction, where the release may have moved.
 */
function changeRollout(db: Db, clock: Clock, actor: RolloutActor, miniAppId: string, channel: string, plan: RolloutPlan, hooks: RolloutHooks = {}): RolloutResult {
  const app = rolloutApp(db, actor, miniAppId)
  const current = newestRelease(db, app.id, channel)
  const planned = plan(current, app)
  if (!planned) return { record: channelRecord(db, app, channel), change: null, warnings: [] }
  const held = releaseState(current)
  if (planned.action === 'resume' || (planned.action === 'rollout' && held === 'reverted' && planned.percent > 0)) hooks.beforeResume?.(app.id)
  let change: RolloutChange | null = null
  let warnings: RolloutWarning[] = []
  db.transaction(
    (tx) => {
      const newest = newestRelease(tx, app.id, channel)
      const step = plan(newest, app)
      if (!step) return
      const now = isoAt(clock)
      const who = actorName(actor)
      const user = actor === 'release-guard' ? null : actor
      tx.update(channelReleases).set(step.set).where(eq(channelReleases.id, newest.id)).run()
      tx.update(miniApps).set({ updatedAt: now }).where(eq(miniApps.id, app.id)).run()
      change = {
        action: step.action,
        miniAppId: app.id,
        appId: app.appId,
        channel,
        versionId: newest.versionId,
        version: newest.version,
        previousPercent: newest.rolloutPercent,
        rolloutPercent: step.percent,
        previousState: releaseState(newest),
        state: releaseState({ rolloutPercent: step.percent, paused: step.paused }),
        actor: who,
        reason: step.reason,
      }
      // what the devices sent back now fall back to, read in this transaction (the same connection sees
      // the change): the answer, the audit entry and the webhook say the same warnings
      // only a change that sends devices back (a raise or a resume sends none) reads the channels for it
      if (fallbackAction(change) !== null) {
        const after = channelRecord(db, app, channel)
        warnings = fallbackWarnings(db, app, after, change)
        // a revert's webhook says what devices get now, as the CLI and the console do
        if (change.state === 'reverted') {
          change.fallback = after.previousRelease ? { id: after.previousRelease.versionId, version: after.previousRelease.version } : null
          // devices on a paused release between keep it: "every device gets" the fallback would be untrue
          change.pausedReleases = after.pausedReleases.map((release) => ({ id: release.versionId, version: release.version }))
        }
      }
      tx.insert(releaseHistory)
        .values({ id: newId(), miniAppId: app.id, action: 'ROLLOUT', channel, versionId: newest.versionId, version: newest.version, previousVersionId: null, rolloutPercent: step.percent, notes: step.action === 'rollout' ? null : `${step.action === 'pause' ? 'paused' : 'resumed'} by ${who}${step.reason ? `: ${step.reason}` : ''}`, actorId: user?.id ?? null, actorKeyName: user ? keyNameOf(user) : null, createdAt: now })
        .run()
      const key = user?.apiKey as { id?: string; name?: string } | undefined
      recordAudit(tx, clock, {
        actor: user,
        action: step.action === 'rollout' ? 'channel.rollout' : `channel.${step.action}`,
        targetType: 'version',
        targetId: newest.versionId,
        summary: changeSummary(change),
        metadata: {
          miniAppId: app.id,
          appId: app.appId,
          channel,
          version: newest.version,
          rolloutPercent: step.percent,
          previousPercent: newest.rolloutPercent,
          state: change.state,
          previousState: change.previousState,
          actor: who,
          ...(key?.name ? { apiKey: { id: key.id, name: key.name } } : {}),
          ...(step.reason ? { reason: step.reason } : {}),
          ...(warnings.length ? { warnings } : {}),
          ...step.metadata,
        },
      })
      hooks.onChanged?.(change, warnings)
    },
    { behavior: 'immediate' },
  )
  return { record: channelRecord(db, app, channel), change, warnings }
}

/**
 * Raise, lower, revert (0) or complete (100) the newest release's rollout. While it is paused only
 * a revert is taken (and ends the pause): any other percent is 409 ROLLOUT_PAUSED, resume first.
 * The percent it already has changes nothing (`change: null`).
 */
export function setRollout(db: Db, clock: Clock, actor: RolloutActor, miniAppId: string, channel: string, input: { rolloutPercent: unknown }, hooks: RolloutHooks = {}): RolloutResult {
  const percent = input.rolloutPercent
  if (typeof percent !== 'number' || !Number.isInteger(percent) || percent < 0 || percent > 100) throw badPercent()
  return changeRollout(db, clock, actor, miniAppId, channel, (newest, app) => {
    if (newest.paused && percent !== 0) {
      // the words of the console and the CLI in the message; the API's bodies in details
      const cli = `miniship rollout ${app.appId}${channel === 'stable' ? '' : ` --channel ${channel}`}`
      throw new AppError(
        409,
        'ROLLOUT_PAUSED',
        `The rollout of ${newest.version} on ${channel} is paused at ${newest.rolloutPercent} %; resume it first (Resume in the console, or ${cli} --resume), or revert it (${cli} --revert)`,
        [
          { field: 'paused', message: 'resume: PATCH this rollout with {"paused": false}' },
          { field: 'rolloutPercent', message: 'revert: PATCH this rollout with {"rolloutPercent": 0}' },
        ],
      )
    }
    if (!newest.paused && newest.rolloutPercent === percent) return null
    return { action: 'rollout', set: { rolloutPercent: percent, pausedAt: null, pausedBy: null, pauseReason: null }, percent, paused: false, reason: null }
  }, hooks)
}

/**
 * Pause (decisions §13): no new device gets the newest release, devices that run it keep it, at
 * its frozen percent. Pausing a paused release changes nothing (`change: null`), so the release
 * guard may call it again; a reverted one (0 %) is 409 ROLLOUT_REVERTED: no device gets it.
 */
export function pauseRollout(db: Db, clock: Clock, actor: RolloutActor, miniAppId: string, channel: string, details: { reason?: string | null; metadata?: Record<string, unknown> } = {}, hooks: RolloutHooks = {}): RolloutResult {
  // as long as the PATCH lets it be (pauseReasonMaxLength): a longer cut would be accepted and silently lost
  const reason = cutText(details.reason?.trim() ?? '', pauseReasonMaxLength) || null
  return changeRollout(db, clock, actor, miniAppId, channel, (newest) => {
    if (newest.paused) return null
    if (newest.rolloutPercent === 0) {
      throw new AppError(409, 'ROLLOUT_REVERTED', `The rollout of ${newest.version} on ${channel} is reverted (0 %): no device gets it, so there is nothing to pause`)
    }
    return { action: 'pause', set: { pausedAt: isoAt(clock), pausedBy: actorName(actor), pauseReason: reason }, percent: newest.rolloutPercent, paused: true, reason, metadata: details.metadata }
  }, hooks)
}

/** Resume a paused rollout at its frozen percent; resuming one that is not paused changes nothing. */
export function resumeRollout(db: Db, clock: Clock, actor: RolloutActor, miniAppId: string, channel: string, hooks: RolloutHooks = {}): RolloutResult {
  return changeRollout(db, clock, actor, miniAppId, channel, (newest) => {
    if (!newest.paused) return null
    return { action: 'resume', set: { pausedAt: null, pausedBy: null, pauseReason: null }, percent: newest.rolloutPercent, paused: false, reason: null }
  }, hooks)
}

/** the longest pause reason, in characters: a publish's notes take as many */
export const pauseReasonMaxLength = notesMaxLength

/**
 * `PATCH …/channels/{channel}/rollout`: `{ rolloutPercent }` or `{ paused, reason? }`, one of them.
 * A body that changes nothing writes nothing and takes no write lock; `hooks.onChanged` runs inside a real change's transaction,
 * `hooks.beforeResume` before a real resume (or a reverted release raised again).
 */
export function patchRollout(db: Db, clock: Clock, actor: RolloutActor, miniAppId: string, channel: string, input: { rolloutPercent?: unknown; paused?: unknown; reason?: unknown }, hooks: RolloutHooks = {}): RolloutResult {
  const hasPercent = input.rolloutPercent !== undefined
  const hasPaused = input.paused !== undefined
  if (hasPercent === hasPaused) {
    throw new AppError(400, 'VALIDATION_ERROR', 'Invalid body: send either rolloutPercent (0 reverts, 1–99 rolls out, 100 completes) or paused (true pauses, false resumes)', [
      { field: hasPercent ? 'paused' : 'rolloutPercent', message: hasPercent ? 'send rolloutPercent or paused, not both' : 'rolloutPercent or paused is required' },
    ])
  }
  if (hasPercent) return setRollout(db, clock, actor, miniAppId, channel, { rolloutPercent: input.rolloutPercent }, hooks)
  if (typeof input.paused !== 'boolean') throw new AppError(400, 'VALIDATION_ERROR', 'Invalid body: paused must be true or false', [{ field: 'paused', message: 'must be true or false' }])
  if (input.reason !== undefined && input.reason !== null && typeof input.reason !== 'string') throw new AppError(400, 'VALIDATION_ERROR', 'Invalid body: reason must be text', [{ field: 'reason', message: 'must be a string' }])
  if (typeof input.reason === 'string' && !isCleanText(input.reason, true)) {
    throw new AppError(400, 'VALIDATION_ERROR', 'Invalid body: reason must not hold control characters (line breaks and tabs are fine)', [{ field: 'reason', message: 'must not hold control characters (line breaks and tabs are fine)' }])
  }
  // kept on the release, shown with every channel and sent in webhooks: as long as a release's notes may be, no longer
  if (typeof input.reason === 'string' && textLength(input.reason) > pauseReasonMaxLength) {
    throw new AppError(400, 'VALIDATION_ERROR', `Invalid body: reason must be at most ${pauseReasonMaxLength} characters`, [{ field: 'reason', message: `must be at most ${pauseReasonMaxLength} characters` }])
  }
  return input.paused ? pauseRollout(db, clock, actor, miniAppId, channel, { reason: input.reason as string | undefined }, hooks) : resumeRollout(db, clock, actor, miniAppId, channel, hooks)
}
