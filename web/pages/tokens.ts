// Tokens, for every user: API keys for CI (created with scopes and apps, shown once, revoked here)
// and the command-line tool's login and push commands for this server, ready to copy.
import { api, seg, type ApiKey, type ApiKeyScope, type Me, type MiniApp } from '../api.ts'
import { ago, commandCode, confirmDialog, copyText, field, h, onSubmit, showError, showNotice, time } from '../dom.ts'
import { serverHas } from '../features.ts'
import type { PageContext } from '../router.ts'
import { pushCommandFor } from '../rules.ts'

const SCOPES: { value: ApiKeyScope; label: string; hint: string }[] = [
  { value: 'read', label: 'Read', hint: 'see apps, versions and releases' },
  { value: 'upload', label: 'Upload', hint: 'push new versions' },
  { value: 'release', label: 'Release', hint: 'publish, roll out and roll back' },
]

/** "Revoke…" for an API key: confirms, revokes at `path`, says so and reloads the page (the Tokens and Admin pages). */
export function revokeKeyButton(ctx: PageContext, options: { testId: string; title: string; message: string; path: string; notice: string }): HTMLButtonElement {
  const revoke = h('button', { type: 'button', class: 'danger-outline small', 'data-testid': options.testId }, 'Revoke…')
  revoke.addEventListener('click', () => {
    void (async () => {
      const ok = await confirmDialog({ title: options.title, message: h('p', null, options.message), confirmLabel: 'Revoke key', danger: true })
      if (!ok) return
      revoke.disabled = true
      try {
        await api('DELETE', options.path)
        showNotice(options.notice)
        ctx.reload()
      } catch (error) {
        showError(error)
        revoke.disabled = false
      }
    })()
  })
  return revoke
}

function copyButton(text: string, what: string, testId: string, kind = 'secondary small'): HTMLButtonElement {
  const button = h('button', { type: 'button', class: kind, 'data-testid': testId }, 'Copy')
  button.addEventListener('click', () => void copyText(text, what, button))
  return button
}

export function commandBox(command: string, testId: string, copyId: string, what: string): HTMLElement {
  return h('div', { class: 'command' }, commandCode(command, { 'data-testid': testId }), copyButton(command, what, copyId))
}

export async function tokensPage(ctx: PageContext, me: Me): Promise<void> {
  const [apps, hasKeys] = await Promise.all([api<MiniApp[]>('GET', '/api/mini-apps'), serverHas('apiKeys')])
  const keys = hasKeys ? (await api<{ apiKeys: ApiKey[] }>('GET', '/api/auth/api-keys')).apiKeys : null
  if (!ctx.isCurrent()) return
  const server = `${location.origin}/api`
  const appId = apps[0]?.appId ?? 'com.example.app'

  const cli = h(
    'section',
    { class: 'card', 'aria-labelledby': 'cli-title' },
    h('h2', { id: 'cli-title' }, 'Command-line tool'),
    h('p', null, 'Sign in once on your computer (a browser opens to approve it), then push builds from the folder that holds them:'),
    commandBox(`miniship login --server ${server}`, 'login-command', 'copy-login', 'the login command'),
    commandBox(pushCommandFor(apps[0]), 'push-command', 'copy-push', 'the push command'),
    h('p', { class: 'hint' }, 'To ship to testers first, make a channel once and push to it: ', h('code', null, `miniship channels create beta --app ${appId}`), ', then add ', h('code', null, '--channel beta'), ' to push.'),
    h('p', { class: 'hint' }, 'In CI, skip the login: set MINISHIP_SERVER to ', h('code', null, server), ' and MINISHIP_TOKEN to an API key made on this page.'),
  )

  if (!keys) {
    ctx.render(
      h('h1', { tabindex: -1 }, 'Tokens'),
      cli,
      h('section', { class: 'card', 'aria-labelledby': 'keys-title' }, h('h2', { id: 'keys-title' }, 'API keys'), h('p', { class: 'hint', 'data-testid': 'keys-unavailable' }, 'This server does not offer API keys yet. Use the command-line login above.')),
    )
    return
  }

  const appName = new Map(apps.map((a) => [a.id, a.appId]))
  const created = h('div', { 'aria-live': 'polite' })
  const active = keys.filter((k) => !k.revokedAt)

  const table = active.length
    ? h(
        'div',
        { class: 'table-wrap' },
        h(
          'table',
          { class: 'responsive', 'data-testid': 'keys-table' },
          h('thead', null, h('tr', null, ['Name', 'Key', 'Scopes', 'Apps', 'Last used', 'Expires', ''].map((l) => h('th', { scope: 'col' }, l)))),
          h(
            'tbody',
            null,
            active.map((key) => {
              const revoke = revokeKeyButton(ctx, {
                testId: `revoke-key-${key.name}`,
                title: `Revoke ${key.name}?`,
                message: 'Anything using this key (a CI job, a script) is refused from now on. This cannot be undone; create a new key if it is still needed.',
                path: `/api/auth/api-keys/${seg(key.id)}`,
                notice: `Revoked the key ${key.name}.`,
              })
              return h(
                'tr',
                { 'data-testid': `key-${key.name}` },
                h('td', { 'data-label': 'Name' }, key.name),
                h('td', { 'data-label': 'Key' }, h('code', null, `${key.prefix}…`)),
                h('td', { 'data-label': 'Scopes' }, key.scopes.join(', ')),
                h('td', { 'data-label': 'Apps' }, key.miniAppIds ? key.miniAppIds.map((id) => appName.get(id) ?? id).join(', ') : 'all of yours'),
                h('td', { 'data-label': 'Last used' }, key.lastUsedAt ? ago(key.lastUsedAt) : 'never'),
                h('td', { 'data-label': 'Expires' }, key.expiresAt ? time(key.expiresAt) : 'never'),
                h('td', { 'data-label': '' }, revoke),
              )
            }),
          ),
        ),
      )
    : h('p', { class: 'empty', 'data-testid': 'keys-empty' }, 'No API keys yet.')

  const form = h(
    'form',
    { 'data-testid': 'create-key-form', novalidate: true },
    field('Name', h('input', { name: 'name', type: 'text', required: true, autocomplete: 'off', placeholder: 'CI of the shop' }), 'So you recognise it in this list later.'),
    h(
      'fieldset',
      { class: 'choices' },
      h('legend', null, 'Scopes'),
      SCOPES.map((s) => h('label', { class: 'check' }, h('input', { type: 'checkbox', name: 'scopes', value: s.value, checked: s.value !== 'release' }), ` ${s.label} `, h('span', { class: 'hint' }, `(${s.hint})`))),
    ),
    apps.length
      ? h(
          'fieldset',
          { class: 'choices' },
          h('legend', null, 'Apps (none ticked: every app you can reach)'),
          apps.map((a) => h('label', { class: 'check' }, h('input', { type: 'checkbox', name: 'miniAppIds', value: a.id }), ' ', h('code', null, a.appId))),
        )
      : null,
    field('Expires (optional)', h('input', { name: 'expiresAt', type: 'date' }), 'Leave empty for a key that lasts until revoked.'),
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary', 'data-testid': 'create-key-submit' }, 'Create key')),
  )
  onSubmit(form, async (values) => {
    const data = new FormData(form)
    const body: Record<string, unknown> = { name: values.name?.trim() ?? '', scopes: data.getAll('scopes').map(String) }
    const appIds = data.getAll('miniAppIds').map(String)
    if (appIds.length) body.miniAppIds = appIds
    if (values.expiresAt) body.expiresAt = new Date(`${values.expiresAt}T23:59:59`).toISOString()
    const key = await api<ApiKey & { key: string }>('POST', '/api/auth/api-keys', body)
    form.reset()
    showNotice(`Created the key ${key.name}. Copy it now: it is shown only once.`)
    // the reload redraws the page with the key in the list; the secret stays on screen until the user leaves
    pendingSecret = key
    ctx.reload()
  })

  // shown until the user leaves the page or revokes that key: a redraw after revoking another key keeps it
  if (pendingSecret && (!ctx.reloaded || !active.some((k) => k.id === pendingSecret?.id))) pendingSecret = null
  if (pendingSecret) {
    const key = pendingSecret
    created.append(
      h(
        'div',
        { class: 'card success new-key' },
        h('p', null, h('strong', null, `Your new key “${key.name}”`), ' — copy it now, it is not shown again:'),
        h('div', { class: 'command' }, h('code', { 'data-testid': 'new-key' }, key.key), copyButton(key.key, 'the key', 'copy-key', 'primary small')),
      ),
    )
  }

  ctx.render(
    h('h1', { tabindex: -1 }, 'Tokens'),
    h('p', { class: 'lead' }, `Signed in as ${me.displayName || me.email}. Keys act as you, within the scopes and apps you give them.`),
    created,
    h('section', { class: 'card', 'aria-labelledby': 'keys-title' }, h('h2', { id: 'keys-title' }, 'API keys'), table, h('h3', null, 'New key'), form),
    cli,
  )
}

/** The key just created, shown on the redraws of the page that follow while it is in the list. */
let pendingSecret: (ApiKey & { key: string }) | null = null
