// `miniship verify`: what a device does with a release (decisions §14): install info, the signature by a pinned key, the statement, every file's size and digest.
import { Command } from 'commander'
import { createPublicKey, verify } from 'node:crypto'
import { parseStatement, utf8Bytes, type StatementFileKind } from '../sdk/statement'
import { decodeBase64 } from '../modules/signing/keys'
import { redactedServerUrl, resolveTarget, withClientOptions, type ClientFlags } from './config'
import { answerTimeoutMs, CliError, createOutput, notAnswered, runClient, unreachable } from './http'
import { readPublicKey } from './keys'

interface InstallInfo {
  appId: string
  versionId: string
  version: string
  bundles: { ios: string; android: string }
  assetsUrl: { ios: string; android: string }
  manifestUrl: string
  files: Record<StatementFileKind, { size: number; sha256: string }>
  signature?: { algorithm: string; keyId: string; statement: string; value: string }
}

export interface Check {
  check: string
  ok: boolean
  detail: string
}

type Platform = 'ios' | 'android'

/** The files a device of `platforms` downloads, with where install info says they are. */
function filesToFetch(info: InstallInfo, platforms: Platform[]): { kind: StatementFileKind; url: string }[] {
  const files: { kind: StatementFileKind; url: string }[] = []
  for (const platform of platforms) files.push({ kind: platform === 'ios' ? 'bundleIos' : 'bundleAndroid', url: info.bundles[platform] })
  files.push({ kind: 'manifest', url: info.manifestUrl })
  for (const platform of platforms) files.push({ kind: platform === 'ios' ? 'assetsIos' : 'assetsAndroid', url: info.assetsUrl[platform] })
  return files
}

/** Every check of decisions §14 a device makes, in its order; each says what it found. A failed one does not stop the rest. */
export async function verifyRelease(info: InstallInfo, publicKey: { publicKey: string; keyId: string }, appId: string, platforms: Platform[], download: (url: string) => Promise<Uint8Array>): Promise<Check[]> {
  const checks: Check[] = []
  const add = (check: string, ok: boolean, detail: string) => checks.push({ check, ok, detail })
  const signature = info.signature
  let statement: ReturnType<typeof parseStatement> = null
  if (!signature) add('signature', false, `${info.appId} ${info.version} is not signed: install info carries no signature (sign it: miniship sign ${info.version} --app ${appId} --sign-key FILE)`)
  else {
    if (signature.algorithm !== 'ed25519') add('signature', false, `the algorithm is ${JSON.stringify(signature.algorithm)}, not ed25519`)
    else if (signature.keyId !== publicKey.keyId) add('signature', false, `signed by the key ${signature.keyId}, not by the key you trust (${publicKey.keyId})`)
    else {
      const value = decodeBase64(signature.value)
      const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(publicKey.publicKey, 'base64').toString('base64url') }, format: 'jwk' })
      const valid = value !== null && value.length === 64 && verify(null, utf8Bytes(signature.statement), key, value)
      add('signature', valid, valid ? `a valid Ed25519 signature by ${signature.keyId}` : `the signature does not verify with the key ${publicKey.keyId}: the statement was changed after signing, or signed by another key`)
    }
    statement = parseStatement(signature.statement)
    if (!statement) add('statement', false, 'the signed text is not a miniship-release-v1 statement')
    else {
      const sameApp = statement.appId === appId
      const sameVersion = statement.version === info.version
      add('statement', sameApp && sameVersion, sameApp && sameVersion ? `names ${statement.appId} ${statement.version}` : `names ${statement.appId} ${statement.version}, but the release is ${appId} ${info.version}`)
    }
  }
  for (const { kind, url } of filesToFetch(info, platforms)) {
    const expected = info.files[kind]
    let bytes: Uint8Array
    try {
      bytes = await download(url)
    } catch (error) {
      add(kind, false, `downloading ${url} failed: ${(error as Error).message}`)
      continue
    }
    const digest = new Bun.CryptoHasher('sha256').update(bytes).digest('hex')
    const where = `(${url.split('?')[0]})`
    if (statement) {
      // what a device trusts is the signed digest; install info's own is only a hint
      const signed = statement.files[kind]
      if (signed === undefined) add(kind, false, `the signed statement does not name this file ${where}`)
      else if (digest !== signed) {
        const infoToo = expected.sha256 === signed ? 'install info agrees with the statement' : `install info says ${expected.sha256}`
        add(kind, false, `changed after it was signed: sha256 ${digest} downloaded (${bytes.length} bytes), the signed statement says ${signed}, ${infoToo} ${where}`)
      } else add(kind, true, `${bytes.length} bytes, sha256 ${digest}, as signed`)
    } else if (bytes.length !== expected.size) add(kind, false, `${bytes.length} bytes downloaded, install info says ${expected.size} ${where}`)
    else if (digest !== expected.sha256) add(kind, false, `sha256 ${digest} downloaded, install info says ${expected.sha256} ${where}`)
    else add(kind, true, `${bytes.length} bytes, sha256 ${digest}`)
  }
  return checks
}

/**
 * A GET read to its end, as a device fetches it; exit 3 when its server is not reached, or sends
 * nothing for `timeoutMs` (before its answer or in the middle of the body): it had no limit, so a
 * silent server or CDN kept verify waiting for good. The limit is on silence, not on the whole
 * download, which for a large bundle over a slow link may take longer. No miniship serve advice
 * when refused: this may be a CDN.
 */
export async function download(url: URL, timeoutMs = answerTimeoutMs): Promise<{ ok: boolean; status: number; bytes: Uint8Array }> {
  const controller = new AbortController()
  let timedOut = false
  let timer: ReturnType<typeof setTimeout> | undefined
  const rearm = () => {
    clearTimeout(timer)
    timer = setTimeout(() => {
      timedOut = true
      controller.abort()
    }, timeoutMs)
  }
  rearm()
  try {
    const response = await fetch(url, { headers: { 'user-agent': 'miniship-cli' }, signal: controller.signal })
    const parts: Uint8Array[] = []
    for await (const part of response.body ?? []) {
      rearm()
      parts.push(part)
    }
    return { ok: response.ok, status: response.status, bytes: new Uint8Array(Buffer.concat(parts)) }
  } catch (error) {
    if (timedOut) throw notAnswered(url.origin, timeoutMs)
    throw unreachable(url.origin, error)
  } finally {
    clearTimeout(timer)
  }
}

/**
 * Install info as read from `where`, checked for what verify reads of it: an --install-url that
 * answered a web page or other JSON ended in the engine's own words ("JSON Parse error…",
 * "undefined is not an object (evaluating …)"). Exit 1 naming the address and what was missing.
 */
function installInfoIn(text: string, platforms: Platform[], where: string): InstallInfo {
  const refuse = (why: string) => new CliError(1, `${where} did not answer with install info: ${why}`)
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    throw refuse(`it is not JSON (it begins ${JSON.stringify(text.trimStart().split('\n')[0]!.slice(0, 40))})`)
  }
  const isObject = (item: unknown): item is Record<string, unknown> => typeof item === 'object' && item !== null && !Array.isArray(item)
  if (!isObject(value)) throw refuse('it is not a JSON object')
  const missing: string[] = []
  for (const field of ['version', 'versionId', 'manifestUrl']) if (typeof value[field] !== 'string') missing.push(field)
  for (const platform of platforms) {
    if (!isObject(value.bundles) || typeof value.bundles[platform] !== 'string') missing.push(`bundles.${platform}`)
    if (!isObject(value.assetsUrl) || typeof value.assetsUrl[platform] !== 'string') missing.push(`assetsUrl.${platform}`)
  }
  const files = isObject(value.files) ? value.files : {}
  for (const { kind } of filesToFetch({ bundles: { ios: '', android: '' }, assetsUrl: { ios: '', android: '' }, manifestUrl: '' } as InstallInfo, platforms)) {
    const file = files[kind]
    if (!isObject(file) || typeof file.size !== 'number' || typeof file.sha256 !== 'string') missing.push(`files.${kind}`)
  }
  if (missing.length > 0) throw refuse(`it has no ${missing.join(', ')}`)
  return value as unknown as InstallInfo
}

interface VerifyFlags extends ClientFlags {
  installUrl?: string
  app: string
  channel?: string
  publicKey: string
  platform?: string
}

/** verify needs no sign-in, only where to ask: no server named is bad usage, not "not signed in". */
function verifyNeedsServer(): CliError {
  return new CliError(2, 'verify needs the server: pass --server URL (or set MINISHIP_SERVER, or sign in with miniship login), or --install-url URL')
}

export function verifyCommand(): Command {
  return withClientOptions(new Command('verify'))
    .description("check a release as a device does: install info, the signature by your public key, every file's size and sha256")
    .requiredOption('--app <appId>', 'the app id, e.g. com.example.shop')
    .requiredOption('--public-key <key>', 'the public key the host app trusts: base64, or a file (PEM or base64)')
    .option('--channel <name>', 'the channel (default stable); not with --install-url')
    .option('--platform <platform>', 'ios or android (default both)')
    .option('--install-url <url>', "read install info here instead of the server's release install: the release mirror's install.json on a CDN, say")
    .addHelpText(
      'after',
      `
No sign-in needed: it asks what a device asks. Exit 1 names every check that failed.

Examples:
  $ miniship verify --app com.example.shop --public-key release.pem     # the file keys generate wrote: its public half is used
  $ miniship verify --app com.example.shop --channel beta --platform ios --public-key SqaHDz0TqEC6uCM1DQhnVH9hf3maJrtzgZKnVQEMhJQ= --json
  $ miniship verify --app com.example.shop --public-key release.pem --install-url https://cdn.example.com/releases/com.example.shop/stable/install.json`,
    )
    .action((flags: VerifyFlags) =>
      runClient(flags.json === true, async () => {
        const out = createOutput(flags.json === true)
        if (flags.platform !== undefined && flags.platform !== 'ios' && flags.platform !== 'android') throw new CliError(2, `--platform must be ios or android (got ${JSON.stringify(flags.platform)})`)
        const platforms: Platform[] = flags.platform ? [flags.platform as Platform] : ['ios', 'android']
        const publicKey = readPublicKey(flags.publicKey)
        let installUrl: string
        if (flags.installUrl !== undefined) {
          // the install info read is the URL's: a --channel beside it was ignored without a word, and the report said nothing of it
          if (flags.channel !== undefined) throw new CliError(2, '--channel and --install-url: give one; the install info at --install-url is the channel it was written for (the mirror keeps each channel at releases/APP/CHANNEL/install.json)')
          // `http://` alone passed the prefix test and failed later as "Invalid URL" (exit 1, FAILED)
          if (!/^https?:\/\//.test(flags.installUrl) || !URL.canParse(flags.installUrl)) throw new CliError(2, `--install-url must be an http(s) URL (got ${JSON.stringify(redactedServerUrl(flags.installUrl).shown)})`)
          installUrl = flags.installUrl
        } else {
          const query = flags.channel ? `?channel=${encodeURIComponent(flags.channel)}` : ''
          installUrl = `${resolveTarget(flags, undefined, undefined, verifyNeedsServer).server}/mini-apps/access/apps/${encodeURIComponent(flags.app)}/release/install${query}`
        }
        const answer = await download(new URL(installUrl))
        const text = new TextDecoder().decode(answer.bytes)
        if (!answer.ok) {
          let error: { code?: string; message?: string } = {}
          try {
            error = JSON.parse(text)
          } catch {
            // not ours
          }
          throw new CliError(1, `install info: ${error.message ?? `HTTP ${answer.status}`} (${error.code ?? 'FAILED'}, HTTP ${answer.status})`, error.code ? { statusCode: answer.status, code: error.code, message: error.message ?? '' } : undefined)
        }
        const info = installInfoIn(text, platforms, redactedServerUrl(installUrl).shown)
        const checks = await verifyRelease(info, publicKey, flags.app, platforms, async (url) => {
          // file URLs are resolved against install info's own address, as a device resolves them
          const response = await download(new URL(url, installUrl))
          if (!response.ok) throw new Error(`HTTP ${response.status}`)
          return response.bytes
        })
        const failed = checks.filter((check) => !check.ok)
        // install info names no channel: of an --install-url, say where it was read (its query, maybe a token, left out)
        const source = flags.installUrl !== undefined ? `from ${redactedServerUrl(flags.installUrl).shown}` : `on ${flags.channel ?? 'stable'}`
        out.line(`${flags.app} ${info.version} (version ${info.versionId}) ${source}:`)
        for (const check of checks) out.line(`  ${check.ok ? 'ok  ' : 'FAIL'} ${check.check.padEnd(14)} ${check.detail}`)
        const result = { ok: failed.length === 0, appId: flags.app, version: info.version, versionId: info.versionId, keyId: publicKey.keyId, checks }
        if (failed.length > 0) {
          // with --json, the error document every failure prints (a code to switch on), with the report beside it
          const message = `verification failed: ${failed.map((check) => `${check.check} (${check.detail})`).join('; ')}`
          throw new CliError(1, message, { code: 'VERIFICATION_FAILED', message }, result)
        }
        out.line(`Verified: what a device gets is what ${publicKey.keyId} signed.`)
        out.result(result)
      }),
    )
}
