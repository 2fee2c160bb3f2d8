// `miniship push` without --sign-key to a miniapp that requires signed versions: refused before a byte is sent, in the server's words; the CLI against the real app on a temp data directory.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { jsonDocument, runCli } from '../cli/test-run'
import { createTestContext, tempDir, type TestContext } from '../test-support'
import { createMiniApp, createTestUser, upload, uploadForm, type TestUser } from '../test-fixtures'
import { pushBuildFolder } from './test-push'

const root = tempDir('miniship-push-signature-')
let context: TestContext
let server: ReturnType<typeof Bun.serve>
let owner: TestUser
let uploadRequests = 0
const appId = 'com.example.signedonly'

beforeAll(async () => {
  context = createTestContext()
  server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch: (request) => {
      if (new URL(request.url).pathname.endsWith('/versions/upload')) uploadRequests++
      return context.app.handle(request)
    },
  })
  owner = await createTestUser(context)
  const app = await createMiniApp(context, owner.token, appId)
  expect((await context.call('PATCH', `/api/mini-apps/${app.id}`, { token: owner.token, json: { requireSignature: true } })).status).toBe(200)
})
afterAll(() => {
  server.stop(true)
  context.close()
  rmSync(root, { recursive: true, force: true })
})

test('an unsigned push is refused before the upload, with the message the server refuses it with', async () => {
  const refused = await upload(context, owner.token, appId, uploadForm(appId))
  expect([refused.status, refused.body.code]).toEqual([422, 'SIGNATURE_REQUIRED'])
  const env = { MINISHIP_TOKEN: owner.token, MINISHIP_SERVER: `http://127.0.0.1:${server.port}` }
  const run = await runCli(['push', pushBuildFolder(root, 'build'), '--app', appId, '--version', '1.0.0', '--json'], { env })
  expect(run.exitCode).toBe(1)
  expect(jsonDocument(run)).toEqual({ error: { statusCode: 422, code: 'SIGNATURE_REQUIRED', message: refused.body.message, hint: 'push with --sign-key FILE; nothing was sent' } })
  expect(run.stderr).toContain(`${refused.body.message} (SIGNATURE_REQUIRED, HTTP 422); nothing was sent`)
  expect(run.stderr).not.toContain('Uploading')
  expect(uploadRequests).toBe(0)
})
