// The release guard on a channel card (decisions §15): the badge of a release it paused, its state and
// last count, and its settings dialog for owners and admins. Words from guard-text.ts, as the CLI's.
//
// data-testid: guard-<channel> (the part), guard-paused-<channel> (the badge), guard-state-<channel>,
// guard-edit-<channel> (the button), guard-dialog (confirm-enabled, confirm-maxFailureRate, confirm-minDevices).
import { api, seg, type Channel } from '../api.ts'
import { confirmDialog, h, showError, showNotice } from '../dom.ts'
import { failedText, guardPauseText, guardStateText, heldText, overThreshold, watchedState } from '../../src/modules/channels/guard-text.ts'
import type { ReleaseContext } from './release-actions.ts'

/** The channel's `guard` as the server answers it (channels/model.ts guardRecord). */
type GuardAnswer = Channel['guard']

/** What the guard's part reads of a channel (the badge is a pure function of these). */
type GuardedChannel = Pick<Channel, 'name' | 'release'> & { state?: Channel['state']; guard?: GuardAnswer }

/** "paused by the release guard: 12 of 140 devices failed (8.6 %) — threshold 5 %", when the guard paused the channel's release. */
export function guardBadge(channel: GuardedChannel): string | null {
  const { guard, release } = channel
  if (!guard?.trip || !release?.paused || release.pausedBy !== 'release-guard') return null
  return guardPauseText(guard.trip)
}

/** The field's text for a rate: the percent as exactly as it is set (0.00125 → "0.125"), so saving the dialog for another change keeps it. */
export function percentFromRate(rate: number): string {
  // 12 significant digits drop the float noise of × 100 (0.07 → 7.000000000000001) and nothing set by hand
  return String(Number((rate * 100).toPrecision(12)))
}

/** Percent as typed ("5", "2.5") → a rate, or null when it is not above 0 and at most 100. */
export function rateFromPercent(text: string | undefined): number | null {
  const value = Number((text ?? '').trim().replace(',', '.'))
  return (text ?? '').trim() !== '' && Number.isFinite(value) && value > 0 && value <= 100 ? value / 100 : null
}

async function editGuard(rc: ReleaseContext, channel: GuardedChannel, guard: GuardAnswer, button: HTMLButtonElement): Promise<void> {
  const answer = await confirmDialog({
    title: `Release guard of ${channel.name}`,
    testId: 'guard-dialog',
    message: [
      h('p', null, `While it is on, the server counts the devices that report a failure or a rollback of ${channel.name}'s newest release, and pauses the release when too many do: no new device gets it, devices that run it keep it.`),
      h('p', null, 'Devices are counted, not events: one device reporting 50 failures counts once, and events without a deviceId are not counted. After a person resumes a release, it pauses it again only once more devices fail than had then.'),
    ],
    confirmLabel: 'Save',
    fields: [
      { name: 'enabled', label: 'Pause the release when too many devices fail', kind: 'checkbox', value: guard.enabled ? 'on' : '' },
      { name: 'maxFailureRate', label: 'Failing devices (%)', kind: 'text', value: percentFromRate(guard.maxFailureRate), hint: 'Pause when more than this share of the devices that reported failed.' },
      { name: 'minDevices', label: 'Devices that reported, at least', kind: 'number', min: 1, value: String(guard.minDevices), hint: 'Until this many devices reported, the guard waits.' },
    ],
    validate: (values) => {
      const problems = []
      if (rateFromPercent(values.maxFailureRate) === null) problems.push({ field: 'maxFailureRate', message: 'must be a number above 0 and at most 100' })
      const count = Number(values.minDevices)
      if (!Number.isInteger(count) || count < 1) problems.push({ field: 'minDevices', message: 'must be a whole number of at least 1' })
      return problems
    },
  })
  if (!answer) return
  button.disabled = true
  try {
    const body = { guard: { enabled: answer.enabled === 'on', maxFailureRate: rateFromPercent(answer.maxFailureRate), minDevices: Number(answer.minDevices) } }
    const saved = await api<GuardedChannel>('PATCH', `${rc.base}/channels/${seg(channel.name)}`, body)
    showNotice(`${channel.name}: ${saved.guard ? guardStateText(saved.guard) : 'saved'}.`)
    rc.ctx.reload()
  } catch (error) {
    showError(error)
    button.disabled = false
  }
}

/** The guard's part of a channel card; null on servers without the guard. */
export function guardPart(rc: ReleaseContext, channel: GuardedChannel, canEdit: boolean): HTMLElement | null {
  const guard = channel.guard
  if (!guard) return null
  const badge = guardBadge(channel)
  // only where the guard watches the release: a reverted one is not held, it is not watched at all
  const held = guard.enabled && channel.release && watchedState(channel.state) && overThreshold(guard) ? heldText(guard) : null
  const count = guard.enabled && guard.lastCheck && channel.release ? ` · now ${failedText(guard.lastCheck, guard.maxFailureRate)}${held ? ` · ${held}` : ''}` : ''
  const edit = canEdit ? h('button', { type: 'button', class: 'link small', 'data-testid': `guard-edit-${channel.name}` }, 'Change…') : null
  edit?.addEventListener('click', () => void editGuard(rc, channel, guard, edit))
  return h(
    'div',
    { class: 'guard', 'data-testid': `guard-${channel.name}` },
    badge ? h('p', { class: 'guard-paused', role: 'status', 'data-testid': `guard-paused-${channel.name}` }, badge) : null,
    h('p', { class: 'muted small-text' }, h('span', { 'data-testid': `guard-state-${channel.name}` }, `${guardStateText(guard)[0]!.toUpperCase()}${guardStateText(guard).slice(1)}${count}`), edit ? ' ' : null, edit),
  )
}
