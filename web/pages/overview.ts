// The Overview tab: per channel what phones get now and how its rollout goes, adoption and
// downloads from insights, the review and experience versions, and the latest changes.
import { api, type Channel, type Insights, type ReleaseHistoryEntry, type Workspace } from '../api.ts'
import { ago, h, personName } from '../dom.ts'
import { stackedBarChart } from '../charts/bars.ts'
import { adoptionChart } from '../charts/adoption.ts'
import { downloadSeries } from '../charts/series.ts'
import { appPath } from '../router.ts'
import { actionButton, completeRollout, pauseRollout, raiseRollout, removeChannel, resumeRollout, revertRollout, type ReleaseContext } from './release-actions.ts'
import { channelDevicesText, channelState, stateText } from '../../src/modules/channels/words.ts'
import { historyActor, historyLine, pausedByName } from './history.ts'
import { showInstall } from './versions.ts'
import { guardBadge, guardPart } from './guard.ts'
import { cardSaysWhatDevicesGet } from '../rules.ts'

/**
 * A channel's name, and beside it the mandatory badge and Remove channel… (never on stable; for every
 * member, as creating one is). In the head, so the card grows no taller for it.
 */
function channelHead(rc: ReleaseContext, channel: Channel, canRemove: boolean): HTMLElement {
  const remove = canRemove && channel.name !== 'stable' ? actionButton('Remove channel…', `channel-remove-${channel.name}`, 'link small', (b) => removeChannel(rc, channel, b)) : null
  const badge = channel.release?.mandatory ? h('span', { class: 'badge mandatory' }, 'Mandatory') : null
  return h('div', { class: 'channel-head' }, h('h3', null, channel.name), badge || remove ? h('span', { class: 'channel-head-end' }, badge, remove) : null)
}

function channelCard(rc: ReleaseContext, channel: Channel, canRollout: boolean, canRemove: boolean, canGuard: boolean, history: ReleaseHistoryEntry[]): HTMLElement {
  const release = channel.release
  if (!release) {
    return h('article', { class: 'channel card', 'data-testid': `channel-${channel.name}` }, channelHead(rc, channel, canRemove), h('p', { class: 'muted' }, 'Nothing released on this channel.'), guardPart(rc, channel, canGuard))
  }
  const state = channelState(channel)!
  // the state's actions (decisions §13): pause keeps the devices that run it, revert sends everyone back
  const controls = canRollout
    ? [
        state === 'rolling-out' || state === 'reverted' ? actionButton('Raise…', `rollout-raise-${channel.name}`, 'secondary small', (b) => raiseRollout(rc, channel, b)) : null,
        state === 'rolling-out' || state === 'reverted' ? actionButton('Complete', `rollout-complete-${channel.name}`, 'secondary small', (b) => completeRollout(rc, channel, b)) : null,
        state === 'paused' ? actionButton('Resume', `rollout-resume-${channel.name}`, 'secondary small', (b) => resumeRollout(rc, channel, b)) : null,
        state === 'rolling-out' || state === 'complete' ? actionButton('Pause…', `rollout-pause-${channel.name}`, 'danger-outline small', (b) => pauseRollout(rc, channel, b)) : null,
        state !== 'reverted' ? actionButton('Revert…', `rollout-revert-${channel.name}`, 'danger-outline small', (b) => revertRollout(rc, channel, b)) : null,
      ]
    : []
  return h(
    'article',
    { class: `channel card state-${state}${state === 'reverted' ? ' halted' : ''}`, 'data-testid': `channel-${channel.name}`, 'data-version': release.version, 'data-rollout': String(release.rolloutPercent), 'data-state': state },
    channelHead(rc, channel, canRemove),
    h('p', { class: 'channel-version' }, release.version),
    h(
      'div',
      { class: 'rollout' },
      h('progress', { max: 100, value: release.rolloutPercent, 'aria-label': `Rollout of ${release.version} on ${channel.name}` }),
      h('span', { class: 'rollout-text', 'data-testid': `channel-state-${channel.name}` }, stateText(state, release.rolloutPercent)),
    ),
    // what devices get, where the state alone does not say it (complete for some host versions only: not every device)
    !cardSaysWhatDevicesGet(channel, state) ? null : h('p', { class: 'small-text', 'data-testid': `channel-devices-${channel.name}` }, channelDevicesText(channel)),
    // a pause by the release guard is said by the guard's badge below, in the words `miniship guard` prints
    release.paused && release.pausedBy && !guardBadge(channel) ? h('p', { class: 'muted small-text', 'data-testid': `channel-paused-${channel.name}` }, `Paused by ${pausedByName(channel.name, release, history)}${release.pauseReason ? `: ${release.pauseReason}` : ''}`) : null,
    h(
      'p',
      { class: 'muted small-text' },
      release.hostVersionRange ? ['Host app ', h('code', null, release.hostVersionRange), ' · '] : null,
      'since ',
      ago(release.releasedAt),
      // short, as the overview's recent activity writes it (the card must keep the overview one screen tall); the
      // name as History writes it on hover
      release.releasedBy ? h('span', { title: personName(release.releasedBy) }, ` by ${release.releasedBy.displayName || release.releasedBy.email}`) : null,
    ),
    // the guard's line sits beside the actions, so a card (and the overview) stays one screen tall at 1280×800
    controls.some(Boolean) ? h('div', { class: 'actions tight with-guard' }, controls, guardPart(rc, channel, canGuard)) : guardPart(rc, channel, canGuard),
  )
}

function insightsPanel(insights: Insights, workspace: Workspace): HTMLElement {
  const days = insights.days.map((d) => d.day)
  const downloads = downloadSeries(insights)
  const total = insights.totals.downloads.ios + insights.totals.downloads.android
  const live = insights.adoption.versionId ? (workspace.versions.find((v) => v.id === insights.adoption.versionId)?.version ?? 'the live version') : null
  const figures = h(
    'dl',
    { class: 'figures' },
    h('div', null, h('dt', null, 'Downloads'), h('dd', null, String(total))),
    // each figure named for what it counts (decisions §13)
    h('div', null, h('dt', { title: 'Install-info answers: requests for the files to install' }, 'Install-info requests'), h('dd', { 'data-testid': 'figure-install-info' }, String(insights.totals.installInfoRequests ?? insights.totals.installs))),
    // what an update client asks at every start: a fleet on miniship/sdk makes these, not install-info requests
    h('div', null, h('dt', { title: 'Update checks: devices asking whether there is a new version' }, 'Update checks'), h('dd', { 'data-testid': 'figure-update-checks' }, String(insights.totals.updateChecks))),
    insights.totals.installed !== undefined ? h('div', null, h('dt', { title: "Devices' installed events" }, 'Installed'), h('dd', { 'data-testid': 'figure-installed' }, String(insights.totals.installed))) : null,
    h('div', null, h('dt', null, 'Failures'), h('dd', { class: insights.totals.failures ? 'bad' : '' }, String(insights.totals.failures))),
    h('div', null, h('dt', null, 'Active devices'), h('dd', null, String(insights.totals.activeDevices))),
    live && insights.totals.activeDevices > 0
      ? h(
          'div',
          null,
          h('dt', null, `On ${live}`),
          h('dd', { 'data-testid': 'figure-adoption' }, `${Math.round(insights.adoption.share * 100)} %`),
          insights.adoption.devices !== undefined && insights.adoption.day ? h('dd', { class: 'hint', 'data-testid': 'figure-adoption-devices' }, `of the ${insights.adoption.devices} devices seen on ${insights.adoption.day}`) : null,
        )
      : null,
  )
  const hasData = total > 0 || insights.totals.activeDevices > 0 || insights.totals.installs > 0
  return h(
    'section',
    { class: 'card insights', 'data-testid': 'insights', 'aria-labelledby': 'insights-title' },
    h('h2', { id: 'insights-title' }, 'Last 30 days'),
    figures,
    hasData
      ? h(
          'div',
          { class: 'charts' },
          // drawn at about the size it is shown, so its axis labels stay readable
          h('div', null, adoptionChart(insights, { width: 320, height: 150 })),
          h('div', null, h('h3', null, 'Downloads per day'), stackedBarChart({ days, series: downloads, label: 'Downloads per day, iOS and Android', testId: 'downloads-chart' })),
        )
      : h('p', { class: 'empty', 'data-testid': 'insights-empty' }, 'No downloads or installs recorded yet. Once phones install a version, its adoption and downloads per day appear here.'),
    insights.recentFailures.length
      ? h('details', { class: 'failures' }, h('summary', null, `Recent install failures (${insights.recentFailures.length})`), h('ul', null, insights.recentFailures.slice(0, 5).map((f) => h('li', { 'data-testid': 'recent-failure' }, h('strong', null, f.version), f.channel ? ` on ${f.channel}: ` : ' ', f.message, ' · ', ago(f.at)))))
      : null,
  )
}

interface OverviewOptions {
  rc: ReleaseContext
  workspace: Workspace
  canRollout: boolean
  /** the server has DELETE …/channels/{channel} */
  canRemoveChannel: boolean
  hasInsights: boolean
  isCurrent(): boolean
}

export function overviewTab(options: OverviewOptions): HTMLElement {
  const { rc, workspace, canRollout } = options
  const { miniApp } = workspace
  const label = (id: string | null | undefined) => (id ? (rc.versionLabel(id) ?? 'a version further down the list') : 'none')
  // what stable's devices get: never a reverted release (decisions §13)
  const stable = rc.channels?.find((c) => c.name === 'stable') ?? null
  const stableLive = stable ? (channelState(stable) === 'reverted' ? stable.previousRelease?.versionId : stable.release?.versionId) : miniApp.currentReleaseVersionId

  const channels = rc.channels
    ? h('div', { class: 'channels', 'data-testid': 'channels' }, rc.channels.length ? rc.channels.map((c) => channelCard(rc, c, canRollout, options.canRemoveChannel, workspace.viewer?.canManageMembers === true, workspace.releaseHistory)) : h('p', { class: 'muted' }, 'No channels.'))
    : null

  /** Testers install the review and experience versions from here: the QR dialog, when the page has their link. */
  const installButton = (id: string | null | undefined, testId: string) => {
    const version = id ? workspace.versions.find((v) => v.id === id) : undefined
    const link = id ? workspace.accessLinks.find((l) => l.versionId === id) : undefined
    return version && link ? h('dd', null, actionButton('Install…', testId, 'secondary small', () => showInstall(version, link))) : null
  }
  const summary = h(
    'dl',
    { class: 'summary card' },
    h('div', null, h('dt', null, 'Live release'), h('dd', { 'data-testid': 'summary-release' }, label(stableLive)), h('dd', { class: 'hint' }, stable ? `On the stable channel. ${channelDevicesText(stable)}` : 'What users of the host app download.')),
    h('div', null, h('dt', null, 'Review version'), h('dd', { 'data-testid': 'summary-review' }, label(miniApp.currentReviewVersionId)), installButton(miniApp.currentReviewVersionId, 'install-review'), h('dd', { class: 'hint' }, 'Submitted for checking before it is published.')),
    h('div', null, h('dt', null, 'Experience version'), h('dd', { 'data-testid': 'summary-experience' }, label(miniApp.currentExperienceVersionId)), installButton(miniApp.currentExperienceVersionId, 'install-experience'), h('dd', { class: 'hint' }, 'The latest upload, for testers to try.')),
  )

  const recent: ReleaseHistoryEntry[] = workspace.releaseHistory.slice(0, 3)
  const changes = h(
    'section',
    { class: 'card recent', 'aria-labelledby': 'recent-title' },
    h('h2', { id: 'recent-title' }, 'Latest changes'),
    recent.length
      ? h('ul', { class: 'plain' }, recent.map((entry) => h('li', null, h('strong', null, historyLine(entry, rc)), h('span', { class: 'muted', title: historyActor(entry) }, ' · ', entry.apiKey ? `API key "${entry.apiKey.name}"` : entry.actor?.displayName || entry.actor?.email || historyActor(entry), ' · ', ago(entry.createdAt)))))
      : h('p', { class: 'muted' }, 'Nothing has been published yet.'),
    recent.length ? h('p', null, h('a', { href: appPath(miniApp.appId, 'history') }, 'All of the release history')) : null,
  )

  const insightsSlot = h('div', { class: 'insights-slot' })
  if (options.hasInsights) {
    insightsSlot.append(h('p', { class: 'loading' }, 'Loading insights…'))
    api<Insights>('GET', `${rc.base}/insights?days=30`)
      .then((insights) => {
        if (options.isCurrent()) insightsSlot.replaceChildren(insightsPanel(insights, workspace))
      })
      .catch((error: unknown) => {
        if (options.isCurrent()) insightsSlot.replaceChildren(h('p', { class: 'hint' }, `Insights could not be loaded: ${error instanceof Error ? error.message : String(error)}`))
      })
  }

  const firstSteps =
    workspace.versions.length === 0
      ? h(
          'p',
          { class: 'empty', 'data-testid': 'overview-empty' },
          'Nothing uploaded yet. ',
          h('a', { href: appPath(miniApp.appId, 'upload') }, 'Upload the first version'),
          ' from this browser, or push it with the command-line tool (',
          h('a', { href: '/tokens' }, 'see Tokens'),
          ').',
        )
      : null

  return h('div', { class: 'overview' }, firstSteps, channels, h('div', { class: options.hasInsights ? 'overview-grid' : 'overview-grid single' }, options.hasInsights ? insightsSlot : null, h('div', { class: 'side' }, summary, changes)))
}
