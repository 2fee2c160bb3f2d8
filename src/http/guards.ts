// Who is calling: the Bearer-token check as an Elysia macro (`auth: true | scope`, `admin: true`), for access tokens and API keys.
import { Elysia } from 'elysia'
import { eq } from 'drizzle-orm'
import { AppError } from './errors'
import { clientAddress } from './client'
import { users } from '../db/schema'
import type { Config } from '../config'
import type { Db } from '../db/open'
import type { TokenService, Role } from '../modules/auth/tokens'
import { isApiKey, type ApiKeyAuthenticator, type ApiKeyGrant } from '../modules/api-keys/service'
import type { ApiKeyScope } from '../modules/api-keys/model'

export interface AuthUser {
  id: string
  email: string
  displayName: string
  role: Role
  status: 'ACTIVE' | 'DISABLED'
  /** set when the caller came with an API key: what the key allows (its `role` is then USER) */
  apiKey?: ApiKeyGrant
}

/**
 * What a route lets in, declared once per route: `true` signed-in people only (an access token),
 * the API key scope with which a key may call it too (access tokens always may), or `any-key` for
 * what every valid key may call (who am I).
 */
export type Access = true | 'any-key' | ApiKeyScope

function keysRefused(adminOnly: boolean): AppError {
  return new AppError(
    403,
    'SCOPE_REQUIRED',
    adminOnly ? 'API keys cannot call admin endpoints; sign in as an administrator' : 'API keys cannot do this (no scope allows it); sign in with an account (miniship login)',
  )
}

/**
 * The active user an access token belongs to, or an AppError: 401 for anything wrong with the token
 * itself, including a token revoked by a disable, password reset or role change (its `tv` is old).
 */
export async function userFromAccessToken(db: Db, tokens: TokenService, token: string): Promise<AuthUser> {
  if (isApiKey(token)) throw keysRefused(false)
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

export function createGuard(db: Db, tokens: TokenService, apiKeys: ApiKeyAuthenticator, config: Pick<Config, 'trustProxy'>) {
  // Authentication runs in `transform`, before body validation, so that a caller who may not call
  // a route learns 401/403 rather than what its body should look like; `resolve` hands the user on.
  const authenticated = new WeakMap<Request, AuthUser>()
  type AddressSource = Parameters<typeof clientAddress>[1]
  const authenticate = async (request: Request, server: AddressSource, access: Access, adminOnly: boolean) => {
    const token = bearerToken(request.headers.get('authorization') ?? undefined)
    let user: AuthUser
    if (isApiKey(token)) {
      // An invalid key is a 401 wherever it is sent; a valid one is refused (403) where no scope reaches.
      const scope = access === true || access === 'any-key' || adminOnly ? null : access
      user = apiKeys.authenticate(token, scope, clientAddress(request, server, config))
      if (access === true || adminOnly) throw keysRefused(adminOnly)
    } else {
      user = await userFromAccessToken(db, tokens, token)
      if (adminOnly && user.role !== 'ADMIN') throw new AppError(403, 'ADMIN_REQUIRED', 'Only administrators may do this')
    }
    authenticated.set(request, user)
  }
  const userOf = (request: Request): AuthUser => {
    const user = authenticated.get(request)
    if (!user) throw new AppError(401, 'AUTH_REQUIRED', 'Sign in first: send the header Authorization: Bearer <accessToken>')
    return user
  }
  return new Elysia({ name: 'guard' }).macro({
    auth: (access: Access) => ({
      detail: { security: [{ bearer: [] }], ...(access === true ? {} : { description: access === 'any-key' ? 'API keys may call this too' : `API keys with the "${access}" scope may call this too` }) },
      transform: ({ request, server }: { request: Request; server: AddressSource }) => authenticate(request, server, access, false),
      resolve: ({ request }: { request: Request }) => ({ user: userOf(request) }),
    }),
    admin: {
      detail: { security: [{ bearer: [] }], description: 'Administrators only' },
      transform: ({ request, server }) => authenticate(request, server, true, true),
      resolve: ({ request }) => ({ user: userOf(request) }),
    },
  })
}

export type Guard = ReturnType<typeof createGuard>
