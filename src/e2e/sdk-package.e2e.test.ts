// The update client as a host app gets it: `npm run build:sdk`, `npm pack`, `npm install <tarball>` in an empty
// project, and a plain node script (and a type check under node16 resolution) against the compiled binary.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { startPublisher, type Publisher } from './sdk-support'
import { tempDir } from './support'

const root = join(import.meta.dir, '..', '..')
let dir: string
let publisher: Publisher | null = null

function run(command: string[], cwd: string) {
  const child = Bun.spawnSync(command, { cwd, stdout: 'pipe', stderr: 'pipe', env: { ...process.env, npm_config_fund: 'false', npm_config_audit: 'false', npm_config_update_notifier: 'false' } })
  return { exitCode: child.exitCode, stdout: child.stdout.toString(), stderr: child.stderr.toString() }
}

beforeAll(async () => {
  dir = tempDir('miniship-sdk-package-')
  publisher = await startPublisher(dir, 'com.example.packaged')
}, 120_000)

afterAll(async () => {
  if (publisher) await publisher.server.stop()
  rmSync(dir, { recursive: true, force: true })
})

test('the packed library installs alone (no server dependency) and updates a device from the binary under plain node', async () => {
  const versionId = await publisher!.upload('1.0.0')
  await publisher!.publish(versionId)

  const out = join(dir, 'sdk')
  const build = run([process.execPath, join(root, 'scripts', 'build-sdk.ts'), out], root)
  expect(build.exitCode, build.stderr).toBe(0)
  expect(build.stdout).toContain('minified size of miniship/sdk')
  const manifest = JSON.parse(readFileSync(join(out, 'package.json'), 'utf8'))
  expect(Object.keys(manifest.dependencies).sort()).toEqual(['@noble/ed25519', '@noble/hashes'])

  const pack = run(['npm', 'pack', '--pack-destination', dir, '--json'], out)
  expect(pack.exitCode, pack.stderr).toBe(0)
  const tarball = join(dir, JSON.parse(pack.stdout)[0].filename as string)

  const app = join(dir, 'host-app')
  Bun.spawnSync(['mkdir', '-p', app])
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'host-app', version: '1.0.0', private: true, type: 'module' }))
  const install = run(['npm', 'install', '--no-audit', '--no-fund', tarball], app)
  if (install.exitCode !== 0 && /ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ETIMEDOUT|network/i.test(install.stderr)) {
    console.warn(`skipped: npm install could not reach the registry:\n${install.stderr.slice(0, 400)}`)
    return
  }
  expect(install.exitCode, install.stderr).toBe(0)
  // a host app pulls the library and @noble, nothing of the server (Elysia, drizzle, …)
  expect(readdirSync(join(app, 'node_modules')).filter((name) => !name.startsWith('.')).sort()).toEqual(['@miniship', '@noble'])

  writeFileSync(
    join(app, 'update.mjs'),
    `import { createUpdater, UpdateError } from '@miniship/sdk'
import { fileStorage, nodeCrypto } from '@miniship/sdk/node'
import { readFileSync } from 'node:fs'
const [serverUrl, storageDir, native] = process.argv.slice(2)
const updater = createUpdater({ serverUrl, appId: 'com.example.packaged', platform: 'ios', deviceId: 'node-device-1', storage: fileStorage(storageDir), ...(native ? { crypto: nodeCrypto() } : {}) })
await updater.start()
const update = await updater.check()
const current = await updater.download(update)
await updater.markReady()
const flushed = await updater.flushEvents()
const again = await updater.check()
console.log(JSON.stringify({ version: current.version, bundleStart: readFileSync(current.bundle, 'utf8').slice(0, 20), again, flushed, errorName: new UpdateError('NETWORK', 'x').name }))
`,
  )
  for (const native of ['', 'native']) {
    const node = run(['node', 'update.mjs', `${publisher!.server.baseUrl}/api`, join(app, `storage-${native || 'noble'}`), native], app)
    expect(node.exitCode, node.stderr).toBe(0)
    expect(JSON.parse(node.stdout)).toEqual({ version: '1.0.0', bundleStart: '/* ios 1.0.0 */ var ', again: null, flushed: { sent: 1, pending: 0 }, errorName: 'UpdateError' })
  }

  // the declarations work for a TypeScript host app under node16 resolution
  writeFileSync(
    join(app, 'check.ts'),
    `import { createUpdater, memoryStorage, type Update, type UpdateStorage } from '@miniship/sdk'
import { fileStorage } from '@miniship/sdk/node'
const storage: UpdateStorage = process.env.X ? fileStorage('x') : memoryStorage()
const updater = createUpdater({ serverUrl: 'https://apps.example.com', appId: 'a', platform: 'android', deviceId: 'd', storage })
export async function go(): Promise<string | undefined> {
  const update: Update | null = await updater.check()
  return update?.install.files.bundleAndroid.sha256
}
`,
  )
  const tsc = run([join(root, 'node_modules', '.bin', 'tsc'), '--noEmit', '--strict', '--module', 'node16', '--moduleResolution', 'node16', '--target', 'es2022', '--types', 'bun-types', '--typeRoots', join(root, 'node_modules'), 'check.ts'], app)
  expect(tsc.exitCode, tsc.stdout + tsc.stderr).toBe(0)
}, 240_000)
