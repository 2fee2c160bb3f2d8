// Which optional endpoints this server has (release channels, insights, API keys arrived in
// separate releases): read once from the server's own OpenAPI document, so the console never
// probes with requests that answer 404. A panel whose endpoint is missing is simply not shown.

export const FEATURES = {
  channels: 'GET /api/mini-apps/{}/channels',
  rollout: 'PATCH /api/mini-apps/{}/channels/{}/rollout',
  removeChannel: 'DELETE /api/mini-apps/{}/channels/{}',
  insights: 'GET /api/mini-apps/{}/insights',
  apiKeys: 'GET /api/auth/api-keys',
  signing: 'GET /api/mini-apps/{}/signing-keys',
} as const

export type Feature = keyof typeof FEATURES

/** `/api/mini-apps/{miniAppId}/channels` → `/api/mini-apps/{}/channels`: parameter names vary by module. */
export function routeKey(method: string, path: string): string {
  return `${method.toUpperCase()} ${path.replace(/\{[^}]*\}/g, '{}')}`
}

let known: Promise<Set<string>> | null = null

function loadRoutes(): Promise<Set<string>> {
  known ??= fetch('/api/openapi.json', { headers: { Accept: 'application/json' } })
    .then((response) => (response.ok ? response.json() : { paths: {} }))
    .then((document: { paths?: Record<string, Record<string, unknown>> }) => {
      const routes = new Set<string>()
      for (const [path, operations] of Object.entries(document.paths ?? {})) {
        for (const method of Object.keys(operations)) routes.add(routeKey(method, path))
      }
      return routes
    })
    .catch(() => {
      known = null // ask again next time: the server may just have been unreachable
      return new Set<string>()
    })
  return known
}

/** Whether this server has the endpoints of `feature`. */
export async function serverHas(feature: Feature): Promise<boolean> {
  return (await loadRoutes()).has(FEATURES[feature])
}

/** Several at once: `{ channels: true, insights: false, … }`. */
export async function serverFeatures(): Promise<Record<Feature, boolean>> {
  const routes = await loadRoutes()
  return Object.fromEntries(Object.entries(FEATURES).map(([name, key]) => [name, routes.has(key)])) as Record<Feature, boolean>
}
