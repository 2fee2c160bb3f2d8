// Routes of the runtime download contract: install info, bundles, manifest, assets (all `?token=`), and the public release install.
import { Elysia, type DocumentDecoration } from 'elysia'
import type { AppDeps } from '../deps'
import { AppError, errorResponse, toAppError } from '../../http/errors'
import { fileResponse, publishedCacheControl, releaseCacheControl, s3FileResponse, unpublishedCacheControl, type S3Source, type StoredFile } from './files'
import type { FileKind } from '../versions/file-kinds'
import { isS3BlobStore } from '../../storage/s3'
import { createRuntimeService, then, type DeviceQuery, type RuntimeService, type SerialisedJson } from './service'
import { apiBase, isPlatform, servedApiBase, type Platform } from '../../http/urls'
import { clientAddress } from '../../http/client'
import { headAnswered } from '../../http/openapi'
import { runningRequestId, toldLength } from '../../http/request-log'
import { isApiKey } from '../api-keys/service'
import { queryValue, runtimeQuery } from './query'
import { appParams, assetsResponses, bundleQuery, bundleResponses, deviceQuery, fileQuery, installInfo, manifestResponses, platformParams, releaseBundleQuery, releaseFilePaths, tokenQuery, updateAnswer, updateQuery, versionParams } from './model'

const bundleKinds: Record<Platform, FileKind> = { ios: 'bundleIos', android: 'bundleAndroid' }
const assetsKinds: Record<Platform, FileKind> = { ios: 'assetsIos', android: 'assetsAndroid' }

function platformOf(value: string): Platform {
  if (!isPlatform(value)) throw new AppError(404, 'PLATFORM_NOT_FOUND', `There is no platform "${value.slice(0, 40)}"; use ios or android`)
  return value
}

const derivedManifest = { kind: 'manifest', anonymousRelease: true } as const
/** the target of each file kind at its own path, made once */
const kindTargets = Object.fromEntries((['bundleIos', 'bundleAndroid', 'manifest', 'assetsIos', 'assetsAndroid'] as const).map((kind) => [kind, { kind, anonymousRelease: false }])) as Record<FileKind, { kind: FileKind; anonymousRelease: boolean }>

/**
 * Which file a path below `/versions/{versionId}/` names, and whether the derived manifest rule
 * applies (the paths a runtime derives from a bundle URL, parent + `/app.json`, lose the query
 * string: without a token they answer the current release only, decisions §6). Null: not a file path.
 */
function fileOf(rest: string, platformQuery: string | undefined): { kind: FileKind; anonymousRelease: boolean } | null {
  if (rest === 'bundle') return { kind: bundleKinds[platformOf(platformQuery ?? 'ios')], anonymousRelease: false }
  if (rest === 'manifest') return { kind: 'manifest', anonymousRelease: false }
  if (rest === 'app.json' || rest === 'bundles/app.json') return derivedManifest
  const [folder, platform, extra] = rest.split('/')
  if (extra !== undefined || platform === undefined) return null
  if (folder === 'bundles') return { kind: bundleKinds[platformOf(platform)], anonymousRelease: false }
  if (folder === 'assets') return { kind: assetsKinds[platformOf(platform)], anonymousRelease: false }
  return null
}

/**
 * Sent with its length already known: the request log would otherwise buffer JSON to measure it.
 * `served`: answered by serve's native routes (a `url` was handed over), where Bun writes
 * Content-Length from the body on the wire; the others (Elysia, tests' app.handle) carry the header.
 */
function jsonResponse(json: SerialisedJson, cacheControl: string, served = false): Response {
  // the request's id goes in before the headers are copied into the answer (see runningRequestId),
  // into headers kept for that: the others never carry an id
  const id = runningRequestId()
  const bytes = served ? null : json.bytes
  if (id === null) return toldLength(new Response(json.text, jsonInit(initsByPolicy, cacheControl, bytes)), json.bytes)
  const init = jsonInit(idInitsByPolicy, cacheControl, bytes)
  init.headers.set('x-request-id', id)
  return toldLength(new Response(json.text, init), json.bytes, true)
}

/**
 * The headers of a JSON answer, built once per (cache policy, length), in the init object handed
 * to each Response: Bun copies a Headers object into each Response at a fraction of the cost of
 * building one from an object literal, and install info and update checks are answered tens of
 * thousands of times a second. Answers scoped to a device differ in length only by the device's
 * path segment, so the lengths seen stay few. Length null: no Content-Length header (Bun writes
 * it), one set of headers per policy; one header fewer to copy into each answer measured 1-2 % less
 * CPU per request for install info and the update check (scripts/bench/ab.ts, five runs of 12 to 20
 * pairs: 0.956 to 1.003, median 0.982).
 */
const initsByPolicy = new Map<string, Map<number | null, { headers: Headers }>>()
/** the same, for answers built while the request log knows the request's id: these get it set */
const idInitsByPolicy = new Map<string, Map<number | null, { headers: Headers }>>()
function jsonInit(cache: Map<string, Map<number | null, { headers: Headers }>>, cacheControl: string, bytes: number | null): { headers: Headers } {
  let byLength = cache.get(cacheControl)
  if (byLength === undefined) cache.set(cacheControl, (byLength = new Map()))
  let init = byLength.get(bytes)
  if (init === undefined) {
    if (byLength.size >= 10_000) byLength.clear()
    const headers = new Headers({ 'content-type': 'application/json; charset=utf-8', 'cache-control': cacheControl })
    if (bytes !== null) headers.set('content-length', String(bytes))
    init = { headers }
    byLength.set(bytes, init)
  }
  return init
}

const headPath = /^\/api\/mini-apps\/access\/versions\/([^/]+)\/(.+?)\/?$/
const appHeadPath = /^\/api\/mini-apps\/access\/apps\/([^/]+)\/(.+?)\/?$/

/** A file below `/apps/{appId}/`: the release-stable paths of decisions §9, scoped as `urls.ts` builds them. */
export interface ReleaseFileTarget {
  query: DeviceQuery
  kind: FileKind
}

function decoded(segment: string): string | null {
  try {
    return decodeURIComponent(segment)
  } catch {
    return null
  }
}

/**
 * Parses `[channels/{c}/[devices/{d}/][hosts/{h}/]]release/{file}` (the path after `/apps/{appId}/`);
 * null when it names no file. `platformQuery` is `?platform=` of `…/release/bundle`.
 */
export function releaseFileOf(rest: string, platformQuery: string | undefined): ReleaseFileTarget | null {
  const segments = rest.split('/')
  const query: DeviceQuery = {}
  let at = 0
  if (segments[0] === 'channels') {
    const channel = segments[1] && decoded(segments[1])
    if (!channel) return null
    query.channel = channel
    at = 2
    if (segments[at] === 'devices') {
      const segment = segments[at + 1]
      if (segment === undefined) return null
      // an empty or undecodable segment is still the device's place: 400 INVALID_DEVICE_ID, as in a query (§18)
      query.deviceId = decoded(segment) ?? segment
      at += 2
    }
    if (segments[at] === 'hosts') {
      const hostVersion = segments[at + 1] && decoded(segments[at + 1]!)
      if (!hostVersion) return null
      query.hostVersion = hostVersion
      at += 2
    }
  }
  if (segments[at] !== 'release') return null
  const file = fileOf(segments.slice(at + 1).join('/'), platformQuery)
  return file && { query, kind: file.kind }
}

/** The install-info answers shared by the Elysia routes and the server's native routes. */
export interface InstallAnswers {
  /**
   * `url` is given by serve's native routes: the `request.url` Bun built for a served request, read
   * once; its host stands for the Host header (servedApiBase), so no header is read.
   */
  versionInstall(request: Request, versionId: string, token: string | undefined, url?: string, server?: AddressSource): Response | Promise<Response>
  releaseInstall(request: Request, appId: string, query: DeviceQuery & { currentVersion?: string }, url?: string): Response | Promise<Response>
  update(request: Request, appId: string, query: DeviceQuery & { platform?: string; currentVersion?: string }, url?: string): Response | Promise<Response>
}

/** What insights count a version's own install info under: a version id names no channel. */
const pinnedChannel = 'stable'

/**
 * A version's file at the paths install info hands out (`bundles/{platform}`, `assets/{platform}`,
 * `manifest`): shared with serve's native routes, which skip Elysia for the download requests
 * every device makes (with S3 redirects these are the hottest small answers, issue 14).
 */
export interface FileAnswers {
  /**
   * `server` tells the client's address (an API key sent as the token counts its failures against
   * it); `channel` is the URL's `channel` query, which insights count the download under
   */
  file(request: Request, versionId: string, path: string, token: string | undefined, server?: AddressSource, channel?: string): Response | Promise<Response>
  /** the same for a path already known to name the file of `kind` (not a derived manifest path) */
  fileOfKind(request: Request, versionId: string, kind: FileKind, token: string | undefined, server?: AddressSource, channel?: string): Response | Promise<Response>
}

/** What knows a request's peer address: the server that received it. */
type AddressSource = Parameters<typeof clientAddress>[1]

/**
 * An API key sent as `?token=` is authenticated here first, with the client's address, so that its
 * failures count against that address and an address past the limit is refused (429), exactly as
 * with the Authorization header (decisions §18); the runtime rules then authenticate it as before.
 */
function checkKeyToken(deps: AppDeps, request: Request, server: AddressSource, token: string | undefined): void {
  if (token !== undefined && isApiKey(token)) deps.apiKeys.authenticate(token, null, clientAddress(request, server, deps.config))
}

/** The API base of an answer: from the URL Bun built when serve's native routes pass it, else from the headers. */
const baseOf = (request: Request, config: AppDeps['config'], url: string | undefined) => (url === undefined ? apiBase(request, config) : servedApiBase(request, config, url))

function installAnswers(runtime: RuntimeService, deps: AppDeps): InstallAnswers {
  const counters = deps.insights.counters
  return {
    versionInstall: (request, versionId, token, url, server) => {
      checkKeyToken(deps, request, server, token)
      return then(runtime.versionInstallJson(versionId, token, baseOf(request, deps.config, url)), (json) => {
        if (json.version) counters.countInstall(json.version, pinnedChannel)
        return jsonResponse(json, 'private, no-cache', url !== undefined)
      })
    },
    releaseInstall: (request, appId, query, url) =>
      then(runtime.releaseInstallJson(appId, query, baseOf(request, deps.config, url)), (json) => {
        if (json.version) counters.countInstall(json.version, query.channel || 'stable', 'unknown', query.deviceId)
        return jsonResponse(json, 'no-cache', url !== undefined)
      }),
    update: (request, appId, query, url) => {
      let answer: ReturnType<RuntimeService['updateJson']>
      try {
        answer = runtime.updateJson(appId, query, baseOf(request, deps.config, url))
      } catch (error) {
        // a device whose channel has no release for it (its first release reverted) still counts (§13)
        if (error instanceof AppError && error.status === 404 && (error.code === 'RELEASE_NOT_FOUND' || error.code === 'NO_COMPATIBLE_RELEASE')) {
          const subject = runtime.refusedUpdateSubject(appId, query)
          if (subject !== null) counters.countUpdateCheck(subject, query.channel || 'stable', query.platform as Platform, query.deviceId)
        }
        throw error
      }
      return then(answer, (json) => {
        // updateJson checked the platform; `version` is what the device runs, when it is a release we know
        counters.countUpdateCheck(json.version, query.channel || 'stable', query.platform as Platform, query.deviceId)
        return jsonResponse(json, 'no-cache', url !== undefined)
      })
    },
  }
}

export function runtimeRoutes(deps: AppDeps) {
  const runtime = createRuntimeService({ db: deps.db, clock: deps.clock, config: deps.config, tokens: deps.tokens, blobs: deps.blobs, apiKeys: deps.apiKeys, writes: deps.writes })
  const answers = installAnswers(runtime, deps)

  type Query = { token?: string; platform?: string; channel?: string }
  type Target = { kind: FileKind; anonymousRelease: boolean }

  const fileRequest = (request: Request) => ({ method: request.method, range: request.headers.get('range'), ifNoneMatch: request.headers.get('if-none-match') })

  const counters = deps.insights.counters
  // with S3 storage (issue 14) files are redirected to the bucket or streamed from it
  const blobs = deps.blobs
  const s3Source: S3Source | null = isS3BlobStore(blobs) ? { mode: deps.config.s3Downloads, timeoutMs: blobs.timeoutMs, presign: blobs.presign, read: blobs.read } : null
  /** The answer for a stored file, counted as a download when it is one (insights). */
  const storedResponse = (stored: StoredFile, request: Request, channel: string): Response | Promise<Response> => {
    // read once, for the answer and for counting it (a ranged request is no new download unless it starts at byte 0)
    const asked = fileRequest(request)
    const answer = s3Source ? s3FileResponse(stored, asked, s3Source, deps.log) : fileResponse(stored, asked, deps.log)
    return then(answer, (response) => {
      counters.countDownload(stored, channel, asked, response)
      return response
    })
  }

  function answerFile(request: Request, versionId: string, target: Target, token: string | undefined, server?: AddressSource, channel?: string): Promise<Response> | Response {
    checkKeyToken(deps, request, server, token)
    const answer = then<StoredFile, Response | Promise<Response>>(runtime.file(versionId, token, target.kind, { anonymousRelease: target.anonymousRelease }), (stored) =>
      storedResponse(stored, request, runtime.downloadChannel(versionId, channel)),
    )
    // a promise of a promise flattens when awaited; the type says so
    return answer as Response | Promise<Response>
  }

  function answerReleaseFile(request: Request, appId: string, rest: string, platform: string | undefined): Response | Promise<Response> {
    const target = releaseFileOf(rest, platform)
    if (!target) throw new AppError(404, 'ROUTE_NOT_FOUND', `There is nothing at ${new URL(request.url).pathname.slice(0, 200)}`)
    return storedResponse(runtime.releaseFile(appId, target.query, target.kind), request, target.query.channel || 'stable')
  }

  const fileHandler =
    (targetOf: (params: Record<string, string>, query: Query) => Target) =>
    ({ request, params, server }: { request: Request; params: Record<string, string>; server: AddressSource }) => {
      // the first of a repeated parameter, as serve's native routes and the HEAD answers read it (Elysia's query keeps the last)
      const query: Query = runtimeQuery(request.url)
      return answerFile(request, params.versionId!, targetOf(params, query), query.token, server, query.channel)
    }

  // a version's files are cached for good once it is published (decisions §6)
  const versionCacheControl = `${publishedCacheControl} (published versions), ${unpublishedCacheControl} (others)`
  const described = (summary: string, responses: (cacheControl: string) => NonNullable<DocumentDecoration['responses']>) => ({
    detail: { summary: `${summary}; ${headAnswered}`, tags: ['runtime'], responses: responses(versionCacheControl) },
  })
  const failed = (error: unknown) => errorResponse(toAppError('UNKNOWN', error, deps.log))

  return (
    new Elysia({ prefix: '/mini-apps/access' })
      // Elysia answers HEAD on a path with parameters by running the GET handler and reading the
      // whole body to count it (and never reaches a .head() route there). For a file that would read
      // megabytes to send none, so HEAD on the file paths is answered here, before routing. The hook
      // runs for every request of the app, so it stays synchronous (an async hook would make Elysia
      // await on every request) and hands back a promise only for HEAD, one that never rejects.
      .onRequest(({ request, server }) => {
        if (request.method !== 'HEAD') return
        const url = new URL(request.url)
        const platform = url.searchParams.get('platform') ?? undefined
        const match = headPath.exec(url.pathname)
        try {
          if (match) {
            const target = fileOf(match[2]!, platform)
            const versionId = decoded(match[1]!)
            if (!target || versionId === null) return
            return Promise.resolve(answerFile(request, versionId, target, url.searchParams.get('token') ?? undefined, server, url.searchParams.get('channel') ?? undefined)).catch(failed)
          }
          const app = appHeadPath.exec(url.pathname)
          const appId = app && decoded(app[1]!)
          if (!app || appId === null || !releaseFileOf(app[2]!, platform)) return
          return answerReleaseFile(request, appId, app[2]!, platform)
        } catch (error) {
          return failed(error)
        }
      })
      // `serve` also answers install info and the update check from Bun's native router (native-routes.ts)
      .state('installAnswers', answers)
      .state('fileAnswers', {
        file: (request, versionId, path, token, server, channel) => {
          // `bundles/app.json` arrives here too (the platform route matches it): the derived manifest rule applies
          const target = fileOf(path, undefined)
          if (!target) throw new AppError(404, 'ROUTE_NOT_FOUND', `There is nothing at ${new URL(request.url).pathname.slice(0, 200)}`)
          return answerFile(request, versionId, target, token, server, channel)
        },
        fileOfKind: (request, versionId, kind, token, server, channel) => answerFile(request, versionId, kindTargets[kind], token, server, channel),
      } satisfies FileAnswers)
      // these routes read their query as serve's native ones do (runtimeQuery: the first of a repeated
      // parameter; Elysia's query keeps the last), so that one URL gets one answer whichever answers it
      .get('/versions/:versionId/install', ({ request, params, server }) => answers.versionInstall(request, params.versionId, queryValue(request.url, 'token'), undefined, server), {
        params: versionParams,
        query: tokenQuery,
        response: { 200: installInfo },
        detail: { summary: 'Install info of a version: download URLs (each with a download token), sizes and sha256 of its files', tags: ['runtime'] },
      })
      .get('/apps/:appId/release/install', ({ request, params }) => answers.releaseInstall(request, params.appId, runtimeQuery(request.url)), {
        params: appParams,
        query: deviceQuery,
        response: { 200: installInfo },
        detail: {
          summary: 'Install info of the release a device gets on a channel (public; 404 RELEASE_NOT_FOUND when there is none). Its URLs are release-stable: they always answer what that device gets now',
          tags: ['runtime'],
        },
      })
      .get('/apps/:appId/update', ({ request, params }) => answers.update(request, params.appId, runtimeQuery(request.url)), {
        params: appParams,
        query: updateQuery,
        response: { 200: updateAnswer },
        detail: { summary: 'The update check (public): whether the device should update from currentVersion, whether it is mandatory, and the install info', tags: ['runtime'] },
      })
      .get('/apps/:appId/experience/install', async ({ request, params, query, server }) => {
        checkKeyToken(deps, request, server, query.token)
        return jsonResponse(await runtime.experienceInstallJson(params.appId, query.token, apiBase(request, deps.config)), 'private, no-cache')
      }, {
        params: appParams,
        query: tokenQuery,
        response: { 200: installInfo },
        detail: { summary: "Install info of the current experience version: with a member's token, or without one while the miniapp's experiencePublic is on", tags: ['runtime'] },
      })
      .get('/apps/:appId/*', ({ request, params }) => answerReleaseFile(request, params.appId, params['*'], queryValue(request.url, 'platform')), {
        query: releaseBundleQuery,
        // the document lists each path this answers (decisions §9, §10) instead of the wildcard
        detail: { tags: ['runtime'], wildcardPaths: releaseFilePaths(releaseCacheControl) },
      })
      .get('/versions/:versionId/bundle', fileHandler((_, query) => ({ kind: bundleKinds[platformOf(query.platform ?? 'ios')], anonymousRelease: false })), { params: versionParams, query: bundleQuery, ...described('The iOS JS bundle, or the Android one with ?platform=android', bundleResponses) })
      .get('/versions/:versionId/bundles/app.json', fileHandler(() => derivedManifest), {
        params: versionParams,
        query: tokenQuery,
        ...described('The manifest at the path derived from a bundle URL (without a token: the current release only)', manifestResponses),
      })
      .get('/versions/:versionId/bundles/:platform', fileHandler((params) => ({ kind: bundleKinds[platformOf(params.platform!)], anonymousRelease: false })), { params: platformParams, query: fileQuery, ...described('The JS bundle of a platform (ios or android)', bundleResponses) })
      .get('/versions/:versionId/manifest', fileHandler(() => ({ kind: 'manifest', anonymousRelease: false })), { params: versionParams, query: fileQuery, ...described('The manifest (app.json)', manifestResponses) })
      .get('/versions/:versionId/app.json', fileHandler(() => derivedManifest), {
        params: versionParams,
        query: tokenQuery,
        ...described('The manifest at the path derived from …/bundle (without a token: the current release only)', manifestResponses),
      })
      .get('/versions/:versionId/assets/:platform', fileHandler((params) => ({ kind: assetsKinds[platformOf(params.platform!)], anonymousRelease: false })), { params: platformParams, query: fileQuery, ...described('The assets zip of a platform (ios or android)', assetsResponses) })
  )
}
