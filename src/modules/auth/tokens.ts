// Access and download tokens: HS256 JWTs signed with the data directory's secret (decisions §3, §6).
import { SignJWT, jwtVerify, errors as joseErrors } from 'jose'
import type { Clock } from '../../ids'
import type { Role } from '../../http/guards'

export type { Role }

export interface AccessClaims {
  sub: string
  role: Role
  /** the user's token version when the token was issued */
  tv: number
  iat: number
  exp: number
}

export interface DownloadClaims {
  purpose: 'download'
  /** the one version this token opens */
  vid: string
  /** the user an unpublished version's link was handed to (on whose authority): it stops working when that authority ends (auth/grants.ts) */
  uid?: string
  /** that user's grant generation when it was issued (absent: 0, a token from before generations) */
  ug?: number
  /** the API key it was handed out through, if any */
  kid?: string
  /** 1: handed out by the miniapp's public experience install, without a member: it holds while experiencePublic is on */
  pub?: 1
  exp?: number
}

/** The grant a download token names (auth/grants.ts `Grant`). */
export interface DownloadGrant {
  userId: string
  generation: number
  keyId?: string
}

/** The authority of the public experience install (decisions §18): the miniapp's experiencePublic switch, not a person. */
export const publicExperienceGrant = { publicExperience: true } as const
export type IssuedTo = DownloadGrant | typeof publicExperienceGrant

export type VerifyResult =
  | { ok: true; kind: 'access'; claims: AccessClaims }
  | { ok: true; kind: 'download'; claims: DownloadClaims }
  | { ok: false; reason: 'expired' | 'invalid' }

const cacheLimit = 10_000

const hs256Header = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64url')

/**
 * The compact HS256 JWT of `claims`, byte for byte what jose's `SignJWT` makes with the header
 * `{ alg: 'HS256', typ: 'JWT' }`, but synchronous: WebCrypto's HMAC (which jose calls) is a promise
 * and a hop to another thread, about 35 µs a token here against 3 µs, and a workspace page signs 50
 * links (issue 30). tokens.test.ts holds it to jose's output.
 */
function signHs256(secret: Uint8Array, claims: object): string {
  const input = `${hs256Header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`
  return `${input}.${new Bun.CryptoHasher('sha256', secret).update(input).digest('base64url')}`
}

export interface TokenService {
  signAccess(user: { id: string; role: Role; tokenVersion: number }): Promise<string>
  /**
   * Without `expiresAt` the token never expires and is the same string for the same version (a
   * published version's: no `issuedTo` either). `issuedTo` is the grant a draft's link is handed out on.
   */
  signDownload(versionId: string, expiresAt: number | null, issuedTo?: IssuedTo): Promise<string>
  /**
   * The `token` of release-stable URLs (decisions §9): those are public, but every URL in install
   * info carries a token; this one names the miniapp, never expires and is the same string every time.
   */
  signRelease(appId: string): Promise<string>
  verify(token: string): Promise<VerifyResult>
}

/**
 * Verification is cached by token string (bounded): a runtime fetching install info and five files
 * presents the same token again and again, and HMAC + JSON parsing on each costs more than the
 * lookup that follows. Expiry is still checked against the clock on every hit.
 */
export function createTokenService(secret: Uint8Array, clock: Clock, accessTtlSeconds: number): TokenService {
  const key = crypto.subtle.importKey('raw', secret as Uint8Array<ArrayBuffer>, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign', 'verify'])
  const verified = new Map<string, AccessClaims | DownloadClaims>()
  const nowSeconds = () => Math.floor(clock() / 1000)

  function fromClaims(claims: AccessClaims | DownloadClaims): VerifyResult {
    if (claims.exp !== undefined && claims.exp <= nowSeconds()) return { ok: false, reason: 'expired' }
    return 'purpose' in claims ? { ok: true, kind: 'download', claims } : { ok: true, kind: 'access', claims }
  }

  return {
    async signAccess(user) {
      const iat = nowSeconds()
      return new SignJWT({ role: user.role, tv: user.tokenVersion })
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setSubject(user.id)
        .setIssuedAt(iat)
        .setExpirationTime(iat + accessTtlSeconds)
        .sign(await key)
    },

    async signDownload(versionId, expiresAt, issuedTo) {
      const claims: DownloadClaims =
        issuedTo === undefined
          ? { purpose: 'download', vid: versionId }
          : 'publicExperience' in issuedTo
            ? { purpose: 'download', vid: versionId, pub: 1 }
            : { purpose: 'download', vid: versionId, uid: issuedTo.userId, ug: issuedTo.generation, ...(issuedTo.keyId === undefined ? {} : { kid: issuedTo.keyId }) }
      if (expiresAt !== null) claims.exp = Math.floor(expiresAt / 1000)
      return signHs256(secret, claims)
    },

    async signRelease(appId) {
      return signHs256(secret, { purpose: 'release', app: appId })
    },

    async verify(token) {
      const cached = verified.get(token)
      if (cached) return fromClaims(cached)
      if (token.length > 4096) return { ok: false, reason: 'invalid' }
      let payload: Record<string, unknown>
      try {
        const result = await jwtVerify(token, await key, { algorithms: ['HS256'], currentDate: new Date(clock()) })
        payload = result.payload as Record<string, unknown>
      } catch (error) {
        return { ok: false, reason: error instanceof joseErrors.JWTExpired ? 'expired' : 'invalid' }
      }
      let claims: AccessClaims | DownloadClaims
      if (payload.purpose === 'download' && typeof payload.vid === 'string') {
        claims = { purpose: 'download', vid: payload.vid, exp: typeof payload.exp === 'number' ? payload.exp : undefined }
        if (typeof payload.uid === 'string') claims.uid = payload.uid
        if (typeof payload.ug === 'number') claims.ug = payload.ug
        if (typeof payload.kid === 'string') claims.kid = payload.kid
        if (payload.pub === 1) claims.pub = 1
      } else if (
        typeof payload.sub === 'string' &&
        (payload.role === 'ADMIN' || payload.role === 'USER') &&
        typeof payload.tv === 'number' &&
        typeof payload.exp === 'number' &&
        typeof payload.iat === 'number'
      ) {
        claims = { sub: payload.sub, role: payload.role, tv: payload.tv, iat: payload.iat, exp: payload.exp }
      } else {
        return { ok: false, reason: 'invalid' }
      }
      if (verified.size >= cacheLimit) verified.clear()
      verified.set(token, claims)
      return fromClaims(claims)
    },
  }
}
