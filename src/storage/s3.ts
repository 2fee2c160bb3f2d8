// The S3 blob store (issue 14): the same content-addressed keys, [prefix/]blobs/sha256/<ab>/<hash>, in a bucket, through Bun.S3Client.
import { createReadStream } from 'node:fs'
import { rm, stat } from 'node:fs/promises'
import type { S3File } from 'bun'
import { ConfigError, defaultS3TimeoutMs, ownerIdPattern, type S3StorageConfig } from '../config'
import type { DataDirPaths } from '../data-dir'
import { AppError } from '../http/errors'
import { createHolds, sha256Pattern, type BlobStore, type ListedBlob } from './blob-store'

/** Parts of a multipart upload: S3's minimum is 5 MiB; one in flight at a time bounds the memory an upload holds. */
const partSize = 5 * 1024 * 1024
const partsInFlight = 1
/**
 * Multipart uploads running at once in this process; more wait their turn. Each holds a part or
 * two in memory whatever the file size, so this bounds the memory of concurrent uploads: with two
 * at once 4 × 100 MB uploads peaked at 85–119 MB above idle, with one at 73–80 MB (the files are
 * already received and checked in tmp/; only the copy into the bucket waits).
 */
const multipartSlots = 1
/**
 * The slowest a request carrying a body may move and still count as making progress. Bun.S3Client
 * shows no progress within one request, so a request of `bytes` may take the timeout plus the
 * time those bytes take at this rate: a stalled bucket fails within a part's worth of it, while
 * an upload of any size at a steady pace never does (each part is bounded on its own).
 */
const slowestBytesPerSecond = 64 * 1024

/** How long one request moving `bytes` may take before the bucket counts as stalled. */
export function transferTimeoutMs(timeoutMs: number, bytes: number): number {
  return timeoutMs + Math.ceil((bytes / slowestBytesPerSecond) * 1000)
}

export interface S3BlobStore extends BlobStore {
  readonly kind: 's3'
  readonly bucket: string
  /** how long one call may go without an answer or, for a transfer, without bytes moving */
  readonly timeoutMs: number
  /** The object key of a path below the prefix (`releases/…`, `blobs/…`). */
  objectKey(relative: string): string
  /** The key of a blob. */
  blobKey(sha256: string): string
  /** A GET URL for a blob, valid `expiresIn` seconds, signed here without asking the bucket. */
  presign(sha256: string, expiresIn: number): string
  /** Writes a small or medium object (the release mirror) with the headers a CDN passes on. */
  writeObject(relative: string, body: Blob | string, headers: { contentType: string; cacheControl: string }): Promise<void>
  /** Removes an object written by `writeObject` (absent already is fine). */
  deleteObject(relative: string): Promise<void>
  /** The (appId, channel) folders under `releases/` that hold any object of the release mirror. */
  listMirroredChannels(): Promise<{ appId: string; channel: string }[]>
  /** write + stat + delete of a probe key: throws a one-line Error naming what is wrong. */
  probe(): Promise<void>
  /**
   * One listing of blobs/: the correctly named blobs (as `list`), and the strays beside them
   * (`relative` below the prefix), as doctor reports local strays. Objects of another
   * installation nested below blobs/ (a prefix `P/blobs/x` beside `P`, with its owner marker) are neither.
   */
  listObjects(): Promise<{ blobs: ListedBlob[]; strays: { relative: string; size: number }[] }>
  /** The installation id this store knows the prefix to be owned by (recorded or claimed), or null. */
  readonly owner: string | null
  /** Reads the prefix's owner marker and decides what opening it for `use` means; writes nothing. */
  ownership(use: PrefixUse): Promise<Ownership>
  /** Writes the owner marker naming `owner` (after storage.json records it); the prefix is then this store's. */
  claim(owner: string): Promise<void>
  /**
   * Throws ConfigError unless the prefix is this data directory's (as `ownership('read')` decides);
   * checked once. Listing and deleting call it, so doctor --fix and GC never touch a foreign prefix.
   */
  ensureOwned(): Promise<void>
}

// ---- the prefix's owner (one prefix, one data directory) ---------------------------------------

/** The object beside blobs/ naming the data directory whose files the prefix holds. */
const ownerMarkerName = 'miniship-owner.json'

interface OwnerMarker {
  owner: string
  createdAt: string
}

/**
 * How a command opens a prefix: `serve` uses it (and takes an empty one), `fill` (restore,
 * migrate-storage) may put its files into a prefix that already holds unmarked ones, `read`
 * (doctor, backup) never writes the marker.
 */
export type PrefixUse = 'serve' | 'fill' | 'read'

export type Ownership =
  /** the prefix is this data directory's; `owner` null only for a storage.json from before owner ids with no marker yet (read) */
  | { kind: 'owned'; owner: string | null }
  /** the prefix becomes this data directory's once storage.json records `owner` and the marker is written */
  | { kind: 'claim'; owner: string }
  | { kind: 'foreign'; message: string }

export interface OwnershipFacts {
  /** `S3StorageConfig.recorded`: what this data directory's storage.json says about the prefix */
  recorded: { owner: string | null } | undefined
  /** the marker found, or null; `'damaged'` when one is there but unreadable */
  marker: OwnerMarker | 'damaged' | null
  /** whether objects lie under blobs/ (asked only when it matters) */
  holdsBlobs: () => Promise<boolean>
  use: PrefixUse
  /** `bucket "b" prefix "p"`, for the messages */
  where: string
  markerKey: string
  newOwner: () => string
}

/**
 * The rules: a marker naming another installation is refused (whatever the command); no marker on
 * a prefix this data directory recorded is written again (serve) or adopted with a new id (a
 * storage.json from before owner ids); no marker on a prefix new to this data directory is taken
 * if it holds no blobs, or by restore and migrate-storage, which are how a prefix gets filled.
 */
export async function decideOwnership(facts: OwnershipFacts): Promise<Ownership> {
  const { recorded, marker, use, where } = facts
  const mine = recorded?.owner ?? null
  if (marker !== null) {
    if (marker !== 'damaged' && mine !== null && marker.owner === mine) return { kind: 'owned', owner: mine }
    // a storage.json that records this very place but no owner was written before owner ids (a
    // snapshot or backup of this installation from before them): the marker is its own
    if (marker !== 'damaged' && recorded !== undefined && mine === null) return { kind: 'owned', owner: marker.owner }
    const named = marker === 'damaged' ? `a damaged ${facts.markerKey}` : `installation ${marker.owner} in ${facts.markerKey}`
    const self = mine !== null ? `; this one is ${mine}` : ''
    return { kind: 'foreign', message: `S3 storage: ${where} belongs to another miniship data directory (${named}${self}); nothing was changed: give this data directory a bucket or --s3-prefix of its own` }
  }
  if (mine !== null) return use === 'read' ? { kind: 'owned', owner: mine } : { kind: 'claim', owner: mine }
  if (recorded !== undefined) return use === 'read' ? { kind: 'owned', owner: null } : { kind: 'claim', owner: facts.newOwner() }
  if (use !== 'fill' && (await facts.holdsBlobs())) {
    return {
      kind: 'foreign',
      message: `S3 storage: ${where} already holds stored files of another miniship data directory (objects under blobs/ and no ${ownerMarkerName}); nothing was changed: give this data directory a bucket or --s3-prefix of its own, or fill it with miniship restore or migrate-storage`,
    }
  }
  return use === 'read' ? { kind: 'owned', owner: null } : { kind: 'claim', owner: facts.newOwner() }
}

/** `bucket "b" prefix "p"` (or `bucket "b" (no prefix)`), naming where in a message. */
function describeLocation(config: Pick<S3StorageConfig, 'bucket' | 'prefix'>): string {
  return `bucket "${config.bucket}" ${config.prefix === '' ? '(no prefix)' : `prefix "${config.prefix}"`}`
}

/** The 503 every S3 failure on a request path becomes; the detail goes to the log, never to the client. */
export function storageUnavailable(): AppError {
  return new AppError(503, 'STORAGE_UNAVAILABLE', 'The object storage holding the stored files is not answering; try again shortly')
}

/** Bun's S3 client's message for a connection that failed: only the error's code tells how. */
const bunUnexpected = 'an unexpected error has occurred'
const connectionWords: Record<string, string> = {
  ConnectionClosed: 'the bucket closed the connection before it answered in full (ConnectionClosed)',
  ConnectionRefused: 'the bucket refused the connection (ConnectionRefused)',
}

/** What went wrong in a call to the bucket, in words (never Bun's bare "an unexpected error has occurred"). */
export function storageErrorText(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error)
  const code = (error as { code?: unknown } | null)?.code
  if (message !== bunUnexpected || typeof code !== 'string') return message
  return connectionWords[code] ?? `the call to the bucket failed (${code})`
}

function errorCode(error: unknown): string {
  return String((error as { code?: unknown }).code ?? (error as Error).name ?? 'Error')
}

/**
 * Calls given up on by `withTimeout`: Bun's S3 client takes no abort signal, so the request stays
 * open (and keeps the process alive) until the bucket answers or drops it, which a frozen one never does.
 */
let abandonedCalls = 0

/** Whether some call to the bucket was given up on and may still hold the process open (a one-shot command then exits itself). */
export function storageCallsAbandoned(): boolean {
  return abandonedCalls > 0
}

/** Rejects with a timeout error when `promise` takes longer than `ms`. */
export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      abandonedCalls++
      reject(Object.assign(new Error(`${what} took longer than ${ms} ms`), { code: 'Timeout' }))
    }, ms)
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}

export function createS3Client(config: S3StorageConfig): InstanceType<typeof Bun.S3Client> {
  return new Bun.S3Client({
    accessKeyId: config.accessKeyId,
    secretAccessKey: config.secretAccessKey,
    ...(config.sessionToken ? { sessionToken: config.sessionToken } : {}),
    bucket: config.bucket,
    region: config.region,
    ...(config.endpoint ? { endpoint: config.endpoint } : {}),
  })
}

/**
 * Streams a local file into `target` as a multipart upload, waiting for the network before reading
 * on. The writer's `write` rarely hands back a promise (it buffers whatever it is given, and a
 * disk outruns the network), so after each part's worth of bytes `flush` is awaited: measured
 * here, 4 concurrent 46 MB files cost 320 MB without it and under 100 MB with it.
 */
async function uploadFile(target: S3File, path: string, size: number, type: string, timeoutMs: number): Promise<void> {
  if (size <= partSize) {
    await withTimeout(target.write(Bun.file(path), { type }), transferTimeoutMs(timeoutMs, size), 'storing a file')
    return
  }
  await multipart.acquire()
  try {
    await uploadParts(target, path, type, timeoutMs)
  } finally {
    multipart.release()
  }
}

/** A counting semaphore: `acquire` resolves when one of `slots` is free. */
function semaphore(slots: number) {
  let free = slots
  const waiting: (() => void)[] = []
  return {
    acquire(): Promise<void> {
      if (free > 0) {
        free--
        return Promise.resolve()
      }
      return new Promise((resolve) => waiting.push(resolve))
    },
    release(): void {
      const next = waiting.shift()
      if (next) next()
      else free++
    },
  }
}

const multipart = semaphore(multipartSlots)

async function uploadParts(target: S3File, path: string, type: string, timeoutMs: number): Promise<void> {
  const writer = target.writer({ partSize, queueSize: partsInFlight, retry: 1, type })
  // each step moves at most a part or two: bounded on its own, so only a stall fails the upload
  const step = <T>(result: T | Promise<T>, what: string) => (result instanceof Promise ? withTimeout(result, transferTimeoutMs(timeoutMs, 2 * partSize), what) : result)
  try {
    let sinceFlush = 0
    for await (const chunk of createReadStream(path, { highWaterMark: 1024 * 1024 })) {
      await step(writer.write(chunk as Buffer), 'storing a part')
      sinceFlush += (chunk as Buffer).byteLength
      if (sinceFlush >= partSize) {
        await step(writer.flush(), 'storing a part')
        sinceFlush = 0
      }
    }
    await step(writer.end(), 'completing a multipart upload')
  } catch (error) {
    // ending with an error aborts the multipart upload: no object appears, and parts are dropped;
    // a stalled bucket may not answer that either, so it is waited for no longer than a call
    await withTimeout(Promise.resolve(writer.end(error as Error)), timeoutMs, 'aborting a multipart upload').catch(() => {})
    throw error
  }
}

export function createS3BlobStore(config: S3StorageConfig, paths: Pick<DataDirPaths, 'blobs' | 'tmp'>, log: (line: string) => void = () => {}): S3BlobStore {
  const client = createS3Client(config)
  const timeoutMs = config.timeoutMs ?? defaultS3TimeoutMs
  const holds = createHolds()
  const root = config.prefix === '' ? '' : `${config.prefix}/`
  const objectKey = (relative: string) => `${root}${relative}`
  const blobKey = (sha256: string) => {
    if (!sha256Pattern.test(sha256)) throw new Error('not a sha256 hex digest')
    return objectKey(`blobs/sha256/${sha256.slice(0, 2)}/${sha256}`)
  }
  const presigned = new Map<string, { url: string; signedAt: number; expiresIn: number }>()
  /** deletions in flight: a commit of the same hash waits for them before it looks */
  const deleting = new Map<string, Promise<void>>()
  let owner: string | null = config.recorded?.owner ?? null
  let owned: Promise<void> | null = null
  const markerKey = objectKey(ownerMarkerName)

  async function readMarker(): Promise<OwnerMarker | 'damaged' | null> {
    let text: string
    try {
      text = await withTimeout(client.file(markerKey).text(), timeoutMs, 'reading the owner marker')
    } catch (error) {
      if (errorCode(error) === 'NoSuchKey') return null
      throw probeFailure(config, errorCode(error))
    }
    try {
      const parsed = JSON.parse(text) as Partial<OwnerMarker>
      // an id is printed in messages: anything else (a newline, say) counts as damaged
      if (typeof parsed.owner === 'string' && ownerIdPattern.test(parsed.owner)) return { owner: parsed.owner, createdAt: String(parsed.createdAt ?? '') }
    } catch {
      // damaged, below
    }
    return 'damaged'
  }

  /** Asked once, only of a prefix new to this data directory with no marker. */
  async function holdsBlobs(): Promise<boolean> {
    // One page either way; not maxKeys 1: s3rver (the tests' S3) fails on any truncated listing.
    const page = await withTimeout(client.list({ prefix: objectKey('blobs/'), maxKeys: 1000 }), timeoutMs, 'list')
    return (page.contents ?? []).length > 0
  }

  async function ownership(use: PrefixUse): Promise<Ownership> {
    const decided = await decideOwnership({ recorded: config.recorded, marker: await readMarker(), holdsBlobs, use, where: describeLocation(config), markerKey, newOwner: () => crypto.randomUUID() })
    if (decided.kind === 'owned') {
      owner = decided.owner
      owned = Promise.resolve()
    }
    return decided
  }

  function ensureOwned(): Promise<void> {
    owned ??= ownership('read').then((decided) => {
      if (decided.kind === 'foreign') throw new ConfigError(decided.message)
    })
    // a failure is not remembered: the next call asks again
    return owned.catch((error: unknown) => {
      owned = null
      throw error
    })
  }

  /** Every object under blobs/: the correctly named blobs (sorted by hash), and the strays beside them. */
  async function listBlobObjects(): Promise<{ blobs: ListedBlob[]; strays: { relative: string; size: number }[] }> {
    await ensureOwned()
    const blobs: ListedBlob[] = []
    const strays: { relative: string; size: number }[] = []
    const root = objectKey('')
    const prefix = objectKey('blobs/')
    let continuationToken: string | undefined
    do {
      const page = await withTimeout(client.list({ prefix, maxKeys: 1000, ...(continuationToken ? { continuationToken } : {}) }), timeoutMs, 'list')
      for (const object of page.contents ?? []) {
        const match = /^sha256\/([0-9a-f]{2})\/([0-9a-f]{64})$/.exec(object.key.slice(prefix.length))
        if (match && match[2]!.startsWith(match[1]!)) blobs.push({ sha256: match[2]!, size: object.size ?? 0 })
        else strays.push({ relative: object.key.slice(root.length), size: object.size ?? 0 })
      }
      continuationToken = page.isTruncated ? page.nextContinuationToken : undefined
    } while (continuationToken)
    // another installation's prefix nested below blobs/: its marker names the folder to leave alone
    const nested = strays.filter((stray) => stray.relative.endsWith(`/${ownerMarkerName}`)).map((stray) => stray.relative.slice(0, -ownerMarkerName.length))
    const ours = strays.filter((stray) => !nested.some((folder) => stray.relative.startsWith(folder)))
    return { blobs: blobs.sort((a, b) => a.sha256.localeCompare(b.sha256)), strays: ours }
  }

  /** Every `releases/{appId}/{channel}/` folder that holds an object, each once. */
  async function listMirroredChannels(): Promise<{ appId: string; channel: string }[]> {
    await ensureOwned()
    const prefix = objectKey('releases/')
    const found = new Map<string, { appId: string; channel: string }>()
    let continuationToken: string | undefined
    do {
      const page = await withTimeout(client.list({ prefix, maxKeys: 1000, ...(continuationToken ? { continuationToken } : {}) }), timeoutMs, 'list')
      for (const object of page.contents ?? []) {
        const [appId, channel, ...rest] = object.key.slice(prefix.length).split('/')
        if (appId && channel && rest.length > 0) found.set(`${appId}/${channel}`, { appId, channel })
      }
      continuationToken = page.isTruncated ? page.nextContinuationToken : undefined
    } while (continuationToken)
    return [...found.values()]
  }

  const failed = (what: string) => (error: unknown): never => {
    log(JSON.stringify({ level: 'error', msg: `object storage: ${what} failed`, code: errorCode(error), bucket: config.bucket }))
    throw storageUnavailable()
  }

  async function size(sha256: string): Promise<number | null> {
    try {
      return (await withTimeout(client.file(blobKey(sha256)).stat(), timeoutMs, 'stat')).size
    } catch (error) {
      if (errorCode(error) === 'NoSuchKey') return null
      throw error
    }
  }

  async function put(sha256: string, path: string): Promise<void> {
    const { size: bytes } = await stat(path)
    await uploadFile(client.file(blobKey(sha256)), path, bytes, 'application/octet-stream', timeoutMs)
  }

  return {
    kind: 's3',
    bucket: config.bucket,
    timeoutMs,
    paths,
    objectKey,
    blobKey,
    async commit(file) {
      holds.hold(file.sha256)
      try {
        await deleting.get(file.sha256)
        const existing = await size(file.sha256).catch(failed('looking up a stored file'))
        if (existing === null) await put(file.sha256, file.path).catch(failed('storing an uploaded file'))
        await rm(file.path, { force: true })
        return { sha256: file.sha256, created: existing === null }
      } catch (error) {
        holds.release([file.sha256])
        throw error
      }
    },
    release: holds.release,
    async removeUnreferenced(sha256s, isReferenced) {
      await ensureOwned()
      const removed: string[] = []
      const pending: Promise<void>[] = []
      for (const sha256 of new Set(sha256s)) {
        if (holds.isHeld(sha256) || isReferenced(sha256)) continue
        // Registered before the first await: a commit of this hash from now on waits for the delete.
        const deletion = withTimeout(client.delete(blobKey(sha256)), timeoutMs, 'delete')
          .catch((error: unknown) => log(JSON.stringify({ level: 'warn', msg: 'object storage: removing an unreferenced file failed; doctor --fix removes it later', code: errorCode(error), sha256 })))
          .finally(() => deleting.delete(sha256))
        deleting.set(sha256, deletion)
        pending.push(deletion)
        removed.push(sha256)
      }
      await Promise.all(pending)
      return removed
    },
    read: (sha256) => client.file(blobKey(sha256)),
    size,
    async list() {
      return (await listBlobObjects()).blobs
    },
    listObjects: listBlobObjects,
    listMirroredChannels,
    async remove(sha256) {
      await ensureOwned()
      await withTimeout(client.delete(blobKey(sha256)), timeoutMs, 'delete')
    },
    putFile: put,
    describe: (sha256) => `s3://${config.bucket}/${blobKey(sha256)}`,
    presign(sha256, expiresIn) {
      // Signing costs about 30 µs, as much as the rest of a redirect answer: a URL is reused while
      // at least four fifths of its lifetime are left, so every URL handed out stays valid that long.
      const now = Date.now()
      const cached = presigned.get(sha256)
      if (cached && cached.expiresIn === expiresIn && now - cached.signedAt < (expiresIn * 1000) / 5) return cached.url
      if (presigned.size >= 10_000) presigned.clear()
      const url = client.presign(blobKey(sha256), { method: 'GET', expiresIn })
      presigned.set(sha256, { url, signedAt: now, expiresIn })
      return url
    },
    async deleteObject(relative) {
      await withTimeout(client.delete(objectKey(relative)), timeoutMs, `deleting ${relative}`)
    },
    async writeObject(relative, body, headers) {
      // Bun.S3Client sets Content-Type but not Cache-Control; a presigned PUT carries both headers.
      const url = client.presign(objectKey(relative), { method: 'PUT', expiresIn: 900 })
      const bytes = typeof body === 'string' ? body.length : Number.isFinite(body.size) ? body.size : partSize
      const signal = AbortSignal.timeout(transferTimeoutMs(timeoutMs, bytes))
      const response = await fetch(url, { method: 'PUT', body, headers: { 'content-type': headers.contentType, 'cache-control': headers.cacheControl }, signal }).catch((error: unknown) => {
        throw Object.assign(new Error(`PUT ${relative} failed: ${(error as Error).message}`), { code: (error as Error).name === 'TimeoutError' ? 'Timeout' : errorCode(error) })
      })
      if (!response.ok) throw Object.assign(new Error(`PUT ${relative} answered ${response.status}: ${(await response.text()).slice(0, 200)}`), { code: `HTTP${response.status}` })
    },
    async probe() {
      const key = objectKey(`tmp/probe-${Bun.randomUUIDv7()}`)
      const probe = client.file(key)
      try {
        await withTimeout(probe.write('miniship probe'), timeoutMs, 'writing a probe object')
        await withTimeout(probe.stat(), timeoutMs, 'reading it back')
        await withTimeout(probe.delete(), timeoutMs, 'deleting it')
      } catch (error) {
        throw probeFailure(config, errorCode(error))
      }
    },
    get owner() {
      return owner
    },
    ownership,
    async claim(id) {
      const where = describeLocation(config)
      const claimedMeanwhile = (how = '') =>
        new ConfigError(`S3 storage: ${where} was claimed by another miniship data directory at the same time${how}: give this data directory a bucket or --s3-prefix of its own`)
      const settle = (found: OwnerMarker | 'damaged' | null) => {
        if (found === null || found === 'damaged' || found.owner !== id) throw claimedMeanwhile(found === 'damaged' ? ` (its ${markerKey} is damaged)` : '')
        owner = id
        owned = Promise.resolve()
      }
      const unwritable = (code: string) => new Error(`S3 storage: ${where}: the owner marker ${markerKey} could not be written (${code})`)
      // Another data directory may have claimed the prefix since this one looked (at open).
      const before = await readMarker()
      if (before !== null) return settle(before)
      // A conditional write (If-None-Match: *): a store that honours it (Amazon S3, Cloudflare R2,
      // MinIO) refuses the second of two claims racing each other with 412 (409 while the first is
      // being written). Bun.S3Client sends no such header; a presigned PUT carries it.
      const body = JSON.stringify({ owner: id, createdAt: new Date().toISOString() } satisfies OwnerMarker, null, 2) + '\n'
      let response: Response
      try {
        const url = client.presign(markerKey, { method: 'PUT', expiresIn: 900 })
        const put = fetch(url, { method: 'PUT', body, headers: { 'content-type': 'application/json', 'if-none-match': '*' }, signal: AbortSignal.timeout(timeoutMs) })
        response = await withTimeout(put, timeoutMs, 'writing the owner marker')
      } catch (error) {
        throw unwritable(errorCode(error))
      }
      if (!response.ok) {
        const code = /<Code>([^<]{1,100})<\/Code>/.exec(await response.text().catch(() => ''))?.[1] ?? `HTTP ${response.status}`
        if (response.status === 412 || response.status === 409) return settle(await readMarker())
        // a store that does not take the header at all: a plain write, and the read-back below decides
        if (response.status !== 501 && code !== 'NotImplemented') throw unwritable(code)
        try {
          await withTimeout(client.write(markerKey, body, { type: 'application/json' }), timeoutMs, 'writing the owner marker')
        } catch (error) {
          throw unwritable(errorCode(error))
        }
      }
      // A store that ignores the condition (s3rver does) took the write anyway: the marker read back
      // says who won. That leaves a window of one round trip to the bucket, which it cannot close.
      // A marker read back half written (s3rver under load answers a GET while its own write of the
      // PUT it acknowledged is still landing) is read again before it counts as damaged.
      let found = await readMarker()
      for (let retry = 0; retry < 3 && found === 'damaged'; retry++) {
        await Bun.sleep(100)
        found = await readMarker()
      }
      settle(found)
    },
    ensureOwned,
  }
}

/** An S3 blob store that has passed its probe; a failing probe throws `fail(its one-line message)`. */
export async function probedS3BlobStore(config: S3StorageConfig, paths: Pick<DataDirPaths, 'blobs' | 'tmp'>, fail: (message: string, code?: string) => Error, log?: (line: string) => void): Promise<S3BlobStore> {
  const store = createS3BlobStore(config, paths, log)
  try {
    await store.probe()
  } catch (error) {
    if (error instanceof StorageUnreachableError) throw error
    throw fail((error as Error).message, error instanceof StorageRefusedError ? storageRefused : undefined)
  }
  return store
}

/**
 * The store a command opens, probed, with its prefix's ownership decided for `use`: a prefix of
 * another data directory throws ConfigError (exit 2), before anything is written or removed; a
 * bucket that cannot be reached throws StorageUnreachableError, any other probe failure
 * `fail(its one-line message)`. A `claim` is the caller's to carry out, once
 * storage.json records the owner.
 */
export async function openS3Store(
  config: S3StorageConfig,
  paths: Pick<DataDirPaths, 'blobs' | 'tmp'>,
  use: PrefixUse,
  /** makes the error of a failure; `code` is STORAGE_REFUSED for a setting the bucket refused */
  fail: (message: string, code?: string) => Error,
  log?: (line: string) => void,
): Promise<{ store: S3BlobStore; ownership: Exclude<Ownership, { kind: 'foreign' }> }> {
  // backup and doctor only read: the owner marker's GET is their probe (read-only credentials do)
  const store = use === 'read' ? createS3BlobStore(config, paths, log) : await probedS3BlobStore(config, paths, fail, log)
  let ownership: Ownership
  try {
    ownership = await store.ownership(use)
  } catch (error) {
    if (error instanceof StorageUnreachableError) throw error
    throw fail((error as Error).message, error instanceof StorageRefusedError ? storageRefused : undefined)
  }
  if (ownership.kind === 'foreign') throw new ConfigError(ownership.message)
  return { store, ownership }
}

/**
 * The bucket did not answer (refused connection, timeout, no DNS answer) or its service is down (5xx):
 * the same command may work later with nothing changed, so every command exits 1 with
 * STORAGE_UNREACHABLE, not 2 as for a setting the bucket refused (credentials, no such bucket).
 */
export class StorageUnreachableError extends Error {}

/**
 * The bucket answered and refused a setting (credentials, no such bucket, a prefix it will not
 * take): the operator must change it first, so every command exits 2 with STORAGE_REFUSED.
 */
export class StorageRefusedError extends Error {}

/** The --json code of a setting the bucket refused. */
export const storageRefused = 'STORAGE_REFUSED'

/** The bucket's network cannot reach it: the words of describeProbeFailure, and exit 1 STORAGE_UNREACHABLE (it may answer later). */
const networkCodes = new Set(['ConnectionRefused', 'ConnectionClosed', 'Timeout', 'FailedToOpenSocket', 'DNSResolveFailed'])
/** The bucket's service is down or overloaded (5xx): an outage, not a setting to change; unreachable too. */
const outageCodes = new Set(['ServiceUnavailable', 'InternalError', 'SlowDown'])

/** The error a failed probe (or owner marker read) throws: unreachable, or a refusal naming the setting. */
function probeFailure(config: S3StorageConfig, code: string): Error {
  const message = describeProbeFailure(config, code)
  return networkCodes.has(code) || outageCodes.has(code) ? new StorageUnreachableError(message) : new StorageRefusedError(message)
}

/** One line for the operator naming the setting to look at (never the secret). */
export function describeProbeFailure(config: S3StorageConfig, code: string): string {
  const where = `bucket "${config.bucket}"${config.endpoint ? ` at ${config.endpoint}` : ` in ${config.region}`}`
  switch (code) {
    case 'NoSuchBucket':
      return `S3 storage: --s3-bucket: there is no ${where}`
    case 'InvalidAccessKeyId':
    case 'SignatureDoesNotMatch':
    case 'AccessDenied':
    case 'InvalidToken':
    case 'ExpiredToken':
      return `S3 storage: the credentials in MINISHIP_S3_ACCESS_KEY_ID/MINISHIP_S3_SECRET_ACCESS_KEY (or AWS_*) were refused by ${where} (${code})`
    default:
      if (networkCodes.has(code)) return `S3 storage: --s3-endpoint: ${where} cannot be reached (${code})`
      if (outageCodes.has(code)) return `S3 storage: ${where} cannot be reached: the service is unavailable (${code})`
      return `S3 storage: ${where} could not be written and read back (${code}); check --s3-endpoint, --s3-region and the credentials`
  }
}

export function isS3BlobStore(store: BlobStore): store is S3BlobStore {
  return store.kind === 's3'
}
