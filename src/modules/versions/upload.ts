// Receives a multipart upload without holding it in memory: busboy → one temp file per part, hashed while streaming.
import type BusboyModule from 'busboy'
import type { ReadableStream as NodeWebReadableStream } from 'node:stream/web'
import { AppError, storageError } from '../../http/errors'
import { removeTemp, writeTemp, type TempFile } from '../../storage'
import type { DataDirPaths } from '../../data-dir'

export const fileFields = ['bundleIos', 'bundleAndroid', 'manifest', 'assetsIos', 'assetsAndroid'] as const
export type FileField = (typeof fileFields)[number]

export interface ReceivedUpload {
  fields: Record<string, string>
  files: Partial<Record<FileField, TempFile>>
}

const isFileField = (name: string): name is FileField => (fileFields as readonly string[]).includes(name)

function tooLarge(limitBytes: number): AppError {
  const limit = limitBytes >= 1024 * 1024 ? `${Math.floor(limitBytes / 1024 / 1024)} MB` : `${Math.floor(limitBytes / 1024)} KB`
  return new AppError(413, 'PAYLOAD_TOO_LARGE', `The upload is larger than the limit of ${limit}; an operator raises it with --upload-limit-mb (env MINISHIP_UPLOAD_LIMIT_MB)`)
}

/**
 * Loads the multipart parser and the assets archive reader ahead of the first upload. `serve`
 * calls it just after it starts listening: off the start-up path, but before an upload would pay for it.
 */
export function preloadUploadParsers(): Promise<unknown> {
  return Promise.all([import('busboy'), import('node:stream'), import('./archive')])
}

/** Every temp file of an upload; called whatever happened, so nothing stays in tmp/. */
export async function discardUpload(upload: Pick<ReceivedUpload, 'files'>): Promise<void> {
  await Promise.all(Object.values(upload.files).map((file) => removeTemp(file)))
}

/** The text fields an upload is read for (service.ts; the OpenAPI document names them from here, model.ts); each may come once. */
export const textFields = ['version', 'changelog', 'releaseType', 'channel', 'signatureKeyId', 'signature'] as const
export type TextField = (typeof textFields)[number]
const readFields = new Set<string>(textFields)

/**
 * Streams the body of a multipart upload into tmp/: each known file part to its own temp file
 * (with backpressure from the disk back to the socket), text fields into memory (small, limited).
 * The body is counted as it streams, so a chunked body over `limitBytes` is refused with 413 even
 * when no Content-Length announced it. On any failure (limit, malformed body, client gone) it
 * waits for every file write to settle, removes the temp files and throws.
 */
export async function receiveUpload(request: Request, paths: Pick<DataDirPaths, 'tmp'>, limitBytes: number): Promise<ReceivedUpload> {
  const contentType = request.headers.get('content-type') ?? ''
  if (!/^multipart\/form-data/i.test(contentType)) {
    throw new AppError(415, 'UNSUPPORTED_MEDIA_TYPE', 'An upload must be sent as multipart/form-data')
  }
  if (!request.body) throw new AppError(400, 'MISSING_FILE', 'The upload has no body; send the version and the five files as multipart/form-data', [{ field: 'body', message: 'is required' }])

  // loaded on the first upload rather than at start-up (the binary starts faster without them; node:stream
  // is Bun's own JavaScript and took a few ms to load, issue 30)
  const [{ default: Busboy }, { Readable, pipeline }] = await Promise.all([import('busboy') as Promise<{ default: typeof BusboyModule }>, import('node:stream')])
  let busboy: BusboyModule.Busboy
  try {
    busboy = Busboy({
      headers: { 'content-type': contentType },
      limits: { fields: 50, fieldSize: 64 * 1024, files: 20, parts: 70, headerPairs: 100 },
    })
  } catch (error) {
    throw new AppError(400, 'MALFORMED_UPLOAD', `The multipart body cannot be read: ${(error as Error).message}`)
  }

  let received = 0
  const counted = request.body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        received += chunk.byteLength
        if (received > limitBytes) controller.error(tooLarge(limitBytes))
        else controller.enqueue(chunk)
      },
    }),
  )
  const source = Readable.fromWeb(counted as unknown as NodeWebReadableStream<Uint8Array>)

  const upload: ReceivedUpload = { fields: {}, files: {} }
  const writes: Promise<unknown>[] = []
  const seen = new Set<string>()
  let failure: unknown = null
  const fail = (error: unknown) => {
    // The first reason wins; ours (AppError) over the stream errors it causes downstream.
    if (failure === null || (!(failure instanceof AppError) && error instanceof AppError)) failure = error
    busboy.destroy(error instanceof Error ? error : new Error(String(error)))
  }

  busboy.on('file', (name, stream) => {
    // The writer may not be iterating yet when a failure destroys the stream; its iterator still
    // sees the error, this only keeps it from being an unhandled 'error' event.
    stream.on('error', () => {})
    if (!isFileField(name)) {
      stream.resume()
      return
    }
    if (seen.has(name)) {
      stream.resume()
      fail(new AppError(400, 'DUPLICATE_FILE', `The upload carries ${name} more than once`, [{ field: name, message: 'must be sent once' }]))
      return
    }
    seen.add(name)
    writes.push(
      writeTemp(paths, stream).then(
        (file) => {
          upload.files[name] = file
        },
        (error) => fail(error),
      ),
    )
  })
  busboy.on('field', (name, value, info) => {
    if (info.valueTruncated) {
      // the field's own limit where it has one (the service's), so the answer names the same number either way
      const limit = name === 'changelog' ? 'must be at most 10000 characters' : 'must be at most 64 KB'
      fail(new AppError(400, 'VALIDATION_ERROR', `${name} ${limit}`, [{ field: name, message: limit }]))
      return
    }
    // two versions (or channels, keys…) in one upload are ambiguous: refused like a file sent twice,
    // rather than the last one silently winning; fields the server does not read are left alone
    if (readFields.has(name) && Object.hasOwn(upload.fields, name)) {
      fail(new AppError(400, 'VALIDATION_ERROR', `${name} is sent more than once; send each field once`, [{ field: name, message: 'must be sent once' }]))
      return
    }
    upload.fields[name] = value
  })
  for (const event of ['partsLimit', 'filesLimit', 'fieldsLimit'] as const) {
    busboy.on(event, () => fail(new AppError(400, 'MALFORMED_UPLOAD', 'The upload has too many parts; send the version fields and the five files')))
  }

  await new Promise<void>((resolve) => {
    pipeline(source, busboy, (error) => {
      if (error) fail(error)
      resolve()
    })
  })
  await Promise.allSettled(writes)
  if (failure !== null) {
    await discardUpload(upload)
    if (failure instanceof AppError) throw failure
    const error = failure as Error
    if (error.name === 'AbortError' || request.signal.aborted) throw error
    // a full or read-only disk is the server's problem, not a malformed body (toAppError maps it)
    if (storageError(error)) throw error
    throw new AppError(400, 'MALFORMED_UPLOAD', `The multipart body cannot be read: ${error.message}`)
  }
  return upload
}
