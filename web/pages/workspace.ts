// A miniapp's page: title, tabs (Overview · Versions · History · Settings · Members, plus Upload)
// and what each tab shows; the tabs themselves live in overview.ts, versions.ts, history.ts, upload.ts.
import { api, ApiError, seg, type Channel, type Insights, type Member, type MiniApp, type VersionStatus, type Workspace } from '../api.ts'
import { confirmDialog, field, h, onSubmit, showError, showNotice } from '../dom.ts'
import { serverFeatures } from '../features.ts'
import { miniAppIdOf } from '../miniapp-address.ts'
import { appPath, navigate, type MiniAppTab, type PageContext } from '../router.ts'
import { historyTab } from './history.ts'
import { overviewTab } from './overview.ts'
import type { ReleaseContext } from './release-actions.ts'
import { uploadTab } from './upload.ts'
import { downloadsByVersion, PAGE_SIZE, versionsTab } from './versions.ts'
import { signingSection, type KeysResult } from './signing.ts'
import type { SigningKey } from '../api.ts'
import { webhooksSection } from './webhooks.ts'

const TAB_LABEL: Record<Exclude<MiniAppTab, 'upload'>, string> = { overview: 'Overview', versions: 'Versions', history: 'History', settings: 'Settings', members: 'Members' }
const STATUSES: VersionStatus[] = ['DRAFT', 'IN_REVIEW', 'PUBLISHED']

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

/** `address` is the App ID (or, in older links, the internal id) from `/apps/<address>`. */
export async function workspacePage(ctx: PageContext, address: string, tab: MiniAppTab): Promise<void> {
  const miniAppId = await miniAppIdOf(address)
  const base = `/api/mini-apps/${seg(miniAppId)}`
  const wanted = new URLSearchParams(location.search).get('status') ?? ''
  const status = (STATUSES as string[]).includes(wanted) ? (wanted as VersionStatus) : ''
  const params = new URLSearchParams({ limit: String(PAGE_SIZE) })
  if (tab === 'versions' && status) params.set('status', status)
  const [workspace, features] = await Promise.all([api<Workspace>('GET', `${base}/workspace?${params}`), serverFeatures()])
  // Only owners and admins may read the members; asking anyway would log a 403 in the console.
  const membersResult: MembersResult | null =
    tab !== 'members'
      ? null
      : workspace.viewer?.canManageMembers === false
        ? { ok: false, error: new ApiError(403, 'OWNER_REQUIRED', 'Only owners and administrators manage members') }
        : await api<unknown>('GET', `${base}/members`).then(
            (raw) => ({ ok: true as const, members: normaliseMembers(raw) }),
            (error: unknown) => ({ ok: false as const, error }),
          )
  // the signing card, on servers whose miniapp record has the switch
  const keysResult: KeysResult | null =
    tab !== 'settings' || typeof workspace.miniApp.requireSignature !== 'boolean'
      ? null
      : await api<SigningKey[]>('GET', `${base}/signing-keys`).then(
          (keys) => ({ ok: true as const, keys }),
          (error: unknown) => ({ ok: false as const, error }),
        )
  // the workspace carries the channels once the server has them; older ones: the channels endpoint, or none
  let channels: Channel[] | null = workspace.channels ?? null
  if (!channels && features.channels) channels = (await api<{ channels: Channel[] }>('GET', `${base}/channels`)).channels
  const downloads =
    tab === 'versions' && features.insights
      ? await api<Insights>('GET', `${base}/insights?days=30`).then(
          (insights) => downloadsByVersion(insights.days),
          () => null,
        )
      : null
  if (!ctx.isCurrent()) return
  const { miniApp } = workspace
  // an older link by internal id: show the address by App ID, the one to bookmark and share
  if (address !== miniApp.appId) history.replaceState(null, '', `${appPath(miniApp.appId, tab)}${location.search}`)
  document.title = `${miniApp.name} · ${tab === 'upload' ? 'Upload' : TAB_LABEL[tab]} · miniship`

  const names = new Map(workspace.versions.map((v) => [v.id, v.version]))
  const labels = new Map(workspace.versions.map((v) => [v.id, `${v.version} (build ${v.buildNumber})`]))
  for (const c of channels ?? []) {
    for (const r of [c.release, c.previousRelease]) if (r && !names.has(r.versionId)) names.set(r.versionId, r.version)
  }
  for (const entry of workspace.releaseHistory) if (!names.has(entry.versionId)) names.set(entry.versionId, entry.version)
  const rc: ReleaseContext = {
    ctx,
    base,
    miniApp,
    channels,
    releaseHistory: workspace.releaseHistory,
    versionName: (id) => (id ? (names.get(id) ?? null) : null),
    versionLabel: (id) => (id ? (labels.get(id) ?? names.get(id) ?? null) : null),
    versionSignature: (id) => workspace.versions.find((v) => v.id === id)?.signature,
  }

  let content: HTMLElement
  switch (tab) {
    case 'overview':
      content = overviewTab({ rc, workspace, canRollout: features.rollout, canRemoveChannel: features.removeChannel, hasInsights: features.insights, isCurrent: ctx.isCurrent })
      break
    case 'versions':
      content = versionsTab({
        rc,
        workspace,
        status,
        downloads,
        onFilter: (next) => navigate(`${appPath(miniApp.appId, 'versions')}${next ? `?status=${next}` : ''}`, { replace: true }),
      })
      break
    case 'history':
      content = historyTab(workspace.releaseHistory, rc)
      break
    case 'settings':
      content = h('div', { class: 'stack' }, settingsSection(ctx, base, miniApp), keysResult ? signingSection(ctx, base, miniApp, keysResult, workspace.viewer?.canManageMembers !== false) : null, webhooksSection(base, workspace.viewer?.canManageMembers !== false))
      break
    case 'members':
      content = membersSection(ctx, base, membersResult!)
      break
    case 'upload':
      content = uploadTab(miniApp, channels ? channels.map((c) => c.name) : null)
      break
  }

  const tabs = h(
    'nav',
    { class: 'tabs', 'aria-label': 'Miniapp sections' },
    (Object.keys(TAB_LABEL) as (keyof typeof TAB_LABEL)[]).map((name) =>
      h('a', { href: appPath(miniApp.appId, name), 'data-testid': `tab-${name}`, 'aria-current': tab === name ? 'page' : undefined }, TAB_LABEL[name]),
    ),
  )

  ctx.render(
    h('p', { class: 'crumb' }, h('a', { href: '/apps', 'data-testid': 'back-to-apps' }, '← All miniapps')),
    h(
      'div',
      { class: 'page-head' },
      h('div', { class: 'title-block' }, h('h1', { tabindex: -1, 'data-testid': 'app-title' }, miniApp.name), h('p', { class: 'muted' }, 'App ID ', h('code', { 'data-testid': 'app-id' }, miniApp.appId), miniApp.description ? h('span', { class: 'app-description' }, ` · ${miniApp.description}`) : null)),
      tab === 'upload' ? null : h('a', { href: appPath(miniApp.appId, 'upload'), class: 'button primary', 'data-testid': 'upload-button' }, 'Upload version'),
    ),
    tabs,
    content,
  )
  // on a phone the row scrolls sideways: bring the current tab into view (horizontally only)
  const current = tabs.querySelector<HTMLElement>('[aria-current="page"]')
  if (current && tabs.scrollWidth > tabs.clientWidth) tabs.scrollLeft = current.offsetLeft - (tabs.clientWidth - current.offsetWidth) / 2
}

function settingsSection(ctx: PageContext, base: string, miniApp: MiniApp): HTMLElement {
  // the experience switch exists only on servers whose miniapp record carries it
  const hasExperienceSwitch = typeof miniApp.experiencePublic === 'boolean'
  const form = h(
    'form',
    { 'data-testid': 'edit-app-form', novalidate: true },
    field('Name', h('input', { name: 'name', type: 'text', required: true, value: miniApp.name })),
    field('Description', h('textarea', { name: 'description', rows: 2 })),
    field('Icon URL', h('input', { name: 'iconUrl', type: 'url', value: miniApp.iconUrl ?? '' })),
    hasExperienceSwitch
      ? h(
          'div',
          { class: 'field' },
          h('label', { class: 'check' }, h('input', { type: 'checkbox', name: 'experiencePublic', checked: miniApp.experiencePublic === true }), ' Anyone with the app may install the experience version'),
          h('p', { class: 'hint' }, 'Off: the experience (latest upload) installs only through the links shown to members.'),
        )
      : null,
    h('p', { class: 'hint' }, 'The App ID cannot be changed: the host app and the command-line tool find the miniapp by it.'),
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary', 'data-testid': 'edit-app-submit' }, 'Save changes')),
  )
  const description = form.querySelector('textarea')
  if (description) description.value = miniApp.description ?? ''
  onSubmit(form, async (values) => {
    const body: Record<string, string | boolean> = {}
    if ((values.name ?? '') !== miniApp.name) body.name = (values.name ?? '').trim()
    if ((values.description ?? '') !== (miniApp.description ?? '')) body.description = values.description ?? ''
    if ((values.iconUrl ?? '') !== (miniApp.iconUrl ?? '')) body.iconUrl = (values.iconUrl ?? '').trim()
    if (hasExperienceSwitch && (values.experiencePublic === 'on') !== miniApp.experiencePublic) body.experiencePublic = values.experiencePublic === 'on'
    if (Object.keys(body).length === 0) {
      showNotice('Nothing to save: no field was changed.')
      return
    }
    await api('PATCH', base, body)
    showNotice('Saved the miniapp’s details.')
    ctx.reload()
  })
  return h('section', { class: 'card narrow', 'aria-labelledby': 'settings-title' }, h('h2', { id: 'settings-title' }, 'Settings'), form)
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
