// Links handed out on someone's authority (decisions §18): the grant a draft download token names, and the cheap check on use that it still holds.
import { eq, sql } from 'drizzle-orm'
import { users } from '../../db/schema'
import type { Db } from '../../db/open'
import { createChangeCheck, type WriteWatch } from '../../db/write-watch'
import { AppError } from '../../http/errors'
import type { DownloadClaims, DownloadGrant } from './tokens'

/**
 * Whose authority a link was handed out on: the user (their `grant_generation` when it was issued)
 * and, when it came through an API key, that key. The link holds while the user's generation is
 * unchanged, the user active, and the key neither revoked nor expired.
 */
export type Grant = DownloadGrant

/** The grant of a caller (a user, or a user through an API key) as of now: one primary-key read, at issue. */
export function grantOf(db: Db, caller: { id: string; apiKey?: { id?: string } | null }): Grant {
  const row = db.select({ generation: users.grantGeneration }).from(users).where(eq(users.id, caller.id)).get()
  return { userId: caller.id, generation: row?.generation ?? 0, ...(caller.apiKey?.id === undefined ? {} : { keyId: caller.apiKey.id }) }
}

/** The column value that ends every link handed to `users.id`: bump it in the transaction that narrows their authority. */
export const bumpedGrantGeneration = sql`${users.grantGeneration} + 1`

const userEnded = () => new AppError(401, 'TOKEN_REVOKED', 'This download link was handed out on the authority of an account that is no longer active or no longer a member; ask a member for a new link')
const publicEnded = () => new AppError(401, 'TOKEN_REVOKED', "This download link came from the miniapp's public experience install, which has since been turned off; ask a member for a link")
const keyEnded = () => new AppError(401, 'TOKEN_REVOKED', 'This download link was handed out through an API key that has been revoked or has expired; ask for a new link')

const cacheLimit = 10_000

/**
 * Checks the grant a download token names against the database's state held in memory: the user
 * rows and key rows it read, dropped whenever the database may have changed (the same signal the
 * runtime's caches use: a writing request ran, or a second passed, and SQLite's change counter
 * moved). A file download asks no query while nothing was written.
 */
export function createGrantCheck(db: Db, writes?: WriteWatch) {
  const userQuery = db.$client.query<{ status: string; generation: number }, [string]>('SELECT status, grant_generation AS generation FROM users WHERE id = ?')
  const publicQuery = db.$client.query<{ public: number }, [string]>('SELECT a.experience_public AS public FROM versions v JOIN mini_apps a ON a.id = v.mini_app_id WHERE v.id = ?')
  const keyQuery = db.$client.query<{ revokedAt: string | null; expiresAt: string | null }, [string]>('SELECT revoked_at AS revokedAt, expires_at AS expiresAt FROM api_keys WHERE id = ?')
  const totalChanges = db.$client.query<{ changes: number }, []>('SELECT total_changes() AS changes')
  const mayHaveChanged = createChangeCheck(writes)
  const usersById = new Map<string, { active: boolean; generation: number } | null>()
  const keysById = new Map<string, { revoked: boolean; expiresAt: number | null } | null>()
  /** by version id: whether its miniapp's experience install is public now */
  const publicByVersion = new Map<string, boolean>()
  let asOf = -1

  function freshen(): void {
    if (usersById.size >= cacheLimit || keysById.size >= cacheLimit || publicByVersion.size >= cacheLimit) asOf = -1
    else if (!mayHaveChanged()) return
    const changes = totalChanges.get()!.changes
    if (changes === asOf) return
    asOf = changes
    usersById.clear()
    keysById.clear()
    publicByVersion.clear()
  }

  function user(id: string) {
    let found = usersById.get(id)
    if (found === undefined) {
      const row = userQuery.get(id)
      found = row ? { active: row.status === 'ACTIVE', generation: row.generation } : null
      usersById.set(id, found)
    }
    return found
  }

  function key(id: string) {
    let found = keysById.get(id)
    if (found === undefined) {
      const row = keyQuery.get(id)
      found = row ? { revoked: row.revokedAt !== null, expiresAt: row.expiresAt === null ? null : Date.parse(row.expiresAt) } : null
      keysById.set(id, found)
    }
    return found
  }

  return {
    /** null while the grant `claims` name still holds (or they name none: a published version's token); else the 401 to answer. */
    refusal(claims: Pick<DownloadClaims, 'vid' | 'uid' | 'ug' | 'kid' | 'pub'>, now: number): AppError | null {
      if (claims.uid === undefined && claims.kid === undefined && claims.pub === undefined) return null
      freshen()
      if (claims.pub === 1) {
        let open = publicByVersion.get(claims.vid)
        if (open === undefined) publicByVersion.set(claims.vid, (open = publicQuery.get(claims.vid)?.public === 1))
        if (!open) return publicEnded()
      }
      if (claims.uid !== undefined) {
        const holder = user(claims.uid)
        if (!holder || !holder.active || holder.generation !== (claims.ug ?? 0)) return userEnded()
      }
      if (claims.kid !== undefined) {
        const issuer = key(claims.kid)
        if (!issuer || issuer.revoked || (issuer.expiresAt !== null && issuer.expiresAt <= now)) return keyEnded()
      }
      return null
    },
  }
}

export type GrantCheck = ReturnType<typeof createGrantCheck>
