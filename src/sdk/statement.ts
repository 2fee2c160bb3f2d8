// The signed statement of decisions §14: built and parsed here only, so the server, the CLI and the
// update client make the same bytes. Imports nothing (it runs on Hermes too).

/** The files a version may have, in the order the statement lists them. */
export const statementFileKinds = ['bundleIos', 'bundleAndroid', 'manifest', 'assetsIos', 'assetsAndroid'] as const
export type StatementFileKind = (typeof statementFileKinds)[number]

export interface ReleaseStatement {
  kind: 'miniship-release-v1'
  appId: string
  version: string
  /** lowercase hex sha256 of each file as stored and served */
  files: Partial<Record<StatementFileKind, string>>
}

const hex64 = /^[0-9a-f]{64}$/

/**
 * The statement's exact text: keys in the §14 order, no whitespace, one entry per file the version
 * has (files it lacks are left out), digests in lowercase hex. JSON.stringify escapes the strings.
 */
export function buildStatement(appId: string, version: string, files: Partial<Record<StatementFileKind, string>>): string {
  const entries: string[] = []
  for (const kind of statementFileKinds) {
    const digest = files[kind]
    if (digest === undefined) continue
    const lower = digest.toLowerCase()
    if (!hex64.test(lower)) throw new Error(`statement: ${kind} is not a sha256 in hex`)
    entries.push(`${JSON.stringify(kind)}:${JSON.stringify(lower)}`)
  }
  return `{"kind":"miniship-release-v1","appId":${JSON.stringify(appId)},"version":${JSON.stringify(version)},"files":{${entries.join(',')}}}`
}

/**
 * Reads a statement back, or null when it is not one: parsed, then rebuilt and compared byte for
 * byte, so a statement with another kind, extra keys, another order, whitespace or uppercase digests
 * is not accepted (nor one buildStatement refuses: a digest that is not sha256 hex).
 */
export function parseStatement(text: string): ReleaseStatement | null {
  try {
    // not an object (null included): the destructuring or Object.keys throws
    const parsed = JSON.parse(text)
    const { appId, version, files } = parsed as { appId: unknown; version: unknown; files: Record<string, unknown> }
    if (typeof appId != 'string' || typeof version != 'string') return null
    const digests: Partial<Record<StatementFileKind, string>> = {}
    for (const kind of Object.keys(files)) {
      const digest = files[kind]
      if ((statementFileKinds as readonly string[]).indexOf(kind) < 0 || typeof digest != 'string') return null
      digests[kind as StatementFileKind] = digest
    }
    // rebuilt to the same bytes, the parsed object is exactly the statement: its kind, appId, version and files, nothing else
    return buildStatement(appId, version, digests) === text ? (parsed as ReleaseStatement) : null
  } catch {
    return null
  }
}

/**
 * UTF-8 bytes of a string without TextEncoder (Hermes 0.12 has none): encodeURIComponent's escapes
 * are the bytes. A lone surrogate, on which encodeURIComponent throws, becomes U+FFFD as TextEncoder
 * and Buffer make it.
 */
export function utf8Bytes(text: string): Uint8Array {
  const escaped = encodeURIComponent(text.replace(/[\ud800-\udbff][\udc00-\udfff]|[\ud800-\udfff]/g, (unit) => (unit.length > 1 ? unit : '\ufffd')))
  const out: number[] = []
  for (let i = 0; i < escaped.length; i++) out.push(escaped[i] === '%' ? parseInt(escaped.slice(i + 1, (i += 2) + 1), 16) : escaped.charCodeAt(i))
  return Uint8Array.from(out)
}
