// UpdateError: the one error type the update client throws (decisions §17), with a code an app can switch on.

export type UpdateErrorCode =
  | 'SHA256_MISMATCH'
  | 'SIZE_MISMATCH'
  | 'SIGNATURE_REQUIRED'
  | 'SIGNATURE_INVALID'
  | 'NETWORK'
  /** the server answered an error (`status` says which), or sent install info that cannot be used (a file missing, a sha256 that is not 64 hex digits) */
  | 'SERVER'
  /** the storage adapter failed (disk full, removed directory); the installed version is left as it was. Like NETWORK, not reported as a `failed` event: it is no fault of the release. Anything else thrown during a download (the app's onProgress, sha256 or verifyEd25519) is STORAGE too, and is reported */
  | 'STORAGE'
  /** createUpdater was given an option it cannot use (a hostVersion that is not a version, a deviceId the server refuses, a trusted key that is not one, a crashLoopLimit that is not a whole number of launches, 1 or more) */
  | 'INVALID_OPTION'

export class UpdateError extends Error {
  readonly code: UpdateErrorCode
  /** the HTTP status, for `SERVER` */
  readonly status?: number
  constructor(code: UpdateErrorCode, message: string, status?: number) {
    super(message)
    // Babel-compiled classes extending Error lose their prototype on some engines (Hermes): set it back
    Object.setPrototypeOf(this, UpdateError.prototype)
    this.name = 'UpdateError'
    this.code = code
    if (status !== undefined) this.status = status
  }
}

/** What a thrown value says: its message, or itself as text. */
export const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error))

/**
 * What `work` answers; whatever else it throws (the storage adapter, fetch, a body's reader) becomes an
 * UpdateError of `code` that says what failed, so nothing but UpdateError leaves the library.
 */
export async function failsAs<T>(code: UpdateErrorCode, what: string, work: () => T | Promise<T>): Promise<T> {
  try {
    return await work()
  } catch (error) {
    throw error instanceof UpdateError ? error : new UpdateError(code, `${what}: ${messageOf(error)}`)
  }
}
