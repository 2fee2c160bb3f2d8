// Accounts: creating users (register, admin, create-admin), signing in, and the user records others read.
import { eq } from 'drizzle-orm'
import { users, type UserRow } from '../../db/schema'
import type { Db } from '../../db/open'
import type { Config } from '../../config'
import { AppError } from '../../http/errors'
import { isCleanText, requireVisibleName, textLength } from '../../http/text'
import { newId, isoAt, type Clock } from '../../ids'
import { recordAudit, type AuditEntry } from '../audit/service'
import type { Role, TokenService } from './tokens'

export type UserStatus = 'ACTIVE' | 'DISABLED'

/** The user record of decisions §2: never the hash, never the token version. */
export interface UserRecord {
  id: string
  email: string
  displayName: string
  role: Role
  status: UserStatus
  createdAt: string
}

export type AuditActor = NonNullable<AuditEntry['actor']>

export const passwordMinLength = 6
export const passwordMaxLength = 1024
export const emailMaxLength = 254
export const displayNameMaxLength = 100

/** One field's problem as the 400 VALIDATION_ERROR body carries it (same shape TypeBox failures get). */
export function invalidField(field: string, message: string, where: 'body' | 'query' = 'body'): AppError {
  return new AppError(400, 'VALIDATION_ERROR', `Invalid ${where}: ${field} ${message}`, [{ field, message }])
}

// The WHATWG form-validation pattern: ASCII only, and a dot-less domain allowed (admin@localhost
// is a fair address on a self-hosted box). An international domain is matched in its punycode form.
const emailPattern =
  /^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/
const nonAscii = /[^\u0000-\u007f]/
// what would make `new URL` read a domain as something else (a path, a port, user info) or fail
const notInDomain = /[\s/\\?#@:%[\]]/

/**
 * An international domain (bücher.example) in the punycode form DNS and mail use (xn--bcher-kva.example),
 * by the WHATWG URL host parser (UTS #46: also lower-cases and normalises); null when it is no domain.
 */
function asciiDomain(domain: string): string | null {
  if (notInDomain.test(domain)) return null
  try {
    return new URL(`http://${domain}`).hostname
  } catch {
    return null
  }
}

/**
 * Trimmed and lower-cased, an international domain in its punycode form (so `user@bücher.example` and
 * `user@xn--bcher-kva.example` are one account), or null when it is not an email address.
 */
export function normaliseEmail(raw: string): string | null {
  let email = raw.trim().toLowerCase()
  const at = email.lastIndexOf('@')
  if (at > 0 && nonAscii.test(email.slice(at + 1))) {
    const domain = asciiDomain(email.slice(at + 1))
    if (domain === null) return null
    email = `${email.slice(0, at + 1)}${domain}`
  }
  if (email.length === 0 || email.length > emailMaxLength) return null
  if (!emailPattern.test(email)) return null
  if (email.indexOf('@') > 64) return null
  return email
}

/** What is wrong with an address `normaliseEmail` refused, said so that the reader knows what is accepted. */
export function emailProblem(raw: string): string {
  const email = raw.trim()
  const at = email.lastIndexOf('@')
  if (at > 0 && nonAscii.test(email.slice(0, at))) {
    return "must have only ASCII letters, digits and . ! # $ % & ' * + / = ? ^ _ ` { | } ~ - before the @ (an international domain after it, such as bücher.example, is fine)"
  }
  return `must be an email address such as alice@example.com or alice@bücher.example (at most ${emailMaxLength} characters)`
}

export function requireEmail(raw: string): string {
  const email = normaliseEmail(raw)
  if (email === null) throw invalidField('email', emailProblem(raw))
  return email
}

/** `minLength`: the server's --password-min-length (decisions §13); the contract's 6 by default. */
export function requirePassword(password: string, minLength = passwordMinLength): string {
  // characters (code points), as every text limit: three emoji are not six characters
  const length = textLength(password)
  if (length < minLength) throw invalidField('password', `must be at least ${minLength} characters`)
  if (length > passwordMaxLength) throw invalidField('password', `must be at most ${passwordMaxLength} characters`)
  return password
}

export function requireDisplayName(raw: string): string {
  const name = raw.trim()
  // also C1 and bidi overrides (http/text.ts): create-admin and the setup page have no TypeBox in front
  if (name.length === 0 || textLength(name) > displayNameMaxLength || !isCleanText(name)) {
    throw invalidField('displayName', `must be 1 to ${displayNameMaxLength} characters without control characters`)
  }
  return requireVisibleName(name, 'displayName')
}

/** The default display name: what comes before the `@`, cut to the allowed length. */
export function displayNameFromEmail(email: string): string {
  return email.slice(0, email.indexOf('@')).slice(0, displayNameMaxLength) || email.slice(0, displayNameMaxLength)
}

export function toUserRecord(row: Pick<UserRow, 'id' | 'email' | 'displayName' | 'role' | 'status' | 'createdAt'>): UserRecord {
  return { id: row.id, email: row.email, displayName: row.displayName, role: row.role, status: row.status, createdAt: row.createdAt }
}

/** For adding members by email: the user with this address (any case, surrounding blanks ignored), or null. */
export function findUserByEmail(db: Db, email: string): UserRecord | null {
  const normalised = normaliseEmail(email)
  if (normalised === null) return null
  const row = db.select().from(users).where(eq(users.email, normalised)).get()
  return row ? toUserRecord(row) : null
}

export function findUserById(db: Db, id: string): UserRecord | null {
  const row = db.select().from(users).where(eq(users.id, id)).get()
  return row ? toUserRecord(row) : null
}

export function hashPassword(password: string): Promise<string> {
  return Bun.password.hash(password, { algorithm: 'argon2id' })
}

function emailTaken(email: string): AppError {
  return new AppError(409, 'EMAIL_TAKEN', `An account with the email ${email} already exists`)
}

export interface NewUser {
  email: string
  displayName?: string
  password: string
  role: Role
  status?: UserStatus
  /** the server's --password-min-length; 6 when absent */
  passwordMinLength?: number
}

/** Who asked for the account: self-registration, an admin, or the `create-admin` command. */
export type UserOrigin = 'register' | 'admin' | 'cli' | 'setup'

const creationSummary: Record<UserOrigin, (user: UserRecord) => string> = {
  register: (user) => `${user.email} registered`,
  admin: (user) => `Created ${user.role === 'ADMIN' ? 'admin' : 'user'} ${user.email}`,
  cli: (user) => `Created ${user.role === 'ADMIN' ? 'admin' : 'user'} ${user.email} with the create-admin command`,
  setup: (user) => `Created the first admin ${user.email} through the one-time setup link`,
}

/**
 * Validates, hashes and inserts a user, with its audit entry in the same transaction. The audit
 * actor is `actor`, or for a registration the new user itself. 409 EMAIL_TAKEN for a taken address.
 */
export async function createUser(db: Db, clock: Clock, input: NewUser, actor: AuditActor | null, origin: UserOrigin = actor ? 'admin' : 'cli'): Promise<UserRecord> {
  const email = requireEmail(input.email)
  const displayName = input.displayName === undefined ? displayNameFromEmail(email) : requireDisplayName(input.displayName)
  const password = requirePassword(input.password, input.passwordMinLength)
  // Checked before hashing so that a duplicate costs no argon2 time; checked again in the transaction.
  if (findUserByEmail(db, email)) throw emailTaken(email)
  const passwordHash = await hashPassword(password)
  const now = isoAt(clock)
  const row = {
    id: newId(),
    email,
    displayName,
    passwordHash,
    role: input.role,
    status: input.status ?? 'ACTIVE',
    tokenVersion: 1,
    grantGeneration: 0,
    createdAt: now,
    updatedAt: now,
  } satisfies UserRow
  const user = toUserRecord(row)
  db.transaction((tx) => {
    if (tx.select({ id: users.id }).from(users).where(eq(users.email, email)).get()) throw emailTaken(email)
    tx.insert(users).values(row).run()
    recordAudit(tx, clock, {
      actor: origin === 'register' ? { id: user.id, email: user.email } : actor,
      action: origin === 'register' ? 'user.register' : 'user.create',
      targetType: 'user',
      targetId: user.id,
      summary: creationSummary[origin](user),
      metadata: { role: user.role, status: user.status, via: origin },
    })
  })
  return user
}

/** A fresh access token for the user as they are now (their current role and token version). */
export function issueAccessToken(tokens: TokenService, row: Pick<UserRow, 'id' | 'role' | 'tokenVersion'>): Promise<string> {
  return tokens.signAccess({ id: row.id, role: row.role, tokenVersion: row.tokenVersion })
}

export interface Registration {
  id: string
  email: string
  accessToken: string
  displayName: string
  user: { id: string; email: string; displayName: string; role: Role }
}

export function hasActiveAdmin(db: Db): boolean {
  // SQL of its own (bun:sqlite caches the statement): it runs on the way to the first answer
  // (serve's setup gate), where building drizzle's query cost a few ms (issue 30)
  return db.$client.query("SELECT 1 FROM users WHERE role = 'ADMIN' AND status = 'ACTIVE' LIMIT 1").get() !== null
}

/**
 * Self-registration: an ACTIVE USER (never an admin), signed in at once. Until an administrator
 * exists the door is shut (decisions §13): 403 SETUP_REQUIRED, so a fresh server is not open to
 * whoever finds it first.
 */
export async function register(db: Db, clock: Clock, tokens: TokenService, config: Pick<Config, 'registration' | 'passwordMinLength'>, input: { email: string; password: string; displayName?: string }): Promise<Registration> {
  if (!hasActiveAdmin(db)) {
    throw new AppError(
      403,
      'SETUP_REQUIRED',
      'This server has no administrator yet, so nobody can register: open the one-time setup link miniship printed when it started (/setup?token=…), or run miniship create-admin --data-dir DIR --email you@example.com on the server (DIR: the data directory the server uses; its start-up lines print this command with it)',
    )
  }
  if (config.registration === 'closed') {
    throw new AppError(403, 'REGISTRATION_CLOSED', 'Registration is closed on this server; ask an administrator for an account')
  }
  const user = await createUser(db, clock, { ...input, role: 'USER', status: 'ACTIVE', passwordMinLength: config.passwordMinLength }, null, 'register')
  const accessToken = await issueAccessToken(tokens, { id: user.id, role: user.role, tokenVersion: 1 })
  // both shapes: register's own, and login's `{ accessToken, user }` (decisions §9)
  return { id: user.id, email: user.email, accessToken, displayName: user.displayName, user: { id: user.id, email: user.email, displayName: user.displayName, role: user.role } }
}

// ---- signing in -------------------------------------------------------------------------------

/** Failures from one address, or against one email, that make a burst worth an audit entry. */
export const loginFailureBurst = { failures: 5, windowMs: 15 * 60_000 }

interface FailureWindow {
  startedAt: number
  count: number
  audited: boolean
}

/**
 * Counts failed sign-ins per client address and per email in fixed 15-minute windows. The 5th
 * failure of a window writes one audit entry for that address (or email); later failures in the
 * same window write nothing more, so a long attack leaves one line per window and key, not one
 * per attempt. Kept in memory: a restart forgets partial counts, which only delays an entry.
 */
export class LoginFailureTracker {
  private readonly windows = new Map<string, FailureWindow>()

  constructor(private readonly clock: Clock) {}

  /** Counts one failure; answers the keys whose burst threshold this failure crossed. */
  fail(keys: string[]): string[] {
    const now = this.clock()
    if (this.windows.size > 10_000) this.sweep(now)
    const crossed: string[] = []
    for (const key of keys) {
      let window = this.windows.get(key)
      if (!window || now - window.startedAt >= loginFailureBurst.windowMs) {
        window = { startedAt: now, count: 0, audited: false }
        this.windows.set(key, window)
      }
      window.count += 1
      if (window.count >= loginFailureBurst.failures && !window.audited) {
        window.audited = true
        crossed.push(key)
      }
    }
    return crossed
  }

  /** A successful sign-in clears the email's count (not the address's: one right password on a shared address proves little). */
  succeed(key: string): void {
    this.windows.delete(key)
  }

  private sweep(now: number): void {
    for (const [key, window] of this.windows) if (now - window.startedAt >= loginFailureBurst.windowMs) this.windows.delete(key)
  }
}

let dummyHash: Promise<string> | null = null

/** Verifying against a throw-away hash keeps "unknown email" as slow as "wrong password". */
function verifyAgainstDummy(password: string): Promise<boolean> {
  dummyHash ??= hashPassword(crypto.randomUUID())
  return dummyHash.then((hash) => Bun.password.verify(password, hash))
}

export interface LoginResult {
  accessToken: string
  user: { id: string; email: string; displayName: string }
}

const invalidCredentials = () => new AppError(401, 'INVALID_CREDENTIALS', 'Invalid email or password')

/**
 * Checks email and password; 401 INVALID_CREDENTIALS whether the email exists or not, 403
 * ACCOUNT_DISABLED only for the right password of a disabled account (so guessing never learns it).
 */
export async function login(db: Db, clock: Clock, tokens: TokenService, failures: LoginFailureTracker, input: { email: string; password: string }, clientAddress: string): Promise<LoginResult> {
  const email = normaliseEmail(input.email)
  const row = email === null ? undefined : db.select().from(users).where(eq(users.email, email)).get()
  const matches = row ? await Bun.password.verify(input.password, row.passwordHash) : (await verifyAgainstDummy(input.password), false)
  if (!row || !matches) {
    const shownEmail = email ?? input.email.trim().slice(0, 80)
    const addressKey = `address:${clientAddress}`
    const emailKey = `email:${shownEmail}`
    for (const key of failures.fail([addressKey, emailKey])) {
      const byAddress = key === addressKey
      recordAudit(db, clock, {
        actor: null,
        action: 'auth.login_failures',
        targetType: byAddress ? 'address' : 'user',
        targetId: byAddress ? clientAddress : (row?.id ?? null),
        summary: byAddress
          ? `${loginFailureBurst.failures} failed sign-ins from ${clientAddress} within ${loginFailureBurst.windowMs / 60_000} minutes`
          : `${loginFailureBurst.failures} failed sign-ins for ${shownEmail}${row ? '' : ' (no such account)'} within ${loginFailureBurst.windowMs / 60_000} minutes`,
        metadata: { address: clientAddress, email: shownEmail, failures: loginFailureBurst.failures, windowMinutes: loginFailureBurst.windowMs / 60_000 },
      })
    }
    throw invalidCredentials()
  }
  if (row.status !== 'ACTIVE') {
    throw new AppError(403, 'ACCOUNT_DISABLED', 'This account is disabled; ask an administrator to enable it')
  }
  failures.succeed(`email:${row.email}`)
  const accessToken = await issueAccessToken(tokens, row)
  return { accessToken, user: { id: row.id, email: row.email, displayName: row.displayName } }
}
