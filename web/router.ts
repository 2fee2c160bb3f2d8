// Which page the address names. The server serves this one page at `/` and `/cli/authorize`;
// everything else lives in the hash (`#/apps`, `#/apps/<id>`, `#/admin`).

export type Route =
  | { name: 'apps' }
  | { name: 'workspace'; id: string }
  | { name: 'admin' }
  | { name: 'signin' }
  | { name: 'cli'; code: string }
  | { name: 'notfound'; path: string }

export function parseRoute(location: Location): Route {
  if (location.pathname.replace(/\/+$/, '') === '/cli/authorize') {
    return { name: 'cli', code: new URLSearchParams(location.search).get('code')?.trim() ?? '' }
  }
  const hash = location.hash.replace(/^#/, '')
  const parts = hash.split('/').filter(Boolean).map((p) => {
    try {
      return decodeURIComponent(p)
    } catch {
      return p
    }
  })
  if (parts.length === 0) return { name: 'apps' }
  if (parts[0] === 'apps' && parts.length === 1) return { name: 'apps' }
  if (parts[0] === 'apps' && parts.length === 2 && parts[1]) return { name: 'workspace', id: parts[1] }
  if (parts[0] === 'admin' && parts.length === 1) return { name: 'admin' }
  if (parts[0] === 'signin' && parts.length === 1) return { name: 'signin' }
  return { name: 'notfound', path: hash }
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
}
