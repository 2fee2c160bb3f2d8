// TypeBox schemas of the signing endpoints (decisions §14): trusted keys and a version's later signature.
import { t } from 'elysia'
import { singleLinePattern } from '../../http/text'

export const miniAppIdParams = t.Object({ miniAppId: t.String() })
export const signingKeyParams = t.Object({ miniAppId: t.String(), keyId: t.String() })

export const addSigningKeyBody = t.Object(
  {
    name: t.String({ minLength: 1, pattern: singleLinePattern(100), error: 'must be 1–100 characters without control characters' }),
    // long enough for any key pasted by mistake (a PEM, an RSA key), which then gets INVALID_PUBLIC_KEY with its reason
    publicKey: t.String({ maxLength: 16_384, error: 'must be the base64 of the raw 32-byte Ed25519 public key' }),
  },
  { additionalProperties: false },
)

export const signVersionBody = t.Object(
  {
    keyId: t.String({ minLength: 1, maxLength: 64, error: 'must be the keyId of one of the miniapp\'s signing keys' }),
    signature: t.String({ minLength: 1, maxLength: 200, error: 'must be the base64 of the 64-byte Ed25519 signature' }),
  },
  { additionalProperties: false },
)

/** A trusted key as every signing-key route answers it (decisions §14); revoked keys are kept with `revokedAt` */
export const signingKeyRecord = t.Object({
  keyId: t.String({ description: 'the first 16 hex characters of sha256 of the raw 32 bytes' }),
  name: t.String(),
  publicKey: t.String({ description: 'base64 of the raw 32 bytes' }),
  createdAt: t.String(),
  revokedAt: t.Union([t.String(), t.Null()]),
})

/** The answer of a revoke: the key, and what it warns of (empty when nothing changed: revoked already). */
export const revokedSigningKeyRecord = t.Composite([
  signingKeyRecord,
  t.Object({
    warnings: t.Array(t.Object({ code: t.Literal('LIVE_RELEASE_KEY_REVOKED'), message: t.String() }), {
      description: 'LIVE_RELEASE_KEY_REVOKED: a version this key signed that devices get now (the message names it and where it is live, in the words of versions ls); host apps that no longer trust the key refuse it, so sign it again with a current key. Empty when the key was revoked already',
    }),
  }),
])
