// The key rules of decisions §14 that the server and the CLI share: a public key's spelling and its keyId. Pure.
import { createHash } from 'node:crypto'

const base64Pattern = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/

/** Standard padded base64 only (decisions §14), so one key has one spelling; null when it is not that. */
export function decodeBase64(text: string): Uint8Array | null {
  const trimmed = text.trim()
  if (!base64Pattern.test(trimmed)) return null
  return new Uint8Array(Buffer.from(trimmed, 'base64'))
}

/** decisions §14: the first 16 hex characters of sha256 of the raw 32 bytes. */
export function keyIdOf(raw: Uint8Array): string {
  return createHash('sha256').update(raw).digest('hex').slice(0, 16)
}
