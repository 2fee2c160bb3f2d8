// Download and release tokens are signed without jose (synchronously, for speed): they must stay the exact JWTs jose makes, and verify.
import { describe, expect, test } from 'bun:test'
import { SignJWT } from 'jose'
import { createTokenService, type DownloadGrant } from './tokens'

const secret = new Uint8Array(Array.from({ length: 32 }, (_, index) => (index * 37 + 11) % 256))
const now = Date.parse('2026-11-25T10:00:00.000Z')
const tokens = createTokenService(secret, () => now, 3600)

function jose(claims: Record<string, unknown>, expSeconds?: number): Promise<string> {
  const token = new SignJWT(claims).setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
  if (expSeconds !== undefined) token.setExpirationTime(expSeconds)
  return token.sign(secret)
}

const versionId = '019abcde-1234-7000-8000-000000000000'
const grant: DownloadGrant = { userId: '019abcde-1234-7000-8000-0000000000aa', generation: 3 }
const cases: { name: string; expiresAt: number | null; issuedTo?: DownloadGrant; claims: Record<string, unknown>; exp?: number }[] = [
  { name: 'published: no expiry, no grant', expiresAt: null, claims: { purpose: 'download', vid: versionId } },
  { name: 'draft: expiry (ms rounded down to s) and grant', expiresAt: now + 900_500, issuedTo: grant, claims: { purpose: 'download', vid: versionId, uid: grant.userId, ug: 3 }, exp: Math.floor((now + 900_500) / 1000) },
  { name: 'draft through an API key', expiresAt: now + 60_000, issuedTo: { ...grant, keyId: 'key-1' }, claims: { purpose: 'download', vid: versionId, uid: grant.userId, ug: 3, kid: 'key-1' }, exp: (now + 60_000) / 1000 },
  { name: 'grant without expiry', expiresAt: null, issuedTo: { userId: 'u', generation: 0 }, claims: { purpose: 'download', vid: versionId, uid: 'u', ug: 0 } },
  { name: 'a version id that needs escaping in JSON', expiresAt: null, claims: { purpose: 'download', vid: 'a"b\\c\u00e9' } },
]

describe('download and release tokens', () => {
  for (const item of cases) {
    test(`download token, ${item.name}: the same string jose signs, and it verifies`, async () => {
      const token = await tokens.signDownload(item.claims.vid as string, item.expiresAt, item.issuedTo)
      expect(token).toBe(await jose(item.claims, item.exp))
      const verified = await tokens.verify(token)
      expect(verified).toEqual({ ok: true, kind: 'download', claims: { ...item.claims, exp: item.exp } as never })
    })
  }

  test('release token: the same string jose signs', async () => {
    expect(await tokens.signRelease('com.example.app')).toBe(await jose({ purpose: 'release', app: 'com.example.app' }))
  })

  test('a token signed with another secret does not verify', async () => {
    const other = createTokenService(new Uint8Array(32), () => now, 3600)
    expect(await tokens.verify(await other.signDownload(versionId, null))).toEqual({ ok: false, reason: 'invalid' })
  })

  test('an expired draft token is refused as expired', async () => {
    const later = createTokenService(secret, () => now + 120_000, 3600)
    expect(await later.verify(await tokens.signDownload(versionId, now + 60_000, grant))).toEqual({ ok: false, reason: 'expired' })
  })
})
