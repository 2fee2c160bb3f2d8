// miniship/sdk: the update client a host app runs (decisions §17). Checks the server's update endpoint,
// downloads and verifies a miniapp version, switches to it atomically, rolls back a crash loop and
// reports events. Imports nothing from the server and no Node built-in: it runs on Hermes as it is.
import { isSoundPublicKey, resolveCrypto, type ResolvedCrypto, type UpdateCrypto } from './crypto'
import { fromBase64 } from './encoding'
import { failsAs, messageOf, UpdateError } from './errors'
import { normalizeVersion, satisfiesRange } from './semver'
import { parseStatement, utf8Bytes } from './statement'
import type { UpdateStorage } from './storage'

export { UpdateError, type UpdateErrorCode } from './errors'
export { memoryStorage, type MemoryStorage, type StorageWriter, type UpdateStorage } from './storage'
export type { Sha256Hasher, UpdateCrypto } from './crypto'

export type Platform = 'ios' | 'android'

/** What the library needs of a `fetch` answer: whatwg-fetch (React Native) and WHATWG fetch both fit. */
export interface FetchResponse {
  ok: boolean
  status: number
  /** null on React Native: the library then reads `arrayBuffer()` */
  body?: { getReader(): { read(): Promise<{ done: boolean; value?: Uint8Array }>; cancel?(reason?: unknown): Promise<void> } } | null
  arrayBuffer(): Promise<ArrayBuffer>
  text(): Promise<string>
}
export type FetchLike = (url: string, init?: { method?: string; headers?: Record<string, string>; body?: string; signal?: unknown }) => Promise<FetchResponse>

interface FileInfo {
  size: number
  sha256: string
}
export type FileKind = 'bundleIos' | 'bundleAndroid' | 'manifest' | 'assetsIos' | 'assetsAndroid'

/** Install info as the server answers it (decisions §6, §10, §14); fields the library does not read are kept. */
export interface InstallInfo {
  appId: string
  versionId: string
  version: string
  bundles: Record<Platform, string>
  assetsUrl: Record<Platform, string>
  manifestUrl: string
  files: Record<FileKind, FileInfo>
  /** a semver range the host app's version must satisfy; null or absent: any */
  hostVersionRange?: string | null
  /** present when the version is signed (§14) */
  signature?: { algorithm: string; keyId: string; statement: string; value: string }
  [field: string]: unknown
}

/** An update the server offers this device. */
export interface Update {
  version: string
  versionId: string
  /** the app should not let the user keep the running version (a release in between was mandatory) */
  mandatory: boolean
  install: InstallInfo
}

/** The files of the version to run, as the storage adapter's `uri()` names them. */
export interface CurrentVersion {
  versionId: string
  version: string
  channel: string
  bundle: string
  manifest: string
  assets: string
  /** true until `markReady()` confirms this version started well */
  pending: boolean
}

export interface UpdaterOptions {
  /** the API base, e.g. `https://apps.example.com/api` (a URL without a path gets `/api`) */
  serverUrl: string
  appId: string
  platform: Platform
  /** a stable id of the device (1–200 of `A-Za-z0-9._:-`): it decides the device's rollout bucket */
  deviceId: string
  /** default `stable` */
  channel?: string
  /**
   * the host app's own version: the server skips releases whose hostVersionRange it does not satisfy.
   * `1` and `1.5` are read as `1.0.0` and `1.5.0`; null or empty is no host version (as left out);
   * anything else that is not a version is refused at createUpdater
   */
  hostVersion?: string | null
  /** the miniapp version the host app ships with, sent as `currentVersion` while no update is installed (default `0.0.0`); read as hostVersion is, so `1.2` is 1.2.0 and one that is no version is refused at createUpdater */
  embeddedVersion?: string
  /** base64 Ed25519 public keys (32 bytes): when given, only updates signed by one of them are installed (an empty list: none is) */
  trustedKeys?: readonly string[]
  storage: UpdateStorage
  /** default: the global fetch */
  fetch?: FetchLike
  /** launches without `markReady()` after which a new version is rolled back: a whole number, 1 or more (default 2) */
  crashLoopLimit?: number
  /** native sha256/Ed25519; default WebCrypto where it has Ed25519, else @noble (pure JS) */
  crypto?: UpdateCrypto
  /** events kept while offline, oldest dropped first (default 500) */
  maxPendingEvents?: number
  /** milliseconds without an answer before a request is given up (default 15000); a download whole at once (React Native) gets 1 ms more per 8 bytes of the file */
  timeoutMs?: number
}

export type UpdateEventName = 'installed' | 'launched' | 'failed' | 'rolled_back'

/** What start() found and did. */
export interface StartResult {
  /** the version to run now; null: the one the host app ships with */
  current: CurrentVersion | null
  /** set when a crash loop was just rolled back */
  rolledBack?: { versionId: string; version: string }
  /** set when a version was dropped because the host app's version is outside its hostVersionRange: the one installed, or the one a crash loop would have gone back to */
  dropped?: { versionId: string; version: string; hostVersionRange: string }
}

export interface Updater {
  /** Call at every launch, before loading the miniapp: counts the launch, rolls back a crash loop, drops an update the new host app cannot run. A call while one runs shares it (one launch, the same answer). */
  start(): Promise<StartResult>
  /** Asks the server; null when there is nothing new for this device, or only a version that crash-looped here. Sends pending events first. */
  check(): Promise<Update | null>
  /** Downloads, verifies and switches to `update`; the current version is untouched when it throws. A download started after this one that switched first stays: this one then answers what current() names. */
  download(update: Update, options?: { onProgress?: (received: number, total: number) => void }): Promise<CurrentVersion>
  /** Tells the library the version the last start() answered started well: it will not be rolled back. A version downloaded since stays pending until a start() runs it. */
  markReady(): Promise<void>
  /** The version to run (after start() or download()); null: the one the host app ships with. */
  current(): CurrentVersion | null
  /** Sends the pending events; answers how many were sent and how many are still waiting. */
  flushEvents(): Promise<{ sent: number; pending: number }>
}

interface InstalledVersion {
  versionId: string
  version: string
  channel: string
  /** directory under versions/ */
  dir: string
  hostVersion: string | null
  hostVersionRange: string | null
}

interface State {
  current: InstalledVersion | null
  /** what a crash loop of `current` goes back to; null: the embedded version */
  previous: InstalledVersion | null
  pending: boolean
  launches: number
  /** versions rolled back after a crash loop: never offered again (the last 10) */
  rejected?: string[]
}

interface DeviceEvent {
  appId: string
  versionId: string
  platform: Platform
  event: UpdateEventName
  channel: string
  deviceId: string
  hostVersion?: string
  message?: string
  at: string
}

const statePath = 'state.json'
const tmpPath = statePath + '.tmp'
const eventsPath = 'events.json'
const emptyState: State = { current: null, previous: null, pending: false, launches: 0 }

/** §12: the API base includes `/api`; a bare origin gets it, a trailing slash is dropped. */
function apiBase(serverUrl: string): string {
  const trimmed = serverUrl.replace(/\/+$/, '')
  return /^[a-z][a-z0-9+.-]*:\/\/[^/]+$/i.test(trimmed) ? trimmed + '/api' : trimmed
}

/** A query string of the parameters given; the names are plain words, only the values need encoding. */
function query(params: Record<string, string | undefined>): string {
  const parts: string[] = []
  for (const name in params) if (params[name] !== undefined) parts.push(name + '=' + encodeURIComponent(params[name]!))
  return parts.join('&')
}

/** `promise`, its failure ignored: cleanup and reports that must not fail what they follow. */
const quietly = <T>(promise: Promise<T>) => promise.catch(() => {})

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value == 'object' && value !== null
const isText = (value: unknown): value is string => typeof value == 'string'

/** Which version a version is, as start() and check() answer it. */
const whichVersion = (version: { versionId: string; version: string }) => ({ versionId: version.versionId, version: version.version })

const isInstallInfo = (value: unknown): value is InstallInfo =>
  isRecord(value) && isText(value.versionId) && isText(value.version) && isRecord(value.bundles) && isRecord(value.assetsUrl) && isRecord(value.files)

/** An option's value as an error message quotes it: as JSON, at most 60 characters. */
const shown = (value: unknown) => JSON.stringify(String(value).slice(0, 60))

/** What createUpdater throws for an option it cannot use. */
const invalidOption = (message: string) => new UpdateError('INVALID_OPTION', message)

/** What JSON text says; undefined when there is no text (a missing file) or it is not JSON. */
function parseJson(text: string | null | void): unknown {
  try {
    return text == null ? undefined : JSON.parse(text)
  } catch {
    return undefined
  }
}

function readState(text: string | null): State {
  const value = parseJson(text)
  // missing or unreadable: start from what the host app ships with
  return isRecord(value) && 'current' in value ? (value as unknown as State) : emptyState
}

/** Creates the update client of one miniapp on one device; each miniapp needs a storage of its own. */
export function createUpdater(options: UpdaterOptions): Updater {
  const base = apiBase(options.serverUrl)
  const storage = options.storage
  const channel = options.channel ?? 'stable'
  const crashLoopLimit = options.crashLoopLimit ?? 2
  const maxPendingEvents = options.maxPendingEvents ?? 500
  const timeoutMs = options.timeoutMs ?? 15_000
  const fetchImpl: FetchLike = options.fetch ?? ((url, init) => (globalThis as unknown as { fetch: FetchLike }).fetch(url, init))
  const crypto: ResolvedCrypto = resolveCrypto(options.crypto)
  const trustedKeys: Uint8Array[] = []
  for (const key of options.trustedKeys ?? []) {
    const raw = fromBase64(key)
    // 32 bytes of a point of the curve, not of small order (under which anyone could sign)
    if (!raw || !isSoundPublicKey(raw)) throw invalidOption(`Not an Ed25519 public key: ${shown(key)}`)
    trustedKeys.push(raw)
  }
  // the server refuses any other deviceId with 400 INVALID_DEVICE_ID (decisions §18): say so once, here,
  // rather than have every check() fail with SERVER
  // (\w is A-Za-z0-9_)
  if (!isText(options.deviceId) || !/^(?!\.\.?$)[\w.:-]{1,200}$/.test(options.deviceId)) {
    throw invalidOption(`deviceId must be 1–200 of A-Z a-z 0-9 . _ : -, not "." or ".." (got ${shown(options.deviceId)}); base64 as base64url`)
  }
  // the server refuses a version of fewer than three parts: "1.5" (common on iOS) is sent as 1.5.0
  // null or empty (expo's nativeApplicationVersion where there is none): none, as when left out
  const versionOption = (name: string, value: string | null | undefined) => {
    const given = value == null ? '' : String(value)
    const version = normalizeVersion(given) ?? undefined
    if (!version && given.trim()) throw invalidOption(`${name} must be a version like 2.3.0 (got ${shown(given)})`)
    return version
  }
  const hostVersion = versionOption('hostVersion', options.hostVersion)
  // else every check() would fail with SERVER (400 VALIDATION_ERROR)
  const embeddedVersion = versionOption('embeddedVersion', options.embeddedVersion)
  // 0 or less would roll a new version back at its first launch, 1.5 would mean 2: neither is what was meant
  if (!Number.isInteger(crashLoopLimit) || crashLoopLimit < 1) {
    throw invalidOption(`crashLoopLimit must be a whole number of launches, 1 or more (got ${shown(crashLoopLimit)})`)
  }

  let state: State = emptyState
  let loaded = false
  /** pending events, each with a local sequence number so a flush removes exactly what it sent */
  let events: Array<{ seq: number; event: DeviceEvent }> | undefined
  let nextSeq = 1
  let nonce = 0
  /** the order (nonce) of the download that switched last: one started before it does not switch back to what it replaced */
  let switched = -1
  /** the version the last start() answered (null: embedded); undefined before any start() */
  let started: InstalledVersion | null | undefined
  /** the start() running or waiting to run, while it does */
  let starting: Promise<StartResult> | null = null
  /** version directories being downloaded into: not strays */
  const downloading: string[] = []
  /** the downloads running, by versionId: a download() of an update already downloading joins it (two check().then(download) at once) */
  const running: Record<string, Promise<CurrentVersion>> = {}

  // one storage mutation at a time: state and events files are read-modify-written
  let queue: Promise<unknown> = Promise.resolve()
  function exclusive<T>(work: () => Promise<T>): Promise<T> {
    const run = queue.then(work, work)
    queue = quietly(run)
    return run
  }

  async function load(): Promise<void> {
    if (loaded) return
    await failsAs('STORAGE', 'reading state', async () => {
      const text = await storage.readText(statePath)
      // an adapter whose rename is "remove, then move" may have died in between: the temp file is whole then
      // (it is renamed only once written), so it is the state
      const recovered = text === null ? await storage.readText(tmpPath) : null
      state = readState(text ?? recovered)
      if (recovered !== null && state !== emptyState) await storage.rename(tmpPath, statePath)
    })
    loaded = true
  }

  /** A whole JSON file in a temp file (`path`.tmp), then one rename over the old one. */
  async function writeJson(path: string, value: unknown): Promise<void> {
    await storage.writeText(path + '.tmp', JSON.stringify(value))
    await storage.rename(path + '.tmp', path)
  }

  /** The switch: the whole state written by writeJson. */
  async function saveState(next: State): Promise<void> {
    await failsAs('STORAGE', 'saving state', () => writeJson(statePath, next))
    state = next
  }

  function view(installed: InstalledVersion | null, pending: boolean): CurrentVersion | null {
    if (!installed) return null
    const path = (name: string) => storage.uri(`versions/${installed.dir}/${name}`)
    return {
      ...whichVersion(installed),
      channel: installed.channel,
      bundle: path('bundle'),
      manifest: path('manifest'),
      assets: path('assets'),
      pending,
    }
  }

  /** What current() answers: the version to run after start() or download() */
  const now = () => view(state.current, state.pending)

  async function loadEvents(): Promise<Array<{ seq: number; event: DeviceEvent }>> {
    if (events) return events
    let kept: Array<{ seq: number; event: DeviceEvent }> = []
    try {
      const parsed = parseJson(await storage.readText(eventsPath))
      if (Array.isArray(parsed)) kept = parsed.filter((entry): entry is { seq: number; event: DeviceEvent } => isRecord(entry) && typeof entry.seq == 'number' && isRecord(entry.event))
    } catch {
      // events the storage cannot read are dropped: they are reports, not state
    }
    for (const entry of kept) if (entry.seq >= nextSeq) nextSeq = entry.seq + 1
    events = kept
    return kept
  }

  /** Events are reports: a storage failure keeps them in memory (written with the next event) and never fails the update. */
  const saveEvents = () => quietly(writeJson(eventsPath, events))

  async function record(name: UpdateEventName, installed: { versionId: string; channel?: string }, message?: string): Promise<void> {
    const list = await loadEvents()
    const event: DeviceEvent = { appId: options.appId, versionId: installed.versionId, platform: options.platform, event: name, channel: installed.channel ?? channel, deviceId: options.deviceId, at: new Date().toISOString() }
    if (hostVersion) event.hostVersion = hostVersion
    if (message !== undefined) event.message = message.slice(0, 500)
    list.push({ seq: nextSeq++, event })
    if (list.length > maxPendingEvents) list.splice(0, list.length - maxPendingEvents)
    await saveEvents()
  }

  /** Aborts a request when nothing arrives for timeoutMs (+ `more` ms): `touch()` on progress, `done()` at the end. */
  function watchdog() {
    const Controller = (globalThis as { AbortController?: new () => { signal: unknown; abort(reason?: unknown): void } }).AbortController
    const controller = Controller ? new Controller() : null
    let timer: ReturnType<typeof setTimeout> | undefined
    // Hermes refuses clearTimeout(undefined)
    const done = () => timer !== undefined && clearTimeout(timer)
    const touch = (more = 0) => {
      done()
      const ms = timeoutMs + more
      // the reason is what WHATWG fetch rejects with: the error then says why
      if (controller) timer = setTimeout(() => controller.abort(new Error(`no answer in ${ms} ms`)), ms)
    }
    touch()
    return { signal: controller && controller.signal, touch, done }
  }

  function request(url: string, dog: ReturnType<typeof watchdog>, init: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<FetchResponse> {
    return failsAs('NETWORK', url.split('?')[0]!, () => fetchImpl(url, dog.signal ? { ...init, signal: dog.signal } : init))
  }

  /** The answer's JSON, undefined when it is not JSON; a body cut short is NETWORK, saying what it answered. */
  async function readJson(response: FetchResponse, what: string): Promise<unknown> {
    return parseJson(await failsAs('NETWORK', what, () => response.text()))
  }

  /** SERVER, with the server's own code and message when it sent them (§1's error body) */
  function serverError(status: number, body: unknown, what: string): UpdateError {
    const detail = isRecord(body) ? `${body.code ?? ''} ${body.message ?? ''}`.trim() : ''
    return new UpdateError('SERVER', `${what} answered ${status}${detail ? `: ${detail}` : ''}`, status)
  }

  /** Removes version directories the state does not name (leftovers of a download a crash cut short), except the one running. */
  async function removeStrays(): Promise<void> {
    const keep = [state.current?.dir, state.previous?.dir, started?.dir, ...downloading]
    let names: string[]
    try {
      names = await storage.list('versions')
    } catch {
      return
    }
    for (const name of names) if (keep.indexOf(name) < 0) await quietly(storage.remove(`versions/${name}`))
    await quietly(storage.remove(tmpPath))
  }

  /** The flush running, while it does: a flush asked for meanwhile (check(), flushEvents()) joins it rather than send the same events again. */
  let flushing: Promise<{ sent: number; pending: number }> | null = null
  const flushAll = () => flushing || (flushing = sendAll().finally(() => (flushing = null)))

  /** Sends the pending events, 100 a request, until none are left. */
  async function sendAll(): Promise<{ sent: number; pending: number }> {
    let sent = 0
    for (;;) {
      // the server takes at most 64 KB a request (413 over it): long failure messages make smaller batches
      let bytes = 0
      const batch = await exclusive(async () => (await loadEvents()).filter((entry) => (bytes += utf8Bytes(JSON.stringify(entry.event)).length + 1) < 6e4).slice(0, 100))
      if (!batch.length) return { sent, pending: 0 }
      const dog = watchdog()
      let response, answer
      try {
        response = await request(`${base}/mini-apps/access/events`, dog, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ events: batch.map((entry) => entry.event) }),
        })
        answer = parseJson(await quietly(response.text()))
      } finally {
        dog.done()
      }
      // delivered: a 2xx with the server's JSON answer (a captive portal's 200 page is no delivery).
      // A 4xx other than 429 will never be accepted: drop it rather than block every later event.
      const status = response.status
      if (!(response.ok && isRecord(answer)) && (status < 400 || status >= 500 || status === 429)) throw serverError(status, answer, 'Events')
      const sentSeqs = batch.map((entry) => entry.seq)
      await exclusive(async () => {
        events = (await loadEvents()).filter((entry) => sentSeqs.indexOf(entry.seq) < 0)
        await saveEvents()
      })
      // the next round answers once none are left
      sent += batch.length
    }
  }

  async function verifySignature(update: Update, kinds: FileKind[]): Promise<void> {
    const install = update.install
    const signature = install.signature
    const invalid = (why: string) => new UpdateError('SIGNATURE_INVALID', `${update.version}: ${why}`)
    // given, even empty, keys are required: an empty list (a setting left unset) installs nothing unsigned
    if (!options.trustedKeys) return
    if (!signature) throw new UpdateError('SIGNATURE_REQUIRED', `${update.version} is not signed; trustedKeys require a signature`)
    if (signature.algorithm !== 'ed25519' || !isText(signature.statement) || !isText(signature.value)) {
      throw invalid('unreadable signature')
    }
    const value = fromBase64(signature.value)
    const message = utf8Bytes(signature.statement)
    let valid = false
    if (value && value.length == 64) {
      for (const key of trustedKeys) {
        if (await crypto.verifyEd25519(key, message, value)) {
          valid = true
          break
        }
      }
    }
    if (!valid) throw invalid(`the signature (key ${signature.keyId}) is valid under no trusted key`)
    const statement = parseStatement(signature.statement)
    if (!statement || statement.appId !== options.appId || statement.version !== install.version) {
      throw invalid('signed for another app/version')
    }
    for (const kind of kinds) {
      if (statement.files[kind] != install.files[kind]!.sha256.toLowerCase()) throw invalid(`${kind} not signed`)
    }
  }

  /** One file from `url` into `path`, hashed and counted as it arrives; throws on any difference. */
  async function fetchFile(url: string, path: string, expected: FileInfo, kind: FileKind, progress: (bytes: number) => void): Promise<void> {
    const dog = watchdog()
    const what = `Downloading the ${kind}`
    // the storage adapter's failures are STORAGE, the network's NETWORK
    const disk = <T>(work: () => Promise<T>) => failsAs('STORAGE', `writing the ${kind}`, work)
    const cut = <T>(work: () => Promise<T>) => failsAs('NETWORK', what, work)
    try {
      const response = await request(url, dog)
      if (!response.ok) throw serverError(response.status, await readJson(response, what), what)
      const hasher = crypto.sha256()
      let received = 0
      const writer = await disk(() => storage.openWrite(path))
      // closed on every path: a refused or cut download must not leave its file open (fileStorage's .part)
      let open = true
      const close = async () => {
        open = false
        await writer.close()
      }
      try {
        const take = async (chunk: Uint8Array) => {
          received += chunk.length
          if (received > expected.size) throw new UpdateError('SIZE_MISMATCH', `The ${kind} exceeds ${expected.size} bytes`)
          hasher.update(chunk)
          await disk(() => writer.write(chunk))
          progress(chunk.length)
          dog.touch()
        }
        const body = response.body
        if (body && typeof body.getReader == 'function') {
          const reader = body.getReader()
          try {
            for (;;) {
              const step = await cut(() => reader.read())
              if (step.done) break
              if (step.value && step.value.length) await take(step.value)
            }
          } catch (error) {
            if (reader.cancel) quietly(reader.cancel())
            throw error
          }
        } else {
          // React Native's fetch has no streaming body: one buffer, hashed and written once, so no
          // progress to watch. Android's networking has no read timeout of its own: a deadline that grows
          // with the file (timeoutMs, and 1 ms per 8 bytes: 8 KB/s, 11 minutes for 5 MB) ends a stalled
          // download without failing large bundles on slow links
          dog.touch(expected.size / 8 || 0)
          await take(new Uint8Array(await cut(() => response.arrayBuffer())))
        }
        await disk(close)
      } finally {
        // the error that ended the download is the one reported, not a failing close's
        if (open) await quietly(close())
      }
      if (received !== expected.size) throw new UpdateError('SIZE_MISMATCH', `The ${kind} has ${received} bytes, not ${expected.size}`)
      const digest = await hasher.digestHex()
      if (digest != expected.sha256.toLowerCase()) throw new UpdateError('SHA256_MISMATCH', `The ${kind} has sha256 ${digest}, not ${expected.sha256}`)
    } finally {
      dog.done()
    }
  }

  async function download(update: Update, downloadOptions: { onProgress?: (received: number, total: number) => void } = {}): Promise<CurrentVersion> {
    await exclusive(load)
    const install = update.install
    const platform = options.platform
    const suffix = platform == 'ios' ? 'Ios' : 'Android'
    const plan: Array<{ kind: FileKind; url: string; name: string }> = [
      { kind: `bundle${suffix}`, url: install.bundles[platform], name: 'bundle' },
      { kind: 'manifest', url: install.manifestUrl, name: 'manifest' },
      { kind: `assets${suffix}`, url: install.assetsUrl[platform], name: 'assets' },
    ]
    const order = nonce++
    const dir = `${update.versionId.replace(/[^A-Za-z0-9._-]/g, '_')}.${Date.now().toString(36)}${order.toString(36)}`
    downloading.push(dir)
    const done = () => void downloading.splice(downloading.indexOf(dir), 1)
    // a refused download leaves the current version as it was, and is reported (one the device could not
    // fetch or keep is not)
    const failed = async (error: unknown, saving?: boolean): Promise<never> => {
      const wrapped = error instanceof UpdateError ? error : new UpdateError('STORAGE', messageOf(error))
      const code = wrapped.code
      done()
      // a failed save may have taken effect after all (a rename that died half way): the next start() decides
      if (!saving) await quietly(storage.remove(`versions/${dir}`))
      // `failed` says the release failed here (the release guard pauses on it): a network that dropped did
      // not, nor a server or CDN that answered 5xx or 429 (busy, down: the next check tries again), nor a
      // disk that is full or will not take the files (STORAGE from the storage adapter: a file's bytes,
      // its move, the switch). Anything else thrown (the app's crypto or onProgress, a bug) is STORAGE
      // to the app, as before, and still reported: a verifier that throws on a forged signature must show
      const status = wrapped.status!
      if (wrapped != error || (code != 'NETWORK' && code != 'STORAGE' && !(status > 499 || status == 429))) await quietly(record('failed', update, `${code}: ${wrapped.message}`))
      throw wrapped
    }
    try {
      for (const step of plan) {
        const file = install.files[step.kind]
        if (!file || !isText(step.url)) throw new UpdateError('SERVER', `Install info lacks the ${step.kind}`)
        // the server's mistake, said before anything is downloaded: no file could match it
        if (!isText(file.sha256) || !/^[0-9a-f]{64}$/i.test(file.sha256)) throw new UpdateError('SERVER', `Install info has a malformed sha256 for the ${step.kind}: ${shown(file.sha256)}`)
      }
      await verifySignature(update, plan.map((step) => step.kind))
      const total = plan.reduce((sum, step) => sum + install.files[step.kind].size, 0)
      let received = 0
      const progress = (bytes: number) => {
        received += bytes
        if (downloadOptions.onProgress) downloadOptions.onProgress(received, total)
      }
      for (const step of plan) {
        const path = `versions/${dir}/${step.name}`
        await fetchFile(step.url, path + '.part', install.files[step.kind], step.kind, progress)
        await failsAs('STORAGE', `renaming the ${step.kind}`, () => storage.rename(path + '.part', path))
      }
    } catch (error) {
      return exclusive(() => failed(error))
    }
    const range = install.hostVersionRange
    const installed: InstalledVersion = {
      versionId: update.versionId,
      version: install.version,
      channel,
      dir,
      hostVersion: hostVersion ?? null,
      // '' is any host, as null
      hostVersionRange: (isText(range) && range) || null,
    }
    return exclusive(async () => {
      // a download started after this one switched already: the server's later answer (a newer version, or the
      // release a rollback went back to) stays, and this one, never installed, answers what the device runs next
      // (its directory goes with the next start()'s strays)
      if (order < switched) return done(), now()!
      // a crash loop goes back to the last version that started well, not to one never confirmed
      const next: State = { current: installed, previous: state.pending ? state.previous : state.current, pending: true, launches: 0, rejected: state.rejected }
      try {
        await saveState(next)
      } catch (error) {
        return failed(error, true)
      }
      done()
      switched = order
      await record('installed', installed)
      await removeStrays()
      return view(installed, true)!
    })
  }

  return {
    // a start() called while one runs shares it: one launch, counted once, one answer
    start: () =>
      starting ||
      (starting = exclusive(async () => {
        try {
          loaded = false
          await load()
          await removeStrays()
          const result: StartResult = { current: null }
          let next = state
          const current = state.current
          // §17: an update installed for another host app must never run on this one, nor be rolled back to
          const outside = (installed: InstalledVersion | null) => {
            const range = installed && installed.hostVersionRange
            if (range && hostVersion && !satisfiesRange(hostVersion, range)) {
              result.dropped = { ...whichVersion(installed!), hostVersionRange: range }
              return true
            }
            return false
          }
          if (outside(current)) {
            next = { ...emptyState, rejected: state.rejected }
          } else if (current && state.pending && state.launches >= crashLoopLimit) {
            result.rolledBack = whichVersion(current)
            const back = outside(state.previous) ? null : state.previous
            next = { ...emptyState, current: back, rejected: (state.rejected ?? []).concat(current.versionId).slice(-10) }
          } else if (current && state.pending) {
            next = { ...state, launches: state.launches + 1 }
          }
          started = next.current
          if (next !== state) await saveState(next)
          if (result.rolledBack) {
            const dropped = result.dropped ? ` (${result.dropped.version} is not for host ${hostVersion}: ${result.dropped.hostVersionRange})` : ''
            await record('rolled_back', current!, `no markReady() in ${crashLoopLimit} launches; back to ${next.current?.version ?? 'embedded'}${dropped}`)
          }
          if (next.current) await record('launched', next.current)
          if (result.dropped || result.rolledBack) await removeStrays()
          result.current = view(next.current, next.pending)
          return result
        } finally {
          // before the callers resume: a start() after this one has settled is a launch of its own
          starting = null
        }
      })),

    async check() {
      await exclusive(load)
      await quietly(flushAll())
      const url = `${base}/mini-apps/access/apps/${encodeURIComponent(options.appId)}/update?${query({
        platform: options.platform,
        currentVersion: state.current?.version ?? embeddedVersion ?? '0.0.0',
        channel,
        deviceId: options.deviceId,
        hostVersion,
      })}`
      const dog = watchdog()
      let response, body
      try {
        response = await request(url, dog)
        body = await readJson(response, 'The update check')
      } finally {
        dog.done()
      }
      // nothing published on the channel, or nothing this host version can run: no update
      if (response.status == 404 && isRecord(body) && /^(RELEASE_NOT_FOUND|NO_COMPATIBLE_RELEASE)$/.test(body.code as string)) return null
      if (!response.ok || !isRecord(body)) throw serverError(response.status, body, 'The update check')
      const install = body.install
      if (body.updateAvailable !== true) return null
      if (!isInstallInfo(install)) throw new UpdateError('SERVER', 'Unusable install info')
      // a version that crash-looped here is not tried again
      if ((state.rejected ?? []).indexOf(install.versionId) >= 0) return null
      return { ...whichVersion(install), mandatory: body.mandatory === true, install }
    },

    download: (update, downloadOptions) => {
      // prefixed: a versionId such as "constructor" or "__proto__" is no download running
      const id = '#' + update?.versionId
      return running[id] || (running[id] = download(update, downloadOptions).finally(() => delete running[id]))
    },

    markReady: () =>
      exclusive(async () => {
        await load()
        // the running version started well, not one downloaded since start() (check().then(download) in the
        // background): that one stays pending, and a crash loop of it goes back to the running one
        if (started !== undefined && state.current?.dir !== started?.dir) {
          if (started) await saveState({ ...state, previous: started })
        } else if (state.pending) {
          await saveState({ ...state, previous: null, pending: false, launches: 0 })
        }
        await removeStrays()
      }),

    current: now,

    flushEvents: flushAll,
  }
}
