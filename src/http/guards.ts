// Who is calling: the Bearer-token check as an Elysia macro (`auth: true | scope`, `admin: true`), for access tokens and API keys.
// It knows no feature module: the app hands it the two verifiers (access tokens, API keys).
import { Elysia } from 'elysia'
import { AppError } from './errors'
import { clientAddress } from './client'
import type { Config } from '../config'

export type Role = 'ADMIN' | 'USER'

/** What an API key may be scoped to (the api-keys module's vocabulary, declared where the guard checks it). */
export const apiKeyScopes = ['read', 'upload', 'release'] as const
export type ApiKeyScope = (typeof apiKeyScopes)[number]

/** What a caller that came with an API key may do. */
export interface ApiKeyGrant {
  id: string
  name: string
  prefix: string
  scopes: ApiKeyScope[]
  /** null: every miniapp its owner is a member of */
  miniAppIds: string[] | null
}

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

export function keysRefused(adminOnly: boolean): AppError {
  return new AppError(
    403,
    'SCOPE_REQUIRED',
    adminOnly ? 'API keys cannot call admin endpoints; sign in as an administrator' : 'API keys cannot do this (no scope allows it); sign in with an account (miniship login)',
  )
}

export function bearerToken(header: string | undefined): string {
  if (header === undefined || header.trim() === '') {
    throw new AppError(401, 'AUTH_REQUIRED', 'Sign in first: send the header Authorization: Bearer <accessToken>')
  }
  const match = /^Bearer +(\S+)\s*$/i.exec(header)
  if (!match) throw new AppError(401, 'INVALID_AUTH_HEADER', 'The Authorization header must be "Bearer <accessToken>"')
  return match[1]!
}

/** How the guard tells who a bearer token stands for; the app wires these to the auth and api-keys modules. */
export interface CallerVerifiers {
  /** an API key is told apart from an access token by its form alone */
  isApiKey(token: string): boolean
  /** the active user an access token belongs to, or an AppError (401) */
  accessToken(token: string): Promise<AuthUser>
  /** the caller a key stands for, or an AppError: 401 for a bad key, 403 SCOPE_REQUIRED when it lacks `scope` */
  apiKey(key: string, scope: ApiKeyScope | null, address: string | null): AuthUser
  /**
   * the UUID of a miniapp named by UUID or appId that `caller` may see (null: none, or hidden from them),
   * so `:miniAppId` in a path takes either; a hidden one stays as sent, so its 404 names what was sent
   */
  miniAppIdOf?(idOrAppId: string, caller: AuthUser): string | null
}

/**
 * Every JSON body a signed-in route takes is an object: Elysia reads an array, a string, a number or
 * a boolean as `{}` where every field is optional (`PATCH …` with `[]` answered 200 and changed
 * nothing; a publish with `5` published with the defaults). Checked after authentication, as the
 * body's fields are. No body at all stays fine.
 */
function checkBodyShape(body: unknown): void {
  if (body === undefined || body === '' || (typeof body === 'object' && body !== null && !Array.isArray(body))) return
  const shape = body === null ? 'null' : Array.isArray(body) ? 'an array' : `a ${typeof body}`
  throw new AppError(400, 'VALIDATION_ERROR', `The request body must be a JSON object (got ${shape})`, [{ field: 'body', message: 'must be a JSON object' }])
}

export function createGuard(verify: CallerVerifiers, config: Pick<Config, 'trustProxy'>) {
  // Authentication runs in `transform`, before body validation, so that a caller who may not call
  // a route learns 401/403 rather than what its body should look like; `resolve` hands the user on.
  const authenticated = new WeakMap<Request, AuthUser>()
  type AddressSource = Parameters<typeof clientAddress>[1]
  const authenticate = async (request: Request, server: AddressSource, access: Access, adminOnly: boolean) => {
    const token = bearerToken(request.headers.get('authorization') ?? undefined)
    let user: AuthUser
    if (verify.isApiKey(token)) {
      // An invalid key is a 401 wherever it is sent; a valid one is refused (403) where no scope reaches.
      const scope = access === true || access === 'any-key' || adminOnly ? null : access
      user = verify.apiKey(token, scope, clientAddress(request, server, config))
      if (access === true || adminOnly) throw keysRefused(adminOnly)
    } else {
      user = await verify.accessToken(token)
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
      detail: {
        security: [{ bearer: [] }],
        description: access === true ? 'Signed-in accounts only: API keys answer 403 SCOPE_REQUIRED' : access === 'any-key' ? 'API keys may call this too' : `API keys with the "${access}" scope may call this too`,
      },
      transform: async ({ request, server, params, body }: { request: Request; server: AddressSource; params?: Record<string, string>; body?: unknown }) => {
        // `/mini-apps/com.example.shop/…` is `/mini-apps/<its UUID>/…` for every route below (console URLs use either)
        // a segment that does not decode (`%ff`) reaches here as null: no miniapp has it, so the route answers 404 (after authentication)
        if (params !== undefined && params.miniAppId !== undefined && typeof params.miniAppId !== 'string') params.miniAppId = ''
        await authenticate(request, server, access, false)
        // only for a caller who may see it: a non-member's 404 would otherwise name the UUID of an
        // existing appId and "com.x not found" for an unknown one, so App IDs could be probed
        if (params?.miniAppId !== undefined && verify.miniAppIdOf) params.miniAppId = verify.miniAppIdOf(params.miniAppId, userOf(request)) ?? params.miniAppId
        checkBodyShape(body)
      },
      resolve: ({ request }: { request: Request }) => ({ user: userOf(request) }),
    }),
    admin: {
      detail: { security: [{ bearer: [] }], description: 'Administrators only' },
      transform: async ({ request, server, body }) => {
        await authenticate(request, server, true, true)
        checkBodyShape(body)
      },
      resolve: ({ request }) => ({ user: userOf(request) }),
    },
  })
}

export type Guard = ReturnType<typeof createGuard>
