// The release actions a miniapp page offers (review, publish, roll back, delete, rollout changes,
// removing a channel), each behind the confirmation it needs; shared by the Overview and Versions tabs.
import { api, ApiError, seg, type Channel, type MiniApp, type ReleaseHistoryEntry, type Version } from '../api.ts'
import { confirmDialog, h, showError, showNotice, type DialogField } from '../dom.ts'
import { channelsReleasedIn, holdsVersion, nextRolloutStep } from '../rules.ts'
import { isSemverRange } from '../../src/modules/channels/semver-range.ts'
import { fallbackSignatureWarning, pausedKeptText, publishedText, rollbackClearsPauseFor, type ReleaseWarning } from '../../src/modules/channels/words.ts'
import { signAgainText } from '../../src/modules/signing/words.ts'
import type { PageContext } from '../router.ts'

const CHANNEL_PATTERN = /^[a-z][a-z0-9-]{0,31}$/

export interface ReleaseContext {
  ctx: PageContext
  base: string
  miniApp: MiniApp
  /** null on servers without release channels: publish and roll back then act on the one live release */
  channels: Channel[] | null
  releaseHistory: ReleaseHistoryEntry[]
  /** the version string of a version id the page knows of ("1.2.0"), or null */
  versionName(id: string | null | undefined): string | null
  /** the same with its build ("1.2.0 (build 7)") where the page has the version row */
  versionLabel(id: string | null | undefined): string | null
  /** who signed a version (null: unsigned) where the page has its row; undefined when it does not, or the server does not sign */
  versionSignature(id: string): Version['signature']
}

/**
 * Runs one call with its button disabled, then says so and reloads the page. A 409 means the
 * release changed since the page was drawn (paused or reverted from the CLI, another tab, the
 * guard): the page is drawn again too, so it shows the state the message speaks of.
 */
async function act(rc: ReleaseContext, button: HTMLButtonElement | null, call: () => Promise<unknown>, done: string): Promise<void> {
  if (button) button.disabled = true
  try {
    const answer = await call()
    // what the answer warns of (a rollback that cleared a pause…), in the words the CLI prints
    showNotice(done, warningsOf(answer))
    rc.ctx.reload()
  } catch (error) {
    showError(error)
    if (button) button.disabled = false
    if (error instanceof ApiError && error.status === 409) rc.ctx.reload()
  }
}

/** The `warnings` of an answer that has them (`{ code, message }`); none from older servers. */
function warningsOf(answer: unknown): ReleaseWarning[] {
  const warnings = (answer as { warnings?: unknown } | null)?.warnings
  return Array.isArray(warnings) ? warnings.filter((w): w is ReleaseWarning => typeof w?.code === 'string' && typeof w?.message === 'string') : []
}

export function review(rc: ReleaseContext, v: Version, button: HTMLButtonElement): Promise<void> {
  return act(rc, button, () => api('POST', `${rc.base}/versions/${seg(v.id)}/review`), `Version ${v.version} is now the review version. Publish it once it has been checked.`)
}

function percentProblem(raw: string | undefined, min: number): string | null {
  const value = Number(raw)
  return Number.isInteger(value) && value >= min && value <= 100 ? null : `must be a whole number from ${min} to 100`
}

export async function publish(rc: ReleaseContext, v: Version, button: HTMLButtonElement): Promise<void> {
  const liveOnStable = rc.versionLabel(rc.miniApp.currentReleaseVersionId)
  const fields: DialogField[] = []
  // a channel that still holds the version, however far below its newest, refuses it (409
  // VERSION_ALREADY_PUBLISHED): not offered, and refused here if typed
  const open = rc.channels?.filter((c) => !holdsVersion(c, v)) ?? []
  if (rc.channels) {
    fields.push(
      {
        name: 'channel',
        label: 'Channel',
        kind: 'text',
        value: v.status === 'PUBLISHED' ? (open[0]?.name ?? 'stable') : v.channel || 'stable',
        hint: 'Phones on this channel get the version. A new name creates the channel.',
        options: open.map((c) => ({ value: c.name, label: c.release ? `${c.name} (now ${c.release.version})` : c.name })),
      },
      { name: 'rolloutPercent', label: 'Rollout (% of devices)', kind: 'number', value: '100', min: 1, max: 100, hint: 'Start small (for example 10) and raise it from the overview once it looks healthy.' },
      { name: 'mandatory', label: 'Mandatory update (the host app must install it before opening the miniapp)', kind: 'checkbox' },
      { name: 'hostVersionRange', label: 'Host app versions (optional)', kind: 'text', placeholder: '>=2.3.0', hint: 'A semver range; devices whose host app is outside it keep what they have.' },
    )
  }
  fields.push({ name: 'notes', label: 'Release notes (optional)', kind: 'textarea', hint: 'Saved in the release history.' })
  const answer = await confirmDialog({
    title: `Publish ${v.version}?`,
    testId: 'publish-dialog',
    message: [
      h('p', null, rc.channels ? `Version ${v.version} (build ${v.buildNumber}) becomes the release of the channel you choose.` : `Version ${v.version} (build ${v.buildNumber}) becomes the live release that every user of the host app downloads${liveOnStable ? `, replacing ${liveOnStable}` : ''}.`),
      h('p', null, 'A published version cannot be deleted. To go back later, roll back to an earlier published version.'),
      rc.miniApp.requireSignature && v.signature === null
        ? h('p', { class: 'warning', 'data-testid': 'publish-unsigned-warning' }, `This miniapp requires signed versions and ${v.version} is unsigned: the server will refuse to publish it. Sign it first: miniship sign ${v.version} --app ${rc.miniApp.appId} --sign-key FILE`)
        : null,
      v.signature?.keyRevokedAt
        ? h('p', { class: 'warning', 'data-testid': 'publish-revoked-warning' }, `${v.version} was signed by the key ${v.signature.keyName ?? v.signature.keyId}, revoked since: the server will refuse to publish it; ${signAgainText(rc.miniApp.appId, v.version)}.`)
        : null,
    ],
    confirmLabel: `Publish ${v.version}`,
    fields,
    validate: (values) => {
      if (!rc.channels) return []
      const problems = []
      if (!CHANNEL_PATTERN.test(values.channel?.trim() ?? '')) problems.push({ field: 'channel', message: 'must start with a lower-case letter, then up to 31 lower-case letters, digits or dashes' })
      const holding = rc.channels.find((c) => c.name === values.channel?.trim() && holdsVersion(c, v))
      if (holding) problems.push({ field: 'channel', message: `${v.version} is already a release of ${holding.name}: roll back to it there instead` })
      const percent = percentProblem(values.rolloutPercent, 1)
      if (percent) problems.push({ field: 'rolloutPercent', message: percent })
      // the server's own check, as the CLI's --host-range: refused here, a new channel is not created for nothing
      const range = values.hostVersionRange?.trim()
      if (range && !isSemverRange(range)) problems.push({ field: 'hostVersionRange', message: 'must be a semver range such as >=2.3.0 <3 or ^2.1.0' })
      return problems
    },
  })
  if (!answer) return
  const body: Record<string, unknown> = {}
  const notes = answer.notes?.trim()
  if (notes) body.notes = notes
  let channel = 'stable'
  if (rc.channels) {
    channel = answer.channel!.trim()
    body.channel = channel
    body.rolloutPercent = Number(answer.rolloutPercent)
    body.mandatory = answer.mandatory === 'on'
    if (answer.hostVersionRange?.trim()) body.hostVersionRange = answer.hostVersionRange.trim()
  }
  const isNewChannel = rc.channels !== null && !rc.channels.some((c) => c.name === channel)
  await act(
    rc,
    button,
    async () => {
      if (isNewChannel) await createChannel(rc, channel)
      await api('POST', `${rc.base}/versions/${seg(v.id)}/publish`, body)
    },
    // the words of the CLI's publish: "Published 1.2.0 to beta (10 %)."
    rc.channels ? `Published ${publishedText(v.version, channel, body as { rolloutPercent: number; mandatory: boolean; hostVersionRange?: string })}.` : `Published ${v.version}. It is now the live release.`,
  )
}

async function createChannel(rc: ReleaseContext, name: string): Promise<void> {
  try {
    await api('POST', `${rc.base}/channels`, { name })
  } catch (error) {
    // someone else created it a moment ago: publishing to it is what was asked
    if (!(error instanceof ApiError && error.code === 'CHANNEL_EXISTS')) throw error
  }
}

export async function rollback(rc: ReleaseContext, v: Version, button: HTMLButtonElement): Promise<void> {
  const current = rc.versionLabel(rc.miniApp.currentReleaseVersionId)
  const fields: DialogField[] = []
  // a paused or reverted release below the newest (§13), wherever it stands: the rollback ends its pause
  // or its revert, said before confirming for the channel chosen, by the server's rule and in the words
  // of the answer's ROLLBACK_CLEARS_PAUSE or ROLLBACK_OF_REVERTED (the CLI's warning)
  const clearedPause = h('p', { class: 'warning', 'data-testid': 'rollback-paused-warning' })
  function showClearedPause(channelName: string | undefined): void {
    const channel = rc.channels?.find((c) => c.name === channelName)
    const text = channel ? rollbackClearsPauseFor(channel, v) : null
    clearedPause.hidden = !text
    clearedPause.textContent = text ? `${text}.` : ''
  }
  if (rc.channels) {
    // channels it was released in, where something else is live now (the server refuses the others)
    const history = channelsReleasedIn(rc.releaseHistory).get(v.id) ?? new Set(['stable'])
    const candidates = rc.channels.filter((c) => c.release && c.release.versionId !== v.id && history.has(c.name))
    const released = candidates.length ? candidates : rc.channels.filter((c) => c.release)
    const preferred = v.channel && released.some((c) => c.name === v.channel) ? v.channel : 'stable'
    fields.push({ name: 'channel', label: 'Channel', kind: 'select', value: preferred, options: (released.length ? released : [{ name: 'stable', release: null }]).map((c) => ({ value: c.name, label: c.release ? `${c.name} (now ${c.release.version})` : c.name })) })
    showClearedPause(preferred)
  }
  fields.push({ name: 'notes', label: 'Why? (optional)', kind: 'textarea', hint: 'Saved in the release history.' })
  const answer = await confirmDialog({
    title: `Roll back to ${v.version}?`,
    message: [
      h('p', null, `The release${rc.channels ? ' of the channel you choose' : ''} changes${!rc.channels && current ? ` from ${current}` : ''} to ${v.version} (build ${v.buildNumber}) for every device on it. Users get it on their next update check.`),
      h('p', null, 'The version it replaces stays published, so you can roll back to it again later.'),
      rc.channels ? clearedPause : null,
      // the server applies a publish's signature rules to a rollback (decisions §14)
      rc.miniApp.requireSignature && v.signature === null
        ? h('p', { class: 'warning', 'data-testid': 'rollback-unsigned-warning' }, `This miniapp requires signed versions and ${v.version} is unsigned: the server will refuse to roll back to it. Sign it first: miniship sign ${v.version} --app ${rc.miniApp.appId} --sign-key FILE`)
        : null,
      v.signature?.keyRevokedAt
        ? h('p', { class: 'warning', 'data-testid': 'rollback-revoked-warning' }, `${v.version} was signed by the key ${v.signature.keyName ?? v.signature.keyId}, revoked since: the server will refuse to roll back to it; ${signAgainText(rc.miniApp.appId, v.version)}.`)
        : null,
    ],
    confirmLabel: `Roll back to ${v.version}`,
    danger: true,
    fields,
    onValues: (values) => showClearedPause(values.channel),
  })
  if (!answer) return
  const body: Record<string, string> = { targetVersionId: v.id }
  if (answer.notes?.trim()) body.notes = answer.notes.trim()
  if (rc.channels && answer.channel) body.channel = answer.channel
  await act(rc, button, () => api('POST', `${rc.base}/rollback`, body), `Rolled back: ${v.version} is now the live release${body.channel ? ` on ${body.channel}` : ''}.`)
}

export async function remove(rc: ReleaseContext, v: Version, button: HTMLButtonElement): Promise<void> {
  const answer = await confirmDialog({
    title: `Delete ${v.version}?`,
    message: h('p', null, `Version ${v.version} (build ${v.buildNumber}) and its files are removed for good, and its install link stops working. This cannot be undone.`),
    confirmLabel: `Delete ${v.version}`,
    danger: true,
  })
  if (!answer) return
  await act(rc, button, () => api('DELETE', `${rc.base}/versions/${seg(v.id)}`), `Deleted version ${v.version}.`)
}

function setRollout(rc: ReleaseContext, channel: Channel, percent: number, button: HTMLButtonElement, done: string): Promise<void> {
  return act(rc, button, () => api('PATCH', `${rc.base}/channels/${seg(channel.name)}/rollout`, { rolloutPercent: percent }), done)
}

/** Raise…: asks for the new share (the next usual step suggested). */
export async function raiseRollout(rc: ReleaseContext, channel: Channel, button: HTMLButtonElement): Promise<void> {
  const release = channel.release!
  const answer = await confirmDialog({
    title: `Raise the rollout of ${release.version} on ${channel.name}`,
    testId: 'rollout-dialog',
    message: h('p', null, `Now ${release.rolloutPercent} % of devices on ${channel.name} get ${release.version}. Devices already on it keep it; more devices join at their next update check.`),
    confirmLabel: 'Raise rollout',
    fields: [{ name: 'rolloutPercent', label: 'New rollout (%)', kind: 'number', min: 1, max: 100, value: String(nextRolloutStep(release.rolloutPercent)) }],
    validate: (values) => {
      const problem = percentProblem(values.rolloutPercent, 1)
      if (problem) return [{ field: 'rolloutPercent', message: problem }]
      return Number(values.rolloutPercent) <= release.rolloutPercent ? [{ field: 'rolloutPercent', message: `must be above the current ${release.rolloutPercent} % (use Pause to stop new devices)` }] : []
    },
  })
  if (!answer) return
  const percent = Number(answer.rolloutPercent)
  await setRollout(rc, channel, percent, button, `${release.version} now rolls out to ${percent} % of devices on ${channel.name}.`)
}

export async function completeRollout(rc: ReleaseContext, channel: Channel, button: HTMLButtonElement): Promise<void> {
  const release = channel.release!
  await setRollout(rc, channel, 100, button, `${release.version} now goes to every device on ${channel.name}.`)
}

/** A paused release below the newest (§13) stays with its devices whatever the newest does: "Devices on 1.1.0 (paused) keep it." */
function keptParagraph(channel: Channel) {
  if (!channel.pausedReleases?.length) return null
  const text = pausedKeptText(channel.pausedReleases)
  return h('p', { 'data-testid': 'paused-kept' }, `${text[0]!.toUpperCase()}${text.slice(1)}.`)
}

/**
 * The release a pause or revert sends the other devices back to, when signature rules refuse it (§14):
 * said before confirming, in the words of the answer's warning (FALLBACK_UNSIGNED, FALLBACK_KEY_REVOKED)
 * and the CLI's. Nothing when the page does not have that version's row; the answer says it then.
 */
function fallbackParagraph(rc: ReleaseContext, channel: Channel, action: 'pause' | 'revert') {
  const fallback = channel.previousRelease
  const warning = fallback ? fallbackSignatureWarning(rc.miniApp, action, channel, rc.versionSignature(fallback.versionId)) : null
  return warning ? h('p', { class: 'warning', 'data-testid': 'fallback-signature-warning', 'data-code': warning.code }, `${warning.message}.`) : null
}

/**
 * Pause… (decisions §13): no new device gets the release; devices that already run it keep it.
 * The dialog says so before confirming, in the words the CLI uses.
 */
export async function pauseRollout(rc: ReleaseContext, channel: Channel, button: HTMLButtonElement): Promise<void> {
  const release = channel.release!
  const previous = channel.previousRelease
  const answer = await confirmDialog({
    title: `Pause the rollout of ${release.version}?`,
    testId: 'pause-dialog',
    message: [
      h('p', null, `Devices that already run ${release.version} keep it. No other device on ${channel.name} gets it${previous ? `: they get ${previous.version}` : ''}.`),
      keptParagraph(channel),
      fallbackParagraph(rc, channel, 'pause'),
      h('p', null, `The rollout stays at ${release.rolloutPercent} % until you resume it. To send every device back, including those that run ${release.version}, use Revert instead.`),
      // §13: a request that names no version follows the frozen bucket, which at 100 % is every one
      release.rolloutPercent === 100 ? h('p', null, `Older clients and the release mirror, which name no version, still get ${release.version} at the frozen 100 %: only Revert stops those.`) : null,
    ],
    confirmLabel: 'Pause rollout',
    fields: [{ name: 'reason', label: 'Why? (optional)', kind: 'textarea', hint: 'Kept on the release and in the audit log.' }],
  })
  if (!answer) return
  const reason = answer.reason?.trim()
  await act(rc, button, () => api('PATCH', `${rc.base}/channels/${seg(channel.name)}/rollout`, reason ? { paused: true, reason } : { paused: true }), `Paused the rollout of ${release.version} on ${channel.name} at ${release.rolloutPercent} %: devices that run it keep it.`)
}

export async function resumeRollout(rc: ReleaseContext, channel: Channel, button: HTMLButtonElement): Promise<void> {
  const release = channel.release!
  await act(rc, button, () => api('PATCH', `${rc.base}/channels/${seg(channel.name)}/rollout`, { paused: false }), `Resumed the rollout of ${release.version} on ${channel.name} at ${release.rolloutPercent} %.`)
}

/** Revert… (0 %): every device goes back to the previous release, including those that run this one. */
export async function revertRollout(rc: ReleaseContext, channel: Channel, button: HTMLButtonElement): Promise<void> {
  const release = channel.release!
  const previous = channel.previousRelease
  const answer = await confirmDialog({
    title: `Revert ${release.version} on ${channel.name}?`,
    testId: 'revert-dialog',
    message: [
      h('p', null, previous ? `Every device on ${channel.name} gets ${previous.version} at its next update check, including the devices that already run ${release.version}.` : `No device on ${channel.name} gets ${release.version} any more. There is no earlier release to send devices back to: those that installed ${release.version} (the update client keeps what it installed) go on running it until you publish a fixed version.`),
      keptParagraph(channel),
      fallbackParagraph(rc, channel, 'revert'),
      h('p', null, `To stop new devices only and let those that run ${release.version} keep it, use Pause instead.`),
    ],
    confirmLabel: previous ? `Revert to ${previous.version}` : `Revert ${release.version}`,
    danger: true,
  })
  if (!answer) return
  await setRollout(rc, channel, 0, button, `Reverted ${release.version} on ${channel.name}: ${previous ? `every device gets ${previous.version}` : `no device gets it; those on it keep it`}.`)
}

/**
 * Remove channel… (never stable): the rule in the words of `miniship channels rm` and the server's
 * refusal; a channel that serves a release is refused with 409 CHANNEL_HAS_RELEASES, whose message
 * the alert shows. The notice is the line the CLI prints.
 */
export async function removeChannel(rc: ReleaseContext, channel: Channel, button: HTMLButtonElement): Promise<void> {
  const name = channel.name
  const answer = await confirmDialog({
    title: `Remove the channel ${name}?`,
    testId: 'remove-channel-dialog',
    message: [
      h('p', null, 'Only a channel that never served a release (or whose releases were all rolled back) can be removed; stable never.'),
      h('p', null, `Devices that still ask for ${name} then get 404 CHANNEL_NOT_FOUND. A channel created again under this name starts with the release guard off.`),
      channel.release
        ? h('p', { class: 'warning', 'data-testid': 'remove-channel-warning' }, `${name} serves ${channel.release.version}: the server will refuse to remove it.`)
        : null,
    ],
    confirmLabel: `Remove ${name}`,
    danger: true,
  })
  if (!answer) return
  // the words of `miniship channels rm`
  await act(rc, button, () => api('DELETE', `${rc.base}/channels/${seg(name)}`), `Removed channel ${name} of ${rc.miniApp.appId}.`)
}

/** A button whose handler may open a dialog; failures go to the alert. */
export function actionButton(label: string, testId: string, kind: string, handler: (button: HTMLButtonElement) => void | Promise<void>): HTMLButtonElement {
  const button = h('button', { type: 'button', class: kind, 'data-testid': testId }, label)
  button.addEventListener('click', () => void Promise.resolve(handler(button)).catch(showError))
  return button
}
