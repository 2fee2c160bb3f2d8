// The OpenAPI document, built from the routes' own TypeBox schemas (which are JSON Schema already:
// `type: 'null'`, `const`, `examples`), hence OpenAPI 3.1, whose schemas are JSON Schema 2020-12.
import type { DocumentDecoration } from 'elysia'
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

/** One path a wildcard route answers, documented in its place: `rest` stands for the route's `*`. */
export interface WildcardPath {
  rest: string
  params?: unknown
  query?: unknown
  detail?: RouteDetail
}

export interface RouteDetail {
  summary?: string
  description?: string
  tags?: string[]
  /** set by the guard on routes that need a Bearer token */
  security?: unknown[]
  /**
   * OpenAPI response objects by status, for answers a `response` schema cannot describe (files,
   * text) or should not check at run time; they go over the ones made from `response`
   */
  responses?: Record<string, unknown>
  /**
   * An OpenAPI request body object, for a body no `body` schema can describe: one the route leaves
   * unread for its handler to stream (`parse: 'none'`, the multipart upload); see `multipartBody`
   */
  requestBody?: Record<string, unknown>
  /** a route whose path ends in `*`: the concrete paths it answers, listed instead of the wildcard */
  wildcardPaths?: WildcardPath[]
}

/**
 * `detail.responses` of a JSON answer documented but not checked at run time. Elysia checks and
 * trims an answer against a `response` schema on every request: 0.3–0.8 ms on the console's
 * management calls (scripts/bench/scale.ts: a workspace page 1.8 → 2.6 ms), for records the
 * services build themselves. openapi.test.ts checks the answers against these schemas instead.
 */
export function jsonAnswer(status: number, schema: object): NonNullable<DocumentDecoration['responses']> {
  return { [status]: { description: 'Success', content: { 'application/json': { schema: schema as Record<string, unknown> } } } }
}

/**
 * `detail.requestBody` of a multipart/form-data body (the upload, read by busboy, not by Elysia):
 * `schema` is an object whose properties are the form's fields, a file one `{ type: 'string',
 * format: 'binary' }`; documentation only, the handler checks each field itself.
 */
export function multipartBody(schema: object): NonNullable<DocumentDecoration['requestBody']> {
  return { required: true, content: { 'multipart/form-data': { schema: schema as Record<string, unknown> } } }
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

/** A wildcard route's concrete paths as routes of their own, with its detail under theirs. */
function expandedWildcard(route: RouteLike, detail: RouteDetail): RouteLike[] {
  const { wildcardPaths, ...shared } = detail
  return (wildcardPaths ?? []).map((concrete) => ({
    method: route.method,
    path: route.path.replace(/\*$/, concrete.rest),
    hooks: { params: concrete.params, query: concrete.query ?? route.hooks?.query, detail: { ...shared, ...concrete.detail } },
  }))
}

/** What the summary of a GET says when HEAD on its path answers the same headers without the body (the runtime's files). */
export const headAnswered = 'HEAD answers the same headers without the body'

/**
 * The HEAD operation of a path whose GET says HEAD is answered (`headAnswered`): the GET's
 * parameters and each answer's headers, no content. Those HEADs are answered before routing
 * (runtime/index.ts), so no route describes them.
 */
function headOperation(operations: Record<string, unknown>): void {
  const get = operations.get as { summary?: string; responses: Record<string, { description?: string; headers?: unknown }> } | undefined
  if (get === undefined || operations.head !== undefined || !get.summary?.includes(headAnswered)) return
  const responses = Object.fromEntries(Object.entries(get.responses).map(([status, answer]) => [status, answer.headers === undefined ? { description: answer.description } : { description: answer.description, headers: answer.headers }]))
  operations.head = { ...get, summary: `${get.summary.replace(`; ${headAnswered}`, '')}: its headers, without the body (what GET answers, to check a file's size, type or ETag before downloading it)`, responses }
}

export function openApiDocument(routes: readonly RouteLike[], version: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {}
  const documented = routes.flatMap((route) => {
    const detail = route.hooks?.detail as RouteDetail | undefined
    return detail?.wildcardPaths ? expandedWildcard(route, detail) : [route]
  })
  for (const route of documented) {
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
    if (detail.requestBody) operation.requestBody = detail.requestBody
    const responses = hooks.response as Record<string, unknown> | Schemaish | undefined
    if (responses && typeof responses === 'object') {
      const byStatus = 'type' in responses ? { 200: responses } : (responses as Record<string, unknown>)
      for (const [status, schema] of Object.entries(byStatus)) {
        if (schema && typeof schema === 'object') {
          ;(operation.responses as Record<string, unknown>)[status] = { description: status.startsWith('2') ? 'Success' : 'Error', content: { 'application/json': { schema } } }
        }
      }
    }
    Object.assign(operation.responses as Record<string, unknown>, detail.responses)
    paths[path] ??= {}
    paths[path][method] = JSON.parse(JSON.stringify(operation))
  }
  for (const operations of Object.values(paths)) headOperation(operations)
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
