// The miniship admin console: the page shell (header, messages, sign-in gate) and the router.
//
// Served by the server at these paths (router.ts maps them to pages):
//   /apps  miniapps list + create        /apps/<appId>[/<tab>]  a miniapp (overview, versions, upload,
//   /tokens  API keys and CLI commands                      history, settings, members)
//   /admin administration (ADMIN only)   /cli/authorize?code=XXXX-0000  approve or deny a CLI login
// The access token is kept in localStorage ("Keep me signed in") or sessionStorage, never in a URL.
//
// data-testid map (stable, for browser tests). <v> is a version string such as 1.0.0,
// <email> a user's or member's email, <appId> a miniapp's appId. Form inputs inside a form are
// addressed by their `name` (the API field name), e.g. [data-testid=create-app-form] [name=appId].
//   Shell     nav, nav-apps, nav-tokens, nav-admin (only for ADMIN), current-user (name + role), sign-out,
//             alert (role=alert, every error's message), alert-dismiss,
//             notice (role=status, success messages), notice-dismiss, page (the <main>)
//   Sign in   signin-form, keep-signed-in (the checkbox, on by default), signin-submit, show-register, register-form, register-submit,
//             show-signin, registration-closed (shown once the server answered REGISTRATION_CLOSED)
//   Forms     field-error-<name> (inline message from a 400's details[] under the input <name>)
//   Dialog    confirm-dialog, confirm-ok, confirm-cancel, confirm-notes (publish/rollback notes),
//             confirm-password (reset password), confirm-displayName (rename)
//   Miniapps  apps-search, new-app (opens the create form), apps-list, apps-empty, apps-no-match,
//             app-<appId>, open-app-<appId> (link to the miniapp), app-live-<appId> (live version per channel),
//             create-app-form (appId, name, description, iconUrl), create-app-submit
//   Checklist checklist (admins, until done or hidden), checklist-<create-miniapp|copy-push|registration|signing-key>
//             (data-done), checklist-copy-command, checklist-registration-done, checklist-signing-link, checklist-dismiss
//   Miniapp   back-to-apps, app-title, app-id, tab-<overview|versions|history|settings|members>, upload-button
//   Overview  overview-empty (no version yet), channels, channel-<name> (what phones get now on it;
//             data-version, data-rollout), summary-release, summary-review, summary-experience,
//             install-review, install-experience, rollout-raise-<name>, rollout-halt-<name>,
//             rollout-complete-<name>, rollout-dialog, insights, adoption-chart (charts/adoption.ts),
//             downloads-chart, insights-empty
//   Versions  versions-filter (select of statuses), versions-table, versions-empty, versions-more (next page),
//             version-<v> (a table row; data-version-id), status-<v> (text Draft/In review/Published;
//             data-status DRAFT/IN_REVIEW/PUBLISHED), badge-release-<v>, badge-review-<v>,
//             badge-experience-<v>, badge-channel-<v>, changelog-<v>, review-<v>, publish-<v>,
//             rollback-<v>, delete-<v> (present only when allowed), install-<v> (opens the install dialog)
//   Install   install-dialog, qr-<v> (wraps the <svg>; data-deep-link), install-link-<v>, copy-link-<v>, link-expiry,
//             localhost-warning, install-close
//   Publish   publish-dialog: confirm-dialog with [name=channel|rolloutPercent|mandatory|hostVersionRange|notes]
//   Upload    upload-form (bundleIos, bundleAndroid, manifest, assetsIos, assetsAndroid, version,
//             changelog, channel), drop-zone, upload-submit, upload-progress (data-loaded/data-total),
//             upload-warnings, upload-done
//   History   release-history, release-history-empty, history-entry (data-action PUBLISH/ROLLBACK/ROLLOUT)
//   Settings  edit-app-form (name, description, iconUrl, experiencePublic), edit-app-submit
//   Signing   signing (the card under Settings), require-signature (checkbox), require-signature-form,
//             require-signature-submit, signing-keys, signing-key-<keyId> (data-revoked), revoke-signing-key-<keyId>,
//             signing-keys-empty, signing-keys-unavailable, add-signing-key-form (name, publicKey), add-signing-key-submit,
//             signature-<v> (Versions row badge; data-signed true/false, data-key-id), publish-unsigned-warning,
//             publish-revoked-warning (in the publish dialog)
//   Rollback  rollback-paused-warning (in the rollback dialog, shown for a channel where the version is paused
//             below the newest); notice-warnings (under the notice: the answer's warnings, li[data-code]);
//             fallback-signature-warning (in the pause and revert dialogs; data-code FALLBACK_UNSIGNED/FALLBACK_KEY_REVOKED)
//   Members   members, members-list, member-<email>, remove-member-<email>, members-unavailable,
//             add-member-form (email, role), add-member-submit
//   Tokens    create-key-form (name, scopes, miniAppIds, expiresAt), create-key-submit, new-key (the
//             key, shown once), copy-key, keys-table, key-<name>, revoke-key-<name>, keys-empty,
//             keys-unavailable, login-command, push-command, copy-login, copy-push
//   CLI       cli-code, cli-requester (address, user agent, when), cli-approve, cli-deny, cli-cancel,
//             cli-result (data-state approved | denied | expired | 404 | 409 | 410 | error), cli-no-code
//   Admin     users-table, user-row-<email>, user-role-<email> (data-role),
//             user-status-<email> (data-status ACTIVE/DISABLED), toggle-role-<email>,
//             toggle-status-<email>, reset-password-<email>, rename-<email>,
//             create-user-form (email, displayName, password, role), create-user-submit,
//             audit-log, audit-entry (data-action), audit-older, audit-end
import { ApiError, onUnauthorized } from './api.ts'
import { followPushCommandCopies } from './checklist.ts'
import { clear, h, hideError, hideNotice, showError } from './dom.ts'
import { adminPage } from './pages/admin.ts'
import { appsPage } from './pages/apps.ts'
import { authPanel } from './pages/auth.ts'
import { cliPage } from './pages/cli.ts'
import { tokensPage } from './pages/tokens.ts'
import { workspacePage } from './pages/workspace.ts'
import { navigate, onNavigate, parseRoute, pathOf, type PageContext, type Route } from './router.ts'
import { currentUser, endSession, followOtherTabs, loadCurrentUser } from './session.ts'

function element(testId: string): HTMLElement {
  const found = document.querySelector<HTMLElement>(`[data-testid="${testId}"]`)
  if (!found) throw new Error(`index.html lacks data-testid="${testId}"`)
  return found
}

const main = element('page')
const nav = element('nav')
const account = element('account')

let renderSeq = 0

/** The Sign out button: ends the session in every tab of this browser. */
function signOut(): void {
  endSession(true)
  afterSignOut()
}

function afterSignOut(): void {
  hideNotice()
  hideError()
  const route = parseRoute(location)
  if (route.name === 'cli' || route.name === 'apps') run()
  else navigate('/apps') // draws the sign-in form in place of the miniapps list
}

const TITLES: Record<Route['name'], string> = {
  apps: 'Miniapps',
  workspace: 'Miniapp',
  tokens: 'Tokens',
  admin: 'Administration',
  signin: 'Sign in',
  cli: 'Approve command-line sign-in',
  notfound: 'Not found',
}

function drawHeader(route: Route): void {
  const me = currentUser()
  const section = route.name === 'workspace' ? 'apps' : route.name
  const link = (href: string, label: string, testId: string, current: boolean): HTMLElement =>
    h('a', { href, 'data-testid': testId, 'aria-current': current ? 'page' : undefined }, label)
  clear(
    nav,
    me ? link('/apps', 'Miniapps', 'nav-apps', section === 'apps') : null,
    me ? link('/tokens', 'Tokens', 'nav-tokens', section === 'tokens') : null,
    me?.role === 'ADMIN' ? link('/admin', 'Admin', 'nav-admin', section === 'admin') : null,
  )
  clear(
    account,
    me
      ? [
          h(
            'span',
            { class: 'who', 'data-testid': 'current-user' },
            h('span', { class: 'who-name' }, me.displayName || me.email),
            ' ',
            h('span', { class: 'badge' }, me.role === 'ADMIN' ? 'Administrator' : 'User'),
          ),
          h('button', { type: 'button', class: 'secondary small', 'data-testid': 'sign-out', on: { click: signOut } }, 'Sign out'),
        ]
      : null,
  )
}

/** Draws the page the address names; `quiet` keeps the current content until the new one is ready. */
function run(quiet = false): void {
  const id = ++renderSeq
  const route = parseRoute(location)
  // an old `/#/apps/<id>` bookmark: show its path instead
  if (location.hash.startsWith('#/') && route.name !== 'cli') {
    history.replaceState(null, '', pathOf(route))
  }
  drawHeader(route)
  document.title = `${TITLES[route.name]} · miniship`
  let rendered = false

  const ctx: PageContext = {
    isCurrent: () => id === renderSeq,
    render: (...children) => {
      if (id !== renderSeq) return
      const active = document.activeElement
      const keepFocus = active instanceof HTMLElement && main.contains(active) ? active.dataset.testid : undefined
      clear(main, ...children)
      main.removeAttribute('aria-busy')
      const again = keepFocus ? main.querySelector<HTMLElement>(`[data-testid="${CSS.escape(keepFocus)}"]`) : null
      if (again) again.focus()
      else if (!quiet && !rendered) main.querySelector<HTMLElement>('h1')?.focus()
      rendered = true
    },
    reload: () => run(true),
    reloaded: quiet,
  }

  if (!quiet) {
    main.setAttribute('aria-busy', 'true')
    clear(main, h('p', { class: 'loading' }, 'Loading…'))
  }

  const me = currentUser()
  if (route.name === 'cli') {
    cliPage(ctx, route.code)
    return
  }
  if (!me) {
    document.title = 'Sign in · miniship'
    ctx.render(authPanel(() => (route.name === 'signin' ? navigate('/apps', { replace: true }) : run()), 'Sign in to manage miniapps: upload, review, publish and roll out their versions.'))
    return
  }

  let page: Promise<void>
  switch (route.name) {
    case 'signin':
      navigate('/apps', { replace: true })
      return
    case 'apps':
      page = appsPage(ctx)
      break
    case 'workspace':
      page = workspacePage(ctx, route.id, route.tab)
      break
    case 'tokens':
      page = tokensPage(ctx, me)
      break
    case 'admin':
      if (me.role !== 'ADMIN') {
        ctx.render(h('h1', { tabindex: -1 }, 'Administration'), h('p', null, 'Only administrators can open this page. Ask one if you need an account changed.'), h('p', null, h('a', { href: '/apps' }, 'Back to the miniapps')))
        return
      }
      page = adminPage(ctx)
      break
    case 'notfound':
      ctx.render(h('h1', { tabindex: -1 }, 'Page not found'), h('p', null, 'There is no page at this address.'), h('p', null, h('a', { href: '/apps' }, 'Go to the miniapps')))
      return
  }

  page.catch((error: unknown) => {
    if (!ctx.isCurrent()) return
    showError(error)
    if (rendered) return
    const retry = h('button', { type: 'button', class: 'secondary', on: { click: () => run() } }, 'Try again')
    ctx.render(
      h('h1', { tabindex: -1 }, 'This page could not be loaded'),
      h('p', { 'data-testid': 'load-error' }, error instanceof Error ? error.message : String(error)),
      h('div', { class: 'actions' }, retry, h('a', { href: '/apps', class: 'button secondary' }, 'Go to the miniapps')),
    )
  })
}

onUnauthorized((error) => {
  const wasSignedIn = currentUser() !== null
  endSession()
  run()
  const reason = error.message.replace(/[.\s]+$/, '')
  showError(wasSignedIn ? `You have been signed out (${reason}). Please sign in again.` : `Please sign in again (${reason}).`)
})

onNavigate(() => {
  hideError()
  hideNotice()
  run()
})

// the first-steps checklist (checklist.ts) counts a copy of the push command on the Tokens page
followPushCommandCopies(currentUser)

// another tab signed out (or in): follow it
followOtherTabs((what) => {
  if (what === 'signed-out') afterSignOut()
  else void start()
})

/** Finds out who the stored token belongs to, then draws the page. */
async function start(): Promise<void> {
  try {
    await loadCurrentUser()
  } catch (error) {
    if (error instanceof ApiError && error.handled) return // 401: already signed out, sign-in shown
    // the server could not be asked: keep the token and offer to try again
    showError(error)
    const retry = h('button', { type: 'button', class: 'primary', on: { click: () => (hideError(), void start()) } }, 'Try again')
    clear(main, h('h1', { tabindex: -1 }, 'The console could not start'), h('p', { 'data-testid': 'load-error' }, error instanceof Error ? error.message : String(error)), h('div', { class: 'actions' }, retry))
    main.removeAttribute('aria-busy')
    return
  }
  run()
}

void start()
