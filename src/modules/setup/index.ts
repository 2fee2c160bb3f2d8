// GET/POST /setup: the one-time page that creates the first administrator (plain HTML, no script, the console's security headers).
import { Elysia } from 'elysia'
import type { AppDeps } from '../deps'
import { AppError } from '../../http/errors'
import { htmlSecurityHeaders } from '../../http/console-routes'
import { createFirstAdmin, hasActiveAdmin, type SetupGate } from './service'

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`)

function page(status: number, title: string, body: string): Response {
  const html = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(title)} · miniship</title></head>
<body>
<h1>${escapeHtml(title)}</h1>
${body}
</body>
</html>
`
  return new Response(html, { status, headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', ...htmlSecurityHeaders } })
}

function form(token: string, values: { email?: string; displayName?: string } = {}, problem?: string): string {
  return `${problem ? `<p role="alert"><strong>${escapeHtml(problem)}</strong></p>` : ''}<p>No administrator exists yet. Create the first one; this link then stops working.</p>
<form method="post" action="/setup">
<input type="hidden" name="token" value="${escapeHtml(token)}">
<p><label>Email <input type="email" name="email" required autocomplete="username" value="${escapeHtml(values.email ?? '')}"></label></p>
<p><label>Display name <input type="text" name="displayName" maxlength="100" value="${escapeHtml(values.displayName ?? '')}"></label></p>
<p><label>Password (at least 6 characters) <input type="password" name="password" required minlength="6" autocomplete="new-password"></label></p>
<p><button type="submit">Create administrator</button></p>
</form>`
}

const adminExists = () => page(409, 'Already set up', '<p>An administrator exists already. <a href="/">Sign in to the console</a>.</p>')
const invalidLink = () => page(403, 'Setup link not valid', '<p>This setup link is not valid: it works once, and only the link the running server printed at start. Restart miniship to print a new one (while no administrator exists), or run <code>miniship create-admin</code>.</p>')

export function setupRoutes(deps: AppDeps & { setup: SetupGate }) {
  const { db, clock, setup } = deps
  return new Elysia()
    .get(
      '/setup',
      ({ query }) => {
        if (hasActiveAdmin(db)) return adminExists()
        if (!setup.matches(query.token)) return invalidLink()
        return page(200, 'Set up miniship', form(setup.token!))
      },
      { detail: { hide: true } },
    )
    .post(
      '/setup',
      async ({ body }) => {
        const fields = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>
        const text = (name: string) => (typeof fields[name] === 'string' ? (fields[name] as string) : undefined)
        try {
          const user = await createFirstAdmin(db, clock, setup, { token: fields.token, email: fields.email, displayName: fields.displayName, password: fields.password })
          return page(201, 'Administrator created', `<p>${escapeHtml(user.email)} is the administrator. <a href="/">Sign in to the console</a>.</p>`)
        } catch (error) {
          if (!(error instanceof AppError)) throw error
          if (error.code === 'ADMIN_EXISTS') return adminExists()
          if (error.code === 'SETUP_TOKEN_INVALID') return invalidLink()
          return page(error.status, 'Set up miniship', form(setup.token ?? '', { email: text('email'), displayName: text('displayName') }, error.message))
        }
      },
      { detail: { hide: true } },
    )
}
