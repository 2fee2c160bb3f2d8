// GET/POST /setup: the one-time page that creates the first administrator (plain HTML, no script, the console's security headers).
import { Elysia } from 'elysia'
import type { AppDeps } from '../deps'
import { AppError } from '../../http/errors'
import { escapeHtml, htmlPage as page, pageCss } from '../../http/html-page'
import { createFirstAdmin, hasActiveAdmin, type SetupGate } from './service'

function form(token: string, passwordMinLength: number, values: { email?: string; displayName?: string } = {}, problem?: string): string {
  return `${problem ? `<p class="alert" role="alert"><strong>${escapeHtml(problem)}</strong></p>` : ''}<p>No administrator exists yet. Create the first one; this link then stops working.</p>
<form method="post" action="/setup">
<input type="hidden" name="token" value="${escapeHtml(token)}">
<label>Email <input type="email" name="email" required autocomplete="username" value="${escapeHtml(values.email ?? '')}"></label>
<label>Display name <span class="hint">(optional)</span> <input type="text" name="displayName" maxlength="100" value="${escapeHtml(values.displayName ?? '')}"></label>
<label>Password <span class="hint">(at least ${passwordMinLength} characters)</span> <input type="password" name="password" required minlength="${passwordMinLength}" autocomplete="new-password"></label>
<button type="submit">Create administrator</button>
</form>`
}

const adminExists = () => page(409, 'Already set up', '<p>An administrator exists already. <a href="/">Sign in to the console</a>.</p>')
const invalidLink = () => page(403, 'Setup link not valid', '<p>This setup link is not valid: it works once, and only the link the running server printed at start. Restart miniship to print a new one (while no administrator exists), or run <code>miniship create-admin --data-dir DIR --email you@example.com</code> on the server, DIR being the data directory the server uses (its start-up lines print this command with it).</p>')

export function setupRoutes(deps: AppDeps & { setup: SetupGate }) {
  const { db, clock, setup } = deps
  return new Elysia()
    .get('/setup.css', () => new Response(pageCss, { headers: { 'content-type': 'text/css; charset=utf-8', 'cache-control': 'public, max-age=3600', 'x-content-type-options': 'nosniff' } }), { detail: { hide: true } })
    .get(
      '/setup',
      ({ query }) => {
        if (hasActiveAdmin(db)) return adminExists()
        if (!setup.matches(query.token)) return invalidLink()
        return page(200, 'Set up miniship', form(setup.token!, deps.config.passwordMinLength))
      },
      { detail: { hide: true } },
    )
    .post(
      '/setup',
      async ({ body }) => {
        const fields = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>
        const text = (name: string) => (typeof fields[name] === 'string' ? (fields[name] as string) : undefined)
        try {
          const user = await createFirstAdmin(db, clock, setup, { token: fields.token, email: fields.email, displayName: fields.displayName, password: fields.password }, deps.config.passwordMinLength)
          return page(201, 'Administrator created', `<p>${escapeHtml(user.email)} is the administrator. <a href="/">Sign in to the console</a>.</p>`)
        } catch (error) {
          if (!(error instanceof AppError)) throw error
          if (error.code === 'ADMIN_EXISTS') return adminExists()
          if (error.code === 'SETUP_TOKEN_INVALID') return invalidLink()
          return page(error.status, 'Set up miniship', form(setup.token ?? '', deps.config.passwordMinLength, { email: text('email'), displayName: text('displayName') }, error.message))
        }
      },
      { detail: { hide: true } },
    )
}
