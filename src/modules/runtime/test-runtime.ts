// Test-only: what a host runtime does with install info, written from the contract alone (URL rules, sandbox layout); and serve's native routes over a test app.
import type { FileAnswers, InstallAnswers } from '.'
import { nativeDispatch, nativeInstallRoutes } from './native-routes'

/**
 * The contract's URL resolution (runtime setting `serverBaseURL`, which includes `/api`):
 * a full URL is used unchanged, an absolute path joins the origin of serverBaseURL (dropping its
 * path), a relative path joins serverBaseURL including its path.
 */
export function resolveUrl(serverBaseUrl: string, url: string): string {
  if (/^https?:\/\//i.test(url)) return url
  if (url.startsWith('/')) return new URL(serverBaseUrl).origin + url
  return serverBaseUrl.replace(/\/+$/, '') + '/' + url
}

/** The contract's manifest derivation: the parent path of the bundle URL + `/app.json` (the query is dropped). */
export function derivedManifestUrl(bundleUrl: string): string {
  const withoutQuery = bundleUrl.split('?')[0]!
  return withoutQuery.slice(0, withoutQuery.lastIndexOf('/')) + '/app.json'
}

export function sha256Hex(bytes: Uint8Array | ArrayBuffer): string {
  return new Bun.CryptoHasher('sha256').update(bytes).digest('hex')
}

/** A stored file as install info describes it. */
export type FileInfo = { size: number; sha256: string }

/** The parts of install info a runtime's install reads. */
export interface InstallInfo {
  versionId: string
  version: string
  bundleUrl: string
  bundles: { ios: string; android: string }
  assetsUrl: { ios: string; android: string }
  manifestUrl: string
  files: Record<'bundleIos' | 'bundleAndroid' | 'manifest' | 'assetsIos' | 'assetsAndroid', FileInfo>
}

/** Every file a runtime's install fetches: its URL from install info, with the size and sha256 it must have. */
export function installFiles(info: InstallInfo): [string, FileInfo][] {
  return [
    [info.bundles.ios, info.files.bundleIos],
    [info.bundles.android, info.files.bundleAndroid],
    [info.assetsUrl.ios, info.files.assetsIos],
    [info.assetsUrl.android, info.files.assetsAndroid],
    [info.manifestUrl, info.files.manifest],
  ]
}

/**
 * Fetches every file of install info through `handle` (an app's) and answers what each gave: its
 * status, size and sha256 beside what install info lists, for one `toEqual` of the two lists.
 */
export async function servedFiles(handle: (request: Request) => Response | Promise<Response>, info: InstallInfo): Promise<{ served: unknown[]; listed: unknown[] }> {
  const served: unknown[] = []
  const listed: unknown[] = []
  for (const [url, file] of installFiles(info)) {
    const response = await handle(new Request(url))
    const bytes = new Uint8Array(await response.arrayBuffer())
    served.push({ url, status: response.status, size: bytes.length, sha256: sha256Hex(bytes) })
    listed.push({ url, status: 200, size: file.size, sha256: file.sha256 })
  }
  return { served, listed }
}

/**
 * What `serve` answers the runtime's hot routes with before the app (cli/serve.ts), over a test
 * context's app and without the request log: null for what it leaves to the app. Tests hold its
 * answers to the app's own for the same URL.
 */
export function nativeRoutesOf(app: { store: { installAnswers: InstallAnswers; fileAnswers: FileAnswers } }): (request: Request) => ReturnType<ReturnType<typeof nativeDispatch>> {
  const dispatch = nativeDispatch(nativeInstallRoutes({ ...app.store.installAnswers, ...app.store.fileAnswers }, (handler) => (request, server, url) => handler(request, server, url ?? request.url), () => {}))
  return (request) => dispatch(request, undefined as never, request.url)
}
