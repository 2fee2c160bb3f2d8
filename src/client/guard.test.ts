// `miniship guard`: its flags, its lines, and a run against a served test app (set, then show as --json).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createTestContext, type TestContext } from '../test-support'
import { createMiniApp, createTestUser, upload, uploadForm, type TestUser } from '../test-fixtures'
import { CliError } from './http'
import { guardChanges, guardCommand, guardLines } from './guard'
import { channelsCommand } from './channels'

describe('guard flags', () => {
  test('only what was given is sent', () => {
    expect(guardChanges({})).toEqual({})
    expect(guardChanges({ enable: true })).toEqual({ enabled: true })
    expect(guardChanges({ disable: true, maxFailureRate: '0.1', minDevices: '50' })).toEqual({ enabled: false, maxFailureRate: 0.1, minDevices: 50 })
    expect(guardChanges({ maxFailureRate: '1' })).toEqual({ maxFailureRate: 1 })
  })
  const bad: [string, Parameters<typeof guardChanges>[0], RegExp][] = [
    ['both --enable and --disable', { enable: true, disable: true }, /cannot both/],
    ['a rate of 0', { maxFailureRate: '0' }, /--max-failure-rate must be a number above 0 and at most 1/],
    ['a rate above 1 (5 meaning 5 %)', { maxFailureRate: '5' }, /--max-failure-rate/],
    ['a rate that is no number', { maxFailureRate: 'five' }, /--max-failure-rate/],
    ['no devices', { minDevices: '0' }, /--min-devices must be a whole number of at least 1/],
    ['a fraction of a device', { minDevices: '2.5' }, /--min-devices/],
  ]
  for (const [what, flags, message] of bad) {
    test(`${what} is bad usage (exit 2)`, () => {
      let error: unknown
      try {
        guardChanges(flags)
      } catch (caught) {
        error = caught
      }
      expect(error).toBeInstanceOf(CliError)
      expect((error as CliError).exitCode).toBe(2)
      expect((error as CliError).message).toMatch(message)
    })
  }

  test('the lines use the console badge words', () => {
    const guard = { enabled: true, maxFailureRate: 0.05, minDevices: 20, lastCheck: { failedDevices: 12, totalDevices: 140, failureRate: 12 / 140, at: '2026-11-25T10:00:00.000Z' }, trip: { failedDevices: 12, totalDevices: 140, failureRate: 12 / 140, maxFailureRate: 0.05, at: '2026-11-25T10:00:00.000Z' }, heldAtFailedDevices: 12 }
    expect(guardLines('com.example.shop', { name: 'stable', state: 'paused', release: { version: '1.1.0', paused: true, pausedBy: 'release-guard' }, guard })).toEqual([
      'com.example.shop stable: release guard on: pauses when more than 5 % of devices fail, once 20 devices reported',
      '  1.1.0: 12 of 140 devices failed (8.6 %), counted 2026-11-25 10:00 UTC',
      '  1.1.0 paused by the release guard: 12 of 140 devices failed (8.6 %) — threshold 5 %; miniship rollout com.example.shop --resume resumes it',
    ])
    // a command that runs as printed: with the app id, and the channel when it is not stable
    expect(guardLines('com.example.shop', { name: 'beta', state: 'paused', release: { version: '1.1.0', paused: true, pausedBy: 'release-guard' }, guard }).at(-1)).toBe(
      '  1.1.0 paused by the release guard: 12 of 140 devices failed (8.6 %) — threshold 5 %; miniship rollout com.example.shop --channel beta --resume resumes it',
    )
    expect(guardLines('com.example.shop', { name: 'beta', state: null, release: null, guard: { ...guard, enabled: false, lastCheck: null, trip: null, heldAtFailedDevices: null } })).toEqual(['com.example.shop beta: release guard off'])
    // resumed by a person and over the line: the lines say why it runs on
    expect(guardLines('com.example.shop', { name: 'stable', state: 'rolling-out', release: { version: '1.1.0', paused: false, pausedBy: null }, guard })).toEqual([
      'com.example.shop stable: release guard on: pauses when more than 5 % of devices fail, once 20 devices reported',
      '  1.1.0: 12 of 140 devices failed (8.6 %), counted 2026-11-25 10:00 UTC',
      '  1.1.0: held since a person resumed it at 12 failing devices: it pauses again once more than 12 fail',
    ])
  })
})

describe('miniship guard against a server', () => {
  let context: TestContext
  let owner: TestUser
  let server: ReturnType<typeof Bun.serve>
  const appId = 'com.example.guard.cli'
  const saved = { MINISHIP_SERVER: Bun.env.MINISHIP_SERVER, MINISHIP_TOKEN: Bun.env.MINISHIP_TOKEN, XDG_CONFIG_HOME: Bun.env.XDG_CONFIG_HOME }

  beforeAll(async () => {
    context = createTestContext()
    owner = await createTestUser(context)
    const miniAppId = (await createMiniApp(context, owner.token, appId)).id
    const version = (await upload(context, owner.token, appId, uploadForm(appId, { version: '1.0.0' }))).body.id
    await context.call('POST', `/api/mini-apps/${miniAppId}/versions/${version}/publish`, { token: owner.token, json: {} })
    server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: (request) => context.app.handle(request) })
    Bun.env.MINISHIP_SERVER = `http://127.0.0.1:${server.port}`
    Bun.env.MINISHIP_TOKEN = owner.token
    Bun.env.XDG_CONFIG_HOME = context.config.dataDir
  })
  afterAll(() => {
    server.stop(true)
    context.close()
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete Bun.env[name]
      else Bun.env[name] = value
    }
  })

  /** Runs the command (`miniship guard`, or another one given) in this process and answers what it printed on stdout. */
  async function run(args: string[], command = guardCommand()): Promise<string> {
    const printed: string[] = []
    const write = process.stdout.write
    process.stdout.write = ((chunk: string) => {
      printed.push(String(chunk))
      return true
    }) as typeof process.stdout.write
    try {
      await command.exitOverride().parseAsync(args, { from: 'user' })
    } finally {
      process.stdout.write = write
    }
    return printed.join('')
  }

  test('`miniship channels guard [channel]` (the name issue 28 gives it) is the same command; the channel named twice differently is bad usage', async () => {
    const set = JSON.parse(await run(['guard', 'stable', '--app', appId, '--enable', '--min-devices', '25', '--json'], channelsCommand()))
    expect(set).toMatchObject({ appId, channel: 'stable', guard: { enabled: true, minDevices: 25 } })
    expect(await run(['guard', '--app', appId], channelsCommand())).toContain(`${appId} stable: release guard on:`)
    const exit = Bun.spawnSync([process.execPath, 'src/main.ts', 'channels', 'guard', 'beta', '--channel', 'stable', '--app', appId, '--json'], { cwd: `${import.meta.dir}/../..`, env: { ...process.env } })
    expect(exit.exitCode).toBe(2)
    expect(JSON.parse(exit.stdout.toString()).error.message).toContain('Name the channel once')
    let help = ''
    const command = channelsCommand().commands.find((sub) => sub.name() === 'guard')!.exitOverride().configureOutput({ writeOut: (text) => (help += text) })
    expect(() => command.parse(['--help'], { from: 'user' })).toThrow()
    expect(help).toContain('$ miniship channels guard stable --app com.example.shop --enable')
    expect(JSON.parse(await run(['--app', appId, '--disable', '--json'])).guard.enabled).toBe(false)
  })

  test('--enable with settings sets them; without flags it shows the guard, --json as one document', async () => {
    const set = await run(['--app', appId, '--enable', '--max-failure-rate', '0.1', '--min-devices', '30'])
    expect(set).toContain(`${appId} stable: release guard on: pauses when more than 10 % of devices fail, once 30 devices reported`)
    expect(set).toContain('1.0.0: not counted yet: the guard counts its devices at its next check, within a minute')
    context.app.store.insights.flush()
    const shown = JSON.parse(await run(['--app', appId, '--json']))
    expect(shown).toMatchObject({ appId, channel: 'stable', state: 'complete', version: '1.0.0', guard: { enabled: true, maxFailureRate: 0.1, minDevices: 30, lastCheck: { failedDevices: 0, totalDevices: 0 }, trip: null } })
    const off = JSON.parse(await run(['--app', appId, '--channel', 'stable', '--disable', '--json']))
    expect(off.guard).toMatchObject({ enabled: false, maxFailureRate: 0.1, minDevices: 30 })
  })

  test('switched on after devices reported: it does not say no device has, and the next check counts them', async () => {
    expect(JSON.parse(await run(['--app', appId, '--disable', '--json'])).guard.enabled).toBe(false)
    const events = ['a', 'b', 'c'].map((deviceId) => ({ appId, version: '1.0.0', platform: 'ios', event: 'launched', channel: 'stable', deviceId }))
    expect((await context.call('POST', '/api/mini-apps/access/events', { json: { events } })).body.accepted).toBe(3)
    context.app.store.insights.flush()
    const on = await run(['--app', appId, '--enable'])
    expect(on).not.toContain('no device has reported')
    expect(on).toContain('1.0.0: not counted yet: the guard counts its devices at its next check, within a minute')
    context.app.store.insights.flush()
    expect(await run(['--app', appId])).toContain('1.0.0: 0 of 3 devices failed (0 %)')
  })

  test('a reverted release over the line is not "held … it pauses again": the guard does not watch it, and nothing can pause it', async () => {
    const reverted = 'com.example.guard.cli-reverted'
    const miniAppId = (await createMiniApp(context, owner.token, reverted)).id
    const versionId = (await upload(context, owner.token, reverted, uploadForm(reverted, { version: '1.0.0' }))).body.id
    await context.call('POST', `/api/mini-apps/${miniAppId}/versions/${versionId}/publish`, { token: owner.token, json: {} })
    expect(JSON.parse(await run(['--app', reverted, '--enable', '--min-devices', '5', '--json'])).guard.enabled).toBe(true)
    expect((await context.call('PATCH', `/api/mini-apps/${miniAppId}/channels/stable/rollout`, { token: owner.token, json: { rolloutPercent: 0 } })).body.state).toBe('reverted')
    const events = ['a', 'b', 'c', 'd', 'e', 'f'].map((deviceId) => ({ appId: reverted, versionId, platform: 'ios', event: 'failed', channel: 'stable', deviceId }))
    expect((await context.call('POST', '/api/mini-apps/access/events', { json: { events } })).body.accepted).toBe(6)
    context.app.store.insights.flush()
    const shown = await run(['--app', reverted])
    expect(shown).toContain('1.0.0: 6 of 6 devices failed (100 %)')
    expect(shown).not.toContain('pauses again')
  })

  test('--help has an example', () => {
    expect(guardCommand().helpInformation() + '').toContain('--max-failure-rate')
    let help = ''
    const command = guardCommand().exitOverride().configureOutput({ writeOut: (text) => (help += text) })
    expect(() => command.parse(['--help'], { from: 'user' })).toThrow()
    expect(help).toContain('$ miniship guard --app com.example.shop --channel stable --enable --max-failure-rate 0.05 --min-devices 20')
  })
})
