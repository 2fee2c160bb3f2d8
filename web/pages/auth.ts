// Sign in and register forms, used by the console and by the CLI approval page.
import { api, ApiError, type Me } from '../api.ts'
import { field, h, hideError, onSubmit } from '../dom.ts'
import { markRegistrationClosed, registrationClosed, startSession } from '../session.ts'
import { defaultPasswordMinLength, passwordHint, serverInfo } from '../server-info.ts'

interface LoginAnswer {
  accessToken: string
}

/** Decisions §13: until an administrator exists nobody can register; the sign-in page says how to finish set-up. */
function setupNotice(): HTMLElement {
  return h(
    'div',
    { class: 'notice setup-required', role: 'status', 'data-testid': 'setup-required' },
    h('p', null, h('strong', null, 'Finish setting up this server first.'), ' It has no administrator yet, so nobody can sign in or register.'),
    h(
      'p',
      null,
      'Open the one-time setup link miniship printed in its log when it started (it ends in ',
      h('code', null, '/setup?token=…'),
      '), or run ',
      h('code', null, 'miniship create-admin --data-dir DIR --email you@example.com'),
      ' on the server, DIR being the data directory the server uses (its start-up lines print this command with it). Then sign in here.',
    ),
  )
}

/** On: the token is kept for every tab and after a restart; off: this tab only, gone when it closes. */
function keepSignedIn(): HTMLElement {
  return h(
    'label',
    { class: 'check' },
    h('input', { type: 'checkbox', name: 'keep', checked: true, 'data-testid': 'keep-signed-in' }),
    ' Keep me signed in',
    h('span', { class: 'hint' }, ' (turn off on a shared computer: you are signed out when this tab closes)'),
  )
}

/**
 * A panel with the sign-in form and, unless the server said registration is closed, a way to
 * switch to the register form. Calls onSignedIn once a token is stored and the user is loaded.
 */
export function authPanel(onSignedIn: (me: Me) => void, intro: string, heading: 'h1' | 'h2' = 'h1'): HTMLElement {
  const panel = h('section', { class: 'card auth', 'aria-labelledby': 'auth-title' })
  // servers without GET /api/info say nothing: then the contract's minimum
  let passwordMin = defaultPasswordMinLength
  let setupRequired = false
  void serverInfo().then((known) => {
    if (!known) return
    passwordMin = known.passwordMinLength
    setupRequired = known.setupRequired
    if (setupRequired && panel.querySelector('[data-testid="signin-form"]')) showSignIn()
  })

  function showSignIn(): void {
    const form = h(
      'form',
      { 'data-testid': 'signin-form', novalidate: true },
      field('Email', h('input', { name: 'email', type: 'email', autocomplete: 'username', required: true })),
      field('Password', h('input', { name: 'password', type: 'password', autocomplete: 'current-password', required: true })),
      keepSignedIn(),
      h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary', 'data-testid': 'signin-submit' }, 'Sign in')),
    )
    onSubmit(form, async (values) => {
      const answer = await api<LoginAnswer>('POST', '/api/auth/login', { email: values.email, password: values.password }, { auth: false })
      const me = await startSession(answer.accessToken, values.keep === 'on')
      hideError()
      onSignedIn(me)
    })
    const parts: (HTMLElement | null)[] = [
      h(heading, { id: 'auth-title', tabindex: -1 }, 'Sign in'),
      setupRequired ? setupNotice() : null,
      h('p', null, intro),
      form,
      setupRequired
        ? null
        : registrationClosed()
        ? h('p', { class: 'hint', 'data-testid': 'registration-closed' }, 'New accounts are created by an administrator on this server. Ask one to create an account for you.')
        : h(
            'p',
            null,
            'No account yet? ',
            h('button', { type: 'button', class: 'link', 'data-testid': 'show-register', on: { click: showRegister } }, 'Create an account'),
          ),
    ]
    panel.replaceChildren(...parts.filter((part): part is HTMLElement => part !== null))
  }

  function showRegister(): void {
    hideError()
    const form = h(
      'form',
      { 'data-testid': 'register-form', novalidate: true },
      field('Your name (optional)', h('input', { name: 'displayName', type: 'text', autocomplete: 'name' }), 'Shown to other people instead of your email.'),
      field('Email', h('input', { name: 'email', type: 'email', autocomplete: 'username', required: true })),
      field(
        'Password',
        h('input', { name: 'password', type: 'password', autocomplete: 'new-password', required: true, minlength: passwordMin }),
        passwordHint(passwordMin),
      ),
      keepSignedIn(),
      h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary', 'data-testid': 'register-submit' }, 'Create account')),
    )
    onSubmit(form, async (values) => {
      const body: Record<string, string> = { email: values.email ?? '', password: values.password ?? '' }
      if (values.displayName?.trim()) body.displayName = values.displayName.trim()
      try {
        const answer = await api<LoginAnswer>('POST', '/api/auth/register', body, { auth: false })
        const me = await startSession(answer.accessToken, values.keep === 'on')
        hideError()
        onSignedIn(me)
      } catch (error) {
        if (error instanceof ApiError && error.code === 'REGISTRATION_CLOSED') {
          markRegistrationClosed()
          showSignIn()
        }
        throw error
      }
    })
    panel.replaceChildren(
      h(heading, { id: 'auth-title', tabindex: -1 }, 'Create an account'),
      h('p', null, 'Anyone with an account can create miniapps and becomes their owner. Administrators are appointed by another administrator.'),
      form,
      h(
        'p',
        null,
        'Already have an account? ',
        h('button', { type: 'button', class: 'link', 'data-testid': 'show-signin', on: { click: () => (hideError(), showSignIn()) } }, 'Sign in'),
      ),
    )
    panel.querySelector<HTMLInputElement>('input')?.focus()
  }

  showSignIn()
  return panel
}
