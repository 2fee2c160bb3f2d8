// `miniship serve`: open the data directory, take its lock, listen, and stop cleanly on SIGTERM/SIGINT.
import { Command } from 'commander'
import type { BunRequest, Server } from 'bun'
import { configFrom, fail, runAction, withServerOptions } from './common'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { acquireLock, openDataDir, tmpLeftovers } from '../data-dir'
import { collectGarbage } from '../storage/gc'
import { createApp, uploadPathPattern } from '../app'
import { closeDatabase } from '../db/open'
import { errorResponse, toAppError } from '../http/errors'
import { prepareRequest } from '../http/prepare-request'
import { nativeDispatch, nativeInstallRoutes } from '../modules/runtime/native-routes'
import { preloadUploadParsers } from '../modules/versions/upload'
import { createLogSink, fdWriter, withRequestLog } from '../http/request-log'
import { consoleRoutes } from '../http/console-routes'
import { createSetupGate } from '../modules/setup/service'
import { firstAdminAdvice, listeningUrl, publicUrlWarning, startupDocument } from './startup-notes'
import { withJsonUsageErrors } from './json-output'
import { productVersion } from '../version'
import { ConfigError, readStorageFile, type Config } from '../config'
import { dataDirPaths, hasStoredFiles } from '../data-dir'
import { createLocalBlobStore, type BlobStore } from '../storage'
import { isS3BlobStore, openS3Store, type S3BlobStore } from '../storage/s3'
import { collectStoreGarbage } from '../storage/gc'
import { storageFileOf, writeStorageFile, writeStorageFileThen } from '../storage/storage-file'
import { removeMirror, type ReleaseMirror } from '../modules/mirror/service'
import type { Db } from '../db/open'

const shutdownGraceMs = 10_000
const jobsGraceMs = 5_000

/**
 * The paths that answer the console's page (its router reads the path: web/router.ts). Any other
 * address falls through to app.handle, where a browser's navigation outside /api/ gets the page not
 * found (http/html-page.ts) and an API client the JSON 404, as in the tests that call app.handle.
 */
const consolePagePaths = ['/', '/apps', '/apps/*', '/tokens', '/admin', '/signin', '/cli/authorize'] as const

export interface RunningServer {
  server: Server<undefined>
  /** the first-admin setup link's token while no administrator exists (null otherwise) */
  setupToken: string | null
  stop(): Promise<void>
}

export interface StartOptions {
  /** a line of the start's own clean-up, before listening (`startup: …`); by default `miniship: startup: …` on stderr */
  startupNote?: (line: string) => void
}

/** Starts the whole appliance on `config`; `stop()` drains requests, closes the database, frees the lock. */
export async function startServer(config: Config, options: StartOptions = {}): Promise<RunningServer> {
  const startupNote = options.startupNote ?? ((line: string) => process.stderr.write(`miniship: ${line}\n`))
  // S3 storage (issue 14): the bucket must take a write, a read and a delete before anything else,
  // and its prefix must be this data directory's (the owner marker) before anything is collected
  const { blobs, claim } = await openStore(config)
  const { db, paths, secret } = openDataDir(config.dataDir)
  let releaseLock: () => void
  try {
    releaseLock = acquireLock(paths)
  } catch (error) {
    db.$client.close()
    throw error
  }
  try {
    await recordStorage(config, blobs, claim)
  } catch (error) {
    db.$client.close()
    releaseLock()
    throw error
  }
  // With the lock held no upload is in flight: blobs without a row are a crash's leftovers.
  collectGarbage(paths, db.$client, (line) => startupNote(`startup: ${line}`))
  // written synchronously: what was flushed is on stdout, even when the process exits right after
  const logSink = createLogSink(fdWriter(1, process.stdout))
  // a crash loses at most the last flush interval's lines (100 ms), not what an orderly exit reaches
  process.once('exit', logSink.flush)
  const log = logSink.log
  const setup = createSetupGate(db)
  const app = createApp({ config, db, paths, secret, log, setup, blobs })
  const { default: consolePage } = await import('../http/console-page')
  const isUpload = (pathname: string) => uploadPathPattern.test(pathname)
  const observe = app.store.requestMetrics.observe
  const handle = withRequestLog<Server<undefined>>((request) => {
    const prepared = prepareRequest(request, config, isUpload)
    return prepared instanceof Promise
      ? prepared.then(
          (ready) => app.handle(ready),
          (error: unknown) => errorResponse(toAppError('UNKNOWN', error, log)),
        )
      : app.handle(prepared)
  }, logSink, { observe, lines: config.accessLog })
  const native = nativeDispatch(
    nativeInstallRoutes(
      { ...app.store.installAnswers, ...app.store.fileAnswers },
      // file answers read Range and If-None-Match, so the caller's request id costs nothing more
      // there; install info and the update check keep it only from a trusted proxy
      (handler, group) =>
        withRequestLog<Server<undefined>, BunRequest>(handler, logSink, {
          observe: app.store.requestMetrics.observerOf(group),
          keepIncomingId: group === 'version_file' || config.trustProxy,
          lines: config.accessLog,
        }),
      log,
    ),
  )
  let server: Server<undefined>
  try {
    server = Bun.serve({
      hostname: config.host,
      port: config.port,
      // A second process must not silently share the port (Elysia would pass reusePort: true).
      reusePort: false,
      development: false,
      idleTimeout: 120,
      // Bun would refuse large bodies with an empty 413; we answer the limit ourselves, as JSON.
      maxRequestBodySize: Number.MAX_SAFE_INTEGER,
      routes: {
        ...consoleRoutes(consolePage, consolePagePaths, (handler) => withRequestLog<Server<undefined>>(handler, logSink, { observe, lines: config.accessLog })),
        '/api/health': { GET: withRequestLog<Server<undefined>, BunRequest>(app.store.health, logSink, { observe, lines: config.accessLog }) },
      },
      // the runtime's hot routes are picked from the URL here, before the app (see nativeDispatch)
      fetch: (request, server) => {
        const url = request.url
        return native(request, server, url) ?? handle(request, server, url)
      },
      // What escapes a route handler outside Elysia (the native install routes, the console's files)
      // answers in the JSON error shape too, not Bun's HTML error page.
      error: (error) => errorResponse(toAppError('UNKNOWN', error, log)),
    })
  } catch (error) {
    db.$client.close()
    releaseLock()
    const code = (error as NodeJS.ErrnoException).code
    const where = `${config.host}:${config.port}`
    if (code === 'EADDRINUSE') fail(`port ${config.port} on ${config.host} is already in use`)
    if (code === 'EACCES') fail(`no permission to listen on ${where}; use a port above 1023 (a reverse proxy can serve 80/443)`)
    if (code === 'EADDRNOTAVAIL' || code === 'EINVAL' || code === 'ENOTFOUND' || code === 'EAI_NONAME') {
      fail(`cannot listen on ${where}: ${config.host} is not an address of this machine (check --host)`)
    }
    // Any other system error of listening (a resolver that times out, say) is still about the
    // address asked for: one line and exit 2 like the others, not a stack trace and exit 1.
    if (typeof code === 'string' && /^E[A-Z_]+$/.test(code)) fail(`cannot listen on ${where} (check --host and --port): ${(error as Error).message}`)
    throw error
  }
  // Handlers read the client address through Elysia's context `server`.
  app.server = server
  // a second after start: loading the multipart parser blocks the event loop for a while, and the
  // first requests (health probes, phones) come first; an upload sooner just loads it itself
  setTimeout(() => void preloadUploadParsers(), 1000).unref()
  // insight counters: flushed every few seconds, device sketches pruned now and daily
  const insightTimers = app.store.insights.start()
  // the durable queue (release mirror writes, webhook deliveries): jobs a previous process left run now
  app.store.jobs.start()
  const guardTimer = app.store.releaseGuard.start(config.insightsFlushSeconds)
  const background = isS3BlobStore(blobs) ? afterStartWithBucket(blobs, db, app.store.mirror, (line) => process.stderr.write(`miniship: startup: ${line}\n`)) : Promise.resolve()
  let stopping: Promise<void> | null = null
  return {
    server,
    get setupToken() {
      return setup.token
    },
    stop() {
      stopping ??= (async () => {
        const drained = server.stop(false)
        const timedOut = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), shutdownGraceMs).unref())
        // requests in flight and the bucket clean-up finish first
        const finished = Promise.all([drained, background])
        if ((await Promise.race([finished, timedOut])) === 'timeout') {
          // said before they go: these requests get no answer and so no log line of their own
          const cut = server.pendingRequests
          if (cut > 0) logSink.log(JSON.stringify({ level: 'warn', msg: `${cut} request(s) still in flight after ${shutdownGraceMs / 1000} s were cut off`, time: new Date().toISOString() }))
          await server.stop(true)
        }
        // then the background job in flight (a mirror write, a delivery) settles, bounded: an
        // unfinished one stays in the queue and runs again at the next start
        await app.store.jobs.stop(jobsGraceMs)
        // after the last request, before the database closes: a clean stop loses no count
        guardTimer.stop()
        insightTimers.stop()
        app.store.apiKeyUsage.stop()
        closeDatabase(db)
        // what the requests cut off were writing (a half upload) goes now, under the lock: doctor
        // would report it as interrupted work after a routine stop
        try {
          for (const name of tmpLeftovers(paths.tmp)) rmSync(join(paths.tmp, name), { recursive: true, force: true })
        } catch {
          // what cannot be removed now, the next start or doctor --fix removes; the lock goes in any case
        }
        releaseLock()
        logSink.flush()
        process.removeListener('exit', logSink.flush)
      })()
      return stopping
    },
  }
}

// ---- S3 storage at start (issue 14) ------------------------------------------------------------

/**
 * The store `serve` uses. For S3: refuses a data directory whose files are still local (they
 * would all go missing: migrate-storage moves them), probes the bucket (one line naming the
 * setting when it fails: exit 2 like every bad setting, or exit 1 STORAGE_UNREACHABLE when it does
 * not answer), and refuses a prefix that belongs to
 * another data directory (its owner marker names another installation, or it holds blobs and no
 * marker while this data directory never used it): its files would be collected as garbage.
 */
async function openStore(config: Config): Promise<{ blobs: BlobStore; claim: string | null }> {
  const paths = dataDirPaths(config.dataDir)
  if (config.storage.kind !== 's3') return { blobs: createLocalBlobStore(paths), claim: null }
  const persisted = readStorageFile(config.dataDir)
  if (persisted?.storage !== 's3' && hasStoredFiles(paths)) {
    throw new ConfigError(`--storage s3: ${config.dataDir} keeps its stored files in the data directory; copy them to the bucket first with miniship migrate-storage --to s3`)
  }
  const { store, ownership } = await openS3Store(config.storage, paths, 'serve', (message, code) => new ConfigError(message, code), (line) => process.stdout.write(line + '\n'))
  return { blobs: store, claim: ownership.kind === 'claim' ? ownership.owner : null }
}

/**
 * Under the lock: storage.json records the bucket and the owner id (so the next serve, doctor or
 * backup finds the bucket without being told), then the prefix's owner marker names it. In this
 * order, a crash between the two leaves an owner id that the next start writes to the marker.
 */
async function recordStorage(config: Config, blobs: BlobStore, claim: string | null): Promise<void> {
  if (config.storage.kind !== 's3' || !isS3BlobStore(blobs)) return
  if (claim === null) {
    // a new owner id read from the marker, a moved endpoint or a corrected region: storage.json follows
    const owner = blobs.owner
    if (JSON.stringify(storageFileOf(config.storage, owner)) !== JSON.stringify(readStorageFile(config.dataDir))) writeStorageFile(config.dataDir, config.storage, owner)
    return
  }
  // the first start: storage.json records the id, then the marker names it; a refused claim puts storage.json back as it was
  await writeStorageFileThen(config.dataDir, config.storage, claim, async () => {
    try {
      await blobs.claim(claim)
    } catch (error) {
      throw new ConfigError(`${(error as Error).message}; nothing was changed`)
    }
  })
}

/**
 * In the background once listening: unreferenced objects go, and the release mirror catches up (as
 * queued jobs); with the mirror off, what it left under releases/ goes, since nothing keeps it true.
 */
function afterStartWithBucket(blobs: S3BlobStore, db: Db, mirror: ReleaseMirror | null, report: (line: string) => void): Promise<void> {
  return collectStoreGarbage(blobs, db.$client, report)
    .catch((error: unknown) => report(`cleaning up the bucket failed: ${(error as Error).message}`))
    .then(async () => {
      if (mirror) return mirror.syncAll()
      const removed = await removeMirror(blobs)
      if (removed > 0) report(`the release mirror is off (--mirror-releases): removed the objects of ${removed} channel(s) under releases/, which nothing would keep up to date`)
    })
    .catch((error: unknown) => report(`looking for release mirror folders to remove failed: ${(error as Error).message}`))
}

export function serveCommand(): Command {
  return withJsonUsageErrors(withServerOptions(new Command('serve')))
    .description('run the API and the admin console (initialises an empty data directory first)')
    .option(
      '--json',
      'print the start-up lines (listening address, data directory, warnings, how to create the first administrator) as one JSON object on one line of stdout, before the request log\'s lines, instead of text on stderr: {"version", "listening", "port", "dataDir", "setup", "notes"}; a failure to start is {"error": {"code", "message"}}',
    )
    .addHelpText(
      'after',
      '\nExamples:\n  $ miniship serve --data-dir /var/lib/miniship --port 3001 --public-url https://apps.example.com/api\n  $ miniship serve --json | head -1    # {"version":"…","listening":"http://0.0.0.0:3001","port":3001,"dataDir":"…","setup":null,"notes":[]}',
    )
    .action((flags) =>
      runAction(async () => {
        const config = configFrom(flags)
        const json = flags.json === true
        // with --json the start's clean-up lines go into the document's notes
        const startupLines: string[] = []
        const running = await startServer(config, json ? { startupNote: (line) => startupLines.push(line) } : {})
        const port = running.server.port!
        if (json) {
          // written at once on fd 1, as the request log writes: no request has been answered yet (this
          // runs before the event loop takes one), so the log's lines come after this one
          const document = startupDocument(config, productVersion, port, running.setupToken, startupLines)
          fdWriter(1, process.stdout)(Buffer.from(`${JSON.stringify(document)}\n`))
        } else {
          process.stderr.write(`miniship ${productVersion} listening on ${listeningUrl(config.host, port)} (data: ${config.dataDir})\n`)
          const warning = publicUrlWarning(config)
          if (warning) process.stderr.write(`miniship: ${warning}\n`)
          for (const line of firstAdminAdvice(config, port, running.setupToken)) process.stderr.write(`miniship: ${line}\n`)
        }
        const shutdown = (signal: string) => {
          process.stderr.write(`miniship: ${signal} received, finishing requests in flight\n`)
          running.stop().then(
            () => process.exit(0),
            (error) => {
              process.stderr.write(`miniship: shutdown failed: ${(error as Error).message}\n`)
              process.exit(1)
            },
          )
        }
        process.once('SIGTERM', () => shutdown('SIGTERM'))
        process.once('SIGINT', () => shutdown('SIGINT'))
      }, { json: flags.json === true }),
    )
}
