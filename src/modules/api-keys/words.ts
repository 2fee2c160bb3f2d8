// The words of a key refused for a scope it lacks (403 SCOPE_REQUIRED): the server's refusal and the CLI's own check before an upload say the same.

/** `This needs an API key with the "upload" scope; key msk_ab12cd34… has "read"`, naming the scope needed and the key's. */
export function scopeRequiredText(scope: string, key: { prefix: string; scopes: readonly string[] }): string {
  const has = key.scopes.length === 0 ? 'no scope' : key.scopes.map((s) => `"${s}"`).join(', ')
  return `This needs an API key with the "${scope}" scope; key ${key.prefix}… has ${has}`
}
