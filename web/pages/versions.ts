// The Versions tab: a compact, paged table of versions with a status filter, the row actions,
// and the install QR code and link in a dialog on demand.
import { api, FILE_KEYS, type AccessLink, type Version, type VersionStatus, type Workspace } from '../api.ts'
import { rolledBackVersions, versionStandings, versionStandingText } from '../../src/modules/channels/words.ts'
import { ago, copyText, formatBytes, h, infoDialog, personName, showError, time } from '../dom.ts'
import { qrCode } from '../qr.ts'
import { absoluteInstallUrl, allowedActions, channelsReleasedIn, isLocalOnly } from '../rules.ts'
import { actionButton, publish, remove, review, rollback, type ReleaseContext } from './release-actions.ts'
import { signatureBadge } from './signing.ts'

export const STATUS_LABEL: Record<VersionStatus, string> = { DRAFT: 'Draft', IN_REVIEW: 'In review', PUBLISHED: 'Published' }
export const PAGE_SIZE = 25

function totalSize(version: Version): number | null {
  if (!version.files) return null
  let total = 0
  for (const key of FILE_KEYS) total += version.files[key]?.size ?? 0
  return total
}

/** The install dialog: a QR code of the deep link big enough to scan from a screen, the plain link, its expiry. */
export function showInstall(v: Version, link: AccessLink): Promise<void> {
  const installUrl = absoluteInstallUrl(link.installUrl, location.origin)
  const encoded = link.deepLink ?? installUrl
  const localOnly = isLocalOnly(installUrl) || isLocalOnly(encoded)
  const expiry =
    link.expiresAt ? h('p', { class: 'hint', 'data-testid': 'link-expiry' }, 'This link expires ', time(link.expiresAt), ' (', ago(link.expiresAt), '). Open the dialog again later for a fresh one.') : null
  const content = [
    localOnly
      ? h(
          'p',
          { class: 'warning', 'data-testid': 'localhost-warning' },
          `This link points at ${new URL(installUrl).host}, which a phone cannot reach: it means the phone itself. Open the console through this computer's network address or set --public-url.`,
        )
      : null,
    h('div', { class: 'qr-box', 'data-testid': `qr-${v.version}`, 'data-deep-link': encoded }, qrCode(encoded, `QR code to install ${v.version}`)),
    h('p', { class: 'hint' }, 'Scan with the host app on a test device. The link works without signing in: share it only with people who may try this version.'),
    h('a', { href: installUrl, class: 'install-link', 'data-testid': `install-link-${v.version}`, rel: 'noopener' }, installUrl),
    expiry,
  ]
  const copy = actionButton('Copy link', `copy-link-${v.version}`, 'primary', (button) => copyText(installUrl, `the install link of ${v.version}`, button))
  return infoDialog(`Install ${v.version}`, content, 'install-dialog', copy)
}

interface VersionsTabOptions {
  rc: ReleaseContext
  workspace: Workspace
  status: VersionStatus | ''
  /** downloads per versionId over the insights window, when the server counts them */
  downloads: Map<string, number> | null
  onFilter(status: VersionStatus | ''): void
}

export function versionsTab(options: VersionsTabOptions): HTMLElement {
  const { rc, workspace, status, downloads } = options
  const { miniApp } = workspace
  const links = new Map<string, AccessLink>()
  const releasedIn = channelsReleasedIn(workspace.releaseHistory)
  const rolledBack = rolledBackVersions(workspace.releaseHistory)
  const capital = (text: string) => text.charAt(0).toUpperCase() + text.slice(1)
  /** "Published", or what became of a published version no device gets: "Published, rolled back" */
  const publishedText = (v: Version) => {
    const label = STATUS_LABEL[v.status] ?? v.status
    if (!rc.channels || v.status !== 'PUBLISHED' || versionStandings(v.id, rc.channels).some((standing) => standing.live)) return label
    return `${label}, ${versionStandingText(v, rc.channels, rolledBack)}`
  }

  function row(v: Version): HTMLTableRowElement {
    const allowed = allowedActions(v, miniApp, rc.channels, releasedIn.get(v.id) ?? null)
    const link = links.get(v.id)
    // live only where some device can get it, in the words the CLI prints (decisions §13)
    const live = rc.channels ? versionStandings(v.id, rc.channels).filter((standing) => standing.live) : null
    const badges = [
      live
        ? live.length
          ? h('span', { class: 'badge release', 'data-testid': `badge-release-${v.version}` }, capital(live.map((standing) => standing.text).join('; ')))
          : null
        : miniApp.currentReleaseVersionId === v.id
          ? h('span', { class: 'badge release', 'data-testid': `badge-release-${v.version}` }, 'Live release')
          : null,
      miniApp.currentReviewVersionId === v.id ? h('span', { class: 'badge review', 'data-testid': `badge-review-${v.version}` }, 'Review') : null,
      miniApp.currentExperienceVersionId === v.id ? h('span', { class: 'badge experience', 'data-testid': `badge-experience-${v.version}` }, 'Experience') : null,
      signatureBadge(v),
    ]
    const buttons = [
      link ? actionButton('Install', `install-${v.version}`, 'secondary small', () => showInstall(v, link)) : null,
      allowed.review ? actionButton('Review', `review-${v.version}`, 'secondary small', (b) => review(rc, v, b)) : null,
      allowed.publish ? actionButton('Publish…', `publish-${v.version}`, 'primary small', (b) => publish(rc, v, b)) : null,
      allowed.rollback ? actionButton('Roll back…', `rollback-${v.version}`, 'secondary small', (b) => rollback(rc, v, b)) : null,
      allowed.remove ? actionButton('Delete…', `delete-${v.version}`, 'danger-outline small', (b) => remove(rc, v, b)) : null,
    ]
    const size = totalSize(v)
    const count = downloads?.get(v.id)
    return h(
      'tr',
      { 'data-testid': `version-${v.version}`, 'data-version-id': v.id },
      h(
        'td',
        { 'data-label': 'Version', class: 'version-cell' },
        h('strong', { class: 'version-name' }, v.version),
        ' ',
        badges,
        h('span', { class: 'changelog', 'data-testid': `changelog-${v.version}`, title: v.changelog ?? '' }, v.changelog?.trim() ? v.changelog : h('span', { class: 'muted' }, 'No changelog.')),
      ),
      h('td', { 'data-label': 'Build' }, String(v.buildNumber)),
      h('td', { 'data-label': 'Status' }, h('span', { class: `status status-${v.status.toLowerCase()}`, 'data-testid': `status-${v.version}`, 'data-status': v.status }, publishedText(v))),
      h('td', { 'data-label': 'Channel', 'data-testid': `badge-channel-${v.version}` }, v.channel ?? '—'),
      h('td', { 'data-label': 'Size', class: 'num' }, size === null ? '—' : formatBytes(size)),
      h('td', { 'data-label': 'Uploaded', class: 'uploaded' }, ago(v.createdAt), h('span', { class: 'who-cell', title: personName(v.createdBy) }, ` by ${v.createdBy?.displayName || v.createdBy?.email || 'someone'}`)),
      h('td', { 'data-label': 'Downloads', class: 'num' }, count === undefined ? '—' : String(count)),
      h('td', { 'data-label': 'Actions' }, h('div', { class: 'row-actions' }, buttons)),
    )
  }

  const body = h('tbody')
  const more = h('button', { type: 'button', class: 'secondary', 'data-testid': 'versions-more' }, 'Older versions')
  const footer = h('div', { class: 'table-footer' })
  let shown = 0
  /** servers that do not page send every version at once: page them here, the same size */
  let pending: Version[] = []
  let cursor: string | null | undefined

  function addPage(page: Version[], accessLinks: AccessLink[], nextCursor: string | null | undefined): void {
    for (const l of accessLinks) links.set(l.versionId, l)
    if (nextCursor === undefined) {
      pending = [...pending, ...page]
      page = pending.splice(0, PAGE_SIZE)
    }
    cursor = nextCursor
    for (const v of page) body.append(row(v))
    shown += page.length
    const hasMore = (cursor !== undefined && cursor !== null) || pending.length > 0
    footer.replaceChildren(h('span', { class: 'muted' }, `${shown} version${shown === 1 ? '' : 's'} shown`), ...(hasMore ? [more] : []))
  }

  more.addEventListener('click', () => {
    if (pending.length) return addPage([], [], undefined)
    if (!cursor) return
    more.disabled = true
    const params = new URLSearchParams({ limit: String(PAGE_SIZE), cursor })
    if (status) params.set('status', status)
    api<Workspace>('GET', `${rc.base}/workspace?${params}`)
      .then((next) => {
        more.disabled = false
        addPage(next.versions, next.accessLinks ?? [], next.nextCursor)
      })
      .catch((error: unknown) => {
        more.disabled = false
        showError(error)
      })
  })

  // a server that ignores ?status= sends every status: filter here as well
  const first = status ? workspace.versions.filter((v) => v.status === status) : workspace.versions
  addPage(first, workspace.accessLinks ?? [], workspace.nextCursor)

  const filter = h(
    'select',
    { 'data-testid': 'versions-filter', 'aria-label': 'Show versions with status', name: 'status' },
    h('option', { value: '' }, 'All statuses'),
    (Object.keys(STATUS_LABEL) as VersionStatus[]).map((s) => h('option', { value: s }, STATUS_LABEL[s])),
  )
  filter.value = status
  filter.addEventListener('change', () => options.onFilter(filter.value as VersionStatus | ''))

  const empty = workspace.versions.length === 0
  return h(
    'section',
    { 'aria-labelledby': 'versions-title' },
    h('div', { class: 'section-head' }, h('h2', { id: 'versions-title' }, 'Versions'), h('label', { class: 'inline' }, 'Show ', filter)),
    empty
      ? h(
          'p',
          { class: 'empty', 'data-testid': 'versions-empty' },
          status ? `No version is ${STATUS_LABEL[status].toLowerCase()}.` : 'No versions uploaded yet. Use the Upload button above, or the command-line tool: ',
          status ? null : h('code', null, 'miniship push'),
          status ? null : ' (see Tokens).',
        )
      : h(
          'div',
          { class: 'table-wrap' },
          h(
            'table',
            { class: 'responsive versions-table', 'data-testid': 'versions-table' },
            h('thead', null, h('tr', null, ['Version', 'Build', 'Status', 'Channel', 'Size', 'Uploaded', 'Downloads', ''].map((label) => h('th', { scope: 'col' }, label)))),
            body,
          ),
        ),
    empty ? null : footer,
  )
}

/** Downloads per version over the insights window (iOS + Android). */
export function downloadsByVersion(days: { versions: { versionId: string | null; downloads: { ios: number; android: number } }[] }[]): Map<string, number> {
  const sums = new Map<string, number>()
  for (const day of days) for (const v of day.versions) if (v.versionId !== null) sums.set(v.versionId, (sums.get(v.versionId) ?? 0) + v.downloads.ios + v.downloads.android)
  return sums
}

