// Reading a stream whose source may stall (a bucket that stops sending mid-body): each read waits a bounded time (issue 29).

/** The error a read that waited too long rejects with; `code` 'Timeout' as the S3 client's own errors carry a code. */
export function stalled(ms: number): Error {
  return Object.assign(new Error(`no bytes from the object storage for ${ms} ms`), { code: 'Timeout' })
}

/** What one read of a reader answers. */
export type ReadResult<T> = Awaited<ReturnType<ReadableStreamDefaultReader<T>['read']>>

/** One `reader.read()`, rejected with `stalled(ms)` when nothing arrives within `ms`. */
export function readWithin<T>(reader: ReadableStreamDefaultReader<T>, ms: number): Promise<ReadResult<T>> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(stalled(ms)), ms)
  })
  return Promise.race([reader.read(), timeout]).finally(() => clearTimeout(timer))
}

/**
 * The rest of `reader` as a stream (after `pending`, a chunk already read) that errors, and
 * cancels the source, once a read waits longer than `ms`: whoever reads it (a phone through the
 * proxy, doctor hashing a blob) gets an error instead of waiting for ever. A slow source that keeps
 * sending never trips it: the timer starts again with every chunk.
 */
export function idleTimeoutStream<T>(reader: ReadableStreamDefaultReader<T>, ms: number, pending: T | null = null, onStall: (error: Error) => void = () => {}): ReadableStream<T> {
  let first = pending
  return new ReadableStream<T>({
    async pull(controller) {
      if (first !== null) {
        controller.enqueue(first)
        first = null
        return
      }
      let next: ReadResult<T>
      try {
        next = await readWithin(reader, ms)
      } catch (error) {
        void reader.cancel(error).catch(() => {})
        onStall(error as Error)
        controller.error(error)
        return
      }
      if (next.done) controller.close()
      else controller.enqueue(next.value)
    },
    cancel: (reason) => reader.cancel(reason),
  })
}
