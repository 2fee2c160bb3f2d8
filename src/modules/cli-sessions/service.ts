// The CLI device flow (decisions §4): short codes, approval by a signed-in user, one-time token hand-out.
import { and, eq, lt } from 'drizzle-orm'
import { cliSessions, users } from '../../db/schema'
import type { Db } from '../../db/open'
import type { Config } from '../../config'
import { AppError } from '../../http/errors'
import { isoAt, type Clock } from '../../ids'
import { recordAudit } from '../audit/service'
import { issueAccessToken } from '../auth/service'
import type { TokenService } from '../auth/tokens'

/** Letters without the look-alikes I and O (they read as 1 and 0 next to the digits). */
export const codeLetters = 'ABCDEFGHJKLMNPQRSTUVWXYZ'
export const codePattern = /^[A-Z]{4}-[0-9]{4}$/

/**
 * Sessions that expired this long ago are deleted when a new one is created; until then a poll
 * answers `expired` rather than 404, which keeps a slow CLI's last poll meaningful.
 */
const keepExpiredMs = 24 * 3600_000

/** Uniform picks from `alphabet` by rejection sampling, so no character is more likely than another. */
function randomChars(alphabet: string, count: number): string {
  const limit = 256 - (256 % alphabet.length)
  let out = ''
  const bytes = new Uint8Array(16)
  while (out.length < count) {
    crypto.getRandomValues(bytes)
    for (const byte of bytes) {
      if (byte >= limit) continue
      out += alphabet[byte % alphabet.length]
      if (out.length === count) break
    }
  }
  return out
}

/** `ABCD-1234`: 24⁴ × 10⁴ ≈ 3.3 billion codes, from the cryptographic random source. */
export function generateCode(): string {
  return `${randomChars(codeLetters, 4)}-${randomChars('0123456789', 4)}`
}

/** Where a person approves the code: the console page, on the public origin. */
export function verificationUrl(origin: string, code: string): string {
  return `${origin}/cli/authorize?code=${encodeURIComponent(code)}`
}

export interface NewCliSession {
  code: string
  expiresAt: string
  intervalSeconds: number
}

/** Who started a sign-in: shown on the approval page so a person can spot a login they did not start. */
export interface Requester {
  address: string
  userAgent: string | null
}

/** A user agent is the client's free text: keep it short enough to show on one line or two. */
const maxUserAgentLength = 300

export function createCliSession(db: Db, clock: Clock, config: Pick<Config, 'cliSessionTtlSeconds' | 'cliIntervalSeconds'>, requester: Requester): NewCliSession {
  const now = clock()
  const expiresAt = new Date(now + config.cliSessionTtlSeconds * 1000).toISOString()
  return db.transaction((tx) => {
    tx.delete(cliSessions).where(lt(cliSessions.expiresAt, new Date(now - keepExpiredMs).toISOString())).run()
    // A collision among live codes is unlikely but possible; draw again rather than fail.
    for (let attempt = 0; attempt < 10; attempt++) {
      const code = generateCode()
      if (tx.select({ code: cliSessions.code }).from(cliSessions).where(eq(cliSessions.code, code)).get()) continue
      tx.insert(cliSessions)
        .values({
          code,
          status: 'pending',
          userId: null,
          expiresAt,
          createdAt: new Date(now).toISOString(),
          approvedAt: null,
          requesterAddress: requester.address,
          requesterUserAgent: requester.userAgent?.slice(0, maxUserAgentLength) || null,
        })
        .run()
      return { code, expiresAt, intervalSeconds: config.cliIntervalSeconds }
    }
    throw new Error('could not draw an unused device code in 10 attempts')
  })
}

/** Codes are printed upper-case; accept what a person may type back (lower case, blanks around). */
export function normaliseCode(raw: string): string | null {
  const code = raw.trim().toUpperCase()
  return codePattern.test(code) ? code : null
}

function notFound(raw: string): AppError {
  return new AppError(404, 'CLI_SESSION_NOT_FOUND', `No sign-in session has the code ${raw.slice(0, 20)}; run the login again for a new code`)
}

export type PollResult =
  | { status: 'pending' }
  | { status: 'expired' }
  | { status: 'expired'; reason: 'denied' }
  | { status: 'approved'; accessToken: string; user: { id: string; email: string; displayName: string } }

/**
 * One poll. The poll that finds the session approved flips it to consumed inside a transaction
 * (so two racing polls cannot both get the token) and receives the token; every later poll,
 * and any poll past `expiresAt`, answers `expired`.
 */
export async function pollCliSession(db: Db, clock: Clock, tokens: TokenService, rawCode: string): Promise<PollResult> {
  const code = normaliseCode(rawCode)
  if (code === null) throw notFound(rawCode)
  const nowIso = isoAt(clock)
  const claimed = db.transaction((tx) => {
    const session = tx.select().from(cliSessions).where(eq(cliSessions.code, code)).get()
    if (!session) throw notFound(rawCode)
    // The device-flow contract knows pending/approved/expired; a denial is an expiry with its reason, so the CLI stops at once.
    if (session.status === 'denied') return { status: 'expired' as const, reason: 'denied' as const }
    if (session.status === 'consumed' || session.expiresAt <= nowIso) return { status: 'expired' as const }
    if (session.status === 'pending') return { status: 'pending' as const }
    tx.update(cliSessions).set({ status: 'consumed' }).where(and(eq(cliSessions.code, code), eq(cliSessions.status, 'approved'))).run()
    const user = tx.select().from(users).where(eq(users.id, session.userId!)).get()
    // Disabled between approval and this poll: the token would be refused anyway, so hand out none.
    if (!user || user.status !== 'ACTIVE') return { status: 'expired' as const }
    return { status: 'claimed' as const, user }
  })
  if (claimed.status !== 'claimed') return claimed
  const { user } = claimed
  return {
    status: 'approved',
    accessToken: await issueAccessToken(tokens, user),
    user: { id: user.id, email: user.email, displayName: user.displayName },
  }
}

/** The code as the audit log shows it: enough to match a support question, not enough to poll. */
function maskedCode(code: string): string {
  return `${code.slice(0, 4)}-****`
}

type Decider = { id: string; email: string; status: string }

/**
 * Approve or deny, by a signed-in, active user: once, before `expiresAt`. 410 for an unknown or
 * expired code (alike), 409 once decided. Approval writes the user into the session (the next poll
 * hands out their token); denial makes the next poll answer expired with reason `denied`.
 */
function decideCliSession<S extends 'approved' | 'denied'>(db: Db, clock: Clock, user: Decider, rawCode: string, status: S): { code: string; status: S } {
  const verb = status === 'approved' ? 'approve' : 'deny'
  if (user.status !== 'ACTIVE') throw new AppError(403, 'ACCOUNT_DISABLED', `A disabled account cannot ${verb} a sign-in`)
  const code = normaliseCode(rawCode)
  const gone = goneError(code, rawCode)
  if (code === null) throw gone()
  const nowIso = isoAt(clock)
  db.transaction((tx) => {
    const session = tx.select().from(cliSessions).where(eq(cliSessions.code, code)).get()
    assertPending(session, code, nowIso, gone)
    tx.update(cliSessions)
      .set(status === 'approved' ? { status, userId: user.id, approvedAt: nowIso } : { status })
      .where(eq(cliSessions.code, code))
      .run()
    const from = status === 'denied' ? ` from ${session!.requesterAddress ?? 'an unknown address'}` : ''
    recordAudit(tx, clock, {
      actor: { id: user.id, email: user.email },
      action: status === 'approved' ? 'cli_session.approve' : 'cli_session.deny',
      targetType: 'user',
      targetId: user.id,
      summary: `${user.email} ${status} a command-line sign-in (code ${maskedCode(code)})${from}`,
      metadata: status === 'approved' ? { code: maskedCode(code) } : { code: maskedCode(code), address: session!.requesterAddress },
    })
  })
  return { code, status }
}

/** Approval (decisions §4): the approver's token goes to the next poll. */
export function approveCliSession(db: Db, clock: Clock, approver: Decider, rawCode: string): { code: string; status: 'approved' } {
  return decideCliSession(db, clock, approver, rawCode, 'approved')
}

/** A decision (approve or deny) is possible once, before `expiresAt`; an unknown code answers like an expired one. */
function assertPending(session: { status: string; expiresAt: string } | undefined, code: string, nowIso: string, gone: () => AppError): void {
  if (!session || (session.status === 'pending' && session.expiresAt <= nowIso)) throw gone()
  if (session.status === 'denied') {
    throw new AppError(409, 'CLI_SESSION_DENIED', `The code ${code} was denied; run the login again for a new code`)
  }
  if (session.status !== 'pending') {
    throw new AppError(409, 'CLI_SESSION_ALREADY_APPROVED', `The code ${code} was already approved; run the login again for a new code`)
  }
}

/** Unknown and expired answer alike, so that trying codes does not tell which ones are live. */
function goneError(code: string | null, rawCode: string): () => AppError {
  return () => new AppError(410, 'CLI_SESSION_EXPIRED', `The code ${(code ?? rawCode).slice(0, 20)} is unknown or has expired; run the login again for a new code`)
}

/** A signed-in user refuses a sign-in they did not start (issue 16). */
export function denyCliSession(db: Db, clock: Clock, denier: Decider, rawCode: string): { code: string; status: 'denied' } {
  return decideCliSession(db, clock, denier, rawCode, 'denied')
}

export type CliSessionState = 'pending' | 'approved' | 'denied' | 'expired'

export interface CliSessionDetails {
  code: string
  /** as a person reads it: a collected token still means "approved"; an undecided session past its time "expired" */
  status: CliSessionState
  createdAt: string
  expiresAt: string
  requestedFrom: { address: string | null; userAgent: string | null }
}

/** What the approval page shows before anyone decides: who asks, since when, and whether it is still open. */
export function cliSessionDetails(db: Db, clock: Clock, rawCode: string): CliSessionDetails {
  const code = normaliseCode(rawCode)
  // an unknown code answers as approve and deny do (410), so this is no better a way to try codes
  const gone = goneError(code, rawCode)
  if (code === null) throw gone()
  const session = db.select().from(cliSessions).where(eq(cliSessions.code, code)).get()
  if (!session) throw gone()
  const status: CliSessionState =
    session.status === 'approved' || session.status === 'consumed'
      ? 'approved'
      : session.status === 'denied'
        ? 'denied'
        : session.expiresAt <= isoAt(clock)
          ? 'expired'
          : 'pending'
  return {
    code,
    status,
    createdAt: session.createdAt,
    expiresAt: session.expiresAt,
    requestedFrom: { address: session.requesterAddress, userAgent: session.requesterUserAgent },
  }
}
