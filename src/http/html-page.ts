// The server's own plain HTML pages (the first-admin setup, a page not found): no script, the console's
// look from /setup.css and the console's security headers.
import { htmlSecurityHeaders } from './console-routes'

export const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`)

/**
 * The console's look (its colours, card, fields and button, light and dark as web/styles.css has them) for
 * the pages served without it, at /setup.css: the console's stylesheet has a hashed name, and the security
 * policy allows no inline style.
 */
export const pageCss = `:root{--bg:#f5f6f8;--surface:#fff;--text:#1b1f24;--muted:#5b6470;--line:#d8dce2;--primary:#1f4fd1;--primary-dark:#173c9f;--focus:#ffb020;--field-line:#9aa3ae;--danger-bg:#fdecea;--danger-line:#f1aca6;--danger-text:#5c1410;--radius:8px;color-scheme:light;font-family:system-ui,-apple-system,'Segoe UI',Roboto,'Noto Sans','Helvetica Neue',Arial,sans-serif;font-size:16px;line-height:1.45;color:var(--text);background:var(--bg)}
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
code{background:var(--code-bg);border-radius:4px;padding:0 .25rem}
a{color:var(--primary)}
:root{--code-bg:#eef0f3}
@media (prefers-color-scheme:dark){:root{color-scheme:dark;--bg:#0f1319;--surface:#171c24;--text:#e4e8ee;--muted:#9aa4b2;--line:#2c3440;--primary:#7aa2ff;--primary-dark:#9bb9ff;--field-line:#4a5566;--danger-bg:#3a1614;--danger-line:#7a2c27;--danger-text:#ffd6d2;--code-bg:#262e3a}header{background:#0a0e14}button{color:#0f1319}}
`

/** A page of `title` and `body` (HTML, escaped by the caller), in a card under the miniship header. */
export function htmlPage(status: number, title: string, body: string): Response {
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

/**
 * A browser opening an address the server has no page for (/nowhere, /register): the console's
 * "not found" page, not the JSON error an API client gets. Only a GET that asks for HTML outside /api/
 * (a navigation); called on the 404 path only, so no route pays for the check.
 */
export function wantsNotFoundPage(request: Request): boolean {
  if (request.method !== 'GET') return false
  if (!(request.headers.get('accept') ?? '').toLowerCase().includes('text/html')) return false
  const path = new URL(request.url).pathname
  return path !== '/api' && !path.startsWith('/api/')
}

/** The console's "not found" page, in the console's words, with a link to its home. */
export function notFoundPage(): Response {
  return htmlPage(404, 'Page not found', '<p>There is no page at this address.</p>\n<p><a href="/apps">Go to the miniapps</a></p>')
}
