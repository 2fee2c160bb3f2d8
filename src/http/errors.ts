// The one error type and the one place that renders every error as decisions §1 describes.
import { Elysia, ValidationError } from 'elysia'
import { statusTexts } from './status-text'
import { isDatabaseBusy } from '../db/open'
import { notFoundPage, wantsNotFoundPage } from './html-page'

// AppError lives in app-error.ts (no Elysia import) so pure rules and the developer CLI can throw it cheaply.
export { AppError, type ErrorDetail } from './app-error'
import { AppError, type ErrorDetail } from './app-error'

export interface ErrorBody {
  statusCode: number
  error: string
  code: string
  message: string
  details?: ErrorDetail[]
}

/** The JSON response for an error; also used outside Elysia (the request wrapper's 413). */
export function errorResponse(error: AppError): Response {
  const body: ErrorBody = {
    statusCode: error.status,
    error: statusTexts[error.status] ?? 'Error',
    code: error.code,
    message: error.message,
  }
  if (error.details) body.details = error.details
  return new Response(JSON.stringify(body), {
    status: error.status,
    headers: { 'content-type': 'application/json; charset=utf-8', ...error.headers },
  })
}

/** "/email" → "email", "/files/0/name" → "files.0.name"; the whole body → "body". */
function fieldName(path: string | undefined, where: string): string {
  const trimmed = (path ?? '').replace(/^\//, '').replace(/\//g, '.')
  return trimmed === '' ? where : trimmed
}

interface TypeBoxIssue {
  path?: string
  message?: string
  schema?: { error?: string; description?: string }
}

/** Validation failures from TypeBox as 400 VALIDATION_ERROR with one detail per field. */
export function validationToAppError(error: ValidationError): AppError {
  const where = String(error.type ?? 'body')
  const seen = new Set<string>()
  const details: ErrorDetail[] = []
  let issues: TypeBoxIssue[] = []
  try {
    issues = error.all as TypeBoxIssue[]
  } catch {
    issues = []
  }
  for (const issue of issues) {
    const field = fieldName(issue.path, where)
    if (seen.has(field)) continue
    seen.add(field)
    const message = issue.schema?.error ?? humanise(issue.message ?? 'is invalid')
    details.push({ field, message })
  }
  if (details.length === 0) details.push({ field: where, message: 'is invalid' })
  const summary = details.map((d) => `${d.field} ${d.message}`).join('; ')
  return new AppError(400, 'VALIDATION_ERROR', `Invalid ${where}: ${summary}`, details)
}

/** TypeBox says "Expected string length greater or equal to 6"; say it the way a person would. */
function humanise(message: string): string {
  const lengthAtLeast = /Expected string length greater or equal to (\d+)/.exec(message)
  if (lengthAtLeast) return `must be at least ${lengthAtLeast[1]} characters`
  const lengthAtMost = /Expected string length less or equal to (\d+)/.exec(message)
  if (lengthAtMost) return `must be at most ${lengthAtMost[1]} characters`
  if (message === 'Expected required property') return 'is required'
  if (message.startsWith('Unexpected property')) return 'is not allowed'
  return message.charAt(0).toLowerCase() + message.slice(1)
}

const diskFull = new Set(['ENOSPC', 'EDQUOT', 'SQLITE_FULL'])
const notWritable = new Set(['EACCES', 'EPERM', 'EROFS', 'SQLITE_READONLY', 'SQLITE_CANTOPEN'])

/**
 * A full disk (507) or a data directory the server may not write (503) as the client should see
 * them: without the path or the system's message, which are for the operator's log.
 */
export function storageError(error: unknown): AppError | null {
  const code = (error as { code?: unknown } | null)?.code
  if (typeof code !== 'string') return null
  const base = code.startsWith('SQLITE_') ? code.replace(/^(SQLITE_[A-Z]+?)(_[A-Z_]+)?$/, '$1') : code
  if (diskFull.has(code) || diskFull.has(base)) {
    return new AppError(507, 'INSUFFICIENT_STORAGE', 'The server has no room left to store this; try again once an operator has freed disk space')
  }
  if (notWritable.has(code) || notWritable.has(base)) {
    return new AppError(503, 'STORAGE_UNAVAILABLE', 'The server cannot write to its storage right now; an operator must check the data directory', undefined, { 'retry-after': '60' })
  }
  return null
}

/** Maps anything thrown during a request to an AppError; unknown errors become a 500 without internals. */
export function toAppError(code: string | number, error: unknown, log: (line: string) => void = console.error): AppError {
  if (error instanceof AppError) return error
  if (error instanceof ValidationError) return validationToAppError(error)
  switch (code) {
    case 'NOT_FOUND':
      return new AppError(404, 'ROUTE_NOT_FOUND', 'No such endpoint; see /api/openapi.json for the list')
    case 'PARSE':
      return new AppError(400, 'INVALID_JSON', 'The request body is not valid JSON')
    case 'INVALID_COOKIE_SIGNATURE':
      return new AppError(400, 'INVALID_COOKIE', 'A cookie has an invalid signature')
  }
  // Another process holds the write lock: a moment's wait, not a bug (db/open.ts keeps the wait short).
  if (isDatabaseBusy(error)) {
    return new AppError(503, 'DATABASE_BUSY', 'The database is busy with another writer; try again in a moment', undefined, { 'retry-after': '1' })
  }
  const storage = storageError(error)
  if (storage) {
    log(JSON.stringify({ level: 'error', msg: 'storage error', status: storage.status, error: error instanceof Error ? `${error.name}: ${error.message}` : String(error) }))
    return storage
  }
  // Bun's own stream errors when a client goes away mid-body are not bugs.
  if (error instanceof Error && error.name === 'AbortError') {
    return new AppError(400, 'REQUEST_ABORTED', 'The client closed the connection before the request body was complete')
  }
  log(JSON.stringify({ level: 'error', msg: 'unhandled error', error: error instanceof Error ? `${error.name}: ${error.message}` : String(error), stack: error instanceof Error ? error.stack : undefined }))
  return new AppError(500, 'INTERNAL_ERROR', 'Something went wrong on the server; the error was logged')
}

/** The single onError handler, registered once on the root app. */
export const errorHandler = new Elysia({ name: 'errors' }).onError({ as: 'global' }, ({ code, error, request }) =>
  // a browser's navigation to an address with no route gets the console's page; API clients the JSON
  code === 'NOT_FOUND' && wantsNotFoundPage(request) ? notFoundPage() : errorResponse(toAppError(code, error)),
)
