// TypeBox schemas of the runtime endpoints (validation and the OpenAPI document).
import { t } from 'elysia'

export const versionParams = t.Object({ versionId: t.String() })
/** `platform` is checked by the route, not here: an unknown platform is 404, not a validation error. */
export const platformParams = t.Object({ versionId: t.String(), platform: t.String() })
export const appParams = t.Object({ appId: t.String() })

const token = t.Optional(t.String({ description: 'an access token of someone who can see the miniapp, or a download token from install info' }))
export const tokenQuery = t.Object({ token })
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
})
