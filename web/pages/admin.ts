// Administration (admins only): users with role and status, creating users, everyone's API keys, and the audit log.
import { api, seg, type ApiKey, type AuditLog, type Person, type Role, type User } from '../api.ts'
import { ago, confirmDialog, field, h, onSubmit, personName, showError, showNotice, time } from '../dom.ts'
import { serverHas } from '../features.ts'
import type { PageContext } from '../router.ts'
import { currentUser } from '../session.ts'
import { passwordHint, passwordMinLength } from '../server-info.ts'
import { revokeKeyButton } from './tokens.ts'

const AUDIT_PAGE = 50
/** users per page: more are loaded with "Show more users" */
const USERS_PAGE = 100

interface AdminListing {
  users: User[]
  /** the next page of users (`userCursor`); null on the last */
  usersNextCursor: string | null
  auditLogs: AuditLog[]
}

/** The listing, paged back from the oldest audit entry shown (its createdAt and id). */
function listingPath(before?: AuditLog): string {
  const query = new URLSearchParams({ auditLimit: String(AUDIT_PAGE), userLimit: String(USERS_PAGE) })
  if (before) {
    query.set('auditBefore', before.createdAt)
    query.set('auditBeforeId', before.id)
  }
  return `/api/admin/users?${query}`
}

export async function adminPage(ctx: PageContext): Promise<void> {
  // the password hints name the server's --password-min-length, not the contract's 6
  const [listing, hasKeys, passwordMin] = await Promise.all([api<AdminListing>('GET', listingPath()), serverHas('apiKeys'), passwordMinLength()])
  const keys = hasKeys ? (await api<{ apiKeys: OwnedApiKey[] }>('GET', '/api/admin/api-keys')).apiKeys : null
  if (!ctx.isCurrent()) return
  ctx.render(
    h('h1', { tabindex: -1 }, 'Administration'),
    h('p', { class: 'lead' }, 'Manage who can sign in, and see who did what on this server.'),
    usersSection(ctx, listing.users, listing.usersNextCursor ?? null, passwordMin),
    createUserSection(ctx, passwordMin),
    keys ? apiKeysSection(ctx, keys) : null,
    auditSection(listing.auditLogs),
  )
}

type OwnedApiKey = ApiKey & { owner: Person }

/** Every user's live API keys, so an administrator can find and revoke a leaked one. */
function apiKeysSection(ctx: PageContext, keys: OwnedApiKey[]): HTMLElement {
  const live = keys.filter((k) => !k.revokedAt)
  return h(
    'section',
    { 'aria-labelledby': 'all-keys-title' },
    h('h2', { id: 'all-keys-title' }, 'API keys'),
    live.length
      ? h(
          'div',
          { class: 'table-wrap' },
          h(
            'table',
            { class: 'responsive', 'data-testid': 'admin-keys-table' },
            h('thead', null, h('tr', null, ['Owner', 'Name', 'Key', 'Scopes', 'Last used', ''].map((l) => h('th', { scope: 'col' }, l)))),
            h(
              'tbody',
              null,
              live.map((key) => {
                const revoke = revokeKeyButton(ctx, {
                  testId: `admin-revoke-key-${key.prefix}`,
                  title: `Revoke ${key.name} of ${key.owner.email}?`,
                  message: 'Whatever uses this key is refused from now on. Its owner can create a new one on their Tokens page.',
                  path: `/api/admin/api-keys/${seg(key.id)}`,
                  notice: `Revoked ${key.owner.email}'s key ${key.name}.`,
                })
                return h(
                  'tr',
                  { 'data-testid': `admin-key-${key.prefix}` },
                  h('td', { 'data-label': 'Owner' }, personName(key.owner)),
                  h('td', { 'data-label': 'Name' }, key.name),
                  h('td', { 'data-label': 'Key' }, h('code', null, `${key.prefix}…`)),
                  h('td', { 'data-label': 'Scopes' }, key.scopes.join(', ')),
                  h('td', { 'data-label': 'Last used' }, key.lastUsedAt ? ago(key.lastUsedAt) : 'never'),
                  h('td', { 'data-label': '' }, revoke),
                )
              }),
            ),
          ),
        )
      : h('p', { class: 'empty', 'data-testid': 'admin-keys-empty' }, 'Nobody has an API key.'),
  )
}

function usersSection(ctx: PageContext, users: User[], nextCursor: string | null, passwordMin: number): HTMLElement {
  const me = currentUser()

  async function patch(user: User, body: Partial<Pick<User, 'displayName' | 'role' | 'status'>> & { password?: string }, done: string, button: HTMLButtonElement): Promise<void> {
    button.disabled = true
    try {
      await api('PATCH', `/api/admin/users/${seg(user.id)}`, body)
      showNotice(done)
      ctx.reload()
    } catch (error) {
      showError(error)
      button.disabled = false
    }
  }

  function button(label: string, testId: string, kind: string, handler: (b: HTMLButtonElement) => Promise<void>): HTMLButtonElement {
    const b = h('button', { type: 'button', class: `${kind} small`, 'data-testid': testId }, label)
    b.addEventListener('click', () => void handler(b).catch(showError))
    return b
  }

  const signsOut = 'Their current sessions end at once; they sign in again with the same password.'

  const userRow = (user: User) => {
    const self = me?.id === user.id
    const newRole: Role = user.role === 'ADMIN' ? 'USER' : 'ADMIN'
    const roleButton = button(newRole === 'ADMIN' ? 'Make admin' : 'Make regular user', `toggle-role-${user.email}`, 'secondary', async (b) => {
      const ok = await confirmDialog({
        title: newRole === 'ADMIN' ? `Make ${user.email} an administrator?` : `Remove administrator rights from ${user.email}?`,
        message: [
          h('p', null, newRole === 'ADMIN' ? 'Administrators see and manage every miniapp and every user.' : 'They keep access to the miniapps they are members of.'),
          h('p', null, self ? 'This is your own account: you will be signed out.' : signsOut),
        ],
        confirmLabel: newRole === 'ADMIN' ? 'Make admin' : 'Make regular user',
      })
      if (ok) await patch(user, { role: newRole }, `${user.email} is now ${newRole === 'ADMIN' ? 'an administrator' : 'a regular user'}.`, b)
    })
    const disabling = user.status === 'ACTIVE'
    const statusButton = button(disabling ? 'Disable…' : 'Enable', `toggle-status-${user.email}`, disabling ? 'danger-outline' : 'secondary', async (b) => {
      if (disabling) {
        const ok = await confirmDialog({
          title: `Disable ${user.email}?`,
          message: h('p', null, `They can no longer sign in, and their tokens (including command-line logins) stop working at once. Their miniapps and versions stay. You can enable the account again later.${self ? ' This is your own account: you will be signed out.' : ''}`),
          confirmLabel: 'Disable account',
          danger: true,
        })
        if (!ok) return
      }
      await patch(user, { status: disabling ? 'DISABLED' : 'ACTIVE' }, `${user.email} is now ${disabling ? 'disabled' : 'active'}.`, b)
    })
    const passwordButton = button('Reset password…', `reset-password-${user.email}`, 'secondary', async (b) => {
      const answer = await confirmDialog({
        title: `Set a new password for ${user.email}`,
        message: h('p', null, `Tell them the new password yourself. ${self ? 'This is your own account: you will be signed out.' : 'Their current sessions end at once.'}`),
        confirmLabel: 'Set password',
        fields: [{ name: 'password', label: 'New password', kind: 'password', hint: passwordHint(passwordMin), required: true }],
      })
      if (answer) await patch(user, { password: answer.password ?? '' }, `Set a new password for ${user.email}.`, b)
    })
    const renameButton = button('Rename…', `rename-${user.email}`, 'secondary', async (b) => {
      const answer = await confirmDialog({
        title: `Rename ${user.email}`,
        message: h('p', null, 'The display name is shown instead of the email address.'),
        confirmLabel: 'Save name',
        fields: [{ name: 'displayName', label: 'Display name', kind: 'text', required: true }],
      })
      if (answer) await patch(user, { displayName: (answer.displayName ?? '').trim() }, `Renamed ${user.email}.`, b)
    })
    return h(
      'tr',
      { 'data-testid': `user-row-${user.email}` },
      h('td', { 'data-label': 'User' }, h('strong', null, user.displayName || '—'), h('br'), h('span', { class: 'muted' }, user.email), self ? h('span', { class: 'badge' }, 'you') : null),
      h('td', { 'data-label': 'Role', 'data-testid': `user-role-${user.email}`, 'data-role': user.role }, user.role === 'ADMIN' ? 'Administrator' : 'User'),
      h(
        'td',
        { 'data-label': 'Status', 'data-testid': `user-status-${user.email}`, 'data-status': user.status },
        h('span', { class: `status status-${user.status.toLowerCase()}` }, user.status === 'ACTIVE' ? 'Active' : 'Disabled'),
      ),
      h('td', { 'data-label': 'Created' }, time(user.createdAt)),
      h('td', { 'data-label': 'Actions' }, h('div', { class: 'actions' }, roleButton, statusButton, passwordButton, renameButton)),
    )
  }

  // the server answers users a page at a time, oldest first: the rest come with "Show more users"
  let shown = users.length
  let cursor = nextCursor
  const title = h('h2', { id: 'users-title' }, '')
  const sayCount = () => (title.textContent = cursor === null ? `Users (${shown})` : `Users (the first ${shown})`)
  sayCount()
  const body = h('tbody', null, users.map(userRow))
  const more = h('button', { type: 'button', class: 'secondary', 'data-testid': 'users-more' }, 'Show more users')
  more.hidden = cursor === null
  more.addEventListener('click', () => {
    more.disabled = true
    const query = new URLSearchParams({ userLimit: String(USERS_PAGE), userCursor: cursor ?? '', auditLimit: '1' })
    api<AdminListing>('GET', `/api/admin/users?${query}`)
      .then((page) => {
        body.append(...page.users.map(userRow))
        shown += page.users.length
        cursor = page.usersNextCursor ?? null
        more.hidden = cursor === null
        sayCount()
      })
      .catch(showError)
      .finally(() => (more.disabled = false))
  })

  return h(
    'section',
    { 'aria-labelledby': 'users-title' },
    title,
    h(
      'div',
      { class: 'table-wrap' },
      h(
        'table',
        { class: 'responsive', 'data-testid': 'users-table' },
        h('thead', null, h('tr', null, ['User', 'Role', 'Status', 'Created', 'Actions'].map((t) => h('th', { scope: 'col' }, t)))),
        body,
      ),
    ),
    h('div', { class: 'actions' }, more),
  )
}

function createUserSection(ctx: PageContext, passwordMin: number): HTMLElement {
  const form = h(
    'form',
    { 'data-testid': 'create-user-form', novalidate: true },
    field('Email', h('input', { name: 'email', type: 'email', required: true, autocomplete: 'off' })),
    field('Display name', h('input', { name: 'displayName', type: 'text', required: true, autocomplete: 'off' })),
    field('Password', h('input', { name: 'password', type: 'password', required: true, autocomplete: 'new-password' }), `${passwordHint(passwordMin)} Give it to the person yourself.`),
    field('Role', h('select', { name: 'role' }, h('option', { value: 'USER' }, 'User'), h('option', { value: 'ADMIN' }, 'Administrator')), 'A user creates and works on miniapps; an administrator manages everything.'),
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary', 'data-testid': 'create-user-submit' }, 'Create user')),
  )
  onSubmit(form, async (values) => {
    const created = await api<User>('POST', '/api/admin/users', {
      email: (values.email ?? '').trim(),
      displayName: (values.displayName ?? '').trim(),
      password: values.password ?? '',
      role: values.role === 'ADMIN' ? 'ADMIN' : 'USER',
    })
    showNotice(`Created ${created.email ?? values.email}. They can sign in now.`)
    ctx.reload()
  })
  return h('section', { class: 'card', 'aria-labelledby': 'create-user-title' }, h('h2', { id: 'create-user-title' }, 'Create a user'), form)
}

function auditRow(entry: AuditLog): HTMLElement {
  // names people know (an appId, "com.example.shop 1.2.0", an email); the raw id only for a record that is gone
  const target = entry.targetName ? `${entry.targetType ?? ''} ${entry.targetName}`.trim() : [entry.targetType, entry.targetId].filter(Boolean).join(' ')
  const hasMetadata = entry.metadata !== null && entry.metadata !== undefined && !(typeof entry.metadata === 'object' && Object.keys(entry.metadata as object).length === 0)
  return h(
    'tr',
    { 'data-testid': 'audit-entry', 'data-action': entry.action },
    h('td', { 'data-label': 'When' }, time(entry.createdAt)),
    h('td', { 'data-label': 'Who', 'data-testid': 'audit-actor' }, entry.actorName || entry.actorEmail || (entry.actorId ? entry.actorId : 'system')),
    h('td', { 'data-label': 'Action' }, h('code', null, entry.action)),
    h('td', { 'data-label': 'Target' }, target || '—'),
    h(
      'td',
      { 'data-label': 'What happened' },
      entry.summary || '—',
      hasMetadata ? h('details', null, h('summary', null, 'Details'), h('pre', null, JSON.stringify(entry.metadata, null, 2))) : null,
    ),
  )
}

function auditSection(firstPage: AuditLog[]): HTMLElement {
  const body = h('tbody', null, firstPage.map(auditRow))
  // a guard against showing an entry twice should entries change between pages
  const shown = new Set(firstPage.map((e) => e.id))
  let oldest = firstPage.at(-1)
  const footer = h('div', { class: 'actions' })
  const older = h('button', { type: 'button', class: 'secondary', 'data-testid': 'audit-older' }, 'Show older entries')
  const end = h('p', { class: 'hint', 'data-testid': 'audit-end' }, 'No older entries.')

  function updateFooter(lastPageSize: number): void {
    footer.replaceChildren(lastPageSize >= AUDIT_PAGE && oldest ? older : end)
  }

  older.addEventListener('click', () => {
    if (!oldest) return
    older.disabled = true
    api<AdminListing>('GET', listingPath(oldest))
      .then((page) => {
        const fresh = page.auditLogs.filter((e) => !shown.has(e.id))
        for (const e of fresh) shown.add(e.id)
        body.append(...fresh.map(auditRow))
        oldest = page.auditLogs.at(-1) ?? oldest
        updateFooter(page.auditLogs.length)
      })
      .catch(showError)
      .finally(() => {
        older.disabled = false
      })
  })
  updateFooter(firstPage.length)

  return h(
    'section',
    { 'aria-labelledby': 'audit-title' },
    h('h2', { id: 'audit-title' }, 'Audit log'),
    h('p', { class: 'hint' }, `Every sign-in problem, account change, upload, review, publish, rollback and delete, newest first, ${AUDIT_PAGE} at a time.`),
    firstPage.length
      ? h(
          'div',
          { class: 'table-wrap' },
          h(
            'table',
            { class: 'responsive', 'data-testid': 'audit-log' },
            h('thead', null, h('tr', null, ['When', 'Who', 'Action', 'Target', 'What happened'].map((t) => h('th', { scope: 'col' }, t)))),
            body,
          ),
        )
      : h('p', { class: 'empty' }, 'Nothing has been recorded yet.'),
    firstPage.length ? footer : null,
  )
}
