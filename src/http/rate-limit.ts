// Per-client-address request budgets (decisions §3): a sliding one-minute window per bucket.
import { AppError } from './errors'
import type { Clock } from '../ids'

export interface RateLimiter {
  /** Counts one request of `key` in `bucket`; throws 429 with Retry-After past `perMinute`. */
  hit(bucket: string, key: string, perMinute: number): void
  /** Throws the same 429 when `key` has used up its budget, without counting this request. */
  check(bucket: string, key: string, perMinute: number): void
}

const windowMs = 60_000

export function createRateLimiter(clock: Clock, enabled: boolean): RateLimiter {
  const hits = new Map<string, number[]>()
  let lastSweep = clock()
  /** The key's hits within the window; throws 429 when they reach `perMinute`. */
  const within = (bucket: string, key: string, perMinute: number, now: number): number[] => {
    if (now - lastSweep > windowMs) {
      for (const [k, times] of hits) if (times[times.length - 1]! <= now - windowMs) hits.delete(k)
      lastSweep = now
    }
    const id = `${bucket}\u0000${key}`
    const times = (hits.get(id) ?? []).filter((t) => t > now - windowMs)
    hits.set(id, times)
    if (times.length >= perMinute) {
      const retryAfter = Math.max(1, Math.ceil((times[0]! + windowMs - now) / 1000))
      throw new AppError(429, 'RATE_LIMITED', `Too many requests; try again in ${retryAfter} seconds`, undefined, {
        'retry-after': String(retryAfter),
      })
    }
    return times
  }
  return {
    hit(bucket, key, perMinute) {
      if (!enabled) return
      const now = clock()
      within(bucket, key, perMinute, now).push(now)
    },
    check(bucket, key, perMinute) {
      if (enabled) within(bucket, key, perMinute, clock())
    },
  }
}
