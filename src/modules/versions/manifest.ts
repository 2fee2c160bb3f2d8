// The manifest (app.json) rules of decisions §5 as pure functions: the upload and `miniship push` both check with these.

/** A manifest larger than this is refused (it is read whole into memory). */
export const manifestLimitBytes = 1024 * 1024

export interface ManifestProblem {
  code: 'INVALID_MANIFEST' | 'MANIFEST_MISMATCH'
  /** a phrase to follow the field name: "manifest must be a JSON object" */
  message: string
}

/** The manifest as an object, or the first problem that makes it unacceptable for `appId`. */
export function parseManifest(bytes: Uint8Array, appId: string): { manifest: Record<string, unknown> } | { problem: ManifestProblem } {
  if (bytes.length > manifestLimitBytes) return { problem: { code: 'INVALID_MANIFEST', message: 'must be at most 1 MB' } }
  let manifest: unknown
  try {
    manifest = JSON.parse(new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes))
  } catch {
    return { problem: { code: 'INVALID_MANIFEST', message: 'is not valid JSON; send the app.json of the build' } }
  }
  if (typeof manifest !== 'object' || manifest === null || Array.isArray(manifest)) {
    return { problem: { code: 'INVALID_MANIFEST', message: 'must be a JSON object' } }
  }
  const object = manifest as Record<string, unknown>
  if ('appId' in object && object.appId !== appId) {
    return { problem: { code: 'MANIFEST_MISMATCH', message: `names appId ${JSON.stringify(object.appId)} but the upload is for ${appId}` } }
  }
  return { manifest: object }
}
