import { describe, expect, test } from 'bun:test'
import { generateKeyPairSync, sign, verify } from 'node:crypto'
import { buildStatement, parseStatement, utf8Bytes } from './statement'

const a = 'a'.repeat(64)
const b = 'B'.repeat(64)

describe('the §14 statement', () => {
  test('is the exact text of the decision, files in its order, lowercase digests', () => {
    const text = buildStatement('com.example.shop', '1.2.0', { manifest: a, bundleIos: b })
    expect(text).toBe(`{"kind":"miniship-release-v1","appId":"com.example.shop","version":"1.2.0","files":{"bundleIos":"${'b'.repeat(64)}","manifest":"${a}"}}`)
  })

  test('parses only what it builds', () => {
    const text = buildStatement('app', '1.0.0', { bundleAndroid: a })
    expect(parseStatement(text)).toEqual({ kind: 'miniship-release-v1', appId: 'app', version: '1.0.0', files: { bundleAndroid: a } })
    expect(parseStatement(text.replace(':', ': '))).toBeNull()
    expect(parseStatement(text.replace('"files"', '"extra":1,"files"'))).toBeNull()
    expect(parseStatement('{"kind":"other"}')).toBeNull()
    expect(parseStatement('not json')).toBeNull()
  })

  test('refuses a digest that is not sha256 hex', () => {
    expect(() => buildStatement('app', '1.0.0', { manifest: 'xyz' })).toThrow()
  })

  test('utf8Bytes matches Buffer for every plane', () => {
    const text = 'aé€𝄞"\\'
    expect(Buffer.from(utf8Bytes(text)).equals(Buffer.from(text, 'utf8'))).toBe(true)
  })

  test('utf8Bytes matches Buffer for lone surrogates (U+FFFD), escapes and every byte length', () => {
    for (const text of ['', '%41%', 'a\ud800b', '\udc00', 'x\ud83d', '\ud83d\ude00\udc00\ud800', '~!*()\'', '\u007f\u0080\u07ff\u0800\uffff', String.fromCharCode(...Array.from({ length: 300 }, (_, code) => code))]) {
      expect(Buffer.from(utf8Bytes(text)).toString('hex')).toBe(Buffer.from(text, 'utf8').toString('hex'))
    }
  })

  test("node's verify accepts a signature over the statement's UTF-8 bytes", () => {
    const { publicKey, privateKey } = generateKeyPairSync('ed25519')
    const bytes = utf8Bytes(buildStatement('app', '1.0.0', { manifest: a }))
    const signature = sign(null, bytes, privateKey)
    expect(verify(null, bytes, publicKey, signature)).toBe(true)
    bytes[0] = 0x20
    expect(verify(null, bytes, publicKey, signature)).toBe(false)
  })
})
