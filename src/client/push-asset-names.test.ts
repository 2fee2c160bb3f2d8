// `miniship push` zipping an asset folder: a file whose name would not reach the phone as it is on disk is
// refused before anything is sent (exit 2, INVALID_ARCHIVE), never left out of the zip in silence.
import { afterAll, expect, test } from 'bun:test'
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { jsonDocument, runCli } from '../cli/test-run'
import { tempDir } from '../test-support'
import { pushBuildFolder, standInServer } from './test-push'

const root = tempDir('miniship-push-names-')
let uploads = 0
const server = standInServer((path) => {
  if (!path.endsWith('/versions/upload')) return undefined
  uploads++
  return Response.json({ id: 'v-1', miniAppId: 'app-1', version: '1.0.0', buildNumber: 1, status: 'DRAFT', releaseType: 'RELEASE', warnings: [] }, { status: 201 })
})
afterAll(() => {
  server.stop(true)
  rmSync(root, { recursive: true, force: true })
})

function buildFolder(name: string): string {
  const dir = pushBuildFolder(root, name, '{"pages":{"index":"index"}}')
  mkdirSync(join(dir, 'ios', 'assets', 'img'), { recursive: true })
  writeFileSync(join(dir, 'ios', 'assets', 'img', '图片 😀.png'), 'fine')
  return dir
}

const push = (dir: string) => runCli(['push', dir, '--app', 'com.example.shop', '--version', '1.0.0', '--json', '--server', `http://127.0.0.1:${server.port}`], { env: { MINISHIP_TOKEN: 'msk_test' } })

test.skipIf(process.platform === 'win32')('an asset named with a backslash: exit 2 INVALID_ARCHIVE naming it, nothing sent', async () => {
  const dir = buildFolder('backslash')
  writeFileSync(join(dir, 'ios', 'assets', 'img', 'back\\slash.png'), 'left out before')
  const before = uploads
  const run = await push(dir)
  expect({ exitCode: run.exitCode, code: (jsonDocument(run).error as { code: string }).code }).toEqual({ exitCode: 2, code: 'INVALID_ARCHIVE' })
  expect(run.stderr + run.stdout).toContain('back\\slash.png has a backslash in its name')
  expect(uploads).toBe(before)
})

test.skipIf(process.platform !== 'linux')('an asset whose name is not UTF-8: exit 2 INVALID_ARCHIVE, not an ENOENT', async () => {
  const dir = buildFolder('latin1')
  writeFileSync(Buffer.concat([Buffer.from(join(dir, 'android', 'res') + '/'), Buffer.from([0x63, 0x61, 0x66, 0xe9])]), 'x')
  const before = uploads
  const run = await push(dir)
  expect({ exitCode: run.exitCode, code: (jsonDocument(run).error as { code: string }).code }).toEqual({ exitCode: 2, code: 'INVALID_ARCHIVE' })
  expect(run.stderr + run.stdout).toContain('has a name that is not UTF-8; rename it')
  expect(uploads).toBe(before)
})

test('Unicode asset names are zipped and sent', async () => {
  const before = uploads
  const run = await push(buildFolder('unicode'))
  expect(run.exitCode).toBe(0)
  expect(uploads).toBe(before + 1)
})
