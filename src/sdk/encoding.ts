// Hex and base64 without TextEncoder, atob or Buffer (Hermes has none of them).

/** Lowercase hex, two digits a byte. */
export function toHex(bytes: Uint8Array): string {
  let out = ''
  for (let i = 0; i < bytes.length; i++) out += (bytes[i]! < 16 ? '0' : '') + bytes[i]!.toString(16)
  return out
}

const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'

/** Standard or URL-safe base64, padded or not; null when the text is not base64. */
export function fromBase64(text: string): Uint8Array | null {
  const clean = text.replace(/-/g, '+').replace(/_/g, '/').replace(/=+$/, '')
  if (!/^[A-Za-z0-9+/]*$/.test(clean) || clean.length % 4 == 1) return null
  const out = new Uint8Array(Math.floor((clean.length * 3) / 4))
  let bits = 0
  let value = 0
  let index = 0
  for (let i = 0; i < clean.length; i++) {
    value = (value << 6) | alphabet.indexOf(clean[i]!)
    bits += 6
    if (bits >= 8) {
      bits -= 8
      out[index++] = (value >> bits) & 255
    }
  }
  return out
}
