// The stored manifest of an upload whose app.json names another version (or none): the upload's text with
// only `version` set (decisions §5, §9), whatever else it holds.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readFileSync, readdirSync } from 'node:fs'
import { createTestContext } from '../../test-support'
import { blobPath } from '../../storage'
import { createMiniApp, createTestUser, upload, uploadForm, type TestUser } from '../../test-fixtures'
import { checkManifest } from './manifest'

const context = createTestContext()
afterAll(() => context.close())
const appId = 'com.example.manifests'
let owner: TestUser

beforeAll(async () => {
  owner = await createTestUser(context)
  await createMiniApp(context, owner.token, appId)
})

const stored = (sha256: string) => readFileSync(blobPath(context.dataDir.paths, sha256), 'utf8')

describe('upload: the manifest rewritten with the version', () => {
  test('numbers JSON.parse cannot hold are stored as they were sent', async () => {
    const manifest = '{"appId":"com.example.manifests","version":"0.0.1","pages":{"index":"pages/index"},"storeId":12345678901234567890123,"huge":1e400}'
    const res = await upload(context, owner.token, appId, uploadForm(appId, { version: '1.0.0', manifest }))
    expect(res.status).toBe(201)
    expect(res.body.warnings.map((warning: { code: string }) => warning.code)).toEqual(['MANIFEST_VERSION_SET'])
    expect(stored(res.body.files.manifest.sha256)).toBe(manifest.replace('"0.0.1"', '"1.0.0"'))
  })

  test('a deeply nested manifest (under 1 MB) is 201 with its version set, not 500', async () => {
    const depth = 200_000
    const manifest = `{"pages":{"index":"pages/index"},"deep":${'['.repeat(depth)}${']'.repeat(depth)}}`
    const res = await upload(context, owner.token, appId, uploadForm(appId, { version: '1.0.1', manifest }))
    expect({ status: res.status, code: res.body.code }).toEqual({ status: 201, code: undefined })
    expect(stored(res.body.files.manifest.sha256)).toBe(`{"version": "1.0.1", ${manifest.slice(1)}`)
    expect(readdirSync(context.dataDir.paths.tmp)).toEqual([])
  })
})

describe('checkManifest: the rewrite', () => {
  const rewrite = (text: string) => new TextDecoder().decode(checkManifest(new TextEncoder().encode(text), appId, '2.0.0').bytes!)
  test.each([
    ['{}', '{"version": "2.0.0"}'],
    [' { } ', ' {"version": "2.0.0" } '],
    ['{"a":1}', '{"version": "2.0.0", "a":1}'],
    ['{"version":"1.0.0","a":1}', '{"version":"2.0.0","a":1}'],
    ['{"a":{"version":"x"},"version" :  1.5 }', '{"a":{"version":"x"},"version" :  "2.0.0" }'],
    ['{"a":["version"],"version":{"x":[1,{"y":"}"}]},"b":true}', '{"a":["version"],"version":"2.0.0","b":true}'],
    ['{"\\u0076ersion":null}', '{"\\u0076ersion":"2.0.0"}'],
    ['{"note":"a \\"version\\": 1","version":false}', '{"note":"a \\"version\\": 1","version":"2.0.0"}'],
    ['\uFEFF{"version":"1"}', '{"version":"2.0.0"}'],
  ])('%s', (input, output) => {
    expect(rewrite(input)).toBe(output)
    expect(JSON.parse(rewrite(input)).version).toBe('2.0.0')
  })
})
