// The History tab: every publish, rollback and rollout change, newest first.
import type { ReleaseHistoryEntry } from '../api.ts'
import { h, personName, time } from '../dom.ts'
import type { ReleaseContext } from './release-actions.ts'

/** One sentence per entry: "Published 1.1.0 to beta at 10 % (replacing 1.0.0)", a publish going *to* its channel as in the notice and the CLI. */
export function historyLine(entry: ReleaseHistoryEntry, rc: Pick<ReleaseContext, 'versionName'>): string {
  const previous = entry.previousVersionId ? (rc.versionName(entry.previousVersionId) ?? 'an older version') : null
  const on = entry.channel ? ` on ${entry.channel}` : ''
  const at = typeof entry.rolloutPercent === 'number' && entry.rolloutPercent < 100 ? ` at ${entry.rolloutPercent} %` : ''
  switch (entry.action) {
    case 'ROLLBACK':
      return `Rolled back${on} to ${entry.version}${previous ? ` (was ${previous})` : ''}`
    case 'ROLLOUT':
      // pause and resume are rollout entries whose notes say so (the history's actions are the contract's three)
      if (entry.notes?.startsWith('paused by ')) return `Paused the rollout of ${entry.version}${on} at ${entry.rolloutPercent ?? '?'} %`
      if (entry.notes?.startsWith('resumed by ')) return `Resumed the rollout of ${entry.version}${on} at ${entry.rolloutPercent ?? '?'} %`
      return entry.rolloutPercent === 0 ? `Reverted ${entry.version}${on}` : entry.rolloutPercent === 100 ? `Completed the rollout of ${entry.version}${on}` : `Rollout of ${entry.version}${on} set to ${entry.rolloutPercent ?? '?'} %`
    default:
      return `Published ${entry.version}${entry.channel ? ` to ${entry.channel}` : ''}${at}${previous ? ` (replacing ${previous})` : ''}`
  }
}

/**
 * Who made a history entry: the API key it was made with and its owner (`API key "ci" of owner@…`, as
 * the CLI and the audit log say), its person, or the release guard for the pauses it made (they have
 * no person), else someone.
 */
export function historyActor(entry: Pick<ReleaseHistoryEntry, 'actor' | 'notes' | 'apiKey'>): string {
  if (entry.actor && entry.apiKey) return `API key "${entry.apiKey.name}" of ${entry.actor.email}`
  // a pause or resume recorded before history named keys: its notes do
  const key = entry.actor ? apiKeyActor(entry.notes, entry.actor.email) : null
  if (key) return key
  if (entry.actor) return personName(entry.actor)
  return entry.notes?.startsWith('paused by release-guard') ? 'the release guard' : 'someone'
}

/**
 * A pause or resume made with an API key: the server's words for it, `API key "ci" of owner@…` (its
 * notes start "paused by API key "ci" of owner@…"), which the CLI and the audit log show; its
 * owner's name alone would read as if the owner had done it by hand.
 */
function apiKeyActor(notes: string | null | undefined, ownerEmail: string): string | null {
  const said = notes?.match(/^(?:paused|resumed) by (API key ".*)$/s)?.[1]
  if (!said) return null
  const end = said.indexOf(`" of ${ownerEmail}`)
  return end < 0 ? null : said.slice(0, end + `" of ${ownerEmail}`.length)
}

/**
 * Who paused a channel's release, named as History names that pause ("Ana (ana@example.test)", "the
 * release guard"); the server's own words (an email) when the history at hand does not hold it.
 */
export function pausedByName(channel: string, release: { versionId: string; pausedBy?: string | null }, history: Pick<ReleaseHistoryEntry, 'action' | 'versionId' | 'channel' | 'actor' | 'notes' | 'apiKey'>[]): string {
  if (release.pausedBy === 'release-guard') return 'the release guard'
  // newest first: the pause that holds it now
  const pause = history.find((entry) => entry.action === 'ROLLOUT' && entry.versionId === release.versionId && (entry.channel ?? 'stable') === channel && entry.notes?.startsWith('paused by '))
  return pause?.actor ? historyActor(pause) : (release.pausedBy ?? 'someone')
}

export function historyTab(entries: ReleaseHistoryEntry[], rc: Pick<ReleaseContext, 'versionName'>): HTMLElement {
  return h(
    'section',
    { 'aria-labelledby': 'history-title' },
    h('h2', { id: 'history-title' }, 'Release history'),
    entries.length
      ? h(
          'ol',
          { class: 'history card', 'data-testid': 'release-history' },
          entries.map((entry) =>
            h(
              'li',
              { 'data-testid': 'history-entry', 'data-action': entry.action },
              h('p', null, h('strong', null, historyLine(entry, rc))),
              h('p', { class: 'muted' }, 'by ', historyActor(entry), ' · ', time(entry.createdAt)),
              entry.notes?.trim() ? h('p', { class: 'notes' }, entry.notes) : null,
            ),
          ),
        )
      : h('p', { class: 'empty', 'data-testid': 'release-history-empty' }, 'Nothing has been published yet.'),
  )
}
