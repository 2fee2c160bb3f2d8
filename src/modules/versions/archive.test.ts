import { describe, expect, test, afterAll } from 'bun:test'
import { rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { tempDir } from '../../test-support'
import { checkAssetsArchive, entryNameProblem, type Platform } from './archive'
import { buildZip, type ZipEntry } from './test-fixtures'

describe('entry names', () => {
  const table: [Platform, string, boolean][] = [
    ['ios', 'assets/', true],
    ['ios', 'assets/images/logo.png', true],
    ['ios', 'assets', true],
    ['ios', 'logo.png', false],
    ['ios', 'other/logo.png', false],
    ['ios', '/assets/logo.png', false],
    ['ios', 'C:/assets/logo.png', false],
    ['ios', 'assets/../../evil', false],
    ['ios', 'assets//logo.png', false],
    ['ios', 'assets\\..\\evil', false],
    ['android', 'drawable-mdpi/logo.png', true],
    ['android', 'drawable-xxhdpi-v4/logo.png', true],
    ['android', 'raw/data.json', true],
    ['android', 'raw/', true],
    ['android', 'drawable/logo.png', false],
    ['android', 'drawable-/logo.png', false],
    ['android', 'assets/logo.png', false],
    ['android', 'raw/../../evil', false],
  ]
  for (const [platform, name, ok] of table) {
    test(`${platform} ${name}: ${ok ? 'accepted' : 'refused'}`, () => {
      expect(entryNameProblem(name, platform) === null).toBe(ok)
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
