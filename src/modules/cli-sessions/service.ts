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

export function createCliSession(db: Db, clock: Clock, config: Pick<Config, 'cliSessionTtlSeconds' | 'cliIntervalSeconds'>): NewCliSession {
  const now = clock()
  const expiresAt = new Date(now + config.cliSessionTtlSeconds * 1000).toISOString()
  return db.transaction((tx) => {
    tx.delete(cliSessions).where(lt(cliSessions.expiresAt, new Date(now - keepExpiredMs).toISOString())).run()
    // A collision among live codes is unlikely but possible; draw again rather than fail.
    for (let attempt = 0; attempt < 10; attempt++) {
      const code = generateCode()
      if (tx.select({ code: cliSessions.code }).from(cliSessions).where(eq(cliSessions.code, code)).get()) continue
      tx.insert(cliSessions).values({ code, status: 'pending', userId: null, expiresAt, createdAt: new Date(now).toISOString(), approvedAt: null }).run()
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

/**
 * Approval by a signed-in, active user: 404 unknown code, 410 past `expiresAt`, 409 once approved
 * (whether or not its token was collected yet).
 */
export function approveCliSession(db: Db, clock: Clock, approver: { id: string; email: string; status: string }, rawCode: string): { code: string; status: 'approved' } {
  if (approver.status !== 'ACTIVE') throw new AppError(403, 'ACCOUNT_DISABLED', 'A disabled account cannot approve a sign-in')
  const code = normaliseCode(rawCode)
  // Unknown and expired answer alike, so that trying codes does not tell which ones are live.
  const gone = () => new AppError(410, 'CLI_SESSION_EXPIRED', `The code ${(code ?? rawCode).slice(0, 20)} is unknown or has expired; run the login again for a new code`)
  if (code === null) throw gone()
  const nowIso = isoAt(clock)
  db.transaction((tx) => {
    const session = tx.select().from(cliSessions).where(eq(cliSessions.code, code)).get()
    if (!session || (session.status === 'pending' && session.expiresAt <= nowIso)) throw gone()
    if (session.status !== 'pending') {
      throw new AppError(409, 'CLI_SESSION_ALREADY_APPROVED', `The code ${code} was already approved; run the login again for a new code`)
    }
    tx.update(cliSessions).set({ status: 'approved', userId: approver.id, approvedAt: nowIso }).where(eq(cliSessions.code, code)).run()
    recordAudit(tx, clock, {
      actor: { id: approver.id, email: approver.email },
      action: 'cli_session.approve',
      targetType: 'user',
      targetId: approver.id,
      summary: `${approver.email} approved a command-line sign-in (code ${maskedCode(code)})`,
      metadata: { code: maskedCode(code) },
    })
  })
  return { code, status: 'approved' }
}
