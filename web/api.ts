// The console's only door to the server: token storage, JSON requests and the error body shape.

/** sessionStorage key of the access token; the token never goes into a URL. */
const TOKEN_KEY = 'miniship.token'

export function getToken(): string | null {
  try {
    return sessionStorage.getItem(TOKEN_KEY)
  } catch {
    return null
  }
}

export function setToken(token: string): void {
  sessionStorage.setItem(TOKEN_KEY, token)
}

export function clearToken(): void {
  try {
    sessionStorage.removeItem(TOKEN_KEY)
  } catch {
    // storage unavailable: nothing was stored either
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

export interface MiniApp {
  id: string
  appId: string
  name: string
  description?: string | null
  iconUrl?: string | null
  currentExperienceVersionId?: string | null
  currentReviewVersionId?: string | null
  currentReleaseVersionId?: string | null
  createdAt?: string
  updatedAt?: string
}

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
  changelog?: string | null
  createdAt: string
  createdBy?: Person | null
  publishedAt?: string | null
  files?: Partial<Record<FileKey, FileInfo>>
}

export interface ReleaseHistoryEntry {
  id: string
  action: 'PUBLISH' | 'ROLLBACK'
  versionId: string
  version: string
  previousVersionId?: string | null
  notes?: string | null
  actor?: Person | null
  createdAt: string
}

export interface AccessLink {
  versionId: string
  version: string
  installUrl: string
}

export interface Workspace {
  miniApp: MiniApp
  versions: Version[]
  releaseHistory: ReleaseHistoryEntry[]
  accessLinks: AccessLink[]
  /** what the signed-in user is to this miniapp (older servers may not send it) */
  viewer?: { memberRole: 'OWNER' | 'DEVELOPER' | null; isAdmin: boolean; canManageMembers: boolean }
}

export interface AuditLog {
  id: string
  actorId?: string | null
  actorEmail?: string | null
  action: string
  targetType?: string | null
  targetId?: string | null
  summary?: string | null
  metadata?: unknown
  createdAt: string
}

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

/** Path segment escaping for ids and codes put into URLs. */
export function seg(value: string): string {
  return encodeURIComponent(value)
}
