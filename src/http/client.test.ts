import { expect, test } from 'bun:test'
import { clientAddress, publicOrigin } from './client'

const server = { requestIP: () => ({ address: '127.0.0.9' }) }
const request = (headers: Record<string, string>) => new Request('http://127.0.0.1:3001/api/x', { headers })

test('the client address: the socket peer, or with trust-proxy the right-most X-Forwarded-For entry', () => {
  const table: [boolean, Record<string, string>, string][] = [
    [false, {}, '127.0.0.9'],
    [false, { 'x-forwarded-for': '203.0.113.7' }, '127.0.0.9'],
    [true, {}, '127.0.0.9'],
    [true, { 'x-forwarded-for': '203.0.113.7' }, '203.0.113.7'],
    // what a client writes to the left is not believed: changing it does not change the address
    [true, { 'x-forwarded-for': '10.9.1.1, 203.0.113.7' }, '203.0.113.7'],
    [true, { 'x-forwarded-for': '10.9.2.1, 203.0.113.7' }, '203.0.113.7'],
  ]
  for (const [trustProxy, headers, address] of table) {
    expect({ trustProxy, headers, address: clientAddress(request(headers), server, { trustProxy }) }).toEqual({ trustProxy, headers, address })
  }
})

test('the public origin: --public-url, else the Host header, else forwarded headers when trusted', () => {
  expect(publicOrigin(request({ host: 'apps.local:8080' }), { trustProxy: false, publicUrl: 'https://apps.example.com/api' })).toBe('https://apps.example.com')
  expect(publicOrigin(request({ host: 'apps.local:8080' }), { trustProxy: false, publicUrl: null })).toBe('http://apps.local:8080')
  expect(publicOrigin(request({ 'x-forwarded-host': 'apps.example.com', 'x-forwarded-proto': 'https' }), { trustProxy: false, publicUrl: null })).toBe('http://127.0.0.1:3001')
  expect(publicOrigin(request({ 'x-forwarded-host': 'apps.example.com', 'x-forwarded-proto': 'https' }), { trustProxy: true, publicUrl: null })).toBe('https://apps.example.com')
})
