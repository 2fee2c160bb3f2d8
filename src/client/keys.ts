// `miniship keys`: make an Ed25519 signing key (the private half never leaves this machine), manage the keys a miniapp trusts, and whether it requires signed versions (decisions §14).
import { Command } from 'commander'
import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, type KeyObject } from 'node:crypto'
import { closeSync, existsSync, openSync, readFileSync, statSync, writeSync } from 'node:fs'
import { basename, dirname, join, resolve } from 'node:path'
import { decodeBase64, keyIdOf, unsoundKeyReason } from '../modules/signing/keys'
import { utf8Bytes } from '../sdk/statement'
import { connect, withClientOptions, type ClientFlags } from './config'
import { timeText } from '../terminal/time'
import { CliError, createOutput, runClient } from './http'
import { findMiniApp, type MiniApp } from './publish'
import { asCommandGroup } from './command-group'
import { withJsonUsageErrors } from '../cli/json-output'
import type { SigningKeyRecord } from '../modules/signing/service'

/** The raw 32 bytes of an Ed25519 public key object, as base64 (the spelling of decisions §14). */
function rawPublicKey(key: KeyObject): string {
  return Buffer.from(key.export({ format: 'jwk' }).x!, 'base64url').toString('base64')
}

export interface SigningKey {
  privateKey: KeyObject
  /** base64 of the raw 32-byte public key */
  publicKey: string
  keyId: string
}

/** The private key in a PKCS#8 PEM file (what `keys generate` writes); a problem is exit 2 naming the file. */
export function readSigningKey(path: string): SigningKey {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (error) {
    // the key itself where its file goes (MINISHIP_SIGNING_KEY_FILE set to a CI secret's contents, say) was repeated whole, into CI
    // logs, and still was when the secret arrived damaged (line breaks as spaces or a literal \n), which no key parser accepts
    if (mayBeKeyMaterial(path)) throw new CliError(2, 'the signing key was given where its file goes (it is not repeated here): --sign-key and MINISHIP_SIGNING_KEY_FILE take the path of the PEM file, e.g. write a CI secret to a file first')
    throw new CliError(2, `cannot read the signing key ${path}: ${(error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (error as Error).message}`)
  }
  let privateKey: KeyObject
  try {
    privateKey = createPrivateKey(text)
  } catch {
    // the file exists, so `keys generate --out` it would be refused: name what is in it and what to give instead
    if (holdsPublicKey(text)) throw new CliError(2, `${path} holds a public key; --sign-key takes the private key file miniship keys generate wrote (PKCS#8 PEM)`)
    throw new CliError(2, `${path} is not a private key in PEM; give the file miniship keys generate wrote, or make one with miniship keys generate --out NEW-FILE`)
  }
  if (privateKey.asymmetricKeyType !== 'ed25519') throw new CliError(2, `${path} holds an ${privateKey.asymmetricKeyType} key; signing takes an Ed25519 key (miniship keys generate)`)
  const publicKey = rawPublicKey(createPublicKey(privateKey))
  return { privateKey, publicKey, keyId: keyIdOf(decodeBase64(publicKey)!) }
}

/** Whether the text is a public key as `keys ls` prints it or a PEM holds it (what people mistake for the signing key). */
function holdsPublicKey(text: string): boolean {
  if (decodeBase64(text)?.length === 32) return true
  try {
    createPublicKey(text)
    return true
  } catch {
    return false
  }
}

/** base64 of the Ed25519 signature over the statement's UTF-8 bytes. */
export function signStatement(key: SigningKey, statement: string): string {
  return sign(null, utf8Bytes(statement), key.privateKey).toString('base64')
}

/**
 * A public key given on the command line: the base64 of its raw 32 bytes, or a file holding that,
 * a public key PEM, or the private key PEM (its public half is taken). Exit 2 when it is none.
 */
export function readPublicKey(given: string): { publicKey: string; keyId: string; fromFile: string | null } {
  const raw = decodeBase64(given)
  if (raw !== null && raw.length === 32) return soundKey(raw, null)
  if (!existsSync(given)) throw notAPublicKey(given)
  const text = readFileSync(given, 'utf8').trim()
  const inline = decodeBase64(text)
  if (inline !== null && inline.length === 32) return soundKey(inline, given)
  let key: KeyObject
  try {
    key = createPublicKey(text)
  } catch {
    throw new CliError(2, `${given} holds no public key: give the base64 miniship keys generate printed, or the PEM file`)
  }
  if (key.asymmetricKeyType !== 'ed25519') throw new CliError(2, `${given} holds an ${key.asymmetricKeyType} key; signing keys are Ed25519`)
  return soundKey(decodeBase64(rawPublicKey(key))!, given)
}

/**
 * The refusal of a command-line word that is neither a public key nor a file. It repeated the
 * first 80 characters, which held the whole private key when one was pasted (its PEM, or the
 * base64 line inside it): never repeat a private key, nor anything that could be key material.
 */
function notAPublicKey(given: string): CliError {
  if (holdsPrivateKey(given)) {
    return new CliError(2, 'that is a private key, not a public one (it is not repeated here; keep it off command lines, which shells keep in their history): give the public key miniship keys generate printed, or the private key file, whose public half is taken')
  }
  if (mayBeKeyMaterial(given)) {
    return new CliError(2, `the ${given.length}-character argument is neither the base64 of a 32-byte public key nor a file (not repeated here: it may be key material)`)
  }
  return new CliError(2, `${JSON.stringify(given.slice(0, 80))} is neither the base64 of a 32-byte public key nor a file`)
}

/**
 * What a message must not repeat: a private key, or text that may be one damaged on its way (a CI
 * secret whose line breaks became spaces or a literal \n parses as no key): anything naming
 * PRIVATE, beginning with a PEM's dashes, or the base64 of 32 bytes or more.
 */
function mayBeKeyMaterial(text: string): boolean {
  const decoded = decodeBase64(text)
  return /PRIVATE/i.test(text) || text.trimStart().startsWith('-----') || (decoded !== null && decoded.length >= 32)
}

/** A private key's PEM text, or the base64 of its PKCS#8 DER (the line inside that PEM). */
function holdsPrivateKey(text: string): boolean {
  const der = decodeBase64(text)
  try {
    if (der !== null) createPrivateKey({ key: Buffer.from(der), format: 'der', type: 'pkcs8' })
    else createPrivateKey(text)
    return true
  } catch {
    return false
  }
}

/** A key to trust, as the server would take it: none under which anyone could sign (a weak key verifies forged signatures). */
function soundKey(raw: Uint8Array, fromFile: string | null): { publicKey: string; keyId: string; fromFile: string | null } {
  const unsound = unsoundKeyReason(raw)
  if (unsound !== null) throw new CliError(2, `The public key ${unsound}`)
  return { publicKey: Buffer.from(raw).toString('base64'), keyId: keyIdOf(raw), fromFile }
}

/** An --out refused before anything is written: exit 2 with backup --out's codes, never the system's "ENOENT: no such file or directory, open …". */
function outRefused(code: 'OUT_DIR_NOT_FOUND' | 'OUT_NOT_A_FILE', message: string): CliError {
  return new CliError(2, message, { code, message })
}

/** Writes the PEM only if nothing is at `path` (O_EXCL), created 0600: a key is never overwritten. */
function writeNewKeyFile(path: string, pem: string): void {
  let fd: number
  try {
    fd = openSync(path, 'wx', 0o600)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    const directory = dirname(path)
    if (code === 'EEXIST' && statSync(path, { throwIfNoEntry: false })?.isDirectory()) {
      throw outRefused('OUT_NOT_A_FILE', `${path} is a directory; --out names the key file to create, e.g. ${join(path, 'miniship-signing-key.pem')}`)
    }
    if (code === 'EEXIST') throw new CliError(2, `${path} already exists; a signing key is never overwritten (choose another --out, or remove it yourself)`)
    if (code === 'ENOENT') throw outRefused('OUT_DIR_NOT_FOUND', `the directory ${directory} for ${basename(path)} does not exist; create it, or give an --out in one that does`)
    if (code === 'ENOTDIR') {
      // the nearest thing on the way that exists is a file
      const isFile = (candidate: string) => {
        try {
          return statSync(candidate).isFile()
        } catch {
          return false
        }
      }
      let file = directory
      while (!isFile(file) && dirname(file) !== file) file = dirname(file)
      throw outRefused('OUT_DIR_NOT_FOUND', `${file}, where ${basename(path)} would go, is a file, not a directory`)
    }
    throw new CliError(2, `cannot create ${path}: ${(error as Error).message}`)
  }
  try {
    writeSync(fd, pem)
  } finally {
    closeSync(fd)
  }
}

interface AppFlags extends ClientFlags {
  app: string
}

/** `on` or `off`, as `keys require` takes it; anything else is bad usage (exit 2) naming both. */
function requirementWanted(setting: string): boolean {
  if (setting === 'on') return true
  if (setting === 'off') return false
  throw new CliError(2, `keys require takes on or off, got ${JSON.stringify(setting.slice(0, 80))}`)
}

// The words of the console's Settings › Signing ("Require signed versions", its hint and notices) and of the server's 422 SIGNATURE_REQUIRED.
const refusedWhenRequired = 'unsigned uploads are refused, and an unsigned version cannot be published or rolled back to'

/** What `keys require` did, in one line: the requirement now, or that it already was so. */
function requirementLine(appId: string, requireSignature: boolean, changed: boolean): string {
  if (!changed) return requireSignature ? `${appId} already requires signed versions; nothing changed.` : `${appId} already accepts unsigned versions; nothing changed.`
  if (requireSignature) return `${appId} requires signed versions now: ${refusedWhenRequired} (sign it first: miniship sign VERSION --app ${appId} --sign-key FILE).`
  return `${appId} no longer requires signed versions: unsigned versions are accepted again.`
}

/** The requirement as `keys ls` shows it, under the console's name for the switch. */
function requirementStatus(appId: string, requireSignature: boolean): string {
  return requireSignature ? `Require signed versions: on (${refusedWhenRequired})` : `Require signed versions: off (unsigned versions are accepted; miniship keys require --app ${appId} on refuses them)`
}

/**
 * Signed versions required and no key trusted (none added, or all revoked): the server allows it, as
 * the console does, but nothing can then be uploaded, published or rolled back to.
 */
function noTrustedKeyWarning(appId: string): { code: 'NO_TRUSTED_KEY'; message: string } {
  return {
    code: 'NO_TRUSTED_KEY',
    message: `${appId} requires signed versions and trusts no signing key: nothing can be uploaded, published or rolled back to until an owner or an administrator adds one (miniship keys generate, then miniship keys add --app ${appId} FILE)`,
  }
}

const trustsAKey = (keys: SigningKeyRecord[]) => keys.some((key) => key.revokedAt === null)

/** What keys ls and keys require warn of: signed versions required while no key is trusted. */
function requirementWarnings(appId: string, requireSignature: boolean, keys: SigningKeyRecord[]): { code: string; message: string }[] {
  return requireSignature && !trustsAKey(keys) ? [noTrustedKeyWarning(appId)] : []
}

export function keysCommand(): Command {
  const keys = new Command('keys')
    .description('signing keys: make one, manage the public keys a miniapp trusts, and whether it requires signed versions')
    .addHelpText(
      'after',
      `
Examples:
  $ miniship keys generate --out release.pem
  $ miniship keys add --app com.example.shop release.pem --name "release laptop"
  $ miniship keys ls --app com.example.shop
  $ miniship keys revoke --app com.example.shop 3f9a0c1d2e4b5a69
  $ miniship keys require --app com.example.shop on`,
    )

  keys.addCommand(
    withJsonUsageErrors(new Command('generate'))
      .description('make an Ed25519 key pair: the private key goes to FILE (PKCS#8 PEM, mode 0600, never overwritten)')
      .option('--out <file>', 'where to write the private key', 'miniship-signing-key.pem')
      .option('--json', 'print one JSON document on stdout instead of text')
      .addHelpText('after', '\nExamples:\n  $ miniship keys generate\n  $ miniship keys generate --out ~/.miniship/release.pem --json')
      .action((flags: { out: string; json?: boolean }) =>
        runClient(flags.json === true, async () => {
          const out = createOutput(flags.json === true)
          const path = resolve(flags.out)
          const pair = generateKeyPairSync('ed25519')
          writeNewKeyFile(path, pair.privateKey.export({ format: 'pem', type: 'pkcs8' }) as string)
          const publicKey = rawPublicKey(pair.publicKey)
          const keyId = keyIdOf(decodeBase64(publicKey)!)
          out.line(`Private key written to ${path} (mode 0600). Keep it off the server; anyone holding it can sign releases.`)
          out.line(`Public key: ${publicKey}`)
          out.line(`Key id:     ${keyId}`)
          // --json gives the same two commands as the text (it had the first without its --name, and not the second)
          const next = `miniship keys add --app APPID ${publicKey} --name "${basename(path)}"`
          const push = `miniship push build --app APPID --version 1.0.0 --sign-key ${path}`
          out.line(`Next, trust it for a miniapp:  ${next}`)
          out.line(`Then sign what you push:        ${push}`)
          out.result({ file: path, publicKey, keyId, next, push })
        }),
      ),
  )

  keys.addCommand(
    withClientOptions(new Command('add'))
      .description('trust a public key to sign versions of a miniapp (owners)')
      .argument('<publicKey>', 'the base64 public key, or a file: its PEM, the private key PEM, or the base64')
      .requiredOption('--app <appId>', 'the app id, e.g. com.example.shop')
      .option('--name <name>', 'what people know the key by (default: the file name, or "key KEYID")')
      .addHelpText('after', '\nExamples:\n  $ miniship keys add --app com.example.shop release.pem --name "release laptop"\n  $ miniship keys add --app com.example.shop SqaHDz0TqEC6uCM1DQhnVH9hf3maJrtzgZKnVQEMhJQ= --name CI --json')
      .action((given: string, flags: AppFlags & { name?: string }) =>
        runClient(flags.json === true, async () => {
          const out = createOutput(flags.json === true)
          const key = readPublicKey(given)
          const api = connect(flags)
          const app = await findMiniApp(api, flags.app)
          const name = flags.name ?? (key.fromFile ? basename(key.fromFile) : `key ${key.keyId}`)
          const { body } = await api.request<SigningKeyRecord>('POST', `/mini-apps/${encodeURIComponent(app.id)}/signing-keys`, { json: { name, publicKey: key.publicKey } })
          out.line(`${flags.app} now trusts the key ${body.keyId} ("${body.name}").`)
          out.result(body)
        }),
      ),
  )

  keys.addCommand(
    withClientOptions(new Command('ls'))
      .description('list the keys a miniapp trusts (and the revoked ones), and whether it requires signed versions')
      .requiredOption('--app <appId>', 'the app id')
      .addHelpText('after', '\nExample:\n  $ miniship keys ls --app com.example.shop --json')
      .action((flags: AppFlags) =>
        runClient(flags.json === true, async () => {
          const out = createOutput(flags.json === true)
          const api = connect(flags, { command: 'keys ls', scopes: ['read'] })
          const app = await findMiniApp(api, flags.app)
          const { body } = await api.request<SigningKeyRecord[]>('GET', `/mini-apps/${encodeURIComponent(app.id)}/signing-keys`)
          out.line(requirementStatus(flags.app, app.requireSignature))
          // said as keys require says it: on stderr as a warning, and in --json
          const warnings = requirementWarnings(flags.app, app.requireSignature, body)
          if (warnings.length === 0 && body.length === 0) out.line(`${flags.app} trusts no signing key yet: miniship keys generate, then miniship keys add --app ${flags.app} FILE`)
          for (const key of body) out.line(`${key.keyId}  ${(key.revokedAt ? `revoked ${timeText(key.revokedAt)}` : 'trusted').padEnd(32)} ${key.name}\n                  ${key.publicKey}`)
          for (const warning of warnings) out.note(`warning: ${warning.message} (${warning.code})`)
          out.result({ requireSignature: app.requireSignature, keys: body, warnings })
        }),
      ),
  )

  keys.addCommand(
    withClientOptions(new Command('revoke'))
      .description('revoke a key: it signs nothing from now on (owners); devices must drop it from the host app too')
      .argument('<keyId>', 'the key id (miniship keys ls)')
      .requiredOption('--app <appId>', 'the app id')
      .addHelpText('after', '\nExample:\n  $ miniship keys revoke --app com.example.shop 3f9a0c1d2e4b5a69')
      .action((keyId: string, flags: AppFlags) =>
        runClient(flags.json === true, async () => {
          const out = createOutput(flags.json === true)
          const api = connect(flags)
          const app = await findMiniApp(api, flags.app)
          // the server answers a revoked key as it is; read it first to say "nothing changed", as keys require does (the DELETE is still sent, so a non-owner is told it is not theirs to do)
          const keysPath = `/mini-apps/${encodeURIComponent(app.id)}/signing-keys`
          const before = (await api.request<SigningKeyRecord[]>('GET', keysPath)).body.find((key) => key.keyId === keyId)
          const { body } = await api.request<SigningKeyRecord & { warnings?: { code: string; message: string }[] }>('DELETE', `${keysPath}/${encodeURIComponent(keyId)}`)
          const changed = !before?.revokedAt
          if (changed) out.line(`Revoked ${body.keyId} ("${body.name}") of ${flags.app} at ${timeText(body.revokedAt!)}.`)
          else out.line(`${body.keyId} ("${body.name}") of ${flags.app} was revoked already, at ${timeText(body.revokedAt!)}; nothing changed.`)
          // the versions it signed that devices get now (LIVE_RELEASE_KEY_REVOKED): the server's words, as the console shows them
          const warnings = body.warnings ?? []
          for (const warning of warnings) out.note(`warning: ${warning.message} (${warning.code})`)
          out.result({ ...body, warnings, changed })
        }),
      ),
  )
  keys.addCommand(
    withClientOptions(new Command('require'))
      .description('turn "Require signed versions" on or off (owners): while on, unsigned uploads are refused, and an unsigned version cannot be published or rolled back to')
      .argument('<on|off>', 'on: require signed versions; off: accept unsigned versions again')
      .requiredOption('--app <appId>', 'the app id')
      .addHelpText('after', '\nExamples:\n  $ miniship keys require --app com.example.shop on\n  $ miniship keys require --app com.example.shop off --json')
      .action((setting: string, flags: AppFlags) =>
        runClient(flags.json === true, async () => {
          const out = createOutput(flags.json === true)
          const wanted = requirementWanted(setting)
          const api = connect(flags)
          const app = await findMiniApp(api, flags.app)
          // the keys first: once the PATCH is through, the command must not fail on a later read
          const { body: trusted } = await api.request<SigningKeyRecord[]>('GET', `/mini-apps/${encodeURIComponent(app.id)}/signing-keys`)
          // sent even when already so: the server checks that the caller may change it (a PATCH that changes nothing writes nothing)
          const { requireSignature } = (await api.request<MiniApp>('PATCH', `/mini-apps/${encodeURIComponent(app.id)}`, { json: { requireSignature: wanted } })).body
          const changed = requireSignature !== app.requireSignature
          out.line(requirementLine(flags.app, requireSignature, changed))
          const warnings = requirementWarnings(flags.app, requireSignature, trusted)
          for (const warning of warnings) out.note(`warning: ${warning.message} (${warning.code})`)
          out.result({ appId: flags.app, requireSignature, changed, warnings })
        }),
      ),
  )
  return asCommandGroup(keys)
}
