import { expect, test } from 'bun:test'
import { queryValue } from './native-routes'

test('queryValue reads one decoded query parameter without a URL object', () => {
  const table: [string, string | undefined][] = [
    ['http://x/a', undefined],
    ['http://x/a?token=abc', 'abc'],
    ['http://x/a?x=1&token=a%2Eb', 'a.b'],
    ['http://x/a?token=', ''],
    ['http://x/a?tokens=abc', undefined],
    ['http://x/a?token=abc#frag', 'abc'],
  ]
  for (const [url, value] of table) expect({ url, value: queryValue(url, 'token') }).toEqual({ url, value })
})
