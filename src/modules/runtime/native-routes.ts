// Install info and the update check answered straight from Bun's router: the runtime's busiest small requests skip
// Elysia's per-request work (routing, context, hooks). Same answers as the Elysia routes, which
// stay for app.handle, HEAD and the OpenAPI document.
import type { BunRequest, Server } from 'bun'
import { errorResponse, toAppError } from '../../http/errors'
import type { FileAnswers, InstallAnswers } from '.'
import type { RouteGroup } from '../system/metrics'

type Answer = Response | Promise<Response>

/**
 * `name`'s value in a URL's query string (decoded, the first if repeated), without building a
 * URL or URLSearchParams: those cost more than the rest of a cached install-info answer.
 */
export function queryValue(url: string, name: string): string | undefined {
  const queryStart = url.indexOf('?')
  if (queryStart === -1) return undefined
  const hashStart = url.indexOf('#', queryStart)
  const end = hashStart === -1 ? url.length : hashStart
  const key = `${name}=`
  let at = queryStart + 1
  while (at < end) {
    const next = url.indexOf('&', at)
    const pairEnd = next === -1 || next > end ? end : next
    if (url.startsWith(key, at)) {
      const raw = url.slice(at + key.length, pairEnd)
      if (!/[%+]/.test(raw)) return raw
      try {
        return decodeURIComponent(raw.replace(/\+/g, ' '))
      } catch {
        return raw
      }
    }
    at = pairEnd + 1
  }
  return undefined
}

/** Errors thrown or rejected become the usual JSON error answers. */
function guarded(answer: () => Answer, log: (line: string) => void): Answer {
  const fail = (error: unknown) => errorResponse(toAppError('UNKNOWN', error, log))
  try {
    const result = answer()
    return result instanceof Promise ? result.catch(fail) : result
  } catch (error) {
    return fail(error)
  }
}

/**
 * Route table entries for `Bun.serve({ routes })`. `wrap` is the request log, so these requests
 * are logged like every other.
 */
export function nativeInstallRoutes(
  answers: InstallAnswers & FileAnswers,
  /** the request log: it reads `request.url` once and hands it to the handler */
  wrap: (handler: (request: BunRequest, server: Server<undefined>, url: string) => Answer, group: RouteGroup) => (request: BunRequest, server: Server<undefined>) => Answer,
  log: (line: string) => void,
) {
  const device = (url: string) => ({ channel: queryValue(url, 'channel'), deviceId: queryValue(url, 'deviceId'), hostVersion: queryValue(url, 'hostVersion') })
  // each handler uses the URL the request log read: Bun builds the string anew on every access
  return {
    '/api/mini-apps/access/versions/:versionId/install': {
      GET: wrap((request: BunRequest, server, url) => {
        return guarded(() => answers.versionInstall(request, (request.params as { versionId: string }).versionId, queryValue(url, 'token'), url, server), log)
      }, 'install_info'),
    },
    '/api/mini-apps/access/apps/:appId/release/install': {
      GET: wrap((request: BunRequest, _server, url) => {
        return guarded(() => answers.releaseInstall(request, (request.params as { appId: string }).appId, { ...device(url), currentVersion: queryValue(url, 'currentVersion') }, url), log)
      }, 'install_info'),
    },
    // the download URLs of install info; HEAD goes on to the app, which answers it without a body
    ...Object.fromEntries(
      ['bundles/:platform', 'assets/:platform', 'manifest'].map((path) => [
        `/api/mini-apps/access/versions/:versionId/${path}`,
        {
          GET: wrap((request: BunRequest, server, url) => {
            const params = request.params as { versionId: string; platform?: string }
            const file = params.platform === undefined ? 'manifest' : `${path.split('/')[0]}/${params.platform}`
            return guarded(() => answers.file(request, params.versionId, file, queryValue(url, 'token'), server), log)
          }, 'version_file'),
        },
      ]),
    ),
    '/api/mini-apps/access/apps/:appId/update': {
      GET: wrap((request: BunRequest, _server, url) => {
        return guarded(
          () => answers.update(request, (request.params as { appId: string }).appId, { ...device(url), platform: queryValue(url, 'platform'), currentVersion: queryValue(url, 'currentVersion') }, url),
          log,
        )
      }, 'update_check'),
    },
  }
}
