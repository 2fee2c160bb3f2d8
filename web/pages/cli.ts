// /cli/authorize?code=XXXX-0000: a signed-in user sees who asks (address, tool, time) and
// approves the command-line login with one click, or denies it.
import { api, ApiError, seg, type CliSessionDetails, type Me } from '../api.ts'
import { ago, h, hideError, personName, showError, time } from '../dom.ts'
import type { PageContext } from '../router.ts'
import { currentUser } from '../session.ts'
import { authPanel } from './auth.ts'

const CODE_SHAPE = /^[A-Z]{4}-[0-9]{4}$/

/** What each refusal means for the person at the browser (the server's message is shown too). */
const REFUSAL: Record<number, string> = {
  404: 'Unknown code',
  409: 'This code was already used',
  // the server answers an unknown code as it answers an expired one, so codes cannot be probed
  410: 'This code is unknown or has expired',
}

/** The settled states, as the page says them (on reload too). */
const SETTLED: Record<Exclude<CliSessionDetails['status'], 'pending'>, { title: string; text: string; tone: string }> = {
  approved: { title: 'Approved', text: 'This sign-in was approved. The command-line tool is signed in; you can close this tab.', tone: 'success' },
  denied: { title: 'Denied', text: 'This sign-in was denied: the command-line tool was told and stopped. Nothing can act with this code.', tone: 'failure' },
  expired: { title: 'This code has expired', text: 'Nobody approved it in time. Run the tool’s login again to get a new code.', tone: 'failure' },
}

export function cliPage(ctx: PageContext, code: string): void {
  const me = currentUser()
  const heading = h('h1', { tabindex: -1 }, 'Approve a command-line sign-in')

  if (!code) {
    ctx.render(
      heading,
      h('p', { 'data-testid': 'cli-no-code' }, 'This page approves a sign-in started by the command-line tool, but the link has no code in it. Run the tool’s login again and open the link it prints.'),
      h('p', null, h('a', { href: '/apps' }, 'Go to the console')),
    )
    return
  }

  const codeBox = h('p', { class: 'cli-code', 'data-testid': 'cli-code' }, code)
  const explain = h(
    'p',
    null,
    'The command-line tool is waiting for you to approve this code. Check that it matches the code shown in your terminal. Approve only if you started this sign-in yourself: the tool will then act as you.',
  )
  const odd = CODE_SHAPE.test(code) ? null : h('p', { class: 'hint' }, 'This does not look like a code from the tool (four letters, a dash, four digits). Check the link.')

  if (!me) {
    ctx.render(heading, codeBox, explain, odd, authPanel(() => ctx.reload(), 'Sign in first; you come back to this page to approve the code.', 'h2'))
    return
  }

  const result = h('div', { 'data-testid': 'cli-result', 'aria-live': 'polite' })
  const requester = h('div', { class: 'requester', 'data-testid': 'cli-requester' })
  const approve = h('button', { type: 'button', class: 'primary large', 'data-testid': 'cli-approve' }, 'Approve sign-in')
  const deny = h('button', { type: 'button', class: 'danger-outline large', 'data-testid': 'cli-deny' }, 'Deny')
  const leave = h('a', { href: '/apps', class: 'button secondary', 'data-testid': 'cli-cancel' }, 'Decide later')

  function show(state: string, tone: string, title: string, text: string): void {
    result.dataset.state = state
    result.className = `card ${tone}`
    result.replaceChildren(h('h2', null, title), h('p', null, text))
  }
  /** Once the code is settled there is nothing left to approve or refuse here. */
  function settle(): void {
    approve.remove()
    deny.remove()
    // nothing waits for an approval any more: the result below says what happened
    explain.remove()
    leave.textContent = 'Go to the console'
  }
  function refused(error: unknown, button: HTMLButtonElement): void {
    if (error instanceof ApiError && error.handled) return
    if (error instanceof ApiError && error.code === 'CLI_SESSION_DENIED') {
      settle()
      show('denied', SETTLED.denied.tone, SETTLED.denied.title, SETTLED.denied.text)
      showError(error)
      return
    }
    const title = error instanceof ApiError ? REFUSAL[error.status] : undefined
    show(error instanceof ApiError ? String(error.status) : 'error', 'failure', title ?? 'Could not do that', title ? 'Nothing was approved. Run the tool’s login again to get a new code.' : 'Nothing changed. Try again, or run the tool’s login again.')
    showError(error) // the server's own message, in the alert region at the top
    if (!title) button.disabled = false
    else settle()
  }

  approve.addEventListener('click', () => {
    approve.disabled = true
    hideError()
    api<{ code?: string; status?: string }>('POST', `/api/auth/cli/sessions/${seg(code)}/approve`)
      .then(() => {
        settle()
        show('approved', 'success', 'Approved', `The command-line tool is now signed in as ${personName(me satisfies Me)}. You can close this tab and go back to your terminal.`)
      })
      .catch((error: unknown) => refused(error, approve))
  })
  deny.addEventListener('click', () => {
    deny.disabled = true
    hideError()
    api<{ code: string; status: 'denied' }>('POST', `/api/auth/cli/sessions/${seg(code)}/deny`)
      .then(() => {
        settle()
        show('denied', SETTLED.denied.tone, SETTLED.denied.title, 'You denied this sign-in. The command-line tool stops at its next check; nothing can act with this code.')
      })
      .catch((error: unknown) => refused(error, deny))
  })

  ctx.render(
    heading,
    codeBox,
    explain,
    odd,
    requester,
    h('p', null, 'Signed in as ', h('strong', null, personName(me)), '.'),
    h('div', { class: 'actions' }, approve, deny, leave),
    result,
  )

  // who asks, and whether it is still open (after approval a reload says so instead of offering the buttons again)
  api<CliSessionDetails>('GET', `/api/auth/cli/sessions/${seg(code)}/details`)
    .then((details) => {
      if (!ctx.isCurrent()) return
      const from = details.requestedFrom
      requester.replaceChildren(
        h(
          'dl',
          { class: 'summary card' },
          h('div', null, h('dt', null, 'Requested from'), h('dd', null, from.address ?? 'an unknown address')),
          h('div', null, h('dt', null, 'Tool'), h('dd', { class: 'agent' }, from.userAgent ?? 'not given')),
          h('div', null, h('dt', null, 'Started'), h('dd', null, ago(details.createdAt), ' (', time(details.createdAt), ')')),
        ),
      )
      if (details.status !== 'pending') {
        settle()
        const settled = SETTLED[details.status]
        show(details.status, settled.tone, settled.title, settled.text)
      }
    })
    .catch((error: unknown) => {
      if (error instanceof ApiError && (error.status === 410 || error.status === 404)) {
        // unknown or expired (the server does not say which): nothing left to approve or deny
        settle()
        show(String(error.status), 'failure', REFUSAL[error.status] ?? 'This code is unknown or has expired', 'Nothing can be approved with it. Run the tool’s login again to get a new code.')
        return
      }
      if (!(error instanceof ApiError && error.handled)) showError(error)
    })
}
