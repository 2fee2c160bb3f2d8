// GET/POST /setup: the one-time page that creates the first administrator (plain HTML, no script, the console's security headers).
import { Elysia } from 'elysia'
import type { AppDeps } from '../deps'
import { AppError } from '../../http/errors'
import { htmlSecurityHeaders } from '../../http/console-routes'
import { createFirstAdmin, hasActiveAdmin, type SetupGate } from './service'

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`)

/**
 * The console's look for this one page (its colours, card, fields and button), served from here:
 * the console's stylesheet has a hashed name, and the security policy allows no inline style.
 */
const setupCss = `:root{--bg:#f5f6f8;--surface:#fff;--text:#1b1f24;--muted:#5b6470;--line:#d8dce2;--primary:#1f4fd1;--primary-dark:#173c9f;--focus:#ffb020;--field-line:#9aa3ae;--danger-bg:#fdecea;--danger-line:#f1aca6;--danger-text:#5c1410;--radius:8px;color-scheme:light;font-family:system-ui,-apple-system,'Segoe UI',Roboto,'Noto Sans','Helvetica Neue',Arial,sans-serif;font-size:16px;line-height:1.45;color:var(--text);background:var(--bg)}
*{box-sizing:border-box}
body{margin:0;min-width:320px;overflow-wrap:anywhere}
header{background:var(--surface);border-bottom:1px solid var(--line);padding:.75rem 1rem;font-weight:700}
main{max-width:32rem;margin:0 auto;padding:1rem}
.card{background:var(--surface);border:1px solid var(--line);border-radius:var(--radius);padding:1rem 1.25rem;margin:1rem 0}
h1{font-size:1.4rem;margin:0 0 .75rem}
label{display:block;font-weight:600;margin:.75rem 0 .25rem}
input{display:block;width:100%;font:inherit;padding:.5rem .6rem;border:1px solid var(--field-line);border-radius:6px;background:var(--surface);color:var(--text);margin-top:.25rem;font-weight:400}
button{font:inherit;font-weight:600;border:1px solid transparent;border-radius:6px;padding:.55rem 1rem;min-height:44px;background:var(--primary);color:#fff;cursor:pointer;margin-top:1rem}
button:hover{background:var(--primary-dark)}
:focus-visible{outline:3px solid var(--focus);outline-offset:2px}
.hint{color:var(--muted);font-size:.9rem;font-weight:400}
.alert{background:var(--danger-bg);border:1px solid var(--danger-line);color:var(--danger-text);border-radius:var(--radius);padding:.75rem 1rem}
code{background:#eef0f3;border-radius:4px;padding:0 .25rem}
a{color:var(--primary)}
`

function page(status: number, title: string, body: string): Response {
  const html = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(title)} · miniship</title><link rel="stylesheet" href="/setup.css"></head>
<body>
<header>miniship</header>
<main>
<section class="card">
<h1>${escapeHtml(title)}</h1>
${body}
</section>
</main>
</body>
</html>
`
  return new Response(html, { status, headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', ...htmlSecurityHeaders } })
}

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
    .get('/setup.css', () => new Response(setupCss, { headers: { 'content-type': 'text/css; charset=utf-8', 'cache-control': 'public, max-age=3600', 'x-content-type-options': 'nosniff' } }), { detail: { hide: true } })
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
