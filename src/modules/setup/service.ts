// The first administrator of a fresh instance: a one-time setup link printed at start while no admin exists.
import { randomBytes, timingSafeEqual } from 'node:crypto'
import type { Db } from '../../db/open'
import type { Clock } from '../../ids'
import { AppError } from '../../http/errors'
import { createUser, hasActiveAdmin, type UserRecord } from '../auth/service'

export { hasActiveAdmin }

/**
 * The setup token: random, held in memory only (a restart prints a new one), made only while the
 * instance has no active administrator, and spent by the first successful use. `token` is null
 * when there is none (an admin existed at start, or the link was used).
 */
export function createSetupGate(db: Db) {
  let token: string | null = hasActiveAdmin(db) ? null : randomBytes(32).toString('base64url')
  return {
    get token() {
      return token
    },
    /** Whether `candidate` is the live token (constant time). */
    matches(candidate: unknown): boolean {
      if (token === null || typeof candidate !== 'string') return false
      const given = Buffer.from(candidate)
      const expected = Buffer.from(token)
      return given.length === expected.length && timingSafeEqual(given, expected)
    },
    spend() {
      token = null
    },
    restore(previous: string) {
      token = previous
    },
  }
}

export type SetupGate = ReturnType<typeof createSetupGate>

/** 403 for a wrong or spent token, 409 once an administrator exists; else the new admin. */
export async function createFirstAdmin(db: Db, clock: Clock, gate: SetupGate, input: { token: unknown; email: unknown; displayName: unknown; password: unknown }, passwordMinLength?: number): Promise<UserRecord> {
  if (hasActiveAdmin(db)) throw new AppError(409, 'ADMIN_EXISTS', 'An administrator exists already; sign in to the console instead')
  if (!gate.matches(input.token)) throw new AppError(403, 'SETUP_TOKEN_INVALID', 'This setup link is not valid: it works once, and only the link the running server printed')
  const token = gate.token!
  // Spent before the password hash (a quarter second): a second request with the same link waits for nothing.
  gate.spend()
  try {
    const displayName = typeof input.displayName === 'string' && input.displayName.trim() !== '' ? input.displayName : undefined
    return await createUser(db, clock, { email: String(input.email ?? ''), displayName, password: String(input.password ?? ''), role: 'ADMIN', status: 'ACTIVE', passwordMinLength }, null, 'setup')
  } catch (error) {
    // a typo in the form: the link stays usable
    gate.restore(token)
    throw error
  }
}
