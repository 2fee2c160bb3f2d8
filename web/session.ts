// Who is signed in: the token in sessionStorage plus the user record from GET /api/auth/me.
import { api, clearToken, getToken, setToken, type Me } from './api.ts'

let current: Me | null = null

export function currentUser(): Me | null {
  return current
}

/** Loads the user behind the stored token, or answers null when there is no token. */
export async function loadCurrentUser(): Promise<Me | null> {
  if (!getToken()) {
    current = null
    return null
  }
  current = await api<Me>('GET', '/api/auth/me')
  return current
}

/** Stores a freshly issued token and loads the user it belongs to (for role and status). */
export async function startSession(accessToken: string): Promise<Me> {
  setToken(accessToken)
  try {
    const me = await loadCurrentUser()
    if (!me) throw new Error('The server did not return the signed-in user.')
    return me
  } catch (error) {
    clearToken()
    current = null
    throw error
  }
}

export function endSession(): void {
  clearToken()
  current = null
}

const REGISTRATION_CLOSED_KEY = 'miniship.registrationClosed'

/** Remembered for this tab once the server answers 403 REGISTRATION_CLOSED, so the form stays hidden. */
export function registrationClosed(): boolean {
  try {
    return sessionStorage.getItem(REGISTRATION_CLOSED_KEY) === '1'
  } catch {
    return false
  }
}

export function markRegistrationClosed(): void {
  try {
    sessionStorage.setItem(REGISTRATION_CLOSED_KEY, '1')
  } catch {
    // not remembered; the server will answer 403 again
  }
}
