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
    ['http://x/a?token=a+b', 'a b'],
    ['http://x/a?token=%E0%A4%A', '%E0%A4%A'],
    ['http://x/a?token=first&token=second', 'first'],
    ['http://x/a?xtoken=1&token=2', '2'],
    ['http://x/a?token', undefined],
  ]
  for (const [url, value] of table) expect({ url, value: queryValue(url, 'token') }).toEqual({ url, value })
})
