// The binary's one-shot commands against a frozen bucket (it accepts connections and never answers)
// or one that stops sending mid-body: each says what happened and exits, rather than waiting for ever
// on the calls the timeout gave up on or blaming "an unexpected error".
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { existsSync, readdirSync, rmSync } from 'node:fs'
import { createServer, type Server, type Socket } from 'node:net'
import { join } from 'node:path'
import { binaryPath, callApi, cleanEnv, setUpFirstAdmin, startBinary, tempDir } from './support'
import { uploadForm } from './console-fixture'
import { startTestS3, testBucket, testCredentials } from '../storage/test-s3'
import { startStallProxy, type StallProxy } from '../storage/test-stall'

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
async function runWithin(args: string[], limitMs: number, bucket = endpoint): Promise<{ exitCode: number | null; stdout: string; stderr: string; ms: number }> {
  const started = Date.now()
  const child = Bun.spawn([await binaryPath(), ...args], {
    env: cleanEnv({ ...testCredentials, MINISHIP_STORAGE: 's3', MINISHIP_S3_BUCKET: testBucket, MINISHIP_S3_ENDPOINT: bucket, MINISHIP_S3_TIMEOUT: '1s' }),
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

/** Runs the binary on `endpoint` with a 30 s timeout and closes the proxy in front of the bucket 1.5 s in, while a body is stalled part way. */
async function runThenDrop(args: string[], proxy: StallProxy): Promise<{ exitCode: number | null; stdout: string; stderr: string }> {
  const child = Bun.spawn([await binaryPath(), ...args], {
    env: cleanEnv({ ...testCredentials, MINISHIP_STORAGE: 's3', MINISHIP_S3_BUCKET: testBucket, MINISHIP_S3_ENDPOINT: proxy.endpoint, MINISHIP_S3_TIMEOUT: '30s' }),
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const output = Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text()])
  await Bun.sleep(1500)
  await proxy.close()
  const exitCode = await Promise.race([child.exited, Bun.sleep(20_000).then(() => null)])
  if (exitCode === null) child.kill('SIGKILL')
  const [stdout, stderr] = await output
  return { exitCode, stdout, stderr }
}

test('a bucket that stops sending a stored file mid-body, or drops the connection there: backup and doctor say so, backup names the file, writes no archive and leaves nothing in tmp/', async () => {
  const s3 = await startTestS3()
  const dir = tempDir()
  made.push(dir)
  const dataDir = join(dir, 'data')
  let proxy = await startStallProxy(s3.port, 1024)
  try {
    const server = await startBinary({ dataDir, env: { ...s3.env(), MINISHIP_S3_ENDPOINT: proxy.endpoint } })
    try {
      await setUpFirstAdmin(server, { email: 'admin@example.test', password: 'admin-password' })
      const token = (await callApi(server.baseUrl, 'POST', '/api/auth/login', { json: { email: 'admin@example.test', password: 'admin-password' } })).body.accessToken as string
      expect((await callApi(server.baseUrl, 'POST', '/api/mini-apps', { token, json: { appId: 'com.example.shop', name: 'Shop' } })).status).toBe(201)
      // a bundle longer than the 1 KB the stalling proxy lets through
      const form = uploadForm('com.example.shop', '1.0.0', 'first')
      form.set('bundleIos', new Blob(['var a = 1;'.repeat(10_000)]), 'main.ios.jsbundle')
      expect((await callApi(server.baseUrl, 'POST', '/api/mini-apps/by-app-id/com.example.shop/versions/upload', { token, body: form })).status).toBe(201)
    } finally {
      await server.stop()
    }
    const out = join(dir, 'backup.tar.gz')
    const expectNothingLeft = () => {
      expect(existsSync(out)).toBe(false)
      expect(readdirSync(join(dataDir, 'tmp'))).toEqual([])
    }
    // closed mid-body, or (when the client retried first) refused: never Bun's bare "an unexpected error has occurred"
    const dropped = /the bucket (closed the connection before it answered in full \(ConnectionClosed\)|refused the connection \(ConnectionRefused\))/

    // stalled: the idle timeout (1 s here) ends it
    proxy.mode = 'stall-body'
    const stalled = await runWithin(['backup', '--data-dir', dataDir, '--out', out], 30_000, proxy.endpoint)
    expect(stalled.exitCode).toBe(1)
    expect(stalled.stderr).toMatch(/^miniship: backup failed: downloading stored file .+ from the bucket: no bytes from the object storage for 1000 ms; nothing was written, run the backup again once the bucket answers\n$/)
    expect(stalled.ms).toBeLessThan(20_000)
    expectNothingLeft()

    // dropped: the connection closes part way through a file, well within the timeout
    const backup = await runThenDrop(['backup', '--data-dir', dataDir, '--out', out], proxy)
    expect(backup.exitCode).toBe(1)
    expect(backup.stderr).toMatch(new RegExp(`^miniship: backup failed: downloading stored file .+ from the bucket: ${dropped.source}; nothing was written`))
    expectNothingLeft()

    proxy = await startStallProxy(s3.port, 1024)
    proxy.mode = 'stall-body'
    const doctor = await runThenDrop(['doctor', '--data-dir', dataDir], proxy)
    expect(doctor.exitCode).toBe(1)
    expect(doctor.stdout).toMatch(new RegExp(`PROBLEM: stored files: could not be checked: ${dropped.source}`))
    expect(doctor.stdout).not.toContain('unexpected error')
    proxy = await startStallProxy(s3.port)
  } finally {
    await proxy.close()
    await s3.close()
  }
}, 90_000)
