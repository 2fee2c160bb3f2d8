// Archives whose entries cannot be unpacked side by side are refused at upload, not on the phone.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { readdirSync } from 'node:fs'
import { createTestContext } from '../../test-support'
import { versions } from '../../db/schema'
import { buildZip, createMiniApp, createTestUser, upload, uploadForm, type TestUser, type ZipEntry } from '../../test-fixtures'

const context = createTestContext()
afterAll(() => context.close())
const appId = 'com.example.clash'
let owner: TestUser

beforeAll(async () => {
  owner = await createTestUser(context)
  await createMiniApp(context, owner.token, appId)
})

const cases: [string, 'assetsIos' | 'assetsAndroid', ZipEntry[], string][] = [
  ['a file, then a file inside a folder of its name', 'assetsIos', [{ name: 'assets/x', content: '1' }, { name: 'assets/x/y.png', content: '2' }], 'assetsIos has both a file and a folder named assets/x; such an archive cannot be unpacked'],
  ['a folder entry, then a file of its name', 'assetsAndroid', [{ name: 'raw/x/' }, { name: 'raw/x', content: '1' }], 'assetsAndroid has both a file and a folder named raw/x; such an archive cannot be unpacked'],
  ['the same file with a backslash', 'assetsIos', [{ name: 'assets/a.png', content: '1' }, { name: 'assets\\a.png', content: '2' }], 'assetsIos has two entries named assets/a.png'],
]

for (const [name, field, entries, message] of cases) {
  test(`${name}: 400 INVALID_ARCHIVE naming ${field}, nothing stored`, async () => {
    const res = await upload(context, owner.token, appId, uploadForm(appId, { [field]: buildZip(entries) }))
    expect({ status: res.status, code: res.body.code, message: res.body.message, field: res.body.details?.[0]?.field }).toEqual({ status: 400, code: 'INVALID_ARCHIVE', message, field })
    expect(context.dataDir.db.select().from(versions).all()).toEqual([])
    expect(readdirSync(context.dataDir.paths.tmp)).toEqual([])
  })
}

test('folders named like files elsewhere, a file beside a longer name, and deep names are fine', async () => {
  const deep = `assets/${'d/'.repeat(2000)}leaf.png`
  const assetsIos = buildZip([{ name: 'assets/x.png', content: '1' }, { name: 'assets/x.png.d/a.png', content: '2' }, { name: 'assets/x-y/a.png', content: '3' }, { name: 'assets/x', content: '4' }, { name: deep, content: '5' }])
  const res = await upload(context, owner.token, appId, uploadForm(appId, { assetsIos }))
  expect(res.status).toBe(201)
  // a folder entry without its trailing slash is a folder by its type bits
  const byMode = buildZip([{ name: 'assets/img', mode: 0o040755 }, { name: 'assets/img/a.png', content: '1' }])
  expect((await upload(context, owner.token, appId, uploadForm(appId, { assetsIos: byMode }))).status).toBe(201)
})
