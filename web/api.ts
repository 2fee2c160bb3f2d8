// The console's only door to the server: token storage, JSON requests and the error body shape.
// The server's answers are typed from its own schemas (import type: nothing of the server is bundled),
// so a renamed field fails `tsc`, not the console at run time.
import type { Static } from 'elysia'
import type { miniAppRecord } from '../src/modules/miniapps/model.ts'
import type { channelRecord } from '../src/modules/channels/model.ts'
import type { apiKeyRecord } from '../src/modules/api-keys/model.ts'
import type { insightsAnswer } from '../src/modules/insights/model.ts'
import type { auditLogSchema } from '../src/modules/admin/model.ts'

/**
 * Storage key of the access token; the token never goes into a URL. "Keep me signed in" keeps it
 * in localStorage (every tab, survives restarts); otherwise sessionStorage (this tab only).
 */
export const TOKEN_KEY = 'miniship.token'
/** Written on sign-out so that tabs holding a per-tab token sign out too (they get a storage event). */
export const SIGNED_OUT_KEY = 'miniship.signedOut'

function storages(): Storage[] {
  const found: Storage[] = []
  try {
    found.push(sessionStorage)
  } catch {
    // storage disabled
  }
  try {
    found.push(localStorage)
  } catch {
    // storage disabled
  }
  return found
}

export function getToken(): string | null {
  for (const storage of storages()) {
    const token = storage.getItem(TOKEN_KEY)
    if (token) return token
  }
  return null
}

export function setToken(token: string, keep: boolean): void {
  for (const storage of storages()) storage.removeItem(TOKEN_KEY)
  ;(keep ? localStorage : sessionStorage).setItem(TOKEN_KEY, token)
}

/** Forgets the token here; `everywhere` also tells the other tabs of this browser to forget theirs. */
export function clearToken(everywhere = false): void {
  for (const storage of storages()) {
    try {
      storage.removeItem(TOKEN_KEY)
    } catch {
      // storage unavailable: nothing was stored either
    }
  }
  if (!everywhere) return
  try {
    localStorage.setItem(SIGNED_OUT_KEY, String(Date.now()))
  } catch {
    // no localStorage: other tabs cannot be told
  }
}

// ---- records, as decisions.md §2 describes them -------------------------------------------

export type Role = 'ADMIN' | 'USER'
export type UserStatus = 'ACTIVE' | 'DISABLED'
export type VersionStatus = 'DRAFT' | 'IN_REVIEW' | 'PUBLISHED'
export type MemberRole = 'OWNER' | 'DEVELOPER'

export interface Person {
  id: string
  email: string
  displayName?: string | null
}

export interface Me extends Person {
  role: Role
  status: UserStatus
}

export interface User extends Person {
  role: Role
  status: UserStatus
  createdAt: string
}

/** The server's miniapp record (miniapps/model.ts); the list endpoint adds its channels. */
export type MiniApp = Static<typeof miniAppRecord> & { channels?: Channel[] }

export interface FileInfo {
  size: number
  sha256: string
}

export const FILE_KEYS = ['bundleIos', 'bundleAndroid', 'manifest', 'assetsIos', 'assetsAndroid'] as const
export type FileKey = (typeof FILE_KEYS)[number]

export interface Version {
  id: string
  miniAppId?: string
  version: string
  buildNumber: number
  releaseType?: string
  status: VersionStatus
  /** the channel its upload named (release controls; older servers do not send it) */
  channel?: string | null
  changelog?: string | null
  createdAt: string
  createdBy?: Person | null
  publishedAt?: string | null
  files?: Partial<Record<FileKey, FileInfo>>
  /** total downloads, where the server counts them */
  downloads?: number | { ios?: number; android?: number } | null
  /** who signed it (null: unsigned; absent on servers without signing) */
  signature?: VersionSignature | null
  /** the channels it is still a release of, where publishing it is refused (the workspace's; absent on older servers) */
  releaseOf?: string[]
  /** the channels where it was reverted last: a rollback to it there warns ROLLBACK_OF_REVERTED (the workspace's; absent on older servers) */
  revertedIn?: string[]
}

export interface VersionSignature {
  algorithm: 'ed25519'
  keyId: string
  keyName: string | null
  keyRevokedAt: string | null
  signedAt: string
}

/** A public key a miniapp trusts to sign its versions. */
export interface SigningKey {
  keyId: string
  name: string
  publicKey: string
  createdAt: string
  revokedAt: string | null
}

export interface ReleaseHistoryEntry {
  id: string
  action: 'PUBLISH' | 'ROLLBACK' | 'ROLLOUT'
  versionId: string
  version: string
  previousVersionId?: string | null
  channel?: string | null
  rolloutPercent?: number | null
  notes?: string | null
  actor?: Person | null
  /** the API key the change was made with (`actor` is its owner); absent on older servers and rows */
  apiKey?: { name: string } | null
  createdAt: string
}

export interface AccessLink {
  versionId: string
  version: string
  installUrl: string
  /** what the host app opens (the QR code encodes it); older servers do not send it */
  deepLink?: string
  /** null for links that do not expire (published versions) */
  expiresAt?: string | null
}

export type ChannelRelease = NonNullable<Channel['release']>

/** A channel as GET …/channels answers it (channels/model.ts): state, releases, the guard. */
export type Channel = Static<typeof channelRecord>

export interface Viewer {
  memberRole: 'OWNER' | 'DEVELOPER' | null
  isAdmin: boolean
  canManageMembers: boolean
}

export interface Workspace {
  miniApp: MiniApp
  versions: Version[]
  releaseHistory: ReleaseHistoryEntry[]
  accessLinks: AccessLink[]
  /** release channels (absent on servers without release controls) */
  channels?: Channel[]
  /** the next page of versions; absent on servers that send every version at once */
  nextCursor?: string | null
  /** what the signed-in user is to this miniapp (older servers may not send it) */
  viewer?: Viewer
}

export type ApiKeyScope = ApiKey['scopes'][number]

export type ApiKey = Static<typeof apiKeyRecord>

export interface PlatformCount {
  ios: number
  android: number
}

/** GET …/insights (insights/model.ts); versionId null is the `other` row (decisions §13). */
export type Insights = Static<typeof insightsAnswer>

export interface CliSessionDetails {
  code: string
  status: 'pending' | 'approved' | 'denied' | 'expired'
  createdAt: string
  expiresAt: string
  requestedFrom: { address: string | null; userAgent: string | null }
}

export interface UploadWarning {
  code: string
  message: string
}

export type AuditLog = Static<typeof auditLogSchema>

/** A member as the console shows it; the server's exact shape is normalised in pages/workspace.ts. */
export interface Member {
  userId: string
  email: string
  displayName: string
  role: MemberRole | string
}

// ---- errors -------------------------------------------------------------------------------

export interface ErrorDetail {
  field: string
  message: string
}

/** Every API error body: `{ statusCode, error, code, message, details? }` (decisions.md §1). */
export class ApiError extends Error {
  /** Set when a 401 already signed the user out; callers then have nothing left to show. */
  handled = false

  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: ErrorDetail[] = [],
  ) {
    super(message)
    this.name = 'ApiError'
  }
}

type UnauthorizedHandler = (error: ApiError) => void
let unauthorizedHandler: UnauthorizedHandler | null = null

/** Called when a request that carried a token is answered 401: the session is over. */
export function onUnauthorized(handler: UnauthorizedHandler): void {
  unauthorizedHandler = handler
}

function messageOf(body: unknown, status: number, statusText: string): string {
  if (body && typeof body === 'object' && 'message' in body) {
    const message = (body as { message: unknown }).message
    if (typeof message === 'string' && message.trim()) return message
    if (Array.isArray(message) && message.length) return message.map(String).join('; ')
  }
  if (status === 413) return 'The request was too large for the server.'
  if (status === 429) return 'Too many attempts. Wait a minute and try again.'
  return `The server answered ${status}${statusText ? ` ${statusText}` : ''} without an explanation.`
}

function detailsOf(body: unknown): ErrorDetail[] {
  if (!body || typeof body !== 'object' || !('details' in body)) return []
  const details = (body as { details: unknown }).details
  if (!Array.isArray(details)) return []
  return details
    .filter((d): d is { field?: unknown; message?: unknown } => !!d && typeof d === 'object')
    .map((d) => ({ field: String(d.field ?? ''), message: String(d.message ?? '') }))
}

interface RequestOptions {
  /** false for sign-in and register: no token is sent, and a 401 is just a wrong password. */
  auth?: boolean
}

/** One JSON request; resolves to the parsed body or throws ApiError with the server's message. */
export async function api<T>(
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
  path: string,
  body?: unknown,
  options: RequestOptions = {},
): Promise<T> {
  const headers: Record<string, string> = { Accept: 'application/json' }
  const token = options.auth === false ? null : getToken()
  if (token) headers.Authorization = `Bearer ${token}`
  if (body !== undefined) headers['Content-Type'] = 'application/json'

  let response: Response
  try {
    response = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: 'no-store',
    })
  } catch {
    throw new ApiError(0, 'NETWORK_ERROR', 'Could not reach the server. Check that it is running and try again.')
  }

  const text = await response.text()
  let parsed: unknown = null
  if (text) {
    try {
      parsed = JSON.parse(text)
    } catch {
      parsed = null
    }
  }

  if (!response.ok) {
    const code =
      parsed && typeof parsed === 'object' && typeof (parsed as { code?: unknown }).code === 'string'
        ? (parsed as { code: string }).code
        : `HTTP_${response.status}`
    const error = new ApiError(
      response.status,
      code,
      messageOf(parsed, response.status, response.statusText),
      detailsOf(parsed),
    )
    if (response.status === 401 && token && unauthorizedHandler) {
      error.handled = true
      unauthorizedHandler(error)
    }
    throw error
  }
  return parsed as T
}

function errorFrom(status: number, statusText: string, text: string): ApiError {
  let parsed: unknown = null
  try {
    parsed = text ? JSON.parse(text) : null
  } catch {
    parsed = null
  }
  const code = parsed && typeof parsed === 'object' && typeof (parsed as { code?: unknown }).code === 'string' ? (parsed as { code: string }).code : `HTTP_${status}`
  return new ApiError(status, code, messageOf(parsed, status, statusText), detailsOf(parsed))
}

export interface UploadProgress {
  loaded: number
  total: number
}

/**
 * A multipart upload with progress: fetch cannot report how much of a request body has been
 * sent, XMLHttpRequest's upload events can. Resolves to the parsed answer or throws ApiError.
 */
export function uploadForm<T>(path: string, form: FormData, onProgress: (progress: UploadProgress) => void, signal?: AbortSignal): Promise<T> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest()
    xhr.open('POST', path)
    xhr.setRequestHeader('Accept', 'application/json')
    const token = getToken()
    if (token) xhr.setRequestHeader('Authorization', `Bearer ${token}`)
    xhr.upload.addEventListener('progress', (event) => onProgress({ loaded: event.loaded, total: event.lengthComputable ? event.total : 0 }))
    xhr.addEventListener('error', () => reject(new ApiError(0, 'NETWORK_ERROR', 'The upload was interrupted: the server could not be reached.')))
    xhr.addEventListener('abort', () => reject(new ApiError(0, 'ABORTED', 'The upload was cancelled.')))
    xhr.addEventListener('load', () => {
      if (xhr.status >= 200 && xhr.status < 300) {
        try {
          resolve(JSON.parse(xhr.responseText) as T)
        } catch {
          reject(new ApiError(xhr.status, 'BAD_ANSWER', 'The server accepted the upload but its answer could not be read.'))
        }
        return
      }
      const error = errorFrom(xhr.status, xhr.statusText, xhr.responseText)
      if (xhr.status === 401 && token && unauthorizedHandler) {
        error.handled = true
        unauthorizedHandler(error)
      }
      reject(error)
    })
    signal?.addEventListener('abort', () => xhr.abort())
    xhr.send(form)
  })
}

/** Path segment escaping for ids and codes put into URLs. */
export function seg(value: string): string {
  return encodeURIComponent(value)
}
