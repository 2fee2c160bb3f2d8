// Test-only: what a host runtime does with install info, written from the contract alone (URL rules, sandbox layout).

/**
 * The contract's URL resolution (runtime setting `serverBaseURL`, which includes `/api`):
 * a full URL is used unchanged, an absolute path joins the origin of serverBaseURL (dropping its
 * path), a relative path joins serverBaseURL including its path.
 */
export function resolveUrl(serverBaseUrl: string, url: string): string {
  if (/^https?:\/\//i.test(url)) return url
  if (url.startsWith('/')) return new URL(serverBaseUrl).origin + url
  return serverBaseUrl.replace(/\/+$/, '') + '/' + url
}

/** The contract's manifest derivation: the parent path of the bundle URL + `/app.json` (the query is dropped). */
export function derivedManifestUrl(bundleUrl: string): string {
  const withoutQuery = bundleUrl.split('?')[0]!
  return withoutQuery.slice(0, withoutQuery.lastIndexOf('/')) + '/app.json'
}

export function sha256Hex(bytes: Uint8Array | ArrayBuffer): string {
  return new Bun.CryptoHasher('sha256').update(bytes).digest('hex')
}
