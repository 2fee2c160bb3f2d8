// Routes of a miniapp's trusted signing keys (decisions §14): /api/mini-apps/{miniAppId}/signing-keys.
import { Elysia, t } from 'elysia'
import type { AppDeps } from '../deps'
import { jsonAnswer } from '../../http/openapi'
import { addSigningKeyBody, miniAppIdParams, revokedSigningKeyRecord, signingKeyParams, signingKeyRecord } from './model'
import { addSigningKey, listSigningKeys, revokeSigningKey } from './service'

export function signingRoutes(deps: AppDeps) {
  const { db, clock } = deps
  return new Elysia({ prefix: '/mini-apps' })
    .use(deps.guard)
    .get('/:miniAppId/signing-keys', ({ user, params }) => listSigningKeys(db, user, params.miniAppId), {
      auth: 'read',
      params: miniAppIdParams,
      detail: { responses: jsonAnswer(200, t.Array(signingKeyRecord)), summary: 'The Ed25519 public keys the miniapp trusts, revoked ones too (members)', tags: ['signing'] },
    })
    .post(
      '/:miniAppId/signing-keys',
      ({ user, params, body, set }) => {
        const record = addSigningKey(db, clock, user, params.miniAppId, body)
        set.status = 201
        return record
      },
      { auth: true, params: miniAppIdParams, body: addSigningKeyBody, detail: { responses: jsonAnswer(201, signingKeyRecord), summary: 'Trust an Ed25519 public key (base64 of its raw 32 bytes) to sign versions (owners and admins)', tags: ['signing'] } },
    )
    .delete('/:miniAppId/signing-keys/:keyId', ({ user, params }) => revokeSigningKey(db, clock, user, params.miniAppId, params.keyId, deps.liveVersionsSignedBy), {
      auth: true,
      params: signingKeyParams,
      detail: { responses: jsonAnswer(200, revokedSigningKeyRecord), summary: 'Revoke a signing key: kept, it signs nothing any more (owners and admins); warns of the versions it signed that devices get now', tags: ['signing'] },
    })
}
