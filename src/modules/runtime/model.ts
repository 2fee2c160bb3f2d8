// TypeBox schemas of the runtime endpoints (validation and the OpenAPI document).
import { t } from 'elysia'

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
