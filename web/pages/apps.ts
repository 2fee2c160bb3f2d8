// The miniapps list and the form that creates a miniapp.
import { api, type MiniApp } from '../api.ts'
import { field, h, onSubmit, showNotice } from '../dom.ts'
import type { PageContext } from '../router.ts'

export async function appsPage(ctx: PageContext): Promise<void> {
  const apps = await api<MiniApp[]>('GET', '/api/mini-apps')
  if (!ctx.isCurrent()) return

  const list = apps.length
    ? h(
        'ul',
        { class: 'app-list', 'data-testid': 'apps-list' },
        apps.map((app) =>
          h(
            'li',
            { class: 'card app-item', 'data-testid': `app-${app.appId}` },
            h('span', { class: 'avatar', 'aria-hidden': 'true' }, (app.name || app.appId).slice(0, 1).toUpperCase()),
            h(
              'div',
              { class: 'app-text' },
              h('a', { href: `#/apps/${encodeURIComponent(app.id)}`, class: 'app-name', 'data-testid': `open-app-${app.appId}` }, app.name || app.appId),
              h('p', { class: 'muted' }, h('code', null, app.appId), app.currentReleaseVersionId ? ' · has a live release' : ' · not released yet'),
              app.description ? h('p', null, app.description) : null,
            ),
          ),
        ),
      )
    : h('p', { class: 'empty', 'data-testid': 'apps-empty' }, 'No miniapps yet. Create your first one with the form below.')

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
    // the shell clears messages on every hashchange: show the notice once the workspace route has taken over
    const notice = `Created miniapp “${created.name}”. Upload its first version with the command-line tool.`
    window.addEventListener('hashchange', () => showNotice(notice), { once: true })
    location.hash = `#/apps/${encodeURIComponent(created.id)}`
  })

  ctx.render(
    h('h1', { tabindex: -1 }, 'Miniapps'),
    h(
      'p',
      { class: 'lead' },
      'A miniapp is a small app that runs inside the host app. Open one to see its uploaded versions, send a version to review, publish it to users, or roll back.',
    ),
    list,
    h('section', { class: 'card', 'aria-labelledby': 'create-app-title' }, h('h2', { id: 'create-app-title' }, 'Create a miniapp'), h('p', null, 'You become its owner and can add other people as members.'), form),
  )
}
