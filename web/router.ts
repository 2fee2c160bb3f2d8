// Which page the address names, and moving between pages without reloading. The server serves
// this one page at `/`, `/apps`, `/apps/*`, `/tokens`, `/admin`, `/signin` and `/cli/authorize`;
// old `#/apps/<id>` links are moved to their path on load. A miniapp's address names it by App ID
// (`/apps/com.example.shop`); the internal id works too (web/miniapp-address.ts).

export const MINIAPP_TABS = ['overview', 'versions', 'history', 'settings', 'members', 'upload'] as const
export type MiniAppTab = (typeof MINIAPP_TABS)[number]

export type Route =
  | { name: 'apps' }
  | { name: 'workspace'; id: string; tab: MiniAppTab }
  | { name: 'tokens' }
  | { name: 'admin' }
  | { name: 'signin' }
  | { name: 'cli'; code: string }
  | { name: 'notfound'; path: string }

function segments(path: string): string[] {
  return path
    .split('/')
    .filter(Boolean)
    .map((p) => {
      try {
        return decodeURIComponent(p)
      } catch {
        return p
      }
    })
}

export function parseRoute(location: Pick<Location, 'pathname' | 'search' | 'hash'>): Route {
  const path = location.pathname.replace(/\/+$/, '')
  if (path === '/cli/authorize') return { name: 'cli', code: new URLSearchParams(location.search).get('code')?.trim() ?? '' }
  // a bookmark from the hash-routed console: `/#/apps/<id>` means `/apps/<id>`
  const parts = segments(path === '' && location.hash.startsWith('#/') ? location.hash.slice(1) : path)
  if (parts.length === 0) return { name: 'apps' }
  const [first, second, third] = parts
  if (first === 'apps' && parts.length === 1) return { name: 'apps' }
  if (first === 'apps' && second && parts.length <= 3) {
    const tab = (third ?? 'overview') as MiniAppTab
    if (MINIAPP_TABS.includes(tab)) return { name: 'workspace', id: second, tab }
  }
  if (first === 'tokens' && parts.length === 1) return { name: 'tokens' }
  if (first === 'admin' && parts.length === 1) return { name: 'admin' }
  if (first === 'signin' && parts.length === 1) return { name: 'signin' }
  return { name: 'notfound', path: parts.join('/') }
}

/** The address of a page, for links and `navigate`. */
export function pathOf(route: Route): string {
  switch (route.name) {
    case 'apps':
      return '/apps'
    case 'workspace':
      return `/apps/${encodeURIComponent(route.id)}${route.tab === 'overview' ? '' : `/${route.tab}`}`
    case 'tokens':
      return '/tokens'
    case 'admin':
      return '/admin'
    case 'signin':
      return '/signin'
    case 'cli':
      return `/cli/authorize?code=${encodeURIComponent(route.code)}`
    case 'notfound':
      return `/${route.path}`
  }
}

export const appPath = (id: string, tab: MiniAppTab = 'overview'): string => pathOf({ name: 'workspace', id, tab })

type Listener = () => void
let listener: Listener = () => undefined

/** Goes to `path` inside the console (a history entry, no reload) and draws it. */
export function navigate(path: string, options: { replace?: boolean } = {}): void {
  if (options.replace) history.replaceState(null, '', path)
  else history.pushState(null, '', path)
  listener()
}

/**
 * Draws the page on back/forward and turns clicks on same-origin links into `navigate`, so a
 * link is an ordinary <a href> (open in a new tab works) that does not reload the console.
 */
export function onNavigate(draw: Listener): void {
  listener = draw
  window.addEventListener('popstate', () => draw())
  document.addEventListener('click', (event) => {
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return
    const link = event.target instanceof Element ? event.target.closest('a') : null
    if (!link || link.target || link.hasAttribute('download') || link.origin !== location.origin) return
    const route = parseRoute(link)
    if (route.name === 'notfound' || link.pathname.startsWith('/api/')) return
    event.preventDefault()
    if (link.pathname + link.search === location.pathname + location.search) listener()
    else navigate(link.pathname + link.search)
  })
}

type Child = Parameters<typeof import('./dom.ts').clear>[1]

/** What a page gets: where to draw, and whether it is still the page on screen. */
export interface PageContext {
  /** False once the user has moved on: a late answer must not draw over the next page. */
  isCurrent(): boolean
  /** Replaces the page content, keeping keyboard focus on the same control where it can. */
  render(...children: Child[]): void
  /** Loads the same page again (after an action changed what it shows). */
  reload(): void
  /** True when this draw is reload() of the page on screen, false when the user came to it. */
  readonly reloaded: boolean
}
