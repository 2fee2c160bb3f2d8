// sha256 and Ed25519 for the update client: the app's native ones when it hands them in, else
// WebCrypto's Ed25519 where the engine has it, else @noble (audited pure JS, runs on Hermes).
import { verify as nobleVerify, hashes, Point } from '@noble/ed25519'
import { sha256 as nobleSha256, sha512 } from '@noble/hashes/sha2.js'
import { toHex } from './encoding'

// @noble/ed25519 3.x leaves its synchronous sha512 to the caller
hashes.sha512 = sha512

/** An incremental sha256: fed each chunk as it arrives, so a file is never held twice. */
export interface Sha256Hasher {
  update(chunk: Uint8Array): void
  /** the digest: raw bytes, or lowercase/uppercase hex */
  digest(): Uint8Array | ArrayBuffer | string | Promise<Uint8Array | ArrayBuffer | string>
}

/**
 * Native crypto an app may hand in (`createUpdater({ crypto })`); either member may be left out.
 * - `sha256()` starts a new incremental hash (react-native-quick-crypto: `createHash('sha256')`
 *   fits as it is; see docs/host-app.md for expo-crypto).
 * - `verifyEd25519(publicKey, message, signature)`: raw 32-byte key, the message bytes, the
 *   64-byte signature; true when the signature is valid.
 */
export interface UpdateCrypto {
  sha256?: () => Sha256Hasher
  verifyEd25519?: (publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array) => boolean | Promise<boolean>
}

export interface ResolvedCrypto {
  sha256(): { update(chunk: Uint8Array): void; digestHex(): Promise<string> }
  verifyEd25519(publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array): Promise<boolean>
}

function hexOf(digest: Uint8Array | ArrayBuffer | string): string {
  if (typeof digest == 'string') return digest.toLowerCase()
  return toHex(digest instanceof Uint8Array ? digest : new Uint8Array(digest))
}

interface SubtleLike {
  importKey(format: string, key: Uint8Array, algorithm: { name: string }, extractable: boolean, usages: string[]): Promise<unknown>
  verify(algorithm: string, key: unknown, signature: Uint8Array, data: Uint8Array): Promise<boolean>
}

async function webCryptoVerify(publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array): Promise<boolean | null> {
  const subtle = (globalThis as { crypto?: { subtle?: SubtleLike } }).crypto?.subtle
  if (!subtle) return null
  try {
    return await subtle.verify('Ed25519', await subtle.importKey('raw', publicKey, { name: 'Ed25519' }, false, ['verify']), signature, message)
  } catch {
    // no Ed25519 in this engine's WebCrypto (or not a valid point): let noble decide
    return null
  }
}

/** The lengths (32-byte key, 64-byte signature) are the caller's to check: createUpdater refuses any other. */
export function resolveCrypto(given: UpdateCrypto | undefined): ResolvedCrypto {
  const sha256 = given?.sha256
  const verify = given?.verifyEd25519
  return {
    sha256() {
      // the app's hasher or noble's: either digest (bytes or hex) read as lowercase hex
      const hasher = sha256 ? sha256() : nobleSha256.create()
      return {
        update: (chunk) => void hasher.update(chunk),
        digestHex: async () => hexOf(await hasher.digest()),
      }
    },
    async verifyEd25519(publicKey, message, signature) {
      if (verify) return (await verify(publicKey, message, signature)) === true
      const native = await webCryptoVerify(publicKey, message, signature)
      if (native !== null) return native
      try {
        return nobleVerify(signature, message, publicKey)
      } catch {
        return false
      }
    },
  }
}

/**
 * Whether 32 bytes are a public key worth pinning: a point of the curve in its one encoding, and
 * not of small order, under which anyone can make a signature every verifier accepts for any
 * message. (Cheap: a square root and three doublings, once per key at createUpdater.)
 */
export function isSoundPublicKey(raw: Uint8Array): boolean {
  try {
    return !Point.fromBytes(raw, false).isSmallOrder()
  } catch {
    return false
  }
}
