// Test-only: a real S3-compatible server (s3rver 3.7.1) in a child process on 127.0.0.1, stopped and restarted at will.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import { ConfigError, type S3StorageConfig } from '../config'

const root = join(import.meta.dir, '..', '..')
export const testBucket = 'miniship-test'
/** s3rver's built-in account: it checks the access key id (not the V4 signature itself). */
export const testCredentials = { MINISHIP_S3_ACCESS_KEY_ID: 'S3RVER', MINISHIP_S3_SECRET_ACCESS_KEY: 'S3RVER' }

// The server ends with the test process that started it, however that one ends: a run that dies or is
// cut short (a hook timed out, a bail) left servers running for good, one per start.
const script = `
const S3rver = require('s3rver')
const [directory, port, bucket] = process.argv.slice(1)
const parent = process.ppid
setInterval(() => { if (process.ppid !== parent) process.exit(0) }, 500)
new S3rver({ address: '127.0.0.1', port: Number(port), silent: true, directory, configureBuckets: [{ name: bucket }] })
  .run()
  .then((address) => console.log('listening ' + address.port), (error) => { console.error(error.message); process.exit(1) })
`

export interface TestS3 {
  port: number
  endpoint: string
  /** s3rver's data directory: <directory>/<bucket>/<key>._S3rver_object */
  directory: string
  config(prefix?: string): S3StorageConfig
  /** the settings as environment variables for the binary */
  env(prefix?: string): Record<string, string>
  /** a plain, unsigned GET of a key (s3rver serves anonymous reads, like a public bucket) */
  publicUrl(key: string): string
  stop(): Promise<void>
  start(): Promise<void>
  /** stops it and removes its data */
  close(): Promise<void>
}

async function spawnServer(directory: string, port: number): Promise<{ child: Subprocess<'ignore', 'pipe', 'pipe'>; port: number }> {
  const child = Bun.spawn(['node', '-e', script, directory, String(port), testBucket], { cwd: root, stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
  const reader = child.stdout.getReader()
  let text = ''
  while (!/listening \d+/.test(text)) {
    const { done, value } = await reader.read()
    if (done) throw new Error(`s3rver did not start: ${await new Response(child.stderr).text()}`)
    text += new TextDecoder().decode(value)
  }
  reader.releaseLock()
  return { child, port: Number(/listening (\d+)/.exec(text)![1]) }
}

export async function startTestS3(): Promise<TestS3> {
  const directory = mkdtempSync(join(tmpdir(), 'miniship-s3-'))
  let running: Subprocess<'ignore', 'pipe', 'pipe'> | null
  const first = await spawnServer(directory, 0)
  running = first.child
  const port = first.port
  const endpoint = `http://127.0.0.1:${port}`
  const config = (prefix = ''): S3StorageConfig => ({ kind: 's3', bucket: testBucket, endpoint, region: 'us-east-1', prefix, accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER', sessionToken: null })
  const stop = async () => {
    if (!running) return
    running.kill('SIGKILL')
    await running.exited
    running = null
  }
  return {
    port,
    endpoint,
    directory,
    config,
    env: (prefix = '') => ({ ...testCredentials, MINISHIP_STORAGE: 's3', MINISHIP_S3_BUCKET: testBucket, MINISHIP_S3_ENDPOINT: endpoint, MINISHIP_S3_REGION: 'us-east-1', ...(prefix ? { MINISHIP_S3_PREFIX: prefix } : {}) }),
    publicUrl: (key) => `${endpoint}/${testBucket}/${key}`,
    stop,
    async start() {
      if (running) return
      running = (await spawnServer(directory, port)).child
    },
    async close() {
      await stop()
      rmSync(directory, { recursive: true, force: true })
    },
  }
}

/** The message of the ConfigError `promise` rejects with (the refusal of a prefix or a setting); anything else fails the test. */
export function configRefusal(promise: Promise<unknown>): Promise<string> {
  return promise.then(
    () => {
      throw new Error('not refused')
    },
    (error: unknown) => {
      if (!(error instanceof ConfigError)) throw new Error(`refused with ${String(error)}, not a ConfigError`)
      return error.message
    },
  )
}
