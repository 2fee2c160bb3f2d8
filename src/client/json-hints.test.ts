// What the text adds after a refusal (the command that lists what exists, the scopes a command takes) is in --json's error too, as `hint`: the CLI against the real app on a temp data directory.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { jsonDocument, runCli } from '../cli/test-run'
import { createTestContext, type TestContext } from '../test-support'
import { createMiniApp, createTestUser, type TestUser } from '../test-fixtures'

let context: TestContext
let server: ReturnType<typeof Bun.serve>
let owner: TestUser
const env = (token = owner.token) => ({ MINISHIP_TOKEN: token, MINISHIP_SERVER: `http://127.0.0.1:${server.port}` })

beforeAll(async () => {
  context = createTestContext()
  server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: (request) => context.app.handle(request) })
  owner = await createTestUser(context)
  await createMiniApp(context, owner.token, 'com.example.hints')
})
afterAll(() => {
  server.stop(true)
  context.close()
})

/** The --json error document, and the text run's stderr: the hint is what the text says after the message. */
async function refusal(args: string[]) {
  const json = await runCli([...args, '--json'], { env: env() })
  const text = await runCli(args, { env: env() })
  expect(json.exitCode).toBe(1)
  const error = (jsonDocument(json) as { error: { code: string; hint?: string } }).error
  expect(error.hint).toBeString()
  expect(text.stderr.trim()).toEndWith(`; ${error.hint}`)
  return error
}

test('an unknown miniapp, version, channel or webhook: --json names where to look, as the text does', async () => {
  expect(await refusal(['status', 'com.example.nope'])).toMatchObject({ code: 'MINI_APP_NOT_FOUND', hint: 'miniship apps lists them' })
  expect(await refusal(['publish', 'com.example.hints', '9.9.9'])).toMatchObject({ code: 'VERSION_NOT_FOUND', hint: 'miniship versions ls com.example.hints lists them' })
  expect(await refusal(['channels', 'rm', 'nope', '--app', 'com.example.hints'])).toMatchObject({ code: 'CHANNEL_NOT_FOUND', hint: 'miniship channels ls --app com.example.hints lists them' })
  expect(await refusal(['webhooks', 'rm', '01a21eff-0ed2-75bb-89fa-cc465aa3154d', '--app', 'com.example.hints'])).toMatchObject({ code: 'WEBHOOK_NOT_FOUND', hint: 'miniship webhooks ls --app com.example.hints lists its webhooks' })
})
