// A miniapp's workspace: its versions and the actions the version lifecycle allows on each,
// the release history, install links with QR codes, settings and members.
import { api, ApiError, FILE_KEYS, seg, type AccessLink, type FileKey, type Member, type MiniApp, type Version, type Workspace } from '../api.ts'
import { confirmDialog, field, formatBytes, h, onSubmit, personName, showError, showNotice, time } from '../dom.ts'
import { qrCode } from '../qr.ts'
import { absoluteInstallUrl, allowedActions } from '../rules.ts'
import type { PageContext } from '../router.ts'

const STATUS_LABEL: Record<string, string> = { DRAFT: 'Draft', IN_REVIEW: 'In review', PUBLISHED: 'Published' }

const FILE_LABEL: Record<FileKey, string> = {
  bundleIos: 'iOS bundle',
  bundleAndroid: 'Android bundle',
  manifest: 'Manifest (app.json)',
  assetsIos: 'iOS assets',
  assetsAndroid: 'Android assets',
}

function versionLabel(versions: Version[], id: string | null | undefined): string {
  if (!id) return 'none'
  const v = versions.find((x) => x.id === id)
  return v ? `${v.version} (build ${v.buildNumber})` : 'a deleted version'
}

function totalSize(version: Version): number | null {
  if (!version.files) return null
  let total = 0
  for (const key of FILE_KEYS) total += version.files[key]?.size ?? 0
  return total
}

function normaliseMembers(raw: unknown): Member[] {
  const list = Array.isArray(raw) ? raw : raw && typeof raw === 'object' && Array.isArray((raw as { members?: unknown }).members) ? (raw as { members: unknown[] }).members : []
  return list.map((item) => {
    const m = (item ?? {}) as Record<string, unknown>
    const user = (m.user && typeof m.user === 'object' ? m.user : {}) as Record<string, unknown>
    return {
      userId: String(m.userId ?? user.id ?? m.id ?? ''),
      email: String(m.email ?? user.email ?? ''),
      displayName: String(m.displayName ?? user.displayName ?? ''),
      role: String(m.role ?? ''),
    }
  })
}

export async function workspacePage(ctx: PageContext, miniAppId: string): Promise<void> {
  const base = `/api/mini-apps/${seg(miniAppId)}`
  const workspace = await api<Workspace>('GET', `${base}/workspace`)
  // Only owners and admins may read the members; asking anyway would log a 403 in the console.
  const membersResult: MembersResult =
    workspace.viewer?.canManageMembers === false
      ? { ok: false, error: new ApiError(403, 'OWNER_REQUIRED', 'Only owners and administrators manage members') }
      : await api<unknown>('GET', `${base}/members`).then(
          (raw) => ({ ok: true as const, members: normaliseMembers(raw) }),
          (error: unknown) => ({ ok: false as const, error }),
        )
  if (!ctx.isCurrent()) return
  const { miniApp, versions, releaseHistory } = workspace
  const links = new Map<string, AccessLink>((workspace.accessLinks ?? []).map((l) => [l.versionId, l]))
  document.title = `${miniApp.name} · miniship`

  /** Runs one lifecycle call with its button disabled, then reloads the workspace. */
  async function act(button: HTMLButtonElement, call: () => Promise<unknown>, done: string): Promise<void> {
    button.disabled = true
    try {
      await call()
      showNotice(done)
      ctx.reload()
    } catch (error) {
      showError(error)
      button.disabled = false
    }
  }

  function review(v: Version, button: HTMLButtonElement): void {
    void act(
      button,
      () => api('POST', `${base}/versions/${seg(v.id)}/review`),
      `Version ${v.version} is now the review version. Publish it once it has been checked.`,
    )
  }

  async function publish(v: Version, button: HTMLButtonElement): Promise<void> {
    const current = versions.find((x) => x.id === miniApp.currentReleaseVersionId)
    const answer = await confirmDialog({
      title: `Publish ${v.version}?`,
      message: [
        h('p', null, `Version ${v.version} (build ${v.buildNumber}) becomes the live release that every user of the host app downloads${current ? `, replacing ${current.version}` : ''}.`),
        h('p', null, 'A published version cannot be deleted or published again. To go back later, roll back to an earlier published version.'),
      ],
      confirmLabel: `Publish ${v.version}`,
      fields: [{ name: 'notes', label: 'Release notes (optional)', kind: 'textarea', hint: 'Saved in the release history.' }],
    })
    if (!answer) return
    const notes = answer.notes?.trim()
    await act(button, () => api('POST', `${base}/versions/${seg(v.id)}/publish`, notes ? { notes } : {}), `Published ${v.version}. It is now the live release.`)
  }

  async function rollback(v: Version, button: HTMLButtonElement): Promise<void> {
    const current = versions.find((x) => x.id === miniApp.currentReleaseVersionId)
    const answer = await confirmDialog({
      title: `Roll back to ${v.version}?`,
      message: [
        h('p', null, `The live release changes${current ? ` from ${current.version}` : ''} to ${v.version} (build ${v.buildNumber}). Users get it on their next update check.`),
        current ? h('p', null, `${current.version} stays published, so you can roll back to it again later.`) : null,
      ],
      confirmLabel: `Roll back to ${v.version}`,
      danger: true,
      fields: [{ name: 'notes', label: 'Why? (optional)', kind: 'textarea', hint: 'Saved in the release history.' }],
    })
    if (!answer) return
    const notes = answer.notes?.trim()
    const body: { targetVersionId: string; notes?: string } = { targetVersionId: v.id }
    if (notes) body.notes = notes
    await act(button, () => api('POST', `${base}/rollback`, body), `Rolled back: ${v.version} is now the live release.`)
  }

  async function remove(v: Version, button: HTMLButtonElement): Promise<void> {
    const answer = await confirmDialog({
      title: `Delete ${v.version}?`,
      message: h('p', null, `Version ${v.version} (build ${v.buildNumber}) and its files are removed for good, and its install link stops working. This cannot be undone.`),
      confirmLabel: `Delete ${v.version}`,
      danger: true,
    })
    if (!answer) return
    await act(button, () => api('DELETE', `${base}/versions/${seg(v.id)}`), `Deleted version ${v.version}.`)
  }

  function actionButton(label: string, testId: string, kind: string, handler: (button: HTMLButtonElement) => void | Promise<void>): HTMLButtonElement {
    const button = h('button', { type: 'button', class: kind, 'data-testid': testId })
    button.textContent = label
    button.addEventListener('click', () => void Promise.resolve(handler(button)).catch(showError))
    return button
  }

  function installBlock(v: Version): HTMLElement | null {
    const link = links.get(v.id)
    if (!link) return null
    const url = absoluteInstallUrl(link.installUrl, location.origin)
    const copy = actionButton('Copy link', `copy-link-${v.version}`, 'secondary small', async () => {
      try {
        await navigator.clipboard.writeText(url)
        showNotice(`Copied the install link of ${v.version}.`)
      } catch {
        showError('The browser did not allow copying. Select the link and copy it by hand.')
      }
    })
    return h(
      'div',
      { class: 'install' },
      h('div', { class: 'qr-box', 'data-testid': `qr-${v.version}` }, qrCode(url, `QR code of the install link of ${v.version}`)),
      h(
        'div',
        { class: 'install-text' },
        h('p', { class: 'label' }, 'Install on a test device'),
        h('p', { class: 'hint' }, 'Scan the QR code with the host app, or send testers this link. It works without signing in, so share it only with people who may try this version.'),
        h('a', { href: url, class: 'install-link', 'data-testid': `install-link-${v.version}`, rel: 'noopener' }, url),
        h('div', { class: 'actions' }, copy),
      ),
    )
  }

  function versionCard(v: Version): HTMLElement {
    const allowed = allowedActions(v, miniApp)
    const badges = [
      miniApp.currentReleaseVersionId === v.id ? h('span', { class: 'badge release', 'data-testid': `badge-release-${v.version}` }, 'Live release') : null,
      miniApp.currentReviewVersionId === v.id ? h('span', { class: 'badge review', 'data-testid': `badge-review-${v.version}` }, 'Review version') : null,
      miniApp.currentExperienceVersionId === v.id ? h('span', { class: 'badge experience', 'data-testid': `badge-experience-${v.version}` }, 'Experience version') : null,
    ]
    const buttons = [
      allowed.review ? actionButton('Submit for review', `review-${v.version}`, 'secondary', (b) => review(v, b)) : null,
      allowed.publish ? actionButton('Publish…', `publish-${v.version}`, 'primary', (b) => publish(v, b)) : null,
      allowed.rollback ? actionButton('Roll back to this…', `rollback-${v.version}`, 'secondary', (b) => rollback(v, b)) : null,
      allowed.remove ? actionButton('Delete…', `delete-${v.version}`, 'danger-outline', (b) => remove(v, b)) : null,
    ].filter((b): b is HTMLButtonElement => b !== null)
    const size = totalSize(v)
    return h(
      'li',
      { class: 'card version', 'data-testid': `version-${v.version}`, 'data-version-id': v.id },
      h(
        'div',
        { class: 'version-head' },
        h('h3', null, v.version),
        h('span', { class: `status status-${v.status.toLowerCase()}`, 'data-testid': `status-${v.version}`, 'data-status': v.status }, STATUS_LABEL[v.status] ?? v.status),
        badges,
      ),
      h(
        'p',
        { class: 'muted' },
        `Build ${v.buildNumber}`,
        v.releaseType && v.releaseType !== 'RELEASE' ? ` · ${v.releaseType}` : '',
        ' · uploaded by ',
        personName(v.createdBy),
        ' · ',
        time(v.createdAt),
        size !== null ? ` · ${formatBytes(size)} in total` : '',
      ),
      h('p', { class: 'changelog', 'data-testid': `changelog-${v.version}` }, v.changelog?.trim() ? v.changelog : h('span', { class: 'muted' }, 'No changelog.')),
      v.files
        ? h(
            'details',
            { class: 'files' },
            h('summary', null, 'Files and checksums'),
            h(
              'dl',
              null,
              FILE_KEYS.map((key) => {
                const file = v.files?.[key]
                return [h('dt', null, FILE_LABEL[key]), h('dd', null, formatBytes(file?.size), file ? h('code', { class: 'sha' }, ` sha256 ${file.sha256}`) : null)]
              }),
            ),
          )
        : null,
      buttons.length ? h('div', { class: 'actions' }, buttons) : null,
      installBlock(v),
    )
  }

  const summary = h(
    'dl',
    { class: 'summary card' },
    h('div', null, h('dt', null, 'Live release'), h('dd', { 'data-testid': 'summary-release' }, versionLabel(versions, miniApp.currentReleaseVersionId)), h('dd', { class: 'hint' }, 'What users of the host app download.')),
    h('div', null, h('dt', null, 'Review version'), h('dd', { 'data-testid': 'summary-review' }, versionLabel(versions, miniApp.currentReviewVersionId)), h('dd', { class: 'hint' }, 'Submitted for checking before it is published.')),
    h('div', null, h('dt', null, 'Experience version'), h('dd', { 'data-testid': 'summary-experience' }, versionLabel(versions, miniApp.currentExperienceVersionId)), h('dd', { class: 'hint' }, 'The latest upload, for testers to try.')),
  )

  const versionsSection = h(
    'section',
    { 'aria-labelledby': 'versions-title' },
    h('h2', { id: 'versions-title' }, 'Versions'),
    h('p', { class: 'hint' }, 'Newest first. A version goes Draft → In review → Published; it can also be published straight from Draft. Published versions cannot be deleted.'),
    versions.length
      ? h('ul', { class: 'versions', 'data-testid': 'versions-list' }, versions.map(versionCard))
      : h(
          'p',
          { class: 'empty', 'data-testid': 'versions-empty' },
          'No versions uploaded yet. Upload one with the command-line tool: it sends the bundles, assets and manifest to ',
          h('code', null, `POST /api/mini-apps/by-app-id/${miniApp.appId}/versions/upload`),
          '.',
        ),
  )

  const versionById = new Map(versions.map((v) => [v.id, v.version]))
  const historySection = h(
    'section',
    { 'aria-labelledby': 'history-title' },
    h('h2', { id: 'history-title' }, 'Release history'),
    releaseHistory.length
      ? h(
          'ol',
          { class: 'history', 'data-testid': 'release-history' },
          releaseHistory.map((entry) => {
            const previous = entry.previousVersionId ? versionById.get(entry.previousVersionId) ?? 'a deleted version' : null
            const what =
              entry.action === 'ROLLBACK'
                ? `Rolled back to ${entry.version}${previous ? ` (was ${previous})` : ''}`
                : `Published ${entry.version}${previous ? ` (replacing ${previous})` : ''}`
            return h(
              'li',
              { class: 'card', 'data-testid': 'history-entry', 'data-action': entry.action },
              h('p', null, h('strong', null, what)),
              h('p', { class: 'muted' }, 'by ', personName(entry.actor), ' · ', time(entry.createdAt)),
              entry.notes?.trim() ? h('p', { class: 'notes' }, entry.notes) : null,
            )
          }),
        )
      : h('p', { class: 'empty', 'data-testid': 'release-history-empty' }, 'Nothing has been published yet.'),
  )

  ctx.render(
    h('p', { class: 'crumb' }, h('a', { href: '#/apps', 'data-testid': 'back-to-apps' }, '← All miniapps')),
    h('h1', { tabindex: -1, 'data-testid': 'app-title' }, miniApp.name),
    h('p', { class: 'muted' }, 'App ID ', h('code', { 'data-testid': 'app-id' }, miniApp.appId), miniApp.description ? ` · ${miniApp.description}` : ''),
    summary,
    versionsSection,
    historySection,
    settingsSection(ctx, base, miniApp),
    membersSection(ctx, base, membersResult),
  )
}

function settingsSection(ctx: PageContext, base: string, miniApp: MiniApp): HTMLElement {
  const form = h(
    'form',
    { 'data-testid': 'edit-app-form', novalidate: true },
    field('Name', h('input', { name: 'name', type: 'text', required: true, value: miniApp.name })),
    field('Description', h('textarea', { name: 'description', rows: 2 })),
    field('Icon URL', h('input', { name: 'iconUrl', type: 'url', value: miniApp.iconUrl ?? '' })),
    h('p', { class: 'hint' }, 'The App ID cannot be changed: the host app and the command-line tool find the miniapp by it.'),
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary', 'data-testid': 'edit-app-submit' }, 'Save changes')),
  )
  const description = form.querySelector('textarea')
  if (description) description.value = miniApp.description ?? ''
  onSubmit(form, async (values) => {
    const body: Record<string, string> = {}
    if ((values.name ?? '') !== miniApp.name) body.name = (values.name ?? '').trim()
    if ((values.description ?? '') !== (miniApp.description ?? '')) body.description = values.description ?? ''
    if ((values.iconUrl ?? '') !== (miniApp.iconUrl ?? '')) body.iconUrl = (values.iconUrl ?? '').trim()
    if (Object.keys(body).length === 0) {
      showNotice('Nothing to save: no field was changed.')
      return
    }
    await api('PATCH', base, body)
    showNotice('Saved the miniapp’s details.')
    ctx.reload()
  })
  return h('section', { class: 'card', 'aria-labelledby': 'settings-title' }, h('h2', { id: 'settings-title' }, 'Settings'), form)
}

type MembersResult = { ok: true; members: Member[] } | { ok: false; error: unknown }

function membersSection(ctx: PageContext, base: string, result: MembersResult): HTMLElement {
  const section = h('section', { class: 'card', 'aria-labelledby': 'members-title', 'data-testid': 'members' }, h('h2', { id: 'members-title' }, 'Members'))
  if (!result.ok) {
    const error = result.error
    const text =
      error instanceof ApiError && error.status === 403
        ? 'Only the miniapp’s owners and administrators can see and change its members.'
        : `The members could not be loaded: ${error instanceof Error ? error.message : String(error)}`
    section.append(h('p', { class: 'hint', 'data-testid': 'members-unavailable' }, text))
    return section
  }
  section.append(h('p', { class: 'hint' }, 'Owners manage the miniapp and its members; developers upload, review and publish versions.'))
  section.append(
    h(
      'ul',
      { class: 'members', 'data-testid': 'members-list' },
      result.members.map((m) => {
        const remove = h('button', { type: 'button', class: 'danger-outline small', 'data-testid': `remove-member-${m.email}` }, 'Remove…')
        remove.addEventListener('click', () => {
          void (async () => {
            const ok = await confirmDialog({
              title: `Remove ${m.email}?`,
              message: h('p', null, `${m.displayName || m.email} loses access to this miniapp. You can add them again later.`),
              confirmLabel: 'Remove member',
              danger: true,
            })
            if (!ok) return
            remove.disabled = true
            try {
              await api('DELETE', `${base}/members/${seg(m.userId)}`)
              showNotice(`Removed ${m.email} from the members.`)
              ctx.reload()
            } catch (error) {
              showError(error)
              remove.disabled = false
            }
          })()
        })
        return h(
          'li',
          { 'data-testid': `member-${m.email}` },
          h('span', { class: 'member-name' }, m.displayName ? `${m.displayName} ` : '', h('span', { class: 'muted' }, m.email)),
          h('span', { class: 'badge' }, m.role === 'OWNER' ? 'Owner' : m.role === 'DEVELOPER' ? 'Developer' : m.role),
          remove,
        )
      }),
    ),
  )
  const form = h(
    'form',
    { 'data-testid': 'add-member-form', novalidate: true, class: 'inline-form' },
    field('Email of an existing user', h('input', { name: 'email', type: 'email', required: true, autocomplete: 'off' })),
    field('Role', h('select', { name: 'role' }, h('option', { value: 'DEVELOPER' }, 'Developer'), h('option', { value: 'OWNER' }, 'Owner'))),
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary', 'data-testid': 'add-member-submit' }, 'Add member')),
  )
  onSubmit(form, async (values) => {
    await api('POST', `${base}/members`, { email: (values.email ?? '').trim(), role: values.role === 'OWNER' ? 'OWNER' : 'DEVELOPER' })
    showNotice(`Added ${values.email} as ${values.role === 'OWNER' ? 'an owner' : 'a developer'}.`)
    ctx.reload()
  })
  section.append(h('h3', null, 'Add a member'), form)
  return section
}
