// The words of a version refused for want of a usable signature (422 SIGNATURE_REQUIRED, SIGNING_KEY_REVOKED): the server's refusals, push's own check before an upload and the console's warnings say the same (pure, imports nothing).

/** What a developer does about an unsigned push: the CLI's hint, and the start of the server's advice. */
export const signedPushAdvice = 'push with --sign-key FILE'

/**
 * `com.example.shop requires signed versions; push with --sign-key FILE (or send signatureKeyId and
 * signature)` for an upload; for a publish, the `miniship sign` command that runs as printed (it needs --app).
 */
export function signatureRequiredText(appId: string, what: 'upload' | 'publish', version = 'VERSION'): string {
  const how = what === 'upload' ? `${signedPushAdvice} (or send signatureKeyId and signature)` : `sign it first (miniship sign ${version} --app ${appId} --sign-key FILE)`
  return `${appId} requires signed versions; ${how}`
}

/**
 * `sign 1.2.0 again with a current key (miniship sign 1.2.0 --app com.example.shop --sign-key FILE)`:
 * the way out for a version signed by a key revoked since, as a command that runs as printed.
 */
export function signAgainText(appId: string, version: string): string {
  return `sign ${version} again with a current key (miniship sign ${version} --app ${appId} --sign-key FILE)`
}

/**
 * `1.2.0 (live on stable, complete 100 %) was signed by this key: host apps that no longer trust it
 * will refuse it; sign 1.2.0 again with a current key (miniship sign …)`: what revoking a key warns
 * of (LIVE_RELEASE_KEY_REVOKED), where the version is live in `versions ls`'s words, in the answer,
 * `keys revoke` and the console's notice.
 */
export function liveReleaseKeyRevokedText(appId: string, version: string, standings: readonly string[]): string {
  return `${version} (${standings.join('; ')}) was signed by this key: host apps that no longer trust it will refuse it; ${signAgainText(appId, version)}`
}
