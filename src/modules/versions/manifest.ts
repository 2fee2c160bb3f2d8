// The manifest rules of an upload (decisions §5, §9): pure, so the developer CLI checks a build with the same code before sending it.
import { AppError } from '../../http/app-error'
import { findDuplicateKey } from './duplicate-keys'
import { endOfString, walkJson } from './json-walk'

/** A note on an accepted upload (decisions §9): `{ code, message }`. */
export interface UploadWarning {
  code: 'MANIFEST_VERSION_SET' | 'MANIFEST_WITHOUT_PAGES'
  message: string
}

function badField(code: string, field: string, message: string): AppError {
  return new AppError(400, code, `${field} ${message}`, [{ field, message }])
}

/**
 * The manifest rules of decisions §5 and §9. The stored manifest always carries the form's
 * `version` (the runtime detects updates by it): the upload byte for byte when it already says so,
 * else the object with `version` set, and a warning. `bytes` is null when the upload is kept as is.
 */
export function checkManifest(bytes: Uint8Array, appId: string, version: string): { bytes: Uint8Array | null; warnings: UploadWarning[] } {
  let manifest: unknown
  let text: string
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes)
    manifest = JSON.parse(text)
  } catch {
    throw badField('INVALID_MANIFEST', 'manifest', 'is not valid JSON; send the app.json of the build')
  }
  // Runtimes disagree on which of two equal keys wins; JSON.parse keeps the last silently.
  const duplicate = findDuplicateKey(text)
  if (duplicate !== null) throw badField('INVALID_MANIFEST', 'manifest', `names the key ${JSON.stringify(duplicate)} twice; keep one`)
  if (typeof manifest !== 'object' || manifest === null || Array.isArray(manifest)) {
    throw badField('INVALID_MANIFEST', 'manifest', 'must be a JSON object')
  }
  const object = manifest as Record<string, unknown>
  if ('appId' in object && object.appId !== appId) {
    throw badField('MANIFEST_MISMATCH', 'manifest', `names appId ${JSON.stringify(object.appId)} but the upload is for ${appId}`)
  }
  const warnings: UploadWarning[] = []
  const pages = object.pages
  if (typeof pages !== 'object' || pages === null || Array.isArray(pages) || !Object.values(pages).every((page) => typeof page === 'string')) {
    warnings.push({ code: 'MANIFEST_WITHOUT_PAGES', message: 'The manifest has no "pages" object of strings; the iOS runtime refuses to open such a miniapp' })
  }
  if (object.version === version) return { bytes: null, warnings }
  warnings.unshift({
    code: 'MANIFEST_VERSION_SET',
    message: 'version' in object
      ? `The manifest said version ${JSON.stringify(object.version)}; the stored manifest says ${version}, the version of the upload, because phones detect updates by it`
      : `The manifest named no version; the stored manifest says ${version}, the version of the upload, because phones detect updates by it`,
  })
  return { bytes: new TextEncoder().encode(withVersion(text, version)), warnings }
}

/**
 * The manifest's text with its top-level `version` set: the value replaced where it stands, or added
 * as the first member; every other byte stays as uploaded. Not `JSON.stringify` of the parsed object:
 * that changes numbers JSON.parse cannot hold (1e400 became null, 12345678901234567890 lost digits)
 * and throws on deep nesting (a 400 KB manifest of nested arrays was a 500). `text` is a JSON object
 * without duplicate keys (checked above).
 */
function withVersion(text: string, version: string): string {
  const value = JSON.stringify(version)
  let open = -1
  let replaced: string | null = null
  walkJson(text, {
    open(_char, index, depth) {
      if (depth === 1) open = index
    },
    key(key, end, depth) {
      if (depth !== 1 || key !== 'version') return
      let start = text.indexOf(':', end + 1) + 1
      while (/\s/.test(text[start]!)) start++
      replaced = text.slice(0, start) + value + text.slice(endOfValue(text, start))
      return true
    },
  })
  if (replaced !== null) return replaced
  const rest = text.slice(open + 1)
  return `${text.slice(0, open + 1)}"version": ${value}${rest.trimStart().startsWith('}') ? '' : ', '}${rest}`
}

/** Index just past the JSON value starting at `start`. */
function endOfValue(text: string, start: number): number {
  const first = text[start]
  if (first === '"') return endOfString(text, start) + 1
  if (first !== '{' && first !== '[') {
    let i = start
    while (i < text.length && !/[\s,}\]]/.test(text[i]!)) i++
    return i
  }
  let end = text.length
  walkJson(
    text,
    {
      close(index, depth) {
        if (depth > 0) return
        end = index + 1
        return true
      },
    },
    start,
  )
  return end
}

