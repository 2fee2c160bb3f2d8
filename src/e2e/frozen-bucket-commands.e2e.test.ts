// The binary's one-shot commands against a frozen bucket (it accepts connections and never answers):
// each says what it found and exits, rather than waiting for ever on the calls the timeout gave up on.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { createServer, type Server, type Socket } from 'node:net'
import { binaryPath, cleanEnv, tempDir } from './support'
import { testBucket, testCredentials } from '../storage/test-s3'

let frozen: Server
const sockets = new Set<Socket>()
let endpoint: string
const made: string[] = []

beforeAll(async () => {
  frozen = createServer((socket) => {
    sockets.add(socket)
    socket.on('error', () => {})
    socket.on('data', () => {})
  })
  await new Promise<void>((resolve) => frozen.listen(0, '127.0.0.1', resolve))
  endpoint = `http://127.0.0.1:${(frozen.address() as { port: number }).port}`
})
afterAll(async () => {
  for (const socket of sockets) socket.destroy()
  await new Promise<void>((resolve) => frozen.close(() => resolve()))
  for (const dir of made) rmSync(dir, { recursive: true, force: true })
})

/** Runs the binary; settles when it exits or `limitMs` has passed (then it is killed and `exitCode` is null). */
async function runWithin(args: string[], limitMs: number): Promise<{ exitCode: number | null; stdout: string; stderr: string; ms: number }> {
  const started = Date.now()
  const child = Bun.spawn([await binaryPath(), ...args], {
    env: cleanEnv({ ...testCredentials, MINISHIP_STORAGE: 's3', MINISHIP_S3_BUCKET: testBucket, MINISHIP_S3_ENDPOINT: endpoint, MINISHIP_S3_TIMEOUT: '1s' }),
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const output = Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text()])
  const exited = await Promise.race([child.exited, Bun.sleep(limitMs).then(() => null)])
  if (exited === null) child.kill('SIGKILL')
  const [stdout, stderr] = await output
  return { exitCode: exited, stdout, stderr, ms: Date.now() - started }
}

test('doctor names the bucket that does not answer and exits 1, with and without --json', async () => {
  const dataDir = tempDir()
  made.push(dataDir)
  const text = await runWithin(['doctor', '--data-dir', dataDir], 20_000)
  expect({ exitCode: text.exitCode, stderr: text.stderr }).toEqual({ exitCode: 1, stderr: '' })
  expect(text.stdout).toContain(`PROBLEM: S3 storage: --s3-endpoint: bucket "${testBucket}" at ${endpoint} cannot be reached (Timeout)`)
  expect(text.ms).toBeLessThan(15_000)

  const json = await runWithin(['doctor', '--data-dir', dataDir, '--json'], 20_000)
  expect(json.exitCode).toBe(1)
  const document = JSON.parse(json.stdout) as { healthy: boolean; checks: { name: string; problems: string[] }[] }
  expect(document.healthy).toBe(false)
  expect(document.checks[0]).toMatchObject({ name: 'storage', problems: [expect.stringContaining('cannot be reached (Timeout)')] })
}, 60_000)
