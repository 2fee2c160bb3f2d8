// /cli/authorize?code=XXXX-0000: a signed-in user approves a command-line login with one click.
import { api, ApiError, seg, type Me } from '../api.ts'
import { h, hideError, personName, showError } from '../dom.ts'
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

export function cliPage(ctx: PageContext, code: string): void {
  document.title = 'Approve command-line sign-in · miniship'
  const me = currentUser()
  const heading = h('h1', { tabindex: -1 }, 'Approve a command-line sign-in')

  if (!code) {
    ctx.render(
      heading,
      h('p', { 'data-testid': 'cli-no-code' }, 'This page approves a sign-in started by the command-line tool, but the link has no code in it. Run the tool’s login again and open the link it prints.'),
      h('p', null, h('a', { href: '/#/apps' }, 'Go to the console')),
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
    ctx.render(
      heading,
      codeBox,
      explain,
      odd,
      authPanel(() => ctx.reload(), 'Sign in first; you come back to this page to approve the code.', 'h2'),
    )
    return
  }

  const result = h('div', { 'data-testid': 'cli-result', 'aria-live': 'polite' })
  const approve = h('button', { type: 'button', class: 'primary large', 'data-testid': 'cli-approve' }, 'Approve sign-in')
  const leave = h('a', { href: '/#/apps', class: 'button secondary', 'data-testid': 'cli-cancel' }, 'Don’t approve')
  /** Once the code is settled there is nothing left to approve or refuse here. */
  function settle(): void {
    approve.remove()
    leave.textContent = 'Go to the console'
  }
  approve.addEventListener('click', () => {
    approve.disabled = true
    hideError()
    api<{ code?: string; status?: string }>('POST', `/api/auth/cli/sessions/${seg(code)}/approve`)
      .then(() => {
        settle()
        result.dataset.state = 'approved'
        result.className = 'card success'
        result.replaceChildren(
          h('h2', null, 'Approved'),
          h('p', null, `The command-line tool is now signed in as ${personName(me satisfies Me)}. You can close this tab and go back to your terminal.`),
        )
      })
      .catch((error: unknown) => {
        if (error instanceof ApiError && error.handled) return
        const title = error instanceof ApiError ? REFUSAL[error.status] : undefined
        result.dataset.state = error instanceof ApiError ? String(error.status) : 'error'
        result.className = 'card failure'
        result.replaceChildren(
          h('h2', null, title ?? 'Could not approve'),
          h('p', null, title ? 'Nothing was approved. Run the tool’s login again to get a new code.' : 'Nothing was approved. Try again, or run the tool’s login again.'),
        )
        showError(error) // the server's own message, in the alert region at the top
        if (!title) approve.disabled = false
        else settle()
      })
  })

  ctx.render(
    heading,
    codeBox,
    explain,
    odd,
    h('p', null, 'Signed in as ', h('strong', null, personName(me)), '.'),
    h('div', { class: 'actions' }, approve, leave),
    result,
  )
}
