// Who an access token stands for: the verifier the guard (http/guards.ts) is handed, also used where a token arrives outside the guard.
import { eq } from 'drizzle-orm'
import { users } from '../../db/schema'
import type { Db } from '../../db/open'
import { AppError } from '../../http/errors'
import { keysRefused, type AuthUser } from '../../http/guards'
import { isApiKey } from '../api-keys/service'
import type { TokenService } from './tokens'

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
