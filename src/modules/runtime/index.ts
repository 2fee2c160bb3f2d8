// Routes of the runtime download contract: install info, bundles, manifest, assets (all `?token=`), and the public release install.
import { Elysia } from 'elysia'
import type { AppDeps } from '../../app'
import { AppError, errorResponse, toAppError } from '../../http/errors'
import { fileResponse, s3FileResponse, type FileKind, type S3Source, type StoredFile } from './files'
import { isS3BlobStore } from '../../storage/s3'
import { createRuntimeService, type RuntimeService, type SerialisedJson } from './service'
import { isPlatform, type Platform } from './urls'
import { appParams, bundleQuery, installInfo, platformParams, tokenQuery, versionParams } from './model'

const bundleKinds: Record<Platform, FileKind> = { ios: 'bundleIos', android: 'bundleAndroid' }
const assetsKinds: Record<Platform, FileKind> = { ios: 'assetsIos', android: 'assetsAndroid' }

function platformOf(value: string): Platform {
  if (!isPlatform(value)) throw new AppError(404, 'PLATFORM_NOT_FOUND', `There is no platform "${value.slice(0, 40)}"; use ios or android`)
  return value
}

const derivedManifest = { kind: 'manifest', anonymousRelease: true } as const

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

/** Sent with its length already known: the request log would otherwise buffer JSON to measure it. */
function jsonResponse(json: SerialisedJson, cacheControl: string): Response {
  return new Response(json.text, { headers: jsonHeaders(json, cacheControl) })
}

/**
 * The headers of a serialised answer, built once per (answer, cache policy): Bun copies a Headers
 * object into each Response at a third of the cost of building one from an object literal, and
 * cached install info is answered tens of thousands of times a second.
 */
const headersOf = new WeakMap<SerialisedJson, Map<string, Headers>>()
function jsonHeaders(json: SerialisedJson, cacheControl: string): Headers {
  let byPolicy = headersOf.get(json)
  if (!byPolicy) headersOf.set(json, (byPolicy = new Map()))
  let headers = byPolicy.get(cacheControl)
  if (!headers) {
    headers = new Headers({ 'content-type': 'application/json; charset=utf-8', 'content-length': String(json.bytes), 'cache-control': cacheControl })
    byPolicy.set(cacheControl, headers)
  }
  return headers
}

/**
 * Applies `next` to a value that may still be on its way. Handlers stay synchronous when the
 * caches answer: an async handler makes Elysia await, which costs more than the cached answer.
 */
function then<T, R>(value: T | Promise<T>, next: (value: T) => R): R | Promise<R> {
  return value instanceof Promise ? value.then(next) : next(value)
}

const headPath = /^\/api\/mini-apps\/access\/versions\/([^/]+)\/(.+?)\/?$/

/** The two install-info answers, shared by the Elysia routes and the server's native routes. */
export interface InstallAnswers {
  versionInstall(versionId: string, token: string | undefined): Response | Promise<Response>
  releaseInstall(appId: string): Response | Promise<Response>
}

function installAnswers(runtime: RuntimeService): InstallAnswers {
  return {
    versionInstall: (versionId, token) => then(runtime.versionInstallJson(versionId, token), (json) => jsonResponse(json, 'private, no-cache')),
    releaseInstall: (appId) => then(runtime.releaseInstallJson(appId), (json) => jsonResponse(json, 'no-cache')),
  }
}

export function runtimeRoutes(deps: AppDeps) {
  const runtime = createRuntimeService({ db: deps.db, clock: deps.clock, config: deps.config, tokens: deps.tokens, blobs: deps.blobs })
  const answers = installAnswers(runtime)

  type Query = { token?: string; platform?: string }
  type Target = { kind: FileKind; anonymousRelease: boolean }

  // with S3 storage (issue 14) files are redirected to the bucket or streamed from it
  const blobs = deps.blobs
  const s3Source: S3Source | null = isS3BlobStore(blobs) ? { mode: deps.config.s3Downloads, presign: blobs.presign, read: blobs.read } : null

  function answerFile(request: Request, versionId: string, target: Target, token: string | undefined): Promise<Response> | Response {
    const answer = then<StoredFile, Response | Promise<Response>>(runtime.file(versionId, token, target.kind, { anonymousRelease: target.anonymousRelease }), (stored) => {
      const fileRequest = { method: request.method, range: request.headers.get('range'), ifNoneMatch: request.headers.get('if-none-match') }
      return s3Source ? s3FileResponse(stored, fileRequest, s3Source, deps.log) : fileResponse(stored, fileRequest, deps.log)
    })
    // a promise of a promise flattens when awaited; the type says so
    return answer as Response | Promise<Response>
  }

  const fileHandler =
    (targetOf: (params: Record<string, string>, query: Query) => Target) =>
    ({ request, params, query }: { request: Request; params: Record<string, string>; query: Query }) =>
      answerFile(request, params.versionId!, targetOf(params, query), query.token)

  const described = (summary: string) => ({ detail: { summary: `${summary}; HEAD answers the same headers without the body`, tags: ['runtime'] } })

  return (
    new Elysia({ prefix: '/mini-apps/access' })
      // Elysia answers HEAD on a path with parameters by running the GET handler and reading the
      // whole body to count it (and never reaches a .head() route there). For a file that would read
      // megabytes to send none, so HEAD on the file paths is answered here, before routing. The hook
      // runs for every request of the app, so it stays synchronous (an async hook would make Elysia
      // await on every request) and hands back a promise only for HEAD, one that never rejects.
      .onRequest(({ request }) => {
        if (request.method !== 'HEAD') return
        const url = new URL(request.url)
        const match = headPath.exec(url.pathname)
        if (!match) return
        const target = fileOf(match[2]!, url.searchParams.get('platform') ?? undefined)
        if (!target) return
        let versionId: string
        try {
          versionId = decodeURIComponent(match[1]!)
        } catch {
          return // malformed escapes: let routing answer
        }
        try {
          return Promise.resolve(answerFile(request, versionId, target, url.searchParams.get('token') ?? undefined)).catch((error: unknown) => errorResponse(toAppError('UNKNOWN', error, deps.log)))
        } catch (error) {
          return errorResponse(toAppError('UNKNOWN', error, deps.log))
        }
      })
      // `serve` also answers these two from Bun's native router (src/modules/runtime/native-routes.ts)
      .state('installAnswers', answers)
      .get('/versions/:versionId/install', ({ params, query }) => answers.versionInstall(params.versionId, query.token), {
        params: versionParams,
        query: tokenQuery,
        response: { 200: installInfo },
        detail: { summary: 'Install info of a version: download URLs (each with a download token), sizes and sha256 of its files', tags: ['runtime'] },
      })
      .get('/apps/:appId/release/install', ({ params }) => answers.releaseInstall(params.appId), {
        params: appParams,
        response: { 200: installInfo },
        detail: { summary: 'Install info of the current release of a miniapp (public; 404 when nothing is published)', tags: ['runtime'] },
      })
      .get('/versions/:versionId/bundle', fileHandler((_, query) => ({ kind: bundleKinds[platformOf(query.platform ?? 'ios')], anonymousRelease: false })), { params: versionParams, query: bundleQuery, ...described('The iOS JS bundle, or the Android one with ?platform=android') })
      .get('/versions/:versionId/bundles/app.json', fileHandler(() => derivedManifest), {
        params: versionParams,
        query: tokenQuery,
        ...described('The manifest at the path derived from a bundle URL (without a token: the current release only)'),
      })
      .get('/versions/:versionId/bundles/:platform', fileHandler((params) => ({ kind: bundleKinds[platformOf(params.platform!)], anonymousRelease: false })), { params: platformParams, query: tokenQuery, ...described('The JS bundle of a platform (ios or android)') })
      .get('/versions/:versionId/manifest', fileHandler(() => ({ kind: 'manifest', anonymousRelease: false })), { params: versionParams, query: tokenQuery, ...described('The manifest (app.json)') })
      .get('/versions/:versionId/app.json', fileHandler(() => derivedManifest), {
        params: versionParams,
        query: tokenQuery,
        ...described('The manifest at the path derived from …/bundle (without a token: the current release only)'),
      })
      .get('/versions/:versionId/assets/:platform', fileHandler((params) => ({ kind: assetsKinds[platformOf(params.platform!)], anonymousRelease: false })), { params: platformParams, query: tokenQuery, ...described('The assets zip of a platform (ios or android)') })
  )
}
