import { expect, test } from 'bun:test'
import { queryValue, runtimeQuery } from './native-routes'

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

test('runtimeQuery reads every runtime parameter in one pass, each as queryValue would', () => {
  const urls = [
    'http://x/a',
    'http://x/a?platform=ios&currentVersion=1.0.0&deviceId=dev-1',
    'http://x/a?channel=beta&hostVersion=2.3.0&deviceId=a%3Ab&token=t1&token=t2',
    'http://x/a?deviceId=&platform=android#x&channel=no',
    'http://x/a?deviceId=first&deviceId=second&currentVersion=1.0.0+x&hostVersion=%E0%A4%A',
    'http://x/a?tokenx=1&xchannel=2&platform&channel=c',
  ]
  const names = ['token', 'channel', 'deviceId', 'hostVersion', 'platform', 'currentVersion'] as const
  for (const url of urls) {
    const query = runtimeQuery(url)
    for (const name of names) expect({ url, name, value: query[name] }).toEqual({ url, name, value: queryValue(url, name) })
  }
})
