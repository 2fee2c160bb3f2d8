// TypeBox schemas of the runtime endpoints (validation and the OpenAPI document).
import { t, type DocumentDecoration } from 'elysia'
import { headAnswered, type WildcardPath } from '../../http/openapi'

export const versionParams = t.Object({ versionId: t.String() })
/** `platform` is checked by the route, not here: an unknown platform is 404, not a validation error. */
export const platformParams = t.Object({ versionId: t.String(), platform: t.String() })
export const appParams = t.Object({ appId: t.String() })

const token = t.Optional(t.String({ description: 'an access token of someone who can see the miniapp, or a download token from install info' }))
export const tokenQuery = t.Object({ token })
const channel = t.Optional(t.String({ description: "the channel insights count the download under (the update check's URLs carry it); stable when absent or not a channel of the miniapp" }))
export const fileQuery = t.Object({ token, channel })
export const bundleQuery = t.Object({ token, platform: t.Optional(t.String({ description: 'ios (default) or android' })) })

const fileInfo = t.Object({ size: t.Integer(), sha256: t.String() })
const perPlatform = t.Object({ ios: t.String(), android: t.String() })

export const installInfo = t.Object({
  appId: t.String(),
  appName: t.String(),
  versionId: t.String(),
  version: t.String(),
  releaseType: t.String(),
  routeUrl: t.String(),
  bundleUrl: t.String(),
  bundles: perPlatform,
  assetsUrl: perPlatform,
  manifestUrl: t.String(),
  files: t.Object({ bundleIos: fileInfo, bundleAndroid: fileInfo, manifest: fileInfo, assetsIos: fileInfo, assetsAndroid: fileInfo }),
  signature: t.Optional(
    t.Object(
      { algorithm: t.Literal('ed25519'), keyId: t.String(), statement: t.String(), value: t.String() },
      { description: 'signed versions only (decisions §14): verify value over the exact UTF-8 bytes of statement with a key the host app trusts' },
    ),
  ),
  hostVersionRange: t.Optional(t.Union([t.String(), t.Null()], { description: "release install info and the update check (decisions §17): the host app versions the release supports, a semver range; null for any" })),
})

/** Checked by the runtime service (its own messages); declared here for the OpenAPI document. */
const device = {
  channel: t.Optional(t.String({ description: 'a channel name (default stable)' })),
  deviceId: t.Optional(t.String({ description: 'a stable id of the device, decides its rollout bucket: 1–200 characters of A-Z a-z 0-9 . _ : - (not "." or ".."; base64 ids as base64url), else 400 INVALID_DEVICE_ID' })),
  hostVersion: t.Optional(t.String({ description: "the host app's version: releases whose hostVersionRange it does not satisfy are skipped" })),
}
export const deviceQuery = t.Object({
  ...device,
  currentVersion: t.Optional(t.String({ description: 'the miniapp version the device runs (optional): while a rollout is paused, a device that runs the paused release keeps it' })),
  token: t.Optional(t.String({ description: 'ignored: the release is public' })),
})
export const updateQuery = t.Object({
  ...device,
  platform: t.Optional(t.String({ description: 'ios or android (required)' })),
  currentVersion: t.Optional(t.String({ description: 'the miniapp version the device runs (required)' })),
})

export const updateAnswer = t.Union([
  t.Object({ updateAvailable: t.Literal(false) }),
  t.Object({ updateAvailable: t.Literal(true), mandatory: t.Boolean(), rollout: t.Object({ percent: t.Integer() }), install: installInfo }),
])

// ---- the files' answers, for the OpenAPI document only: they are not JSON, so `detail.responses` describes them (decisions §6, §9)

const header = (description: string) => ({ schema: { type: 'string' as const }, description })

/** Elysia types `detail` as an OpenAPI 3.0 operation; the document is 3.1 (`contentMediaType` below) */
type Responses = NonNullable<DocumentDecoration['responses']>

/** The answers of a file path: 200 whole, 206 one range, 304 unchanged, 302 to the bucket; errors in the usual shape. */
function fileResponses(contentType: string, body: Record<string, unknown>, cacheControl: string): Responses {
  const content = { [contentType]: { schema: body } }
  const headers = {
    ETag: header('"<sha256 of the file>" (strong)'),
    'Cache-Control': header(cacheControl),
    'Content-Length': header('bytes of this answer'),
    'Content-Disposition': header('attachment with the conventional file name (main.ios.jsbundle, app.json, assets-ios.zip …)'),
    'Accept-Ranges': header('bytes'),
  }
  return {
    200: { description: 'The whole file', headers, content },
    206: { description: 'One byte range of it (`Range: bytes=…`); a range outside the file is 416 RANGE_NOT_SATISFIABLE', headers: { ...headers, 'Content-Range': header('bytes <start>-<end>/<size>') }, content },
    302: { description: 'With S3 storage and --s3-downloads redirect: a presigned URL of the file in the bucket', headers: { Location: header('the presigned URL') } },
    304: { description: '`If-None-Match` names the ETag: no body', headers: { ETag: headers.ETag, 'Cache-Control': headers['Cache-Control'] } },
  } as Responses
}

const bundleBody = { type: 'string', contentMediaType: 'application/javascript', description: 'the JS bundle as uploaded' }
const manifestBody = { type: 'object', description: "the manifest (app.json) as stored: the uploaded object, with `version` set to the version's when it named another (decisions §5)" }
const assetsBody = { type: 'string', contentMediaType: 'application/zip', description: 'the assets archive as uploaded: assets/ (ios) or drawable-*/ and raw/ (android)' }
export const bundleResponses = (cacheControl: string) => fileResponses('application/javascript', bundleBody, cacheControl)
export const manifestResponses = (cacheControl: string) => fileResponses('application/json', manifestBody, cacheControl)
export const assetsResponses = (cacheControl: string) => fileResponses('application/zip', assetsBody, cacheControl)

const platform = t.Union([t.Literal('ios'), t.Literal('android')], { description: 'other names answer 404 PLATFORM_NOT_FOUND' })
const releaseToken = t.Optional(t.String({ description: 'ignored: the release is public (install info puts one on every URL, decisions §9)' }))
const releaseQuery = t.Object({ token: releaseToken })
export const releaseBundleQuery = t.Object({ token: releaseToken, platform: t.Optional(t.String({ description: 'ios (default) or android' })) })

/** The scopes of release-stable URLs (urls.ts scopePath): none is the stable channel for a device that names nothing. */
const releaseScopes: { rest: string; params: Record<string, ReturnType<typeof t.String>>; says: string }[] = [
  { rest: '', params: {}, says: 'a device on the stable channel that names no deviceId' },
  { rest: 'channels/:channel/', params: { channel: t.String({ description: 'a channel name' }) }, says: 'a device on {channel} that names no deviceId' },
  {
    rest: 'channels/:channel/devices/:deviceId/',
    params: { channel: t.String({ description: 'a channel name' }), deviceId: t.String({ description: 'the device id that decides its rollout bucket (decisions §10, §18)' }) },
    says: 'the device {deviceId} on {channel} (its rollout bucket)',
  },
  {
    rest: 'channels/:channel/hosts/:hostVersion/',
    params: { channel: t.String({ description: 'a channel name' }), hostVersion: t.String({ description: "the host app's version, URL-encoded" }) },
    says: 'a device on {channel} whose host app is {hostVersion} (hostVersionRange)',
  },
  {
    rest: 'channels/:channel/devices/:deviceId/hosts/:hostVersion/',
    params: {
      channel: t.String({ description: 'a channel name' }),
      deviceId: t.String({ description: 'the device id that decides its rollout bucket (decisions §10, §18)' }),
      hostVersion: t.String({ description: "the host app's version, URL-encoded" }),
    },
    says: 'the device {deviceId} on {channel} whose host app is {hostVersion}',
  },
]

const releaseFiles: { rest: string; platform?: boolean; query: typeof releaseQuery | typeof releaseBundleQuery; what: string; responses: (cacheControl: string) => Responses }[] = [
  { rest: 'release/bundle', query: releaseBundleQuery, what: 'The iOS JS bundle, or the Android one with ?platform=android', responses: bundleResponses },
  { rest: 'release/bundles/:platform', platform: true, query: releaseQuery, what: 'The JS bundle of a platform', responses: bundleResponses },
  { rest: 'release/manifest', query: releaseQuery, what: 'The manifest (app.json)', responses: manifestResponses },
  { rest: 'release/assets/:platform', platform: true, query: releaseQuery, what: 'The assets zip of a platform', responses: assetsResponses },
  { rest: 'release/app.json', query: releaseQuery, what: 'The manifest at the path a runtime derives from …/release/bundle', responses: manifestResponses },
  { rest: 'release/bundles/app.json', query: releaseQuery, what: 'The manifest at the path a runtime derives from …/release/bundles/{platform}', responses: manifestResponses },
]

/**
 * Every release-stable file path (decisions §9, §10) that `GET /apps/{appId}/*` answers: a file of
 * the release the scope's device gets now, public, `Cache-Control: public, max-age=60`.
 */
export function releaseFilePaths(cacheControl: string): WildcardPath[] {
  return releaseScopes.flatMap((scope) =>
    releaseFiles.map((file) => ({
      rest: `${scope.rest}${file.rest}`,
      params: t.Object({ appId: t.String(), ...scope.params, ...(file.platform ? { platform } : {}) }),
      query: file.query,
      detail: {
        summary: `${file.what} of the release ${scope.says} gets now (public; 404 RELEASE_NOT_FOUND when there is none); ${headAnswered}`,
        responses: file.responses(cacheControl),
      },
    })),
  )
}
