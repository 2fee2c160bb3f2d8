// Who is calling: the Bearer-token check as an Elysia macro (`auth: true`, `admin: true`).
import { Elysia } from 'elysia'
import { eq } from 'drizzle-orm'
import { AppError } from './errors'
import { users } from '../db/schema'
import type { Db } from '../db/open'
import type { TokenService, Role } from '../modules/auth/tokens'

export interface AuthUser {
  id: string
  email: string
  displayName: string
  role: Role
  status: 'ACTIVE' | 'DISABLED'
}

/**
 * The active user an access token belongs to, or an AppError: 401 for anything wrong with the token
 * itself, including a token revoked by a disable, password reset or role change (its `tv` is old).
 */
export async function userFromAccessToken(db: Db, tokens: TokenService, token: string): Promise<AuthUser> {
  const result = await tokens.verify(token)
  if (!result.ok) {
    throw result.reason === 'expired'
      ? new AppError(401, 'TOKEN_EXPIRED', 'The access token has expired; sign in again')
      : new AppError(401, 'INVALID_TOKEN', 'The access token is not valid; sign in again')
  }
  if (result.kind !== 'access') throw new AppError(401, 'INVALID_TOKEN', 'A download token cannot be used to call the API')
  const row = db
    .select({ id: users.id, email: users.email, displayName: users.displayName, role: users.role, status: users.status, tokenVersion: users.tokenVersion })
    .from(users)
    .where(eq(users.id, result.claims.sub))
    .get()
  if (!row || row.tokenVersion !== result.claims.tv || row.status !== 'ACTIVE') {
    throw new AppError(401, 'TOKEN_REVOKED', 'The access token is no longer valid (account changed or disabled); sign in again')
  }
  return { id: row.id, email: row.email, displayName: row.displayName, role: row.role, status: row.status }
}

export function bearerToken(header: string | undefined): string {
  if (header === undefined || header.trim() === '') {
    throw new AppError(401, 'AUTH_REQUIRED', 'Sign in first: send the header Authorization: Bearer <accessToken>')
  }
  const match = /^Bearer +(\S+)\s*$/i.exec(header)
  if (!match) throw new AppError(401, 'INVALID_AUTH_HEADER', 'The Authorization header must be "Bearer <accessToken>"')
  return match[1]!
}

export function createGuard(db: Db, tokens: TokenService) {
  // Authentication runs in `transform`, before body validation, so that a caller who may not call
  // a route learns 401/403 rather than what its body should look like; `resolve` hands the user on.
  const authenticated = new WeakMap<Request, AuthUser>()
  const authenticate = async (request: Request, adminOnly: boolean) => {
    const user = await userFromAccessToken(db, tokens, bearerToken(request.headers.get('authorization') ?? undefined))
    if (adminOnly && user.role !== 'ADMIN') throw new AppError(403, 'ADMIN_REQUIRED', 'Only administrators may do this')
    authenticated.set(request, user)
  }
  const userOf = (request: Request): AuthUser => {
    const user = authenticated.get(request)
    if (!user) throw new AppError(401, 'AUTH_REQUIRED', 'Sign in first: send the header Authorization: Bearer <accessToken>')
    return user
  }
  return new Elysia({ name: 'guard' }).macro({
    auth: {
      detail: { security: [{ bearer: [] }] },
      transform: ({ request }) => authenticate(request, false),
      resolve: ({ request }) => ({ user: userOf(request) }),
    },
    admin: {
      detail: { security: [{ bearer: [] }], description: 'Administrators only' },
      transform: ({ request }) => authenticate(request, true),
      resolve: ({ request }) => ({ user: userOf(request) }),
    },
  })
}

export type Guard = ReturnType<typeof createGuard>
