// `miniship push`: find (or zip) the five artifacts, check them with the server's own rules, stream the multipart from disk, optionally publish.
import { Command } from 'commander'
import { createWriteStream } from 'node:fs'
import { lstat, mkdtemp, open, readdir, readFile, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, relative, resolve } from 'node:path'
import { checkAssetsArchive, type Platform } from '../modules/versions/archive'
import { checkManifest, type UploadWarning } from '../modules/versions/manifest'
import { AppError } from '../http/app-error'
import { releaseTypes, versionPattern } from '../modules/versions/version-rules'
import { scopeRequiredText } from '../modules/api-keys/words'
import { signatureRequiredText, signedPushAdvice } from '../modules/signing/words'
import { connect, withClientOptions, type ClientFlags, type KeyNeeds } from './config'
import { CliError, createOutput, runClient, type ApiClient } from './http'
import { formatBytes, transferBar } from './progress'
import { publishBody, publishVersion, withReleaseOptions, type ReleaseFlags, type VersionSummary } from './publish'
import { explainKeyRefusal, signArtifacts, signingKeyFrom } from './sign'
import { createChannelHint } from './channels'

/** The upload's five file fields and the conventional file names a build writes (the contract's). */
export const artifactNames = {
  bundleIos: 'main.ios.jsbundle',
  bundleAndroid: 'main.android.bundle',
  manifest: 'app.json',
  assetsIos: 'assets-ios.zip',
  assetsAndroid: 'assets-android.zip',
} as const
export type ArtifactField = keyof typeof artifactNames

const contentTypes: Record<ArtifactField, string> = {
  bundleIos: 'application/javascript',
  bundleAndroid: 'application/javascript',
  manifest: 'application/json',
  assetsIos: 'application/zip',
  assetsAndroid: 'application/zip',
}

/**
 * Asset folders zipped when the zip is absent: `ios/assets/` (what `react-native bundle
 * --assets-dest ios` writes) becomes entries under `assets/`; `android/res/` (from `--assets-dest
 * android/res`) becomes its `drawable-*\/` and `raw/` folders at the top of the zip.
 */
const assetFolders: Record<'assetsIos' | 'assetsAndroid', { folder: string[]; entryPrefix: string; platform: Platform }> = {
  assetsIos: { folder: ['ios', 'assets'], entryPrefix: 'assets/', platform: 'ios' },
  assetsAndroid: { folder: ['android', 'res'], entryPrefix: '', platform: 'android' },
}

export interface Artifact {
  field: ArtifactField
  path: string
  fileName: string
  size: number
  /** set when push zipped a folder itself */
  zippedFrom?: string
}

async function isFile(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile()
  } catch {
    return false
  }
}

async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory()
  } catch {
    return false
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true })

/**
 * Every regular file under `root`, relative paths with `/`; a symbolic link is refused (the server
 * refuses them in archives), and so is a name that would not reach the phone as it is on disk: one
 * that is not UTF-8 (it cannot even be opened by the name it reads as), or, outside Windows, one
 * with a `\\` (it became a folder separator, and the file was silently left out of the zip).
 */
async function listFiles(root: string): Promise<string[]> {
  const found: string[] = []
  const walk = async (dir: string) => {
    const entries = (await readdir(dir, { encoding: 'buffer' })).map((raw) => {
      let entry: string
      try {
        entry = utf8.decode(raw)
      } catch {
        throw localRefusal('INVALID_ARCHIVE', `${join(dir, raw.toString('utf8'))} has a name that is not UTF-8; rename it (asset names reach the phone as UTF-8)`)
      }
      if (process.platform !== 'win32' && entry.includes('\\')) {
        throw localRefusal('INVALID_ARCHIVE', `${join(dir, entry)} has a backslash in its name, which unpackers read as a folder separator; rename it`)
      }
      return entry
    })
    for (const entry of entries.sort()) {
      const path = join(dir, entry)
      const info = await lstat(path)
      if (info.isSymbolicLink()) throw localRefusal('INVALID_ARCHIVE', `${path} is a symbolic link; asset folders must hold plain files`)
      if (info.isDirectory()) await walk(path)
      else if (info.isFile()) found.push(relative(root, path).split('\\').join('/'))
    }
  }
  await walk(root)
  return found
}

async function zipFolder(folder: string, entryPrefix: string, out: string): Promise<void> {
  const { ZipArchive } = await import('archiver')
  const files = await listFiles(folder)
  // Assets (PNGs, fonts) are compressed already: storing them is fast and costs little.
  const archive = new ZipArchive({ store: true })
  const written = new Promise<void>((resolvePromise, reject) => {
    const sink = createWriteStream(out, { mode: 0o600 })
    sink.on('close', () => resolvePromise())
    sink.on('error', reject)
    archive.on('error', reject)
    // archiver only warns about a file it cannot find, and leaves it out of the zip
    archive.on('warning', reject)
    archive.pipe(sink)
  })
  for (const file of files) archive.file(join(folder, file), { name: `${entryPrefix}${file}` })
  await archive.finalize()
  await written
}

/**
 * A build the upload's own rules refuse, found before a byte is sent: exit 2 (no server was asked),
 * and with --json the code the server would have answered (MISSING_FILE, MANIFEST_MISMATCH, …).
 */
function localRefusal(code: string, message: string): CliError {
  return new CliError(2, message, { code, message })
}

/**
 * The five artifacts in `dir` by their conventional names, zipping asset folders where the zips
 * are absent (into `scratch`). A missing one is exit 2 naming the file and the accepted layouts.
 */
export async function findArtifacts(dir: string, scratch: () => Promise<string>): Promise<Artifact[]> {
  if (!(await isDirectory(dir))) throw new CliError(2, `${dir} is not a directory; pass the folder holding the build (main.ios.jsbundle, main.android.bundle, app.json, …)`)
  const artifacts: Artifact[] = []
  for (const field of Object.keys(artifactNames) as ArtifactField[]) {
    const fileName = artifactNames[field]
    const path = join(dir, fileName)
    if (await isFile(path)) {
      artifacts.push({ field, path, fileName, size: (await stat(path)).size })
      continue
    }
    if (field === 'assetsIos' || field === 'assetsAndroid') {
      const layout = assetFolders[field]
      const folder = join(dir, ...layout.folder)
      if (await isDirectory(folder)) {
        const out = join(await scratch(), fileName)
        await zipFolder(folder, layout.entryPrefix, out)
        artifacts.push({ field, path: out, fileName, size: (await stat(out)).size, zippedFrom: folder })
        continue
      }
      throw localRefusal('MISSING_FILE', `missing artifact ${fileName} in ${dir} (or the folder ${layout.folder.join('/')}/ to zip; create it empty if the app has no assets)`)
    }
    throw localRefusal('MISSING_FILE', `missing artifact ${fileName} in ${dir}${await missingBundleHint(field, dir, fileName)}`)
  }
  return artifacts
}

/**
 * What writes a missing bundle, and the names React Native's own builds give it (index.android.bundle,
 * main.jsbundle), which push does not take: a newcomer with one of those was told only the name.
 */
async function missingBundleHint(field: ArtifactField, dir: string, fileName: string): Promise<string> {
  if (field !== 'bundleIos' && field !== 'bundleAndroid') return ''
  const platform = field === 'bundleIos' ? 'ios' : 'android'
  const otherNames = field === 'bundleIos' ? ['main.jsbundle', 'index.ios.jsbundle', 'index.ios.bundle'] : ['index.android.bundle', 'index.android.jsbundle']
  for (const name of otherNames) if (await isFile(join(dir, name))) return `; ${name} is there: push takes the name ${fileName}, so rename it (or write it as such with --bundle-output)`
  return ` (write it with: npx react-native bundle --platform ${platform} --dev false --entry-file index.js --bundle-output ${join(dir, fileName)} --assets-dest ${join(dir, ...(platform === 'ios' ? ['ios'] : ['android', 'res']))})`
}

/** The upload's own rules, run locally so a bad build is refused before a byte is sent. */
export async function checkArtifacts(artifacts: Artifact[], appId: string, version: string): Promise<void> {
  for (const artifact of artifacts) {
    const where = artifact.zippedFrom ? `${artifact.fileName} (zipped from ${artifact.zippedFrom})` : artifact.path
    if ((artifact.field === 'bundleIos' || artifact.field === 'bundleAndroid') && artifact.size === 0) {
      throw localRefusal('EMPTY_BUNDLE', `${where} is empty; build the JS bundle for this platform first`)
    }
    if (artifact.field === 'manifest') {
      try {
        // its warnings come back in the server's answer, which push prints
        checkManifest(new Uint8Array(await readFile(artifact.path)), appId, version)
      } catch (error) {
        if (error instanceof AppError) throw localRefusal(error.code, `${where}: ${error.message} (${error.code})`)
        throw error
      }
    }
    if (artifact.field === 'assetsIos' || artifact.field === 'assetsAndroid') {
      const problem = await checkAssetsArchive(artifact.path, assetFolders[artifact.field].platform)
      if (problem) throw localRefusal('INVALID_ARCHIVE', `${where} ${problem} (INVALID_ARCHIVE)`)
    }
  }
}

function quoted(value: string): string {
  return value.replace(/["\r\n\\]/g, (c) => encodeURIComponent(c))
}

export interface MultipartBody {
  length: number
  contentType: string
  /**
   * The bytes in order. With `buffer`, file contents are read into it and each yielded view is
   * valid only until the next one is asked for: the caller writes it out first (memory stays flat).
   */
  chunks(buffer?: Uint8Array): AsyncGenerator<Uint8Array>
}

/**
 * The upload form streamed from disk: text fields, then each file read in chunks as the socket
 * takes them (memory stays flat whatever the size). The length is exact, so the server can refuse
 * an upload over its limit from the headers alone.
 */
export function multipartFromDisk(fields: Record<string, string>, artifacts: Artifact[]): MultipartBody {
  const boundary = `----miniship${crypto.randomUUID().replace(/-/g, '')}`
  const encoder = new TextEncoder()
  type Part = { head: Uint8Array; file?: Artifact; text?: Uint8Array }
  const parts: Part[] = []
  for (const [name, value] of Object.entries(fields)) {
    parts.push({ head: encoder.encode(`--${boundary}\r\nContent-Disposition: form-data; name="${quoted(name)}"\r\n\r\n`), text: encoder.encode(value) })
  }
  for (const artifact of artifacts) {
    parts.push({
      head: encoder.encode(`--${boundary}\r\nContent-Disposition: form-data; name="${artifact.field}"; filename="${quoted(artifact.fileName)}"\r\nContent-Type: ${contentTypes[artifact.field]}\r\n\r\n`),
      file: artifact,
    })
  }
  const crlf = encoder.encode('\r\n')
  const tail = encoder.encode(`--${boundary}--\r\n`)
  const length = parts.reduce((sum, part) => sum + part.head.length + (part.text?.length ?? part.file!.size) + crlf.length, 0) + tail.length

  async function* chunks(shared?: Uint8Array): AsyncGenerator<Uint8Array> {
    for (const part of parts) {
      yield part.head
      if (part.text) yield part.text
      else {
        const file = part.file!
        const handle = await open(file.path, 'r')
        try {
          let read = 0
          for (;;) {
            const buffer = shared ?? new Uint8Array(256 * 1024)
            const { bytesRead } = await handle.read(buffer, 0, Math.min(buffer.length, file.size - read + 1), null)
            if (bytesRead === 0) break
            read += bytesRead
            if (read > file.size) break
            yield buffer.subarray(0, bytesRead)
          }
          if (read !== file.size) throw new CliError(2, `${file.path} changed while it was being sent; build first, then push`)
        } finally {
          await handle.close()
        }
      }
      yield crlf
    }
    yield tail
  }
  return { length, contentType: `multipart/form-data; boundary=${boundary}`, chunks }
}

type Warning = UploadWarning | string

interface PushFlags extends ClientFlags, ReleaseFlags {
  app?: string
  version?: string
  changelog?: string
  releaseType?: string
  publish?: boolean
  signKey?: string
}

/** The server's upload limit in bytes (GET /api/info), or null from a server that does not say. */
async function uploadLimit(api: ApiClient): Promise<number | null> {
  try {
    const { body } = await api.request<{ uploadLimitBytes?: unknown }>('GET', '/info')
    return typeof body?.uploadLimitBytes === 'number' ? body.uploadLimitBytes : null
  } catch {
    return null
  }
}

/**
 * Refuses, before a byte of the build is sent, an API key without the `upload` scope: the server
 * would answer 403 SCOPE_REQUIRED only after the whole upload. Says nothing when it cannot tell
 * (a user's token, an older server): the upload then answers for itself.
 */
async function requireUploadScope(api: ApiClient, command: string, scopes: readonly string[]): Promise<void> {
  let key: { prefix?: unknown; scopes?: unknown } | undefined
  try {
    ;({ body: { apiKey: key } } = await api.request<{ apiKey?: { prefix?: unknown; scopes?: unknown } }>('GET', '/auth/me'))
  } catch {
    return
  }
  if (key === undefined || !Array.isArray(key.scopes) || key.scopes.includes('upload')) return
  // the server's own words for its refusal (connect's explanation included), with what was not done
  const message = scopeRequiredText('upload', { prefix: String(key.prefix), scopes: key.scopes.map(String) })
  const all = scopes.map((scope) => `"${scope}"`)
  const needs = all.length === 1 ? `the ${all[0]} scope` : `the ${all.slice(0, -1).join(', ')} and ${all.at(-1)} scopes`
  throw new CliError(1, `${message} (SCOPE_REQUIRED, HTTP 403); miniship ${command} needs an API key with ${needs}; nothing was sent`, { statusCode: 403, code: 'SCOPE_REQUIRED', message, hint: `miniship ${command} needs an API key with ${needs}; nothing was sent` })
}

/**
 * An unsigned push to a miniapp that requires signed versions is refused before a byte is sent, in
 * the server's words: it was refused after the whole upload. Best effort: a key that may not list
 * miniapps (upload only) or an app it cannot see leaves the server to refuse it.
 */
async function requireSignatureLocally(api: ApiClient, appId: string): Promise<void> {
  let apps: { appId?: unknown; requireSignature?: unknown }[]
  try {
    ;({ body: apps } = await api.request<{ appId?: unknown; requireSignature?: unknown }[]>('GET', '/mini-apps'))
  } catch {
    return
  }
  if (!Array.isArray(apps) || apps.find((app) => app.appId === appId)?.requireSignature !== true) return
  const message = signatureRequiredText(appId, 'upload')
  throw new CliError(1, `${message} (SIGNATURE_REQUIRED, HTTP 422); nothing was sent`, { statusCode: 422, code: 'SIGNATURE_REQUIRED', message, hint: `${signedPushAdvice}; nothing was sent` })
}

export function pushCommand(): Command {
  return withReleaseOptions(withClientOptions(new Command('push')))
    .description('upload a build (the five artifacts in DIR) as a version of a miniapp, and optionally publish it')
    .argument('[dir]', 'folder holding the build', '.')
    .requiredOption('--app <appId>', 'the app id, e.g. com.example.shop')
    .requiredOption('--version <version>', 'the version number, e.g. 1.2.0 or 2.0.0-beta.1')
    .option('--changelog <text>', 'what changed in this version')
    .option('--release-type <type>', 'RELEASE, BETA or ALPHA (default RELEASE)')
    .option('--publish', 'publish it right after the upload (with --channel, --notes, --rollout, --mandatory, --host-range)')
    .option('--sign-key <file>', 'sign the upload with this Ed25519 private key, PKCS#8 PEM (env MINISHIP_SIGNING_KEY_FILE; miniship keys generate)')
    .addHelpText(
      'after',
      `
DIR holds main.ios.jsbundle, main.android.bundle and app.json, plus assets-ios.zip and
assets-android.zip, or instead the folders ios/assets/ and android/res/, which push zips itself.

Examples:
  $ miniship push build --app com.example.shop --version 1.2.0 --changelog "Checkout fixes"
  $ miniship push build --app com.example.shop --version 1.2.0 --publish --rollout 20 --notes "20% first"
  $ miniship push build --app com.example.shop --version 1.2.0 --sign-key release.pem --publish`,
    )
    .action((dir: string, flags: PushFlags) =>
      runClient(flags.json === true, async () => {
        const out = createOutput(flags.json === true)
        const appId = flags.app!
        const version = flags.version!
        if (!versionPattern.test(version)) throw new CliError(2, `--version must be MAJOR.MINOR.PATCH with an optional -prerelease, such as 1.0.0 or 2.1.0-beta.1: numbers of at most 15 digits without leading zeros (got ${JSON.stringify(version)})`)
        const releaseType = flags.releaseType?.toUpperCase()
        if (releaseType !== undefined && !(releaseTypes as readonly string[]).includes(releaseType)) throw new CliError(2, `--release-type must be one of ${releaseTypes.join(', ')}`)
        const releaseFlags: ReleaseFlags = { notes: flags.notes, rollout: flags.rollout, mandatory: flags.mandatory, hostRange: flags.hostRange, channel: flags.channel }
        if (!flags.publish && (flags.notes !== undefined || flags.rollout !== undefined || flags.mandatory || flags.hostRange !== undefined)) {
          throw new CliError(2, '--notes, --rollout, --mandatory and --host-range go with --publish')
        }
        if (flags.publish) publishBody(releaseFlags) // bad values are exit 2 before anything is sent
        const signingKey = signingKeyFrom(flags.signKey)
        const needs: KeyNeeds = { command: flags.publish ? 'push --publish' : 'push', scopes: flags.publish ? ['upload', 'release'] : ['upload'] }
        const api = connect(flags, needs)

        let scratchDir: string | null = null
        const scratch = async () => (scratchDir ??= await mkdtemp(join(tmpdir(), 'miniship-push-')))
        try {
          const artifacts = await findArtifacts(resolve(dir), scratch)
          await checkArtifacts(artifacts, appId, version)
          const fields: Record<string, string> = { version }
          if (flags.changelog !== undefined) fields.changelog = flags.changelog
          if (releaseType !== undefined) fields.releaseType = releaseType
          if (flags.channel !== undefined) fields.channel = flags.channel
          const localWarnings: Warning[] = []
          if (signingKey) {
            const signed = await signArtifacts(artifacts, appId, version, signingKey, scratch)
            Object.assign(fields, signed.fields)
            localWarnings.push(...signed.warnings)
            out.note(`Signing with the key ${signingKey.keyId}`)
          }
          const total = artifacts.reduce((sum, a) => sum + a.size, 0)
          const body = multipartFromDisk(fields, artifacts)
          // refused before a byte is sent, rather than after the whole upload
          await requireUploadScope(api, needs.command, needs.scopes)
          if (!signingKey) await requireSignatureLocally(api, appId)
          const limit = await uploadLimit(api)
          if (limit !== null && body.length > limit) {
            const hint = 'an operator raises the limit with --upload-limit-mb (env MINISHIP_UPLOAD_LIMIT_MB)'
            throw new CliError(1, `the upload is ${formatBytes(body.length)}, over the ${formatBytes(limit)} ${api.server} takes, so nothing was sent; ${hint}`, {
              statusCode: 413,
              code: 'PAYLOAD_TOO_LARGE',
              message: `The upload is larger than the limit of ${formatBytes(limit)}`,
              hint,
            })
          }
          out.note(`Uploading ${appId} ${version}: ${artifacts.length} files, ${formatBytes(total)}`)
          const bar = transferBar(total)
          let uploaded: VersionSummary & { miniAppId: string; warnings?: Warning[] }
          try {
            ;({ body: uploaded } = await api.send<VersionSummary & { miniAppId: string; warnings?: Warning[] }>('POST', `/mini-apps/by-app-id/${encodeURIComponent(appId)}/versions/upload`, {
              contentType: body.contentType,
              length: body.length,
              chunks: body.chunks,
              onBytes: (count) => bar.advance(count),
            }).catch((error: unknown) => (signingKey ? explainKeyRefusal(error, appId, signingKey, flags.signKey ?? Bun.env.MINISHIP_SIGNING_KEY_FILE!) : Promise.reject(error))))
          } catch (error) {
            // a channel the app does not have yet: say how to make it (decisions §13, issue 26)
            if (error instanceof CliError && error.body?.code === 'CHANNEL_NOT_FOUND' && flags.channel !== undefined) {
              const hint = `create it first: ${createChannelHint(flags.channel, appId)}`
              throw new CliError(error.exitCode, `${appId} has no channel "${flags.channel}"; ${hint}`, error.body && { ...error.body, hint })
            }
            throw error
          } finally {
            bar.done()
          }
          out.line(`Uploaded ${appId} ${uploaded.version} (build ${uploaded.buildNumber}, ${uploaded.status}), version id ${uploaded.id}.`)
          const warnings = [...localWarnings, ...(uploaded.warnings ?? [])].map((w) => (typeof w === 'string' ? { code: 'WARNING', message: w } : w))
          for (const warning of warnings) out.note(`warning: ${warning.message} (${warning.code})`)
          let published: VersionSummary | null = null
          if (flags.publish) {
            const result = await publishVersion(api, uploaded.miniAppId, uploaded.id, releaseFlags).catch((error: unknown) => {
              if (!(error instanceof CliError)) throw error
              // pushing again cannot help: the version is there, it only waits to be published; with
              // --json the document says what was uploaded, so a script can publish it
              const scopes = error.body?.code === 'SCOPE_REQUIRED' ? ' with a key that has the "read" and "release" scopes' : ''
              const message = `${error.message}. ${appId} ${uploaded.version} was uploaded (${uploaded.status}); publish it${scopes}: miniship publish ${appId} ${uploaded.version}`
              throw new CliError(error.exitCode, message, error.body, { uploaded: { id: uploaded.id, version: uploaded.version, buildNumber: uploaded.buildNumber, status: uploaded.status, warnings } })
            })
            published = result.record
            out.line(`Published ${appId} ${result.summary}.`)
          }
          out.result({ version: uploaded, warnings, published })
        } finally {
          if (scratchDir) await rm(scratchDir, { recursive: true, force: true })
        }
      }),
    )
}
