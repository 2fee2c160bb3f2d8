// Which requests may be writing to the database right now: lets the runtime's caches skip asking SQLite on every request.
//
// The runtime caches what it reads (versions, apps, channels) and used to ask SQLite for
// `total_changes()` on every lookup to learn whether anything changed: a statement step per
// lookup, several per install-info request, the largest single cost of the answer. Every change
// of what the runtime reads is made by a request that is not GET, HEAD or OPTIONS, in this
// process (the data directory's lock allows one server). So the app counts those requests in
// flight and finished; the runtime asks SQLite only while one runs, after one ended, and once a
// second in any case (for writers outside a request, such as a test's own SQL).

export interface WriteWatch {
  /** requests that may write, still running */
  inFlight: number
  /** bumped whenever such a request ends */
  epoch: number
}

export function createWriteWatch(): WriteWatch {
  return { inFlight: 0, epoch: 0 }
}

const readOnlyMethods = new Set(['GET', 'HEAD', 'OPTIONS'])

/** `handle` with the requests that may write counted in `watch` (their answer's promise settles after the write). */
export function watchingWrites(handle: (request: Request) => Promise<Response>, watch: WriteWatch): (request: Request) => Promise<Response> {
  return (request) => {
    if (readOnlyMethods.has(request.method)) return handle(request)
    watch.inFlight++
    const ended = () => {
      watch.inFlight--
      watch.epoch++
    }
    let answer: Promise<Response>
    try {
      answer = handle(request)
    } catch (error) {
      ended()
      throw error
    }
    return answer.finally(ended)
  }
}

/**
 * Whether cached reads must be checked against the database now: always without a watch, else
 * while a writing request runs, after one ended since the last check, or a second after it.
 */
export function createChangeCheck(watch: WriteWatch | undefined, maxAgeMs = 1000): () => boolean {
  if (!watch) return () => true
  let checkedEpoch = -1
  let checkedAt = -Infinity
  return () => {
    if (watch.inFlight === 0 && watch.epoch === checkedEpoch) {
      const now = performance.now()
      if (now - checkedAt < maxAgeMs) return false
      checkedAt = now
      return true
    }
    checkedEpoch = watch.epoch
    checkedAt = performance.now()
    return true
  }
}
