// Install info and the update check answered straight from Bun's router: the runtime's busiest small requests skip
// Elysia's per-request work (routing, context, hooks). Same answers as the Elysia routes, which
// stay for app.handle, HEAD and the OpenAPI document.
import type { BunRequest, Server } from 'bun'
import { errorResponse, toAppError } from '../../http/errors'
import { pathStartOf } from '../../http/request-log'
import type { FileAnswers, InstallAnswers } from '.'
import type { RouteGroup } from '../system/metrics'
import type { FileKind } from '../versions/file-kinds'
import { queryValue, remembered, runtimeQuery, sliceRemembered, type Remembered } from './query'

type Answer = Response | Promise<Response>

const accessPrefix = '/api/mini-apps/access/'
const versionsPrefix = '/api/mini-apps/access/versions/'
const appsPrefix = '/api/mini-apps/access/apps/'

/**
 * A routed request's path segment right after `prefix` (its `:versionId` or `:appId`), read from
 * the URL the request log already has; null when the segment is empty or percent-encoded (Bun's
 * router decodes those: a route handler then asks `params`, and `nativeDispatch` leaves the
 * request to the app, whose routes answer the same).
 */
export function segmentAfter(url: string, prefix: string, memo?: Remembered): string | null {
  const pathStart = pathStartOf(url)
  if (pathStart === -1 || !url.startsWith(prefix, pathStart)) return null
  const start = pathStart + prefix.length
  const end = url.indexOf('/', start)
  if (end <= start) return null
  const segment = sliceRemembered(url, start, end, memo)
  return segment.indexOf('%') === -1 && segment.indexOf('?') === -1 && segment.indexOf('#') === -1 ? segment : null
}

/** The last segment of a routed request's path (`:platform`), read as `segmentAfter` reads; null where it is empty or percent-encoded. */
export function lastSegment(url: string): string | null {
  const end = pathEndOf(url)
  const start = url.lastIndexOf('/', end - 1) + 1
  if (start === 0 || start >= end) return null
  const segment = url.slice(start, end)
  return segment.indexOf('%') === -1 ? segment : null
}

/** Where a URL's path ends: its query or fragment, or its end. */
function pathEndOf(url: string): number {
  const query = url.indexOf('?')
  const hash = url.indexOf('#')
  if (query === -1) return hash === -1 ? url.length : hash
  return hash !== -1 && hash < query ? hash : query
}

/** `answer`'s result, with what it throws or rejects as the usual JSON error answer. */
function guarded(answer: Answer, log: (line: string) => void): Answer {
  return answer instanceof Promise ? answer.catch((error: unknown) => errorResponse(toAppError('UNKNOWN', error, log))) : answer
}

/** The JSON error answer of what a handler threw. */
function failed(error: unknown, log: (line: string) => void): Response {
  return errorResponse(toAppError('UNKNOWN', error, log))
}

/**
 * Where `nativeDispatch` found the routed id (`:versionId`, `:appId`) in the URL it hands a route,
 * so the route slices it there instead of reading the URL's path again. Positions are read from
 * the URL's text, so they hold for any URL equal to `url`; a route called otherwise (Bun's route
 * table, a test) reads the path itself.
 */
const dispatched: { url: string | null; idStart: number; idEnd: number } = { url: null, idStart: 0, idEnd: 0 }

/** The routed id: where nativeDispatch found it in this URL, else the segment after `prefix`, else Bun's decoded param. */
function routedId(url: string, prefix: string, memo: Remembered, request: BunRequest, param: 'versionId' | 'appId'): string {
  if (dispatched.url === url) return sliceRemembered(url, dispatched.idStart, dispatched.idEnd, memo)
  return segmentAfter(url, prefix, memo) ?? (request.params as Record<string, string>)[param]!
}

/**
 * Route table entries for `Bun.serve({ routes })`. `wrap` is the request log, so these requests
 * are logged like every other.
 */
export function nativeInstallRoutes(
  answers: InstallAnswers & FileAnswers,
  /** the request log: it reads `request.url` once and hands it to the handler */
  wrap: (handler: (request: BunRequest, server: Server<undefined>, url: string) => Answer, group: RouteGroup) => (request: BunRequest, server: Server<undefined>, url?: string) => Answer,
  log: (line: string) => void,
) {
  // each handler uses the URL the request log read: Bun builds the string anew on every access;
  // each remembers the ids and token it read last (see Remembered)
  const installIds = remembered()
  const installTokens = remembered()
  const releaseApps = remembered()
  const updateApps = remembered()
  return {
    '/api/mini-apps/access/versions/:versionId/install': {
      GET: wrap((request: BunRequest, server, url) => {
        try {
          const versionId = routedId(url, versionsPrefix, installIds, request, 'versionId')
          return guarded(answers.versionInstall(request, versionId, queryValue(url, 'token', installTokens), url, server), log)
        } catch (error) {
          return failed(error, log)
        }
      }, 'install_info'),
    },
    '/api/mini-apps/access/apps/:appId/release/install': {
      GET: wrap((request: BunRequest, _server, url) => {
        try {
          const appId = routedId(url, appsPrefix, releaseApps, request, 'appId')
          return guarded(answers.releaseInstall(request, appId, runtimeQuery(url), url), log)
        } catch (error) {
          return failed(error, log)
        }
      }, 'install_info'),
    },
    // the download URLs of install info; HEAD goes on to the app, which answers it without a body
    ...Object.fromEntries(
      (['bundles', 'assets', 'manifest'] as const).map((folder) => {
        // the kind of each platform's file, looked up by comparison; anything else (bundles/app.json, an unknown platform) takes the general path
        const kinds: Record<'ios' | 'android', FileKind> | null = folder === 'manifest' ? null : folder === 'bundles' ? { ios: 'bundleIos', android: 'bundleAndroid' } : { ios: 'assetsIos', android: 'assetsAndroid' }
        const fileIds = remembered()
        const fileTokens = remembered()
        return [
          `/api/mini-apps/access/versions/:versionId/${folder === 'manifest' ? 'manifest' : `${folder}/:platform`}`,
          {
            GET: wrap((request: BunRequest, server, url) => {
              const versionId = routedId(url, versionsPrefix, fileIds, request, 'versionId')
              const platform = kinds === null ? undefined : (lastSegment(url) ?? (request.params as { platform: string }).platform)
              const kind: FileKind | null = kinds === null ? 'manifest' : platform === 'ios' ? kinds.ios : platform === 'android' ? kinds.android : null
              try {
                // `channel`: what insights count the download under (the update check's URLs carry it)
                const channel = queryValue(url, 'channel')
                return guarded(
                  kind !== null
                    ? answers.fileOfKind(request, versionId, kind, queryValue(url, 'token', fileTokens), server, channel)
                    : answers.file(request, versionId, `${folder}/${platform}`, queryValue(url, 'token', fileTokens), server, channel),
                  log,
                )
              } catch (error) {
                return failed(error, log)
              }
            }, 'version_file'),
          },
        ]
      }),
    ),
    '/api/mini-apps/access/apps/:appId/update': {
      GET: wrap((request: BunRequest, _server, url) => {
        try {
          const appId = routedId(url, appsPrefix, updateApps, request, 'appId')
          return guarded(answers.update(request, appId, runtimeQuery(url), url), log)
        } catch (error) {
          return failed(error, log)
        }
      }, 'update_check'),
    },
  }
}

type NativeRoutes = ReturnType<typeof nativeInstallRoutes>
type NativeHandler = (request: BunRequest, server: Server<undefined>, url?: string) => Answer

/**
 * The runtime's routes picked by string comparison in serve's `fetch` handler instead of Bun's
 * route table: a route-table match made Bun build the request's params and cost more per request
 * than reading the URL's few segments here (scripts/bench/ab.ts). Answers null for anything else
 * (HEAD, another path, a segment that is empty or percent-encoded): the app answers those, with the
 * same routes. `url` is `request.url`, read once by the caller.
 */
export function nativeDispatch(routes: NativeRoutes): (request: Request, server: Server<undefined>, url: string) => Answer | null {
  const table = routes as unknown as Record<string, { GET: NativeHandler }>
  const install = table['/api/mini-apps/access/versions/:versionId/install']!.GET
  const releaseInstall = table['/api/mini-apps/access/apps/:appId/release/install']!.GET
  const update = table['/api/mini-apps/access/apps/:appId/update']!.GET
  const bundles = table['/api/mini-apps/access/versions/:versionId/bundles/:platform']!.GET
  const assets = table['/api/mini-apps/access/versions/:versionId/assets/:platform']!.GET
  const manifest = table['/api/mini-apps/access/versions/:versionId/manifest']!.GET
  return (request, server, url) => {
    const pathStart = pathStartOf(url)
    if (pathStart === -1 || !url.startsWith(accessPrefix, pathStart) || request.method !== 'GET') return null
    const end = pathEndOf(url)
    let at = pathStart + accessPrefix.length
    const versions = url.startsWith('versions/', at)
    if (versions) at += 9
    else if (url.startsWith('apps/', at)) at += 5
    else return null
    // the id: one plain segment
    const idEnd = url.indexOf('/', at)
    if (idEnd <= at || idEnd >= end || url.lastIndexOf('%', idEnd) >= at) return null
    dispatched.url = url
    dispatched.idStart = at
    dispatched.idEnd = idEnd
    at = idEnd + 1
    const rest = end - at
    const asked = request as BunRequest
    if (versions) {
      if (rest === 7 && url.startsWith('install', at)) return install(asked, server, url)
      if (rest === 8 && url.startsWith('manifest', at)) return manifest(asked, server, url)
      // bundles/{platform}, assets/{platform}: one plain segment after the folder
      const folder = url.startsWith('bundles/', at) ? bundles : url.startsWith('assets/', at) ? assets : null
      if (folder === null) return null
      const platformAt = at + (folder === bundles ? 8 : 7)
      const slash = url.indexOf('/', platformAt)
      if (platformAt >= end || (slash !== -1 && slash < end) || url.lastIndexOf('%', end - 1) >= platformAt) return null
      return folder(asked, server, url)
    }
    if (rest === 6 && url.startsWith('update', at)) return update(asked, server, url)
    if (rest === 15 && url.startsWith('release/install', at)) return releaseInstall(asked, server, url)
    return null
  }
}
