// The miniapps list (live version per channel, rollout, last activity, search) and the create form.
import { api, seg, type Channel, type MiniApp, type SigningKey } from '../api.ts'
import { ago, field, h, onSubmit, showNotice } from '../dom.ts'
import { checklistWanted, firstStepsChecklist } from '../checklist.ts'
import { serverHas } from '../features.ts'
import { appPath, navigate, type PageContext } from '../router.ts'
import { channelState, stateText } from '../../src/modules/channels/words.ts'
import { currentUser } from '../session.ts'

/** One chip per channel: "stable 1.2.0 · beta 1.3.0 rolling-out 10 %", in the state words of decisions §13. */
function channelSummary(channels: Channel[]): HTMLElement[] {
  return channels
    .filter((c) => c.release)
    .map((c) => {
      const release = c.release!
      const state = channelState(c)!
      const rollout = state === 'complete' ? null : stateText(state, release.rolloutPercent)
      return h(
        'span',
        { class: `live-chip${state === 'reverted' || state === 'paused' ? ' halted' : ''}`, 'data-channel': c.name, 'data-state': state },
        h('span', { class: 'chip-channel' }, c.name),
        ' ',
        h('strong', null, release.version),
        rollout ? h('span', { class: 'chip-rollout' }, ` ${rollout}`) : null,
      )
    })
}

/**
 * The console's Content-Security-Policy lets images come only from this origin (and data: URLs):
 * an icon elsewhere would be refused with a console error, so the letter avatar stands in for it.
 */
function iconShown(url: string | null | undefined): boolean {
  if (!url) return false
  if (url.startsWith('data:image/')) return true
  try {
    return new URL(url, location.href).origin === location.origin
  } catch {
    return false
  }
}

/** The latest moment anything happened to the app that the list can know of. */
function lastActivity(app: MiniApp, channels: Channel[] | null): string | undefined {
  const moments = [app.updatedAt, app.createdAt, ...(channels ?? []).map((c) => c.release?.releasedAt)].filter((m): m is string => !!m)
  return moments.sort().at(-1)
}

/** Keys not revoked that the first 20 miniapps trust, for the checklist's signing step (a failed read counts none). */
async function trustedKeyCount(apps: MiniApp[]): Promise<number> {
  const counts = await Promise.all(
    apps.slice(0, 20).map((app) =>
      api<SigningKey[]>('GET', `/api/mini-apps/${seg(app.id)}/signing-keys`).then(
        (keys) => keys.filter((key) => !key.revokedAt).length,
        () => 0,
      ),
    ),
  )
  return counts.reduce((sum, n) => sum + n, 0)
}

export async function appsPage(ctx: PageContext): Promise<void> {
  const [apps, hasChannels, hasSigning] = await Promise.all([api<MiniApp[]>('GET', '/api/mini-apps'), serverHas('channels'), serverHas('signing')])
  if (!ctx.isCurrent()) return
  const signingKeys = hasSigning && checklistWanted(currentUser()) ? await trustedKeyCount(apps) : null
  if (!ctx.isCurrent()) return

  const form = createForm()
  const createSection = h(
    'section',
    { class: 'card create-app', 'aria-labelledby': 'create-app-title', hidden: apps.length > 0 },
    h('h2', { id: 'create-app-title' }, 'New miniapp'),
    h('p', null, 'You become its owner and can add other people as members.'),
    form,
  )
  const newButton = h('button', { type: 'button', class: 'primary', 'data-testid': 'new-app', 'aria-expanded': String(apps.length === 0) }, 'New miniapp')
  newButton.addEventListener('click', () => {
    createSection.hidden = !createSection.hidden
    newButton.setAttribute('aria-expanded', String(!createSection.hidden))
    if (!createSection.hidden) createSection.querySelector<HTMLInputElement>('input')?.focus()
  })

  const rows = apps.map((app) => {
    const live = h('div', { class: 'live', 'data-testid': `app-live-${app.appId}` }, app.currentReleaseVersionId ? 'Has a live release' : 'Not released yet')
    const activity = h('span', { class: 'activity' }, 'Active ', ago(lastActivity(app, null)))
    const row = h(
      'li',
      { class: 'app-item', 'data-testid': `app-${app.appId}`, 'data-search': `${app.name} ${app.appId}`.toLowerCase() },
      iconShown(app.iconUrl) ? h('img', { class: 'avatar', src: app.iconUrl!, alt: '', loading: 'lazy', referrerpolicy: 'no-referrer' }) : h('span', { class: 'avatar', 'aria-hidden': 'true' }, (app.name || app.appId).slice(0, 1).toUpperCase()),
      h(
        'div',
        { class: 'app-text' },
        h('a', { href: appPath(app.appId), class: 'app-name', 'data-testid': `open-app-${app.appId}` }, app.name || app.appId),
        h('p', { class: 'muted app-id' }, h('code', null, app.appId)),
        app.description ? h('p', { class: 'app-description' }, app.description) : null,
      ),
      h('div', { class: 'app-state' }, live, activity),
    )
    // the channels come from each app's own endpoint (servers without release controls: keep the sentence)
    if (hasChannels) void api<{ channels: Channel[] }>('GET', `/api/mini-apps/${seg(app.id)}/channels`)
      .then((answer) => {
        if (!ctx.isCurrent()) return
        const chips = channelSummary(answer.channels)
        live.replaceChildren(...(chips.length ? chips : ['Not released yet']))
        activity.replaceChildren('Active ', ago(lastActivity(app, answer.channels)))
      })
      .catch(() => undefined) // the list still says whether there is a live release
    return row
  })

  const list = apps.length ? h('ul', { class: 'app-list card', 'data-testid': 'apps-list' }, rows) : h('p', { class: 'empty', 'data-testid': 'apps-empty' }, 'No miniapps yet. Create your first one with the form above.')
  const noMatch = h('p', { class: 'empty', 'data-testid': 'apps-no-match', hidden: true }, 'No miniapp matches this search.')
  const search = h('input', { type: 'search', name: 'q', placeholder: 'Search by name or App ID', 'aria-label': 'Search miniapps', 'data-testid': 'apps-search', autocomplete: 'off' })
  search.addEventListener('input', () => {
    const q = search.value.trim().toLowerCase()
    let shown = 0
    for (const row of rows) {
      row.hidden = q !== '' && !(row.dataset.search ?? '').includes(q)
      if (!row.hidden) shown++
    }
    noMatch.hidden = shown > 0 || rows.length === 0
  })

  ctx.render(
    h('div', { class: 'page-head' }, h('h1', { tabindex: -1 }, 'Miniapps'), newButton),
    firstStepsChecklist(currentUser(), apps, signingKeys),
    createSection,
    apps.length > 1 ? h('div', { class: 'toolbar' }, search) : null,
    list,
    noMatch,
    apps.length ? null : h('p', { class: 'lead' }, 'A miniapp is a small app that runs inside the host app. Create one, then upload its builds from this console or with the command-line tool (see Tokens).'),
  )
}

function createForm(): HTMLFormElement {
  const form = h(
    'form',
    { 'data-testid': 'create-app-form', novalidate: true },
    field(
      'App ID',
      h('input', { name: 'appId', type: 'text', required: true, autocomplete: 'off', spellcheck: 'false', placeholder: 'com.example.shop' }),
      'Unique and permanent: 2–64 characters, starts with a letter, then letters, digits, dots, dashes or underscores. The command-line tool uploads to this ID.',
    ),
    field('Name', h('input', { name: 'name', type: 'text', required: true, autocomplete: 'off', placeholder: 'Shop' }), 'What people see; can be changed later.'),
    field('Description (optional)', h('textarea', { name: 'description', rows: 2 })),
    field('Icon URL (optional)', h('input', { name: 'iconUrl', type: 'url', autocomplete: 'off', placeholder: 'https://…/icon.png' })),
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary', 'data-testid': 'create-app-submit' }, 'Create miniapp')),
  )
  onSubmit(form, async (values) => {
    const body: Record<string, string> = { appId: values.appId?.trim() ?? '', name: values.name?.trim() ?? '' }
    if (values.description?.trim()) body.description = values.description.trim()
    if (values.iconUrl?.trim()) body.iconUrl = values.iconUrl.trim()
    const created = await api<MiniApp>('POST', '/api/mini-apps', body)
    navigate(appPath(created.appId))
    showNotice(`Created miniapp “${created.name}”. Upload its first version from the Upload button or with the command-line tool.`)
  })
  return form
}
