// The OpenAPI document, built from the routes' own TypeBox schemas (which are JSON Schema already:
// `type: 'null'`, `const`, `examples`), hence OpenAPI 3.1, whose schemas are JSON Schema 2020-12.
interface RouteLike {
  method: string
  path: string
  hooks?: Record<string, unknown>
}

interface Schemaish {
  type?: string
  properties?: Record<string, unknown>
  required?: string[]
  description?: string
}

interface RouteDetail {
  summary?: string
  description?: string
  tags?: string[]
  /** set by the guard on routes that need a Bearer token */
  security?: unknown[]
}

const httpMethods = new Set(['get', 'post', 'put', 'patch', 'delete', 'head', 'options'])

/** "/api/mini-apps/:miniAppId" → "/api/mini-apps/{miniAppId}" */
export function openApiPath(path: string): string {
  return path.replace(/:([A-Za-z0-9_]+)/g, '{$1}')
}

function parametersOf(schema: unknown, where: 'path' | 'query'): unknown[] {
  const object = schema as Schemaish | undefined
  if (!object?.properties) return []
  return Object.entries(object.properties).map(([name, property]) => ({
    name,
    in: where,
    required: where === 'path' || (object.required ?? []).includes(name),
    schema: property,
  }))
}

export function openApiDocument(routes: readonly RouteLike[], version: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {}
  for (const route of routes) {
    const method = route.method.toLowerCase()
    if (!httpMethods.has(method)) continue
    const hooks = route.hooks ?? {}
    const path = openApiPath(route.path)
    const detail = (hooks.detail ?? {}) as RouteDetail
    const pathNames = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!)
    const declaredPath = parametersOf(hooks.params, 'path')
    const pathParameters = declaredPath.length
      ? declaredPath
      : pathNames.map((name) => ({ name, in: 'path', required: true, schema: { type: 'string' } }))
    const operation: Record<string, unknown> = {
      summary: detail.summary,
      description: detail.description,
      tags: detail.tags,
      security: detail.security ?? [],
      parameters: [...pathParameters, ...parametersOf(hooks.query, 'query')],
      responses: { default: { description: 'Errors: { statusCode, error, code, message, details? }' } },
    }
    if (hooks.body) operation.requestBody = { content: { 'application/json': { schema: hooks.body } } }
    if (detail.tags?.includes('upload')) {
      operation.requestBody = { content: { 'multipart/form-data': { schema: { type: 'object' } } } }
    }
    const responses = hooks.response as Record<string, unknown> | Schemaish | undefined
    if (responses && typeof responses === 'object') {
      const byStatus = 'type' in responses ? { 200: responses } : (responses as Record<string, unknown>)
      for (const [status, schema] of Object.entries(byStatus)) {
        if (schema && typeof schema === 'object') {
          ;(operation.responses as Record<string, unknown>)[status] = { description: status.startsWith('2') ? 'Success' : 'Error', content: { 'application/json': { schema } } }
        }
      }
    }
    paths[path] ??= {}
    paths[path][method] = JSON.parse(JSON.stringify(operation))
  }
  return {
    openapi: '3.1.0',
    info: { title: 'miniship', version, description: 'Self-hosted miniapp management and download service' },
    servers: [{ url: '/' }],
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } },
    },
    paths,
  }
}
