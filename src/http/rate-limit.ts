// Per-client-address request budgets (decisions §3): a sliding one-minute window per bucket, an IPv6 client's per /64.
import ipaddr from 'ipaddr.js'
import { AppError } from './errors'
import type { Clock } from '../ids'

/**
 * The budget a client address spends. An IPv6 host is routinely handed a whole /64 and can send from
 * any address in it, so one budget per address would be 2^64 budgets: its /64 spends one. An
 * IPv4-mapped address (`::ffff:a.b.c.d`, a dual-stack socket) spends its IPv4 address's. Anything
 * that is no IP address (a user id) is its own key.
 */
export function budgetKey(key: string): string {
  if (key.indexOf(':') === -1 || !ipaddr.IPv6.isValid(key)) return key
  const address = ipaddr.IPv6.parse(key)
  if (address.isIPv4MappedAddress()) return address.toIPv4Address().toString()
  return `${address.parts.slice(0, 4).map((part) => part.toString(16)).join(':')}::/64`
}

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
    const id = `${bucket}\u0000${budgetKey(key)}`
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
