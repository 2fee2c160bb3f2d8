// Routes of channels: list, create, delete, and the rollout of a channel's newest release.
import { Elysia, t } from 'elysia'
import type { AppDeps } from '../deps'
import { jsonAnswer } from '../../http/openapi'
import { atomically } from '../../db/open'
import { channelDeleted, channelParams, channelRecord, channelsParams, createChannelBody, patchChannelBody, rolloutAnswer, rolloutBody } from './model'
import { createChannel, deleteChannel, listChannels, patchRollout } from './service'
import { actorOf, emitRolloutChange } from '../webhooks/service'
import { patchChannel } from './guard'

export function channelRoutes(deps: AppDeps) {
  const { db, clock } = deps
  return new Elysia({ prefix: '/mini-apps' })
    .use(deps.guard)
    .get('/:miniAppId/channels', ({ user, params }) => listChannels(db, user, params.miniAppId), {
      auth: 'read',
      params: channelsParams,
      response: { 200: t.Object({ channels: t.Array(channelRecord) }) },
      detail: { summary: 'Channels of a miniapp with the release and previous release of each (stable first)', tags: ['channels'] },
    })
    .post(
      '/:miniAppId/channels',
      ({ user, params, body, set }) => {
        const record = createChannel(db, clock, user, params.miniAppId, body)
        set.status = 201
        return record
      },
      { auth: 'release', params: channelsParams, body: createChannelBody, detail: { responses: jsonAnswer(201, channelRecord), summary: 'Create a channel (names like beta or qa-team)', tags: ['channels'] } },
    )
    .delete('/:miniAppId/channels/:channel', ({ user, params }) =>
      atomically(db, () => {
        const record = deleteChannel(db, clock, user, params.miniAppId, params.channel)
        // a channel whose releases were all rolled back may still have objects in the release mirror (its removal queued in the same commit)
        deps.mirror?.releaseChanged(params.miniAppId, params.channel)
        return record
      }), {
      auth: 'release',
      params: channelParams,
      detail: { responses: jsonAnswer(200, channelDeleted), summary: 'Delete a channel that serves no release (stable cannot be deleted)', tags: ['channels'] },
    })
    .patch('/:miniAppId/channels/:channel', ({ user, params, body }) => patchChannel(db, clock, user, params.miniAppId, params.channel, body), {
      auth: 'release',
      params: channelParams,
      body: patchChannelBody,
      response: { 200: channelRecord },
      detail: { summary: "Channel settings: the release guard { enabled, maxFailureRate, minDevices } pauses the newest release when too many devices fail (decisions §15; owners and admins)", tags: ['channels'] },
    })
    .patch('/:miniAppId/channels/:channel/rollout', ({ user, params, body }) => {
      // not in atomically(): a body that changes nothing must not take the write lock (it answers while a backup holds it)
      const { record, warnings } = patchRollout(db, clock, user, params.miniAppId, params.channel, body, {
        // a resume (or a reverted release raised again) holds the guard at the failing devices reported
        // so far, those not counted yet included; a no-op, a pause, a revert or another percent needs no count
        beforeResume: (miniAppId) => deps.releaseGuard.beforeResume(miniAppId, params.channel),
        onChanged: (change, warnings) => {
          // the release mirror (issue 14) follows a rollout change like a publish; the change, that write and its deliveries commit together
          deps.mirror?.releaseChanged(change.miniAppId, change.channel)
          emitRolloutChange(db, clock, change, actorOf(user), warnings.length ? { warnings } : {})
        },
      })
      return { ...record, warnings }
    }, {
      auth: 'release',
      params: channelParams,
      body: rolloutBody,
      response: { 200: rolloutAnswer },
      detail: { summary: "Raise, lower, revert (0) or complete (100) the rollout of the channel's newest release, or pause/resume it ({ paused: true|false }, decisions §13)", tags: ['channels'] },
    })
}
