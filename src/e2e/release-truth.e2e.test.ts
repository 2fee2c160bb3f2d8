// Decisions §13 end to end on the compiled binary: a rollout through pause, resume, revert and completion, with devices that
// send currentVersion (the update check) and devices that do not (the legacy release-stable URLs); at each step the API, the
// CLI's --json and the console (its own formatting functions on the API it reads, and the page itself in chromium) agree.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Browser, Page } from 'playwright-core'
import { callApi, runBinary, setUpFirstAdmin, startBinary, tempDir, type ApiCallOptions, type RunningBinary } from './support'
import { hasChromium, launchChromium, screenshot } from './browser-support'
import { buildZip } from '../test-fixtures'
import { rolloutBucket } from '../modules/channels/decide'
import { channelText, rolledBackVersions, versionStandingText, type ChannelView, type ReleaseState } from '../modules/channels/words'

const appId = 'truth'
let dir: string
let server: RunningBinary
let token: string
let miniAppId: string
let browser: Browser | null = null
let page: Page | null = null
const ids: Record<string, string> = {}

const api = (method: string, path: string, options: ApiCallOptions = {}) => callApi(server.baseUrl, method, path, options)
const cliEnv = () => ({ XDG_CONFIG_HOME: join(dir, 'config'), DISPLAY: '', WAYLAND_DISPLAY: '', MINISHIP_SERVER: server.baseUrl, MINISHIP_TOKEN: token })
const cli = (args: string[]) => runBinary(args, { env: cliEnv() })

async function cliJson<T>(args: string[]): Promise<T> {
  const result = await cli([...args, '--json'])
  if (result.exitCode !== 0) throw new Error(`miniship ${args.join(' ')}: exit ${result.exitCode}\n${result.stderr}`)
  return JSON.parse(result.stdout) as T
}

function buildFolder(version: string, forApp = appId): string {
  const folder = join(dir, `build-${forApp}-${version}`)
  mkdirSync(folder, { recursive: true })
  writeFileSync(join(folder, 'main.ios.jsbundle'), `console.log(${JSON.stringify(version)})`)
  writeFileSync(join(folder, 'main.android.bundle'), `console.log(${JSON.stringify(version)})`)
  writeFileSync(join(folder, 'app.json'), JSON.stringify({ appId: forApp, name: 'Truth', pages: { home: 'Home' } }))
  writeFileSync(join(folder, 'assets-ios.zip'), buildZip([{ name: 'assets/logo.png', content: 'png' }]))
  writeFileSync(join(folder, 'assets-android.zip'), buildZip([{ name: 'drawable-mdpi/logo.png', content: 'png' }]))
  return folder
}

/** A deviceId inside (or outside) the 30 % bucket of 1.1.0. */
function device(inside: boolean, salt: string): string {
  for (let index = 0; ; index++) {
    const deviceId = `${salt}-${index}`
    if (rolloutBucket(appId, ids['1.1.0']!, deviceId) < 30 === inside) return deviceId
  }
}

/** What a device that sends currentVersion gets: the version offered, or the one it keeps. */
async function checkUpdate(deviceId: string, currentVersion: string): Promise<string> {
  const res = await api('GET', `/api/mini-apps/access/apps/${appId}/update?platform=android&currentVersion=${currentVersion}&deviceId=${deviceId}`)
  expect(res.status).toBe(200)
  return res.body.updateAvailable ? res.body.install.version : currentVersion
}

/** What a legacy device (release-stable URL, no currentVersion) gets. */
async function legacyInstall(deviceId: string): Promise<string> {
  const res = await api('GET', `/api/mini-apps/access/apps/${appId}/release/install?deviceId=${deviceId}`)
  expect(res.status).toBe(200)
  return res.body.version
}

interface Step {
  state: ReleaseState
  percent: number
  /** the standing of each version, in the words the CLI and the console share */
  standings: Record<string, string>
}

/**
 * The API, the CLI and the console say the same thing: the stable channel's state and percent,
 * and where each version stands.
 */
async function expectAgreement(step: Step): Promise<void> {
  // the API
  const channels = (await api('GET', `/api/mini-apps/${miniAppId}/channels`, { token })).body.channels as (ChannelView & { release: { rolloutPercent: number } })[]
  const stable = channels.find((channel) => channel.name === 'stable')!
  expect({ state: stable.state, percent: stable.release.rolloutPercent }).toEqual({ state: step.state, percent: step.percent })
  // the CLI's --json: channels ls and versions ls
  const listed = await cliJson<{ channels: (ChannelView & { release: { rolloutPercent: number } })[] }>(['channels', 'ls', '--app', appId])
  const cliStable = listed.channels.find((channel) => channel.name === 'stable')!
  expect({ state: cliStable.state, percent: cliStable.release.rolloutPercent }).toEqual({ state: step.state, percent: step.percent })
  const versions = await cliJson<{ versions: { id: string; version: string; standing: string }[] }>(['versions', 'ls', appId])
  const cliStandings = Object.fromEntries(versions.versions.map((v) => [v.version, v.standing]))
  expect(cliStandings).toEqual(step.standings)
  // the CLI's text line for the channel
  const text = await cli(['channels', 'ls', '--app', appId])
  expect(text.stdout).toContain(`stable           ${channelText(stable)}`)
  // the console: its formatting functions on the workspace it reads give the same words
  const workspace = (await api('GET', `/api/mini-apps/${miniAppId}/workspace`, { token })).body
  const rolledBack = rolledBackVersions(workspace.releaseHistory)
  const consoleStandings = Object.fromEntries(workspace.versions.map((v: { id: string; version: string; status: string }) => [v.version, versionStandingText(v, workspace.channels, rolledBack)]))
  expect(consoleStandings).toEqual(step.standings)
  // and the page itself, opened by appId as a user would type it
  if (page) {
    await page.goto(`${server.baseUrl}/apps/${appId}`)
    const card = page.getByTestId('channel-stable')
    await card.waitFor()
    expect(await card.getAttribute('data-state')).toBe(step.state)
    expect(await page.getByTestId('channel-state-stable').textContent()).toBe(`${step.state} ${step.percent} %`)
    await page.goto(`${server.baseUrl}/apps/${appId}/versions`)
    await page.getByTestId('version-1.1.0').waitFor()
    for (const [version, standing] of Object.entries(step.standings)) {
      const live = standing.startsWith('live')
      const badge = page.getByTestId(`badge-release-${version}`)
      expect({ version, live: (await badge.count()) > 0 }).toEqual({ version, live })
      const shown = live ? await badge.textContent() : await page.getByTestId(`status-${version}`).textContent()
      expect(shown!.toLowerCase()).toContain(standing.toLowerCase())
    }
    await screenshot(page, `release-truth-${step.state}`)
  }
}

beforeAll(async () => {
  dir = tempDir('miniship-truth-e2e-')
  server = await startBinary({ dataDir: join(dir, 'data') })
  await setUpFirstAdmin(server)
  token = (await api('POST', '/api/auth/register', { json: { email: 'dev@example.test', password: 'dev-password' } })).body.accessToken
  miniAppId = (await api('POST', '/api/mini-apps', { token, json: { appId, name: 'Truth' } })).body.id
  expect((await cli(['push', buildFolder('1.0.0'), '--app', appId, '--version', '1.0.0', '--publish'])).exitCode).toBe(0)
  const pushed = await cliJson<{ version: { id: string } }>(['push', buildFolder('1.1.0'), '--app', appId, '--version', '1.1.0', '--publish', '--rollout', '30'])
  ids['1.1.0'] = pushed.version.id
  if (hasChromium) {
    browser = await launchChromium()
    const context = await browser.newContext()
    await context.addInitScript((value) => localStorage.setItem('miniship.token', value), token)
    page = await context.newPage()
  }
}, 120_000)

afterAll(async () => {
  await browser?.close()
  if (server) await server.stop()
  rmSync(dir, { recursive: true, force: true })
})

describe('a rollout through pause, resume, revert and completion (decisions §13)', () => {
  // devices that send currentVersion, and legacy ones that do not
  let adopter = ''
  let outside = ''
  let newcomer = ''

  test('rolling-out 30 %: devices in the bucket get 1.1.0, the others 1.0.0', async () => {
    adopter = device(true, 'adopter')
    outside = device(false, 'outside')
    newcomer = device(true, 'newcomer')
    expect(await checkUpdate(adopter, '1.0.0')).toBe('1.1.0')
    expect(await checkUpdate(outside, '1.0.0')).toBe('1.0.0')
    expect(await legacyInstall(adopter)).toBe('1.1.0')
    expect(await legacyInstall(outside)).toBe('1.0.0')
    await expectAgreement({ state: 'rolling-out', percent: 30, standings: { '1.1.0': 'live on stable, rolling-out 30 %', '1.0.0': 'live on stable for the devices outside the rollout of 1.1.0' } })
  }, 60_000)

  test('paused: the adopter keeps 1.1.0, no new device gets it, legacy requests follow the frozen bucket; the percent cannot change', async () => {
    const paused = await cliJson<ChannelView>(['rollout', appId, '--pause', '--reason', 'crash spike'])
    expect(paused.state).toBe('paused')
    expect(await checkUpdate(adopter, '1.1.0')).toBe('1.1.0')
    expect(await checkUpdate(newcomer, '1.0.0')).toBe('1.0.0')
    expect(await checkUpdate(outside, '1.0.0')).toBe('1.0.0')
    expect(await legacyInstall(adopter)).toBe('1.1.0')
    expect(await legacyInstall(outside)).toBe('1.0.0')
    const refused = await cli(['rollout', appId, '--percent', '50', '--json'])
    expect(refused.exitCode).toBe(1)
    expect(JSON.parse(refused.stdout).error.code).toBe('ROLLOUT_PAUSED')
    await expectAgreement({ state: 'paused', percent: 30, standings: { '1.1.0': 'live on stable, paused 30 %', '1.0.0': 'live on stable for the devices that do not run 1.1.0' } })
  }, 60_000)

  test('resumed: new devices in the bucket get 1.1.0 again', async () => {
    expect((await cliJson<ChannelView>(['rollout', appId, '--resume'])).state).toBe('rolling-out')
    expect(await checkUpdate(newcomer, '1.0.0')).toBe('1.1.0')
    await expectAgreement({ state: 'rolling-out', percent: 30, standings: { '1.1.0': 'live on stable, rolling-out 30 %', '1.0.0': 'live on stable for the devices outside the rollout of 1.1.0' } })
  }, 60_000)

  test('reverted: every device, the adopter included, goes back to 1.0.0; 1.1.0 is not shown as live', async () => {
    expect((await cliJson<ChannelView>(['rollout', appId, '--revert'])).state).toBe('reverted')
    expect(await checkUpdate(adopter, '1.1.0')).toBe('1.0.0')
    expect(await checkUpdate(newcomer, '1.0.0')).toBe('1.0.0')
    expect(await legacyInstall(adopter)).toBe('1.0.0')
    await expectAgreement({ state: 'reverted', percent: 0, standings: { '1.1.0': 'reverted on stable', '1.0.0': 'live on stable (1.1.0 is reverted)' } })
  }, 60_000)

  test('complete: every device gets 1.1.0; 1.0.0 reads "replaced"', async () => {
    expect((await cliJson<ChannelView>(['rollout', appId, '--percent', '100'])).state).toBe('complete')
    for (const deviceId of [adopter, outside, newcomer]) expect(await checkUpdate(deviceId, '1.0.0')).toBe('1.1.0')
    expect(await legacyInstall(outside)).toBe('1.1.0')
    await expectAgreement({ state: 'complete', percent: 100, standings: { '1.1.0': 'live on stable, complete 100 %', '1.0.0': 'replaced on stable' } })
  }, 60_000)

  test('every change is in the audit log with who made it', async () => {
    const admin = (await api('POST', '/api/auth/login', { json: { email: 'first-admin@example.test', password: 'first-admin-password' } })).body.accessToken
    const entries = (await api('GET', '/api/admin/users?auditLimit=100', { token: admin })).body.auditLogs as { action: string; actorName: string; targetName: string }[]
    const rollout = entries.filter((entry) => entry.action.startsWith('channel.')).reverse()
    expect(rollout.map((entry) => entry.action)).toEqual(['channel.pause', 'channel.resume', 'channel.rollout', 'channel.rollout'])
    for (const entry of rollout) expect(entry).toMatchObject({ actorName: 'dev@example.test', targetName: `${appId} 1.1.0` })
  })

  test('reverted, then a fix published over it at 10 %: 1.1.0 reads "reverted on stable", not "replaced"', async () => {
    expect((await cliJson<ChannelView>(['rollout', appId, '--revert'])).state).toBe('reverted')
    expect((await cli(['push', buildFolder('1.2.0'), '--app', appId, '--version', '1.2.0', '--publish', '--rollout', '10'])).exitCode).toBe(0)
    expect(await checkUpdate(adopter, '1.1.0')).not.toBe('1.1.0')
    await expectAgreement({
      state: 'rolling-out',
      percent: 10,
      standings: { '1.2.0': 'live on stable, rolling-out 10 %', '1.1.0': 'reverted on stable', '1.0.0': 'live on stable for the devices outside the rollout of 1.2.0' },
    })
  }, 60_000)

  test('a rollback to a paused release below the newest: the dialog says it clears the pause before confirming; the notice, the answer and the CLI say the same', async () => {
    expect((await cliJson<ChannelView>(['rollout', appId, '--pause', '--reason', 'slow start'])).state).toBe('paused')
    expect((await cli(['push', buildFolder('1.3.0'), '--app', appId, '--version', '1.3.0', '--publish', '--rollout', '10'])).exitCode).toBe(0)
    const message = '1.2.0 was paused by dev@example.test (slow start); rolling back to it clears the pause and sends it to every device on stable'
    if (page) {
      await page.goto(`${server.baseUrl}/apps/${appId}/versions`)
      await page.getByTestId('rollback-1.2.0').click()
      const dialog = page.locator('dialog[open]')
      await dialog.waitFor()
      expect(await dialog.getByTestId('rollback-paused-warning').textContent()).toBe(`${message}.`)
      await screenshot(page, 'rollback-paused-dialog')
      await dialog.getByTestId('confirm-ok').click()
      const warning = page.getByTestId('notice-warnings').locator('li')
      await warning.waitFor()
      expect({ code: await warning.getAttribute('data-code'), text: await warning.textContent() }).toEqual({ code: 'ROLLBACK_CLEARS_PAUSE', text: message })
    } else {
      const rolledBack = await cli(['rollback', appId, '1.2.0'])
      expect(rolledBack.stderr).toBe(`warning: ${message} (ROLLBACK_CLEARS_PAUSE)\n`)
    }
    const stable = (await api('GET', `/api/mini-apps/${miniAppId}/channels`, { token })).body.channels[0]
    expect(stable).toMatchObject({ name: 'stable', state: 'complete', release: { version: '1.2.0', paused: false }, pausedReleases: [] })
  }, 60_000)

  test('signatures required, and the fallback unsigned: Pause… warns before confirming, pauses all the same, and the notice says the words of the answer and the CLI', async () => {
    expect((await api('PATCH', `/api/mini-apps/${miniAppId}`, { token, json: { requireSignature: true } })).status).toBe(200)
    const message = `Devices on stable that do not run 1.2.0 fall back to 1.0.0, which is not signed: host apps that require signatures will refuse it; sign it (miniship sign 1.0.0 --app ${appId} --sign-key FILE)`
    if (page) {
      await page.goto(`${server.baseUrl}/apps/${appId}`)
      await page.getByTestId('rollout-pause-stable').click()
      const dialog = page.getByTestId('pause-dialog')
      await dialog.waitFor()
      const before = dialog.getByTestId('fallback-signature-warning')
      expect({ code: await before.getAttribute('data-code'), text: await before.textContent() }).toEqual({ code: 'FALLBACK_UNSIGNED', text: `${message}.` })
      await screenshot(page, 'pause-fallback-unsigned-dialog')
      await dialog.getByTestId('confirm-ok').click()
      const warning = page.getByTestId('notice-warnings').locator('li')
      await warning.waitFor()
      expect({ code: await warning.getAttribute('data-code'), text: await warning.textContent() }).toEqual({ code: 'FALLBACK_UNSIGNED', text: message })
      // the channel card is drawn again after the notice: wait for it rather than read it at once
      await page.locator('[data-testid="channel-stable"][data-state="paused"]').waitFor({ timeout: 10_000 })
      // the CLI's revert says the revert's words, on stderr
      const reverted = await cli(['rollout', appId, '--revert'])
      expect(reverted.stderr).toContain('(FALLBACK_UNSIGNED)')
    } else {
      const paused = await cli(['rollout', appId, '--pause'])
      expect(paused.stderr).toBe(`warning: ${message} (FALLBACK_UNSIGNED)\n`)
    }
  }, 60_000)
})

describe('releases further down a channel: what the console offers and says is what the server does', () => {
  const deep = 'truth-deep'
  let deepId = ''
  const push = async (version: string, ...flags: string[]) => expect((await cli(['push', buildFolder(version, deep), '--app', deep, '--version', version, ...flags])).exitCode).toBe(0)

  beforeAll(async () => {
    deepId = (await api('POST', '/api/mini-apps', { token, json: { appId: deep, name: 'Truth deep' } })).body.id
    // 1.1.0 paused at 30 %, then 1.2.0 complete and 1.3.0 at 20 % over it: 1.1.0 is below the previous release
    await push('1.0.0', '--publish')
    await push('1.1.0', '--publish', '--rollout', '30')
    expect((await cliJson<ChannelView>(['rollout', deep, '--pause', '--reason', 'crash spike'])).state).toBe('paused')
    await push('1.2.0', '--publish')
    await push('1.3.0', '--publish', '--rollout', '20')
    // 1.0.0 on beta too: stable still holds it, three below its newest
    expect((await cli(['channels', 'create', 'beta', '--app', deep])).exitCode).toBe(0)
    expect((await cli(['publish', deep, '1.0.0', '--channel', 'beta'])).exitCode).toBe(0)
  }, 120_000)

  test('no Publish… for a version every channel still holds (the server would answer 409); with a channel that does not, Publish… offers only that one and refuses a typed name that holds it', async () => {
    const refused = await cli(['publish', deep, '1.0.0', '--channel', 'stable', '--json'])
    expect(JSON.parse(refused.stdout).error.code).toBe('VERSION_ALREADY_PUBLISHED')
    if (!page) return
    await page.goto(`${server.baseUrl}/apps/${deep}/versions`)
    await page.getByTestId('version-1.0.0').waitFor()
    expect(await page.getByTestId('publish-1.0.0').count()).toBe(0)
    expect((await cli(['channels', 'create', 'qa', '--app', deep])).exitCode).toBe(0)
    await page.goto(`${server.baseUrl}/apps/${deep}/versions`)
    await page.getByTestId('publish-1.0.0').click()
    const dialog = page.getByTestId('publish-dialog')
    await dialog.waitFor()
    const channel = dialog.locator('input[name=channel]')
    expect(await channel.inputValue()).toBe('qa')
    expect(await dialog.locator('datalist option').evaluateAll((options) => options.map((option) => (option as HTMLOptionElement).value))).toEqual(['qa'])
    await channel.fill('stable')
    await dialog.getByTestId('confirm-ok').click()
    expect(await dialog.getByTestId('field-error-channel').textContent()).toBe('1.0.0 is already a release of stable: roll back to it there instead')
    await dialog.getByTestId('confirm-cancel').click()
  }, 60_000)

  test('Roll back… to the paused 1.1.0 says before confirming that it clears the pause, as the answer then warns', async () => {
    const stable = (await api('GET', `/api/mini-apps/${deepId}/channels`, { token })).body.channels[0]
    expect(stable).toMatchObject({ previousRelease: { version: '1.2.0' }, pausedReleases: [], pausedBelow: [{ version: '1.1.0' }] })
    const message = '1.1.0 was paused by dev@example.test (crash spike); rolling back to it clears the pause and sends it to every device on stable'
    if (page) {
      await page.goto(`${server.baseUrl}/apps/${deep}/versions`)
      await page.getByTestId('rollback-1.1.0').click()
      const dialog = page.locator('dialog[open]')
      await dialog.waitFor()
      expect(await dialog.getByTestId('rollback-paused-warning').textContent()).toBe(`${message}.`)
      await screenshot(page, 'rollback-paused-below-previous-dialog')
      await dialog.getByTestId('confirm-ok').click()
      const warning = page.getByTestId('notice-warnings').locator('li')
      await warning.waitFor()
      expect({ code: await warning.getAttribute('data-code'), text: await warning.textContent() }).toEqual({ code: 'ROLLBACK_CLEARS_PAUSE', text: message })
    } else {
      expect((await cli(['rollback', deep, '1.1.0'])).stderr).toBe(`warning: ${message} (ROLLBACK_CLEARS_PAUSE)\n`)
    }
  }, 60_000)
})
