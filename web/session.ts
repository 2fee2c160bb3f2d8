// Who is signed in: the stored token (see api.ts for where it is kept) plus the user record from GET /api/auth/me.
import { api, clearToken, getToken, setToken, SIGNED_OUT_KEY, TOKEN_KEY, type Me } from './api.ts'

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

/** Stores a freshly issued token (in every tab when `keep`) and loads the user it belongs to. */
export async function startSession(accessToken: string, keep: boolean): Promise<Me> {
  setToken(accessToken, keep)
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

/** Ends the session in this tab; `everywhere` (the Sign out button) ends it in every tab of this browser. */
export function endSession(everywhere = false): void {
  clearToken(everywhere)
  current = null
}

/**
 * Calls `onChange` when another tab signs out or signs in: the storage event fires only in the
 * other tabs, which is exactly who must follow.
 */
export function followOtherTabs(onChange: (what: 'signed-out' | 'signed-in') => void): void {
  window.addEventListener('storage', (event) => {
    if (event.key === SIGNED_OUT_KEY) {
      if (current || getToken()) {
        endSession()
        onChange('signed-out')
      }
      return
    }
    if (event.key === TOKEN_KEY && event.storageArea === localStorage) {
      if (event.newValue === null && current && !sessionHasOwnToken()) {
        current = null
        onChange('signed-out')
      } else if (event.newValue && !current) onChange('signed-in')
    }
  })
}

function sessionHasOwnToken(): boolean {
  try {
    return sessionStorage.getItem(TOKEN_KEY) !== null
  } catch {
    return false
  }
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
