// The query of the runtime's routes, read from the URL's text: serve's native routes and the app's
// routes both read it here, so one URL gets one answer whichever answers it (the first of a
// repeated parameter; Elysia's own query keeps the last).

/**
 * What a route read from the URL of the request before it: an equal piece of the next URL is
 * answered with this very string instead of a new slice (a device polling, a CDN revalidating, a
 * download token presented again and again), so no string is made per request and a lookup by it
 * finds its hash already computed. `plain`: it holds no `%` or `+` (no decoding needed).
 */
export interface Remembered {
  text: string
  plain: boolean
}

export const remembered = (): Remembered => ({ text: '', plain: true })

/** `url.slice(start, end)`, or `memo.text` when that is the same text (see Remembered). */
export function sliceRemembered(url: string, start: number, end: number, memo: Remembered | undefined): string {
  if (memo === undefined) return url.slice(start, end)
  const last = memo.text
  if (last.length === end - start && last.length > 0 && url.startsWith(last, start)) return last
  const text = url.slice(start, end)
  memo.text = text
  memo.plain = text.indexOf('%') === -1 && text.indexOf('+') === -1
  return text
}

/**
 * `name`'s value in a URL's query string (decoded, the first if repeated), without building a
 * URL or URLSearchParams: those cost more than the rest of a cached install-info answer.
 */
export function queryValue(url: string, name: string, memo?: Remembered): string | undefined {
  const queryStart = url.indexOf('?')
  if (queryStart === -1) return undefined
  const hashStart = url.indexOf('#', queryStart)
  const end = hashStart === -1 ? url.length : hashStart
  let at = queryStart + 1
  while (at < end) {
    const next = url.indexOf('&', at)
    const pairEnd = next === -1 || next > end ? end : next
    if (url.charCodeAt(at + name.length) === 0x3d && url.startsWith(name, at) && at + name.length < pairEnd) {
      const raw = sliceRemembered(url, at + name.length + 1, pairEnd, memo)
      // a remembered value was checked for `%` and `+` when it was first read
      return memo !== undefined && raw === memo.text && memo.plain ? raw : decodedValue(raw)
    }
    // the name alone (`?token`): an empty value, as URLSearchParams (and so the app's routes) read it
    if (pairEnd - at === name.length && url.startsWith(name, at)) return ''
    at = pairEnd + 1
  }
  return undefined
}

/** The query parameters the runtime's routes read; absent ones are undefined. */
export interface RuntimeQuery {
  token?: string
  channel?: string
  deviceId?: string
  hostVersion?: string
  platform?: string
  currentVersion?: string
}

/** A query value as queryValue decodes it: as is unless it holds `%` or `+`; a bad escape stays as sent. */
function decodedValue(raw: string): string {
  if (raw.indexOf('%') === -1 && raw.indexOf('+') === -1) return raw
  try {
    return decodeURIComponent(raw.replace(/\+/g, ' '))
  } catch {
    return raw
  }
}

/** The decoded value of a pair whose `=` (or end, for a name alone) is at `equals`. */
function valueOf(url: string, equals: number, pairEnd: number): string {
  return equals >= pairEnd ? '' : decodedValue(url.slice(equals + 1, pairEnd))
}

/** `runtimeQuery` of a URL without a query. */
const noQuery: Readonly<RuntimeQuery> = Object.freeze({ token: undefined, channel: undefined, deviceId: undefined, hostVersion: undefined, platform: undefined, currentVersion: undefined })

/**
 * The runtime's query parameters in one pass over the URL (each the first of its name, decoded as
 * `queryValue` does): an update check names five, and scanning the URL once per name cost more
 * than the rest of the request's parsing.
 */
export function runtimeQuery(url: string): RuntimeQuery {
  const queryStart = url.indexOf('?')
  // no query (a release install of a device that names nothing): one object for all, read only
  if (queryStart === -1) return noQuery
  const query: RuntimeQuery = { token: undefined, channel: undefined, deviceId: undefined, hostVersion: undefined, platform: undefined, currentVersion: undefined }
  let end = url.indexOf('#', queryStart)
  if (end === -1) end = url.length
  let at = queryStart + 1
  while (at < end) {
    let pairEnd = url.indexOf('&', at)
    if (pairEnd === -1 || pairEnd > end) pairEnd = end
    let equals = url.indexOf('=', at)
    // the name alone (`&deviceId`): an empty value, as URLSearchParams (and so the app's routes, HEAD) read it
    if (equals === -1 || equals > pairEnd) equals = pairEnd
    // the names by length first: one comparison of a number rules most out
    const nameLength = equals - at
    if (nameLength === 5 && query.token === undefined && url.startsWith('token', at)) query.token = valueOf(url, equals, pairEnd)
    else if (nameLength === 8 && url.startsWith('deviceId', at)) query.deviceId ??= valueOf(url, equals, pairEnd)
    else if (nameLength === 8 && url.startsWith('platform', at)) query.platform ??= valueOf(url, equals, pairEnd)
    else if (nameLength === 7 && url.startsWith('channel', at)) query.channel ??= valueOf(url, equals, pairEnd)
    else if (nameLength === 11 && url.startsWith('hostVersion', at)) query.hostVersion ??= valueOf(url, equals, pairEnd)
    else if (nameLength === 14 && url.startsWith('currentVersion', at)) query.currentVersion ??= valueOf(url, equals, pairEnd)
    at = pairEnd + 1
  }
  return query
}
