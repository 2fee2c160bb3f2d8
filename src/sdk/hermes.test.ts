// miniship/sdk on Hermes, React Native's engine: compiled as an RN app compiles it (@react-native/babel-preset,
// then one bundle with the @babel/runtime helpers inlined) and run on hermes-engine-cli 0.12's binary against an
// in-memory fetch and storage. The toolchain lives in test/hermes (its own package.json and lockfile), installed here.
import { beforeAll, expect, test } from 'bun:test'
import { createHash, generateKeyPairSync, sign, type KeyObject } from 'node:crypto'
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { buildStatement, statementFileKinds } from './statement'

const harness = join(import.meta.dir, '..', '..', 'test', 'hermes')
const hermes = join(harness, 'node_modules', 'hermes-engine-cli', 'linux64-bin', 'hermes')
let unavailable: string | null = null

beforeAll(() => {
  if (existsSync(hermes) && existsSync(join(harness, 'node_modules', '@react-native', 'babel-preset'))) return
  const install = Bun.spawnSync(['npm', 'ci', '--no-audit', '--no-fund'], { cwd: harness, stdout: 'pipe', stderr: 'pipe' })
  if (install.exitCode !== 0) {
    const stderr = install.stderr.toString()
    // only a missing network excuses the test; anything else is a failure of the harness
    if (/ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ETIMEDOUT|ENETUNREACH|network/i.test(stderr)) unavailable = `npm ci in test/hermes could not reach the registry: ${stderr.slice(0, 300)}`
    else throw new Error(`npm ci in test/hermes failed:\n${stderr}`)
  }
}, 300_000)

function key() {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519')
  const raw = Buffer.from(publicKey.export({ format: 'jwk' }).x!, 'base64url')
  return { publicKey: raw.toString('base64'), keyId: createHash('sha256').update(raw).digest('hex').slice(0, 16), privateKey }
}

/** Install info of a five-file version, its files by URL, signed (§14) with `privateKey`. */
function fixture(appId: string, trusted: ReturnType<typeof key>, other: ReturnType<typeof key>) {
  const base = 'https://cdn.example.com/releases/v1'
  const contents: Record<string, Uint8Array> = {
    bundleIos: new TextEncoder().encode('/* ios */ ' + 'var i=0;'.repeat(20_000)),
    bundleAndroid: new TextEncoder().encode('/* android */ ' + 'var a=1;'.repeat(30_000)),
    manifest: new TextEncoder().encode(JSON.stringify({ appId, version: '1.0.0', pages: { home: 'Home' } })),
    assetsIos: Uint8Array.from({ length: 3000 }, (_, i) => (i * 7) & 255),
    assetsAndroid: Uint8Array.from({ length: 5000 }, (_, i) => (i * 13) & 255),
  }
  const urls: Record<string, string> = {
    bundleIos: `${base}/bundles/ios`,
    bundleAndroid: `${base}/bundles/android`,
    manifest: `${base}/manifest`,
    assetsIos: `${base}/assets/ios`,
    assetsAndroid: `${base}/assets/android`,
  }
  const files = Object.fromEntries(statementFileKinds.map((kind) => [kind, { size: contents[kind]!.length, sha256: createHash('sha256').update(contents[kind]!).digest('hex') }]))
  const statement = buildStatement(appId, '1.0.0', Object.fromEntries(statementFileKinds.map((kind) => [kind, files[kind]!.sha256])))
  const signature = (signer: { keyId: string; privateKey: KeyObject }) => ({ algorithm: 'ed25519', keyId: signer.keyId, statement, value: sign(null, Buffer.from(statement), signer.privateKey).toString('base64') })
  const install = {
    appId,
    appName: 'Hermes shop',
    versionId: '01HERMES000000000000000000',
    version: '1.0.0',
    releaseType: 'RELEASE',
    routeUrl: `miniapp://${appId}`,
    bundleUrl: urls.bundleIos,
    bundles: { ios: urls.bundleIos, android: urls.bundleAndroid },
    assetsUrl: { ios: urls.assetsIos, android: urls.assetsAndroid },
    manifestUrl: urls.manifest,
    files,
    hostVersionRange: null,
  }
  return {
    appId,
    trustedKey: trusted.publicKey,
    signed: { ...install, signature: signature(trusted) },
    // another key claiming the trusted key's id
    otherKey: { ...install, signature: { ...signature(other), keyId: trusted.keyId } },
    files: Object.fromEntries(statementFileKinds.map((kind) => [urls[kind], Buffer.from(contents[kind]!).toString('base64')])),
    tamperedUrl: urls.bundleAndroid,
  }
}

test('on Hermes 0.12: a signed release installs, a tampered bundle is SHA256_MISMATCH, another key’s signature SIGNATURE_INVALID, a malformed digest SERVER, two start() at once one launch, a crash loop rolls back', async () => {
  if (unavailable) {
    console.warn(`skipped: ${unavailable}`)
    return
  }
  chmodSync(hermes, 0o755)
  mkdirSync(join(harness, 'build'), { recursive: true })
  // inside the harness, so the babel output's require('@babel/runtime/…') resolves from its node_modules
  const work = mkdtempSync(join(harness, 'build', 'run-'))
  try {
    // 1. the library and the scenario as one ES module (what Metro's module graph holds)
    const graph = await Bun.build({ entrypoints: [join(harness, 'entry.ts')], format: 'esm', target: 'browser' })
    expect(graph.success).toBe(true)
    writeFileSync(join(work, 'graph.js'), await graph.outputs[0]!.text())
    // 2. babel with React Native's preset (classes, async functions → what Hermes 0.12 runs)
    const babel = Bun.spawnSync(['node', join(harness, 'compile.cjs'), join(work, 'graph.js'), join(work, 'compiled.js')], { cwd: harness, stdout: 'pipe', stderr: 'pipe' })
    expect(babel.exitCode, babel.stderr.toString()).toBe(0)
    // 3. one script with the @babel/runtime helpers inlined (an ESM entry makes the bundler run the CommonJS module)
    writeFileSync(join(work, 'run.js'), "import './compiled.js'\n")
    const bundled = await Bun.build({ entrypoints: [join(work, 'run.js')], format: 'iife', target: 'browser' })
    expect(bundled.success).toBe(true)
    const script = await bundled.outputs[0]!.text()
    expect(script).not.toMatch(/\basync function\b|\bclass \w+ extends\b/)
    const data = fixture('com.example.hermes', key(), key())
    writeFileSync(join(work, 'bundle.js'), `var FIXTURE = ${JSON.stringify(data)};\n${script}`)

    const run = Bun.spawnSync([hermes, join(work, 'bundle.js')], { stdout: 'pipe', stderr: 'pipe', timeout: 120_000 })
    const output = run.stdout.toString()
    expect(run.exitCode, run.stderr.toString() + output).toBe(0)
    const line = output.split('\n').find((text) => text.startsWith('RESULT '))
    expect(line, output).toBeDefined()
    const result = JSON.parse(line!.slice('RESULT '.length)) as { signed: string; tampered: string; otherKey: string; malformedDigest: string; sharedStart: string; crashLoop: string; engine: string }
    console.log(`hermes: ${result.signed}`)
    expect(result.signed).toMatch(/^installed 1\.0\.0 in \d+ ms$/)
    expect(result.tampered).toBe('SHA256_MISMATCH')
    expect(result.otherKey).toBe('SIGNATURE_INVALID')
    expect(result.malformedDigest).toBe('SERVER')
    expect(result.sharedStart).toBe('one answer, 1 launched | crashLoopLimit 0: INVALID_OPTION')
    expect(result.crashLoop).toBe('1.0.0, 1.0.0, rolled back 1.0.0 | installed,launched,launched,rolled_back')
    expect(result.engine).toBe('no TextEncoder')
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
}, 300_000)
