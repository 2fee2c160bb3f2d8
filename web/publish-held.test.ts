// The console's Publish… against the server it talks to: offered into a channel only where the server accepts the version,
// however far below a channel's newest release the version still is (the workspace's releaseOf; 409 VERSION_ALREADY_PUBLISHED).
import { expect, test } from 'bun:test'
import { createMiniApp, ownedTestApp, upload, uploadForm } from '../src/test-fixtures'
import { allowedActions, channelsReleasedIn, holdsVersion } from './rules.ts'
import type { Workspace } from './api.ts'

const owned = ownedTestApp()

test('1.0.0, 1.1.0 and 1.2.0 to stable at 100 %, then 1.0.0 to beta: no Publish… for 1.0.0 (stable still holds it); with a third channel, Publish… offers only that one', async () => {
  const appId = 'com.example.heldbelow'
  const miniAppId = (await createMiniApp(owned.context, owned.owner.token, appId)).id as string
  const ids: Record<string, string> = {}
  for (const version of ['1.0.0', '1.1.0', '1.2.0']) ids[version] = (await upload(owned.context, owned.owner.token, appId, uploadForm(appId, { version }))).body.id
  const publish = (version: string, channel: string) => owned.context.call('POST', `/api/mini-apps/${miniAppId}/versions/${ids[version]}/publish`, { token: owned.owner.token, json: { channel, rolloutPercent: 100 } })
  for (const version of ['1.0.0', '1.1.0', '1.2.0']) expect((await publish(version, 'stable')).status).toBe(200)
  expect((await owned.context.call('POST', `/api/mini-apps/${miniAppId}/channels`, { token: owned.owner.token, json: { name: 'beta' } })).status).toBe(201)
  expect((await publish('1.0.0', 'beta')).status).toBe(200)

  /** what the Versions tab decides for 1.0.0, from the workspace it reads */
  const consoleSays = async () => {
    const workspace = (await owned.context.call('GET', `/api/mini-apps/${miniAppId}/workspace`, { token: owned.owner.token })).body as Workspace
    const version = workspace.versions.find((v) => v.version === '1.0.0')!
    const channels = workspace.channels!
    return {
      publish: allowedActions(version, workspace.miniApp, channels, channelsReleasedIn(workspace.releaseHistory).get(version.id) ?? null).publish,
      offered: channels.filter((c) => !holdsVersion(c, version)).map((c) => c.name),
      releaseOf: version.releaseOf,
    }
  }
  // the channel record lists 1.2.0 and 1.1.0 only: 1.0.0 is told by releaseOf
  expect(await consoleSays()).toEqual({ publish: false, offered: [], releaseOf: ['stable', 'beta'] })
  expect(await publish('1.0.0', 'stable')).toMatchObject({ status: 409, body: { code: 'VERSION_ALREADY_PUBLISHED' } })

  expect((await owned.context.call('POST', `/api/mini-apps/${miniAppId}/channels`, { token: owned.owner.token, json: { name: 'qa' } })).status).toBe(201)
  expect(await consoleSays()).toEqual({ publish: true, offered: ['qa'], releaseOf: ['stable', 'beta'] })
  // what is offered the server takes; what is not it refuses
  for (const channel of ['stable', 'beta']) expect(await publish('1.0.0', channel)).toMatchObject({ status: 409, body: { code: 'VERSION_ALREADY_PUBLISHED' } })
  expect((await publish('1.0.0', 'qa')).status).toBe(200)
  expect(await consoleSays()).toEqual({ publish: false, offered: [], releaseOf: ['stable', 'beta', 'qa'] })
})

test('withdrawn by a rollback below it, a version is no longer a release of that channel: releaseOf drops it, and Publish… offers it there again', async () => {
  const appId = 'com.example.heldwithdrawn'
  const miniAppId = (await createMiniApp(owned.context, owned.owner.token, appId)).id as string
  const ids: Record<string, string> = {}
  for (const version of ['0.9.0', '1.0.0']) ids[version] = (await upload(owned.context, owned.owner.token, appId, uploadForm(appId, { version }))).body.id
  for (const version of ['0.9.0', '1.0.0']) expect((await owned.context.call('POST', `/api/mini-apps/${miniAppId}/versions/${ids[version]}/publish`, { token: owned.owner.token, json: {} })).status).toBe(200)
  expect((await owned.context.call('POST', `/api/mini-apps/${miniAppId}/rollback`, { token: owned.owner.token, json: { targetVersionId: ids['0.9.0'] } })).status).toBe(200)
  const workspace = (await owned.context.call('GET', `/api/mini-apps/${miniAppId}/workspace`, { token: owned.owner.token })).body as Workspace
  const version = workspace.versions.find((v) => v.version === '1.0.0')!
  expect({ releaseOf: version.releaseOf, offered: workspace.channels!.filter((c) => !holdsVersion(c, version)).map((c) => c.name) }).toEqual({ releaseOf: [], offered: ['stable'] })
  expect(workspace.versions.find((v) => v.version === '0.9.0')!.releaseOf).toEqual(['stable'])
  expect((await owned.context.call('POST', `/api/mini-apps/${miniAppId}/versions/${ids['1.0.0']}/publish`, { token: owned.owner.token, json: {} })).status).toBe(200)
})
