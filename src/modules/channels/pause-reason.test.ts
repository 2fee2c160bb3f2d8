// A pause's reason is kept as given, up to the 2000 characters the PATCH takes: shown, audited and sent whole.
import { expect, test } from 'bun:test'
import { appWithVersions, ownedTestApp } from '../../test-fixtures'

const app = ownedTestApp()

test('a reason of 501–2000 characters is kept whole on the release, in the audit entry and in the channel list (it was cut to 500 without a word)', async () => {
  const { context, owner } = app
  const { miniAppId, publish } = await appWithVersions(app, 'com.example.reason', ['1.0.0', '1.1.0'])
  await publish('1.0.0', 100)
  await publish('1.1.0', 30)
  // characters, not UTF-16 units: the limit counts an emoji as one
  const reason = `${'crash on Android 9 when the cart is opened; '.repeat(40)}🔥`.slice(0, 1990)
  expect(reason.length).toBeGreaterThan(500)
  const paused = await context.call('PATCH', `/api/mini-apps/${miniAppId}/channels/stable/rollout`, { token: owner.token, json: { paused: true, reason } })
  expect({ status: paused.status, state: paused.body.state, length: paused.body.release.pauseReason.length }).toEqual({ status: 200, state: 'paused', length: reason.length })
  expect(paused.body.release.pauseReason).toBe(reason)
  const listed = await context.call('GET', `/api/mini-apps/${miniAppId}/channels`, { token: owner.token })
  expect(listed.body.channels[0].release.pauseReason).toBe(reason)
  const audit = context.dataDir.db.$client.query<{ metadata: string }, []>("SELECT metadata FROM audit_logs WHERE action = 'channel.pause'").all()
  expect(audit.map((row) => JSON.parse(row.metadata).reason)).toEqual([reason])
})
