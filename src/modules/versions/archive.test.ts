import { describe, expect, test, afterAll } from 'bun:test'
import { rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { tempDir } from '../../test-support'
import { checkAssetsArchive, defaultArchiveLimits, entryNameProblem, type ArchiveLimits, type Platform } from './archive'
import { buildZip, unicodePathExtra, type ZipEntry } from '../../test-fixtures'

describe('entry names', () => {
  // null: accepted; otherwise how the reason begins (several rules refuse some names, so the
  // reason shows which rule did: an absolute path is also outside the allowed folders)
  const leaves = 'has a path that leaves its folder'
  const absolute = 'has an absolute path'
  const outside = 'has an entry outside the allowed folders'
  const unusual = 'has an unusual path'
  const table: [Platform, string, string | null][] = [
    ['ios', 'assets/', null],
    ['ios', 'assets/images/logo.png', null],
    ['ios', 'assets', null],
    ['ios', 'logo.png', outside],
    ['ios', 'other/logo.png', outside],
    ['ios', '/assets/logo.png', absolute],
    ['ios', 'C:/assets/logo.png', absolute],
    ['ios', '\\assets\\logo.png', absolute],
    ['ios', 'assets/../../evil', leaves],
    ['ios', 'assets//logo.png', unusual],
    ['ios', 'assets/./logo.png', unusual],
    ['ios', 'assets\\..\\evil', leaves],
    ['android', 'drawable-mdpi/logo.png', null],
    ['android', 'drawable-xxhdpi-v4/logo.png', null],
    ['android', 'raw/data.json', null],
    ['android', 'raw/', null],
    ['android', 'drawable/logo.png', outside],
    ['android', 'drawable-/logo.png', outside],
    ['android', 'assets/logo.png', outside],
    ['android', 'raw/../../evil', leaves],
    ['android', '/raw/data.json', absolute],
    ['ios', 'assets/a\u0000.png', 'has a name with control characters'],
    ['ios', 'assets/a\u001b[2J.png', 'has a name with control characters'],
  ]
  for (const [platform, name, reason] of table) {
    test(`${platform} ${JSON.stringify(name)}: ${reason ?? 'accepted'}`, () => {
      const problem = entryNameProblem(name, platform)
      expect(problem === null ? null : problem.slice(0, reason?.length)).toBe(reason)
    })
  }
})

describe('archives on disk', () => {
  const dir = tempDir('miniship-zip-')
  afterAll(() => rmSync(dir, { recursive: true, force: true }))
  let n = 0
  const check = (bytes: Uint8Array, platform: Platform, limits?: ArchiveLimits) => {
    const path = join(dir, `a${n++}.zip`)
    writeFileSync(path, bytes)
    return checkAssetsArchive(path, platform, limits)
  }
  const zip = (...entries: ZipEntry[]) => buildZip(entries)

  test('a valid iOS archive', async () => expect(await check(zip({ name: 'assets/' }, { name: 'assets/a.png', content: 'a' }), 'ios')).toBeNull())
  test('a valid deflated archive', async () => expect(await check(zip({ name: 'raw/a.json', content: '{"a":1}'.repeat(100), deflate: true }, { name: 'raw/b', content: 'b' }), 'android')).toBeNull())
  test('an archive with no entries', async () => expect(await check(zip(), 'android')).toBeNull())
  test('not a zip', async () => expect(await check(new TextEncoder().encode('PK? no'), 'ios')).toBe('is not a valid zip archive'))
  test('../evil', async () => expect(await check(zip({ name: '../evil', content: 'x' }), 'ios')).toContain('leaves its folder'))
  test('an absolute path', async () => expect(await check(zip({ name: '/evil', content: 'x' }), 'ios')).toContain('absolute path'))
  test('a symbolic link', async () => expect(await check(zip({ name: 'assets/l', content: '/etc', mode: 0o120777 }), 'ios')).toContain('symbolic link'))
  test('the first bad entry is named', async () => expect(await check(zip({ name: 'raw/a', content: 'a' }, { name: 'lib/x.so', content: 'x' }), 'android')).toContain('lib/x.so'))
  test('a truncated archive', async () => {
    const bytes = zip({ name: 'assets/a.png', content: 'a'.repeat(100) })
    expect(await check(bytes.slice(0, bytes.length - 30), 'ios')).toBe('is not a valid zip archive')
  })
})

describe('hostile archives', () => {
  const dir = tempDir('miniship-zip-')
  afterAll(() => rmSync(dir, { recursive: true, force: true }))
  let n = 0
  const check = (bytes: Uint8Array, platform: Platform = 'ios', limits?: ArchiveLimits) => {
    const path = join(dir, `h${n++}.zip`)
    writeFileSync(path, bytes)
    return checkAssetsArchive(path, platform, limits)
  }

  test('a local header name that leaves the folder (what ZipInputStream reads)', async () => {
    const problem = await check(buildZip([{ name: 'assets/aaaaaaaaaaaaaaaaaa.js', localName: '../../../../tmp/xx.js', content: 'x' }]))
    expect(problem).toContain('leaves its folder')
    expect(problem).toContain('../../../../tmp/xx.js')
  })
  test('a local header name that differs harmlessly is still refused', async () => {
    expect(await check(buildZip([{ name: 'assets/a.png', localName: 'assets/b.png', content: 'x' }]))).toContain('differs from its directory name')
  })
  test('a Unicode Path field in the central directory that leaves the folder', async () => {
    expect(await check(buildZip([{ name: 'assets/a.js', centralExtra: unicodePathExtra('../../evil.js', 'assets/a.js'), content: 'x' }]))).toContain('../../evil.js')
  })
  test('a Unicode Path field in the local header that leaves the folder', async () => {
    expect(await check(buildZip([{ name: 'assets/a.js', localExtra: unicodePathExtra('/etc/evil.js', 'assets/a.js'), content: 'x' }]))).toContain('/etc/evil.js')
  })
  test('a harmless Unicode Path field is fine', async () => {
    expect(await check(buildZip([{ name: 'assets/a.js', centralExtra: unicodePathExtra('assets/ä.js', 'assets/a.js'), localExtra: unicodePathExtra('assets/ä.js', 'assets/a.js'), content: 'x' }]))).toBeNull()
  })
  test('link bits in an archive "made by" DOS are still a link', async () => {
    expect(await check(buildZip([{ name: 'assets/l', content: '/etc/passwd', mode: 0o120777, madeBy: 0 }]))).toContain('symbolic link')
  })
  for (const [what, mode] of [['a fifo', 0o010644], ['a device', 0o020644], ['a socket', 0o140644]] as const) {
    test(`${what} is refused`, async () => expect(await check(buildZip([{ name: 'assets/x', mode }]))).toContain('special file'))
  }
  test('an entry hidden between the last entry and the central directory', async () => {
    const hidden = buildZip([{ name: '../../evil.js', content: 'x' }])
    const bytes = buildZip([{ name: 'assets/a.png', content: 'a' }], { gap: hidden.subarray(0, 30 + 13 + 1) })
    expect(await check(bytes)).toContain('is not a valid zip archive')
  })
  test('a deflate stream that ends before its packed size (a hidden local header after it)', async () => {
    const hidden = buildZip([{ name: '../../evil.js', content: 'x' }])
    const entry = buildZip([{ name: 'assets/a', content: 'hello', deflate: true }])
    // take the real entry, and append the hidden local record inside its packed data
    const good = buildZip([{ name: 'assets/a', content: 'hello', deflate: true }])
    expect(await check(good)).toBeNull()
    const localLength = 30 + 'assets/a'.length
    const view = new DataView(entry.buffer)
    const packed = view.getUint32(18, true)
    const hiddenLocal = hidden.subarray(0, 30 + 13 + 1)
    const data = entry.subarray(localLength, localLength + packed)
    const padded = new Uint8Array([...data, ...hiddenLocal])
    // rebuild with a lying packed size: craft by hand from the pieces
    const local = new Uint8Array(entry.subarray(0, localLength))
    new DataView(local.buffer).setUint32(18, padded.length, true)
    const central = new Uint8Array(entry.subarray(localLength + packed, entry.length - 22))
    new DataView(central.buffer).setUint32(20, padded.length, true)
    const end = new Uint8Array(entry.subarray(entry.length - 22))
    new DataView(end.buffer).setUint32(16, local.length + padded.length, true)
    expect(await check(new Uint8Array([...local, ...padded, ...central, ...end]))).toContain('does not match its sizes')
  })
  test('an unpacked size that lies (a bomb that says it is small)', async () => {
    expect(await check(buildZip([{ name: 'assets/a', content: new Uint8Array(100_000), deflate: true, declaredSize: 10 }]))).toContain('does not match its sizes')
  })
  test('a large entry (checked as a stream): honest is fine, a lying size is refused', async () => {
    const content = new Uint8Array(randomBytes(10 * 1024 * 1024))
    expect(await check(buildZip([{ name: 'assets/big', content, deflate: true }]))).toBeNull()
    expect(await check(buildZip([{ name: 'assets/big', content, deflate: true, declaredSize: 9 * 1024 * 1024 }]))).toContain('does not match its sizes')
  })
  test('an end record that counts fewer entries than the directory holds', async () => {
    expect(await check(buildZip([{ name: 'assets/a', content: 'a' }, { name: 'assets/b', content: 'b' }], { declaredEntryCount: 1 }))).toContain('is not a valid zip archive')
  })
  test('two entries with the same name', async () => {
    expect(await check(buildZip([{ name: 'assets/a', content: 'a' }, { name: 'assets/a', content: 'b' }]))).toContain('two entries named assets/a')
  })
})

describe('limits', () => {
  const dir = tempDir('miniship-zip-')
  afterAll(() => rmSync(dir, { recursive: true, force: true }))
  let n = 0
  const check = (bytes: Uint8Array, limits?: ArchiveLimits) => {
    const path = join(dir, `l${n++}.zip`)
    writeFileSync(path, bytes)
    return checkAssetsArchive(path, 'ios', limits)
  }
  const many = (count: number) => Array.from({ length: count }, (_, i) => ({ name: `assets/${i}` }) as ZipEntry)

  test('the defaults', () => expect(defaultArchiveLimits).toEqual({ maxEntries: 20_000, maxUnpackedBytes: 1024 ** 3, maxCompressionRatio: 200 }))
  test('20,000 entries are accepted, 20,001 refused', async () => {
    expect(await check(buildZip(many(20_000)))).toBeNull()
    expect(await check(buildZip(many(20_001)))).toBe('has 20001 entries; at most 20000 are accepted')
  })
  test('a ZIP64 end record announcing a million entries is refused from the count alone', async () => {
    // the file holds one entry: reading the million would fail differently, so this proves the count stopped it
    const bytes = buildZip([{ name: 'assets/a', content: 'a' }], { declaredEntryCount: 1_000_000 })
    expect(await check(bytes)).toBe('has 1000000 entries; at most 20000 are accepted')
  })
  test('a configured entry limit', async () => {
    expect(await check(buildZip(many(3)), { ...defaultArchiveLimits, maxEntries: 2 })).toBe('has 3 entries; at most 2 are accepted')
  })
  test('total unpacked size over the limit', async () => {
    const entries: ZipEntry[] = [{ name: 'assets/a', content: new Uint8Array(600) }, { name: 'assets/b', content: new Uint8Array(600) }]
    expect(await check(buildZip(entries), { ...defaultArchiveLimits, maxUnpackedBytes: 1000 })).toBe('unpacks to more than 1000 bytes, the limit')
    expect(await check(buildZip(entries), { ...defaultArchiveLimits, maxUnpackedBytes: 1200 })).toBeNull()
  })
  test('a compression ratio over 200:1 (4 MiB of zeros)', async () => {
    const problem = await check(buildZip([{ name: 'assets/zeros', content: new Uint8Array(4 * 1024 * 1024), deflate: true }]))
    expect(problem).toBe('has an entry (assets/zeros) that unpacks to more than 200 times its packed size')
  })
  test('a small highly compressible file is not held to the ratio', async () => {
    expect(await check(buildZip([{ name: 'assets/blank.json', content: ' '.repeat(100_000), deflate: true }]))).toBeNull()
  })
  test('a configured ratio', async () => {
    const content = new Uint8Array(2 * 1024 * 1024).map((_, i) => (i % 7 === 0 ? (i * 31) & 0xff : 0))
    expect(await check(buildZip([{ name: 'assets/x', content, deflate: true }]), { ...defaultArchiveLimits, maxCompressionRatio: 2 })).toContain('more than 2 times')
  })
})
