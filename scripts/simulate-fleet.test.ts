// scripts/simulate-fleet.ts as a user runs it: a mistyped --app or flag says so and fails, instead of a healthy-looking run or a stack trace.
import { afterAll, expect, test } from 'bun:test'
import { join } from 'node:path'

// a server that knows no app: every update check is 404 RELEASE_NOT_FOUND, as miniship answers for an unknown appId
const server = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  fetch(request) {
    const url = new URL(request.url)
    if (url.pathname.endsWith('/update')) return Response.json({ statusCode: 404, error: 'Not Found', code: 'RELEASE_NOT_FOUND', message: 'There is no release of com.bogus to install' }, { status: 404 })
    return Response.json({ accepted: 0, rejected: 0, errors: [] })
  },
})
afterAll(() => server.stop(true))

async function simulate(args: string[]) {
  const child = Bun.spawn([process.execPath, join(import.meta.dir, 'simulate-fleet.ts'), ...args], { stdout: 'pipe', stderr: 'pipe' })
  const [stdout, stderr, exitCode] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited])
  return { stdout, stderr, exitCode }
}

test('an app the server does not know: exit 1 and a line saying so, not "100 % embedded, 0 installs"', async () => {
  const run = await simulate(['--server', `http://127.0.0.1:${server.port}`, '--app', 'com.bogus', '--devices', '10', '--rounds', '3', '--interval', '0', '--check-share', '1'])
  expect(run.exitCode).toBe(1)
  expect(run.stderr).toContain(`has no release of com.bogus on channel stable: all 10 update checks answered 404 (RELEASE_NOT_FOUND or MINI_APP_NOT_FOUND)`)
  expect(run.stdout).not.toContain('0 installs')
})

test('an unknown flag: one line and the usage, exit 2, no stack trace', async () => {
  const run = await simulate(['--app', 'com.example.shop', '--bogus'])
  expect(run.exitCode).toBe(2)
  expect(run.stderr).toBe("simulate-fleet: Unknown option '--bogus'\nUsage: bun scripts/simulate-fleet.ts --app <appId> [options]\n(--help lists the options)\n")
})
