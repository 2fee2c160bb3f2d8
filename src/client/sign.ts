// `miniship sign` and the signing half of `push`: the statement of decisions §14 over the files exactly as the server will store them, signed with a key that stays here.
import { Command } from 'commander'
import { open, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { buildStatement, statementFileKinds, type StatementFileKind } from '../sdk/statement'
import { checkManifest, type UploadWarning } from '../modules/versions/manifest'
import { connect, withClientOptions, type ClientFlags } from './config'
import { CliError, createOutput, runClient } from './http'
import { readSigningKey, signStatement, type SigningKey } from './keys'
import { findMiniApp, findVersion, type VersionSummary } from './publish'

/** A file push sends (push.ts's Artifact): the field it goes in and where it is. */
interface SignedFile {
  field: StatementFileKind
  path: string
  size: number
}

/** The signing key push and sign use: --sign-key, else MINISHIP_SIGNING_KEY_FILE; null when neither is given. */
export function signingKeyFrom(flag: string | undefined, env: Record<string, string | undefined> = Bun.env): SigningKey | null {
  const path = flag ?? (env.MINISHIP_SIGNING_KEY_FILE || undefined)
  return path === undefined ? null : readSigningKey(path)
}

async function sha256OfFile(path: string): Promise<string> {
  const hasher = new Bun.CryptoHasher('sha256')
  const handle = await open(path, 'r')
  try {
    const buffer = new Uint8Array(256 * 1024)
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, null)
      if (bytesRead === 0) break
      hasher.update(buffer.subarray(0, bytesRead))
    }
  } finally {
    await handle.close()
  }
  return hasher.digest('hex')
}

/**
 * Signs a push. The server stores a manifest that does not name the upload's version rewritten
 * with it (decisions §9), so the digest it signs would not be of the file sent: such a manifest is
 * rewritten here first, by the server's own rule, and the rewritten file is what is sent (and
 * stored byte for byte). `artifacts` is changed in place to send it. Returns the upload's signature
 * fields and the warning the rewrite earned.
 */
export async function signArtifacts(artifacts: SignedFile[], appId: string, version: string, key: SigningKey, scratch: () => Promise<string>): Promise<{ fields: Record<string, string>; statement: string; warnings: UploadWarning[] }> {
  const warnings: UploadWarning[] = []
  const manifest = artifacts.find((artifact) => artifact.field === 'manifest')!
  const checked = checkManifest(new Uint8Array(await readFile(manifest.path)), appId, version)
  if (checked.bytes) {
    const path = join(await scratch(), 'app.json')
    await writeFile(path, checked.bytes, { mode: 0o600 })
    manifest.path = path
    manifest.size = checked.bytes.length
    warnings.push(...checked.warnings.filter((warning) => warning.code === 'MANIFEST_VERSION_SET'))
  }
  const digests: Partial<Record<StatementFileKind, string>> = {}
  for (const artifact of artifacts) digests[artifact.field] = await sha256OfFile(artifact.path)
  const statement = buildStatement(appId, version, digests)
  return { fields: { signatureKeyId: key.keyId, signature: signStatement(key, statement) }, statement, warnings }
}

/** A server refusal about the key, with what to do about it here. */
export function explainKeyRefusal(error: unknown, appId: string, key: SigningKey, keyFile: string): never {
  // --json's error carries the advice as `hint` too (docs/releasing.md)
  if (error instanceof CliError && error.body?.code === 'SIGNING_KEY_UNKNOWN') {
    const hint = `trust it first: miniship keys add --app ${appId} ${key.publicKey} --name NAME`
    throw new CliError(1, `${error.message}; ${hint}`, { ...error.body, hint })
  }
  if (error instanceof CliError && error.body?.code === 'SIGNING_KEY_REVOKED') {
    const hint = `${keyFile} holds a revoked key: miniship keys generate makes a new one`
    throw new CliError(1, `${error.message}; ${hint}`, { ...error.body, hint })
  }
  throw error
}

type SignedVersion = VersionSummary & { files: Record<StatementFileKind, { sha256: string; size: number }>; signature: { keyId: string; keyName: string | null; keyRevokedAt?: string | null } | null }

/**
 * A version has one signature: signing it with another key replaces the one it had. Where that was
 * made by a key still trusted, host apps that pin only that key refuse the version from now on,
 * and the run said only "Signed … with" the new key. (Replacing a revoked key's signature is what
 * signing again is for: nothing to say.)
 */
function replacedSignatureWarnings(before: SignedVersion, keyId: string): { code: 'SIGNATURE_REPLACED'; message: string }[] {
  const old = before.signature
  if (!old || old.keyId === keyId || old.keyRevokedAt) return []
  const named = old.keyName ? `${old.keyId} ("${old.keyName}")` : old.keyId
  return [{ code: 'SIGNATURE_REPLACED', message: `${before.version} was signed by the key ${named}, still trusted: this signature replaces that one, and host apps that trust only ${old.keyId} will refuse ${before.version} from now on` }]
}

export function signCommand(): Command {
  return withClientOptions(new Command('sign'))
    .description('sign an uploaded version with your key (the key never leaves this machine)')
    .argument('<version>', 'the version, e.g. 1.2.0')
    .requiredOption('--app <appId>', 'the app id, e.g. com.example.shop')
    .option('--sign-key <file>', 'the Ed25519 private key, PKCS#8 PEM (env MINISHIP_SIGNING_KEY_FILE)')
    .addHelpText('after', '\nExamples:\n  $ miniship sign 1.2.0 --app com.example.shop --sign-key release.pem\n  $ MINISHIP_SIGNING_KEY_FILE=release.pem miniship sign 1.2.0 --app com.example.shop --json')
    .action((version: string, flags: ClientFlags & { app: string; signKey?: string }) =>
      runClient(flags.json === true, async () => {
        const out = createOutput(flags.json === true)
        const key = signingKeyFrom(flags.signKey)
        if (!key) throw new CliError(2, 'give the private key: --sign-key FILE, or set MINISHIP_SIGNING_KEY_FILE')
        const keyFile = flags.signKey ?? Bun.env.MINISHIP_SIGNING_KEY_FILE!
        const api = connect(flags, { command: 'sign', scopes: ['read', 'release'] })
        const app = await findMiniApp(api, flags.app)
        const target = (await findVersion(api, app, version)) as SignedVersion
        const digests: Partial<Record<StatementFileKind, string>> = {}
        for (const kind of statementFileKinds) if (target.files?.[kind]) digests[kind] = target.files[kind].sha256
        const statement = buildStatement(app.appId, target.version, digests)
        const { body } = await api
          .request<SignedVersion>('POST', `/mini-apps/${encodeURIComponent(app.id)}/versions/${encodeURIComponent(target.id)}/signature`, { json: { keyId: key.keyId, signature: signStatement(key, statement) } })
          .catch((error: unknown) => explainKeyRefusal(error, app.appId, key, keyFile))
        out.line(`Signed ${app.appId} ${body.version} (build ${body.buildNumber}) with the key ${key.keyId}${body.signature?.keyName ? ` ("${body.signature.keyName}")` : ''}.`)
        const warnings = replacedSignatureWarnings(target, key.keyId)
        for (const warning of warnings) out.note(`warning: ${warning.message} (${warning.code})`)
        out.result({ ...body, warnings })
      }),
    )
}
