// Routes of versions: upload (multipart, streamed), review, publish, rollback, delete, and the workspace.
import { Elysia } from 'elysia'
import type { AppDeps } from '../deps'
import { jsonAnswer, multipartBody } from '../../http/openapi'
import { requireVisibleMiniAppByAppId } from '../miniapps/service'
import { miniAppIdParams, publishBody, rollbackAnswer, rollbackBody, uploadAnswer, uploadForm, uploadParams, versionDeleted, versionParams, versionRecord, workspaceAnswer, workspaceQuery } from './model'
import { apiBase } from '../../http/urls'
import { receiveUpload } from './upload'
import { actorOf, emitWebhookEvent } from '../webhooks/service'
import { checkReleaseOptions } from '../channels/service'
import { atomically } from '../../db/open'
import { deleteVersion, getWorkspace, publishVersion, reviewVersion, rollbackRelease, signVersion, uploadVersion, type VersionDeps } from './service'
import { signVersionBody } from '../signing/model'

export function versionRoutes(deps: AppDeps) {
  const blobs = deps.blobs
  const services: VersionDeps = { db: deps.db, clock: deps.clock, config: deps.config, blobs }
  return new Elysia({ prefix: '/mini-apps' })
    .use(deps.guard)
    .post(
      '/by-app-id/:appId/versions/upload',
      async ({ user, params, request, set }) => {
        // Membership first: a caller who may not upload is answered before a byte is stored.
        const miniApp = requireVisibleMiniAppByAppId(deps.db, user, params.appId)
        const received = await receiveUpload(request, blobs.paths, deps.config.uploadLimitBytes)
        // the version.uploaded deliveries are queued in the upload's own transaction: stored and announced together
        const record = await uploadVersion(services, user, miniApp, received, (tx, version) => emitWebhookEvent(tx, deps.clock, miniApp.id, 'version.uploaded', { version, by: actorOf(user) }))
        set.status = 201
        return record
      },
      {
        // Leave the body unread: receiveUpload streams it to disk instead of Elysia buffering it.
        parse: 'none',
        auth: 'upload',
        params: uploadParams,
        detail: {
          responses: jsonAnswer(201, uploadAnswer),
          requestBody: multipartBody(uploadForm),
          summary: 'Upload a version (multipart/form-data: version and the five files bundleIos, bundleAndroid, manifest, assetsIos, assetsAndroid; optional changelog, releaseType, channel, signatureKeyId and signature)',
          tags: ['versions', 'upload'],
        },
      },
    )
    .get('/:miniAppId/workspace', ({ user, params, query, request }) => getWorkspace({ ...services, tokens: deps.tokens }, user, params.miniAppId, apiBase(request, deps.config), query), {
      auth: 'read',
      params: miniAppIdParams,
      query: workspaceQuery,
      detail: { responses: jsonAnswer(200, workspaceAnswer), summary: 'The miniapp with a page of its versions (?limit=50&cursor=&status=), their install links, its channels and release history', tags: ['versions'] },
    })
    .post('/:miniAppId/versions/:versionId/review', ({ user, params }) => reviewVersion(services, user, params.miniAppId, params.versionId), {
      auth: 'release',
      params: versionParams,
      detail: { responses: jsonAnswer(200, versionRecord), summary: 'Submit a version for review', tags: ['versions'] },
    })
    .post('/:miniAppId/versions/:versionId/publish', ({ user, params, body }) =>
      // the publish, its mirror write and its deliveries commit together (queued: the answer never waits on the bucket, decisions §18)
      atomically(deps.db, () => {
        const record = publishVersion(services, user, params.miniAppId, params.versionId, body ?? {})
        deps.mirror?.releaseChanged(params.miniAppId, body?.channel ?? record.channel)
        // the options as the publish checked them (defaults filled, the range trimmed): valid, or it threw
        const { rolloutPercent, mandatory, hostVersionRange } = checkReleaseOptions(body ?? {})
        emitWebhookEvent(deps.db, deps.clock, record.miniAppId, 'release.published', { channel: body?.channel ?? record.channel, version: { id: record.id, version: record.version }, rolloutPercent, mandatory, hostVersionRange, by: actorOf(user) })
        return record
      }), {
      auth: 'release',
      params: versionParams,
      body: publishBody,
      detail: { responses: jsonAnswer(200, versionRecord), summary: 'Publish a version: it becomes the newest release of a channel (default: the one it was uploaded to), for rolloutPercent of devices', tags: ['versions'] },
    })
    .post('/:miniAppId/versions/:versionId/signature', ({ user, params, body }) =>
      atomically(deps.db, () => {
        const { record, liveChannels } = signVersion(services, user, params.miniAppId, params.versionId, body)
        // the install.json of each channel releasing it on the mirror carries the new signature (queued, in the same commit)
        for (const channel of liveChannels) deps.mirror?.releaseChanged(params.miniAppId, channel)
        return record
      }), {
      auth: 'release',
      params: versionParams,
      body: signVersionBody,
      detail: { responses: jsonAnswer(200, versionRecord), summary: 'Sign an uploaded version: { keyId, signature } over the statement of its stored files (decisions §14)', tags: ['versions', 'signing'] },
    })
    .post('/:miniAppId/rollback', ({ user, params, body }) =>
      atomically(deps.db, () => {
        const result = rollbackRelease(services, user, params.miniAppId, body.targetVersionId, body.notes ?? null, body.channel)
        deps.mirror?.releaseChanged(params.miniAppId, body.channel ?? result.version.channel)
        emitWebhookEvent(deps.db, deps.clock, result.miniApp.id, 'release.rolled_back', { channel: body.channel ?? result.version.channel, version: { id: result.version.id, version: result.version.version }, notes: body.notes ?? null, by: actorOf(user) })
        return result
      }), {
      auth: 'release',
      params: miniAppIdParams,
      body: rollbackBody,
      detail: { responses: jsonAnswer(200, rollbackAnswer), summary: 'Make an earlier release of a channel (default: the target version\'s) the one every device gets again', tags: ['versions'] },
    })
    .delete('/:miniAppId/versions/:versionId', ({ user, params }) => deleteVersion(services, user, params.miniAppId, params.versionId), {
      auth: true,
      params: versionParams,
      detail: { responses: jsonAnswer(200, versionDeleted), summary: 'Delete a version that was never published', tags: ['versions'] },
    })
}
