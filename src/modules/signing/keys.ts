// The key rules of decisions §14 that the server and the CLI share: a public key's spelling and its keyId. Pure.
import { createHash } from 'node:crypto'
import { Point } from '@noble/ed25519'

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

/**
 * Why 32 bytes are no Ed25519 public key anyone should trust, or null. OpenSSL takes any 32 bytes as a
 * key. Refused: bytes that are no point (or not its one encoding), and points of small or mixed order,
 * which no key generator makes: under a small-order key anyone can make a signature that verifies for
 * every statement (node, WebCrypto and noble alike). The server's keys and `miniship verify` ask this.
 */
export function unsoundKeyReason(raw: Uint8Array): string | null {
  let point: Point
  try {
    point = Point.fromBytes(raw, false)
  } catch {
    return 'is not an Ed25519 public key: no point of the curve'
  }
  if (point.isSmallOrder() || !point.isTorsionFree()) return 'is a weak Ed25519 key (a point of small or mixed order) that no key generator makes: signatures under it can be forged'
  return null
}
