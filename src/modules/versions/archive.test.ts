import { describe, expect, test, afterAll } from 'bun:test'
import { rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { tempDir } from '../../test-support'
import { checkAssetsArchive, entryNameProblem, type Platform } from './archive'
import { buildZip, type ZipEntry } from './test-fixtures'

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
  ]
  for (const [platform, name, reason] of table) {
    test(`${platform} ${name}: ${reason ?? 'accepted'}`, () => {
      const problem = entryNameProblem(name, platform)
      expect(problem === null ? null : problem.slice(0, reason?.length)).toBe(reason)
    })
  }
})

describe('archives on disk', () => {
  const dir = tempDir('miniship-zip-')
  afterAll(() => rmSync(dir, { recursive: true, force: true }))
  let n = 0
  const check = (bytes: Uint8Array, platform: Platform) => {
    const path = join(dir, `a${n++}.zip`)
    writeFileSync(path, bytes)
    return checkAssetsArchive(path, platform)
  }
  const zip = (...entries: ZipEntry[]) => buildZip(entries)

  test('a valid iOS archive', async () => expect(await check(zip({ name: 'assets/' }, { name: 'assets/a.png', content: 'a' }), 'ios')).toBeNull())
  test('an archive with no entries', async () => expect(await check(zip(), 'android')).toBeNull())
  test('not a zip', async () => expect(await check(new TextEncoder().encode('PK? no'), 'ios')).toBe('is not a valid zip archive'))
  test('../evil (yauzl refuses it)', async () => expect(await check(zip({ name: '../evil', content: 'x' }), 'ios')).toContain('leaves its folder'))
  test('an absolute path (yauzl refuses it)', async () => expect(await check(zip({ name: '/evil', content: 'x' }), 'ios')).toContain('absolute path'))
  test('a symbolic link', async () => expect(await check(zip({ name: 'assets/l', content: '/etc', mode: 0o120777 }), 'ios')).toContain('symbolic link'))
  test('the first bad entry is named', async () => expect(await check(zip({ name: 'raw/a', content: 'a' }, { name: 'lib/x.so', content: 'x' }), 'android')).toContain('lib/x.so'))
  test('a truncated archive', async () => {
    const bytes = zip({ name: 'assets/a.png', content: 'a'.repeat(100) })
    expect(await check(bytes.slice(0, bytes.length - 30), 'ios')).toBe('is not a valid zip archive')
  })
})
