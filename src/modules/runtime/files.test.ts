// The file answer on its own: headers per kind and status, HEAD, 304, 206, 416, and bodies from disk.
import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { AppError } from '../../http/errors'
import { etagMatches, fileResponse, type StoredFile } from './files'
import { fileKinds, type FileKind } from '../versions/file-kinds'
import { sha256Hex } from './test-runtime'

const dir = mkdtempSync(join(tmpdir(), 'miniship-files-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const bytes = new TextEncoder().encode('0123456789abcdefghij')
const sha256 = sha256Hex(bytes)
const path = join(dir, sha256)
writeFileSync(path, bytes)

function stored(kind: FileKind = 'bundleIos', published = true): StoredFile {
  return { kind, path, sha256, size: bytes.length, published, version: { id: 'version-1', miniAppId: 'mini-app-1' } }
}
const get = (headers: { range?: string; ifNoneMatch?: string } = {}, method = 'GET') => ({ method, range: headers.range ?? null, ifNoneMatch: headers.ifNoneMatch ?? null })

describe('fileResponse', () => {
  const expectations: [FileKind, string, string][] = [
    ['bundleIos', 'application/javascript', 'main.ios.jsbundle'],
    ['bundleAndroid', 'application/javascript', 'main.android.bundle'],
    ['manifest', 'application/json', 'app.json'],
    ['assetsIos', 'application/zip', 'assets-ios.zip'],
    ['assetsAndroid', 'application/zip', 'assets-android.zip'],
  ]
  for (const [kind, type, name] of expectations) {
    test(`${kind}: ${type}, named ${name}`, async () => {
      const response = fileResponse(stored(kind), get())
      expect(response.status).toBe(200)
      expect(response.headers.get('content-type')).toBe(type)
      expect(response.headers.get('content-disposition')).toBe(`attachment; filename="${name}"`)
      expect(response.headers.get('content-length')).toBe(String(bytes.length))
      expect(response.headers.get('etag')).toBe(`"${sha256}"`)
      expect(response.headers.get('accept-ranges')).toBe('bytes')
      expect(new Uint8Array(await response.arrayBuffer())).toEqual(bytes)
    })
  }
  test('five kinds, one per uploaded file', () => expect(Object.keys(fileKinds)).toEqual(expectations.map(([kind]) => kind)))

  test('published versions are immutable for a year; others revalidate every time', () => {
    expect(fileResponse(stored('bundleIos', true), get()).headers.get('cache-control')).toBe('public, max-age=31536000, immutable')
    expect(fileResponse(stored('bundleIos', false), get()).headers.get('cache-control')).toBe('private, no-cache')
  })

  test('HEAD: the same headers, no body', async () => {
    const response = fileResponse(stored(), get({}, 'HEAD'))
    expect(response.status).toBe(200)
    expect(response.headers.get('content-length')).toBe(String(bytes.length))
    expect(response.headers.get('etag')).toBe(`"${sha256}"`)
    expect(await response.text()).toBe('')
  })

  const notModified: [string, number][] = [
    [`"${sha256}"`, 304],
    [`W/"${sha256}"`, 304],
    [`"other", "${sha256}"`, 304],
    ['*', 304],
    ['"other"', 200],
    [sha256, 200],
  ]
  for (const [header, status] of notModified) {
    test(`If-None-Match ${header.slice(0, 20)}… → ${status}`, async () => {
      const response = fileResponse(stored(), get({ ifNoneMatch: header, range: 'bytes=0-1' }))
      expect(response.status).toBe(status === 304 ? 304 : 206)
      if (status === 304) {
        expect(await response.text()).toBe('')
        expect(response.headers.get('etag')).toBe(`"${sha256}"`)
        expect(response.headers.get('cache-control')).toBe('public, max-age=31536000, immutable')
      }
    })
  }

  const ranges: [string, number, string | null, string][] = [
    ['bytes=0-3', 206, 'bytes 0-3/20', '0123'],
    ['bytes=10-', 206, 'bytes 10-19/20', 'abcdefghij'],
    ['bytes=-2', 206, 'bytes 18-19/20', 'ij'],
    ['bytes=18-500', 206, 'bytes 18-19/20', 'ij'],
    ['bytes=0-1,4-5', 200, null, '0123456789abcdefghij'],
  ]
  for (const [header, status, contentRange, body] of ranges) {
    test(`Range ${header} → ${status}`, async () => {
      const response = fileResponse(stored(), get({ range: header }))
      expect(response.status).toBe(status)
      expect(response.headers.get('content-range')).toBe(contentRange)
      expect(response.headers.get('content-length')).toBe(String(body.length))
      expect(await response.text()).toBe(body)
    })
  }

  for (const header of ['bytes=20-', 'bytes=999999999-', 'bytes=5-2', 'bytes=x-']) {
    test(`Range ${header} → 416 with Content-Range: bytes */20`, () => {
      let thrown: unknown
      try {
        fileResponse(stored(), get({ range: header }))
      } catch (error) {
        thrown = error
      }
      expect(thrown).toBeInstanceOf(AppError)
      const error = thrown as AppError
      expect(error.status).toBe(416)
      expect(error.code).toBe('RANGE_NOT_SATISFIABLE')
      expect(error.headers).toEqual({ 'content-range': 'bytes */20' })
    })
  }
})

describe('etagMatches', () => {
  test('weak comparison over a list', () => {
    expect(etagMatches('"a"', '"a"')).toBe(true)
    expect(etagMatches(' W/"a" ', '"a"')).toBe(true)
    expect(etagMatches('"b","a"', '"a"')).toBe(true)
    expect(etagMatches('"b"', '"a"')).toBe(false)
    expect(etagMatches('', '"a"')).toBe(false)
  })
})
