import { describe, expect, test, afterAll, beforeAll } from 'bun:test'
import { readdirSync, readFileSync, existsSync } from 'node:fs'
import { join } from 'node:path'
import { createTestContext } from '../../test-support'
import { blobPath, checkStoredFiles, createLocalBlobStore } from '../../storage'
import { versions } from '../../db/schema'
import { buildZip, unicodePathExtra, createMiniApp, createTestUser, iosAssets, androidAssets, upload, uploadForm, type TestUser } from '../../test-fixtures'

const context = createTestContext()
afterAll(() => context.close())

let owner: TestUser
let stranger: TestUser
const appId = 'com.example.shop'

beforeAll(async () => {
  owner = await createTestUser(context)
  stranger = await createTestUser(context)
  await createMiniApp(context, owner.token, appId)
})

const sha256 = (data: string | Uint8Array) => new Bun.CryptoHasher('sha256').update(data).digest('hex')

function tmpEntries(): string[] {
  return readdirSync(context.dataDir.paths.tmp)
}

function versionCount(): number {
  return context.dataDir.db.select().from(versions).all().length
}

/** Every refused upload leaves no row and nothing in tmp/. */
async function expectRefused(form: FormData | BodyInit, status: number, code: string, field?: string, token = owner.token, target = appId, contentType?: string) {
  const before = versionCount()
  const res = contentType
    ? await context.call('POST', `/api/mini-apps/by-app-id/${target}/versions/upload`, { token, body: form as BodyInit, headers: { 'content-type': contentType } })
    : await upload(context, token, target, form)
  expect({ status: res.status, code: res.body.code }).toEqual({ status, code })
  // a refusal about one field names it in details (and first in the message); others carry no details
  expect(res.body.details?.map((detail: { field: string }) => detail.field)).toEqual(field === undefined ? undefined : [field])
  if (field !== undefined) expect(res.body.message).toStartWith(`${field} `)
  expect(versionCount()).toBe(before)
  expect(tmpEntries()).toEqual([])
  return res
}

describe('upload: a valid version', () => {
  test('answers 201 with the version record: DRAFT, build 1, the current experience version', async () => {
    const form = uploadForm(appId, { version: '1.0.0', changelog: 'first', bundleIos: 'ios-bundle-1' })
    const res = await upload(context, owner.token, appId, form)
    expect(res.status).toBe(201)
    expect(res.body).toMatchObject({ version: '1.0.0', buildNumber: 1, releaseType: 'RELEASE', status: 'DRAFT', changelog: 'first', warnings: [] })
    expect(res.body.createdBy).toEqual({ id: owner.id, email: owner.email, displayName: owner.displayName })
    expect(res.body.files.bundleIos).toEqual({ size: 12, sha256: sha256('ios-bundle-1') })
    expect(res.body.files.assetsIos).toEqual({ size: iosAssets().length, sha256: sha256(iosAssets()) })
    const app = await context.call('GET', `/api/mini-apps/${res.body.miniAppId}`, { token: owner.token })
    expect(app.body.currentExperienceVersionId).toBe(res.body.id)
    expect(tmpEntries()).toEqual([])
    // every file is in the blob store under its hash
    for (const file of Object.values(res.body.files) as { sha256: string }[]) expect(existsSync(blobPath(context.dataDir.paths, file.sha256))).toBe(true)
    expect(await checkStoredFiles(context.dataDir.db.$client, createLocalBlobStore(context.dataDir.paths))).toEqual([])
  })

  test('a manifest without version is stored with the form version added', async () => {
    const res = await upload(context, owner.token, appId, uploadForm(appId, { version: '1.0.1', manifest: JSON.stringify({ name: 'Shop', entry: 'index' }) }))
    expect(res.status).toBe(201)
    const stored = JSON.parse(readFileSync(blobPath(context.dataDir.paths, res.body.files.manifest.sha256), 'utf8'))
    expect(stored).toEqual({ name: 'Shop', entry: 'index', version: '1.0.1' })
  })

  test('a manifest that names the same version is stored byte for byte', async () => {
    const manifest = '{"appId":"com.example.shop",   "version":"1.0.2"}'
    const res = await upload(context, owner.token, appId, uploadForm(appId, { version: '1.0.2', manifest }))
    expect(res.status).toBe(201)
    expect(res.body.files.manifest).toEqual({ size: manifest.length, sha256: sha256(manifest) })
    expect(readFileSync(blobPath(context.dataDir.paths, res.body.files.manifest.sha256), 'utf8')).toBe(manifest)
  })

  test('releaseType BETA and a prerelease version are accepted; buildNumber keeps counting', async () => {
    const res = await upload(context, owner.token, appId, uploadForm(appId, { version: '2.1.0-beta.1', releaseType: 'BETA' }))
    expect(res.status).toBe(201)
    expect(res.body).toMatchObject({ version: '2.1.0-beta.1', releaseType: 'BETA', buildNumber: 4 })
  })

  test('identical files are stored once', async () => {
    const blobs = () => readdirSync(join(context.dataDir.paths.blobs, 'sha256'), { recursive: true }).filter((name) => String(name).length > 3).length
    const before = blobs()
    const res = await upload(context, owner.token, appId, uploadForm(appId, { version: '3.0.0', bundleIos: 'ios-bundle-1' }))
    expect(res.status).toBe(201)
    // bundleIos and both archives are shared with earlier uploads; bundleAndroid and manifest are new
    expect(blobs()).toBe(before + 2)
  })

  test('empty archives (no entries) and directory entries are valid', async () => {
    const res = await upload(context, owner.token, appId, uploadForm(appId, { version: '3.0.1', assetsIos: buildZip([]), assetsAndroid: buildZip([{ name: 'raw/' }]) }))
    expect(res.status).toBe(201)
  })

  test('re-uploading an unpublished version keeps its id, raises its buildNumber and goes back to DRAFT', async () => {
    const first = await upload(context, owner.token, appId, uploadForm(appId, { version: '4.0.0', bundleIos: 'old build' }))
    expect(first.status).toBe(201)
    const review = await context.call('POST', `/api/mini-apps/${first.body.miniAppId}/versions/${first.body.id}/review`, { token: owner.token })
    expect(review.body.status).toBe('IN_REVIEW')
    const second = await upload(context, owner.token, appId, uploadForm(appId, { version: '4.0.0', bundleIos: 'new build' }))
    expect(second.status).toBe(201)
    expect(second.body.id).toBe(first.body.id)
    expect(second.body.buildNumber).toBe(first.body.buildNumber + 1)
    expect(second.body.status).toBe('DRAFT')
    expect(second.body.files.bundleIos.sha256).toBe(sha256('new build'))
    // the replaced bundle is not used by any other version: it is gone
    expect(existsSync(blobPath(context.dataDir.paths, sha256('old build')))).toBe(false)
    const app = await context.call('GET', `/api/mini-apps/${first.body.miniAppId}`, { token: owner.token })
    expect(app.body.currentReviewVersionId).toBeNull()
    expect(app.body.currentExperienceVersionId).toBe(first.body.id)
  })

  test('each upload above is written to the audit log, by its uploader, with its build number', () => {
    const rows = context.dataDir.db.$client.query("SELECT actor_email, target_id, metadata FROM audit_logs WHERE action = 'version.upload' ORDER BY id").all() as { actor_email: string; target_id: string; metadata: string }[]
    const uploads = rows.map((row) => {
      const metadata = JSON.parse(row.metadata) as { version: string; buildNumber: number; replaced: boolean }
      return `${row.actor_email} ${metadata.version} build ${metadata.buildNumber}${metadata.replaced ? ' (replaced)' : ''}`
    })
    expect(uploads).toEqual(
      ['1.0.0 build 1', '1.0.1 build 2', '1.0.2 build 3', '2.1.0-beta.1 build 4', '3.0.0 build 5', '3.0.1 build 6', '4.0.0 build 7', '4.0.0 build 8 (replaced)'].map((entry) => `${owner.email} ${entry}`),
    )
    // the re-upload names the same version row as the first upload of 4.0.0
    expect(rows[7]!.target_id).toBe(rows[6]!.target_id)
  })
})

describe('upload: refused', () => {
  for (const field of ['bundleIos', 'bundleAndroid', 'manifest', 'assetsIos', 'assetsAndroid'] as const) {
    test(`without ${field}: 400 MISSING_FILE naming it`, async () => {
      await expectRefused(uploadForm(appId, { version: '9.0.0', [field]: null }), 400, 'MISSING_FILE', field)
    })
  }

  test('without version: 400 VALIDATION_ERROR', async () => {
    await expectRefused(uploadForm(appId, { version: '' }), 400, 'VALIDATION_ERROR', 'version')
  })

  for (const version of ['1.0', 'v1.0.0', '1.0.0.0', '01.0.0', '1.0.0+build', '1.0.0-']) {
    test(`version ${version}: 400 VALIDATION_ERROR`, async () => {
      await expectRefused(uploadForm(appId, { version }), 400, 'VALIDATION_ERROR', 'version')
    })
  }

  for (const field of ['version', 'releaseType', 'channel', 'signatureKeyId']) {
    test(`${field} sent twice (with different values): 400 VALIDATION_ERROR naming it, not the last one silently`, async () => {
      const form = uploadForm(appId, { version: '9.0.0' })
      form.append(field, field === 'version' ? '9.0.1' : field === 'releaseType' ? 'BETA' : field === 'channel' ? 'beta' : 'abc')
      if (field !== 'version') form.append(field, field === 'releaseType' ? 'RELEASE' : field === 'channel' ? 'stable' : 'def')
      await expectRefused(form, 400, 'VALIDATION_ERROR', field)
    })
  }

  for (const length of [20_000, 70_000]) {
    test(`a changelog of ${length} characters: 400 VALIDATION_ERROR naming its limit of 10000 characters (the form's 64 KB field limit says the same)`, async () => {
      const res = await expectRefused(uploadForm(appId, { version: '9.0.0', changelog: 'x'.repeat(length) }), 400, 'VALIDATION_ERROR', 'changelog')
      expect(res.body.message).toBe('changelog must be at most 10000 characters')
    })
  }

  test('an unknown releaseType: 400 VALIDATION_ERROR', async () => {
    await expectRefused(uploadForm(appId, { version: '9.0.0', releaseType: 'NIGHTLY' }), 400, 'VALIDATION_ERROR', 'releaseType')
  })

  for (const field of ['bundleIos', 'bundleAndroid'] as const) {
    test(`an empty ${field}: 400 EMPTY_BUNDLE`, async () => {
      await expectRefused(uploadForm(appId, { version: '9.0.0', [field]: '' }), 400, 'EMPTY_BUNDLE', field)
    })
  }

  const manifests: [string, string, string][] = [
    ['not JSON', '{name: shop', 'INVALID_MANIFEST'],
    ['empty', '', 'INVALID_MANIFEST'],
    ['an array', '[1,2]', 'INVALID_MANIFEST'],
    ['a string', '"app"', 'INVALID_MANIFEST'],
    ['null', 'null', 'INVALID_MANIFEST'],
    ['naming another appId', JSON.stringify({ appId: 'com.example.other' }), 'MANIFEST_MISMATCH'],
  ]
  const duplicated: [string, string, string][] = [
    ['two versions (the form\'s last)', '{"version":"8.0.0","name":"x","version":"9.0.0"}', 'version'],
    ['two versions (the form\'s first)', '{"version":"9.0.0","version":"8.0.0"}', 'version'],
    ['a key repeated deep inside', '{"pages":{"home":"a","home":"b"}}', 'pages.home'],
    ['a repeated key spelled with an escape', '{"appId":"com.example.shop","\\u0061ppId":"com.example.other"}', 'appId'],
  ]
  for (const [what, manifest, key] of duplicated) {
    test(`a manifest with ${what}: 400 INVALID_MANIFEST naming the key`, async () => {
      const res = await expectRefused(uploadForm(appId, { version: '9.0.0', manifest }), 400, 'INVALID_MANIFEST', 'manifest')
      expect(res.body.message).toContain(`"${key}" twice`)
    })
  }
  for (const [what, manifest, code] of manifests) {
    test(`a manifest that is ${what}: 400 ${code}`, async () => {
      await expectRefused(uploadForm(appId, { version: '9.0.0', manifest }), 400, code, 'manifest')
    })
  }

  const archives: [string, 'assetsIos' | 'assetsAndroid', Uint8Array][] = [
    ['not a zip', 'assetsIos', new TextEncoder().encode('this is not a zip file at all')],
    ['empty (0 bytes)', 'assetsAndroid', new Uint8Array()],
    ['with ../evil', 'assetsIos', buildZip([{ name: '../evil', content: 'x' }])],
    ['with assets/../../evil', 'assetsIos', buildZip([{ name: 'assets/../../evil', content: 'x' }])],
    ['with an absolute path', 'assetsIos', buildZip([{ name: '/etc/evil', content: 'x' }])],
    ['with a symbolic link', 'assetsIos', buildZip([{ name: 'assets/link', content: '/etc/passwd', mode: 0o120777 }])],
    ['with an Android symbolic link', 'assetsAndroid', buildZip([{ name: 'drawable-hdpi/x.png', content: '../../x', mode: 0o120777 }])],
    ['with an iOS entry outside assets/', 'assetsIos', buildZip([{ name: 'assets/ok.png', content: 'x' }, { name: 'other/evil.png', content: 'x' }])],
    ['with a top-level iOS file', 'assetsIos', buildZip([{ name: 'logo.png', content: 'x' }])],
    ['with an Android entry outside drawable-*/ and raw/', 'assetsAndroid', buildZip([{ name: 'assets/logo.png', content: 'x' }])],
    ['with a bare drawable/ Android folder', 'assetsAndroid', buildZip([{ name: 'drawable/logo.png', content: 'x' }])],
    ['with an iOS layout in the Android archive', 'assetsAndroid', iosAssets()],
    ['with an Android layout in the iOS archive', 'assetsIos', androidAssets()],
    ['whose local header name leaves the folder', 'assetsAndroid', buildZip([{ name: 'raw/aaaaaaaaaaaaaaaa.js', localName: '../../../../tmp/xx.js', content: 'x' }])],
    ['with a Unicode Path field that leaves the folder', 'assetsIos', buildZip([{ name: 'assets/a.js', centralExtra: unicodePathExtra('../../a.js', 'assets/a.js'), content: 'x' }])],
    ['with link bits in a DOS-made archive', 'assetsIos', buildZip([{ name: 'assets/l', content: '/etc', mode: 0o120777, madeBy: 0 }])],
    ['whose entry unpacks 1000 times its size', 'assetsIos', buildZip([{ name: 'assets/zeros', content: new Uint8Array(2 * 1024 * 1024), deflate: true }])],
    ['over 20,000 entries', 'assetsIos', buildZip([], { declaredEntryCount: 1_000_000 })],
  ]
  for (const [what, field, zip] of archives) {
    test(`${field} ${what}: 400 INVALID_ARCHIVE`, async () => {
      await expectRefused(uploadForm(appId, { version: '9.0.0', [field]: zip }), 400, 'INVALID_ARCHIVE', field)
    })
  }

  test('an unknown appId: 404', async () => {
    await expectRefused(uploadForm('com.example.nothing'), 404, 'MINI_APP_NOT_FOUND', undefined, owner.token, 'com.example.nothing')
  })

  test('an appId that cannot exist (..): 404', async () => {
    await expectRefused(uploadForm('a..b'), 404, 'MINI_APP_NOT_FOUND', undefined, owner.token, 'a..b')
  })

  test('a user who is not a member: 404, the miniapp is not disclosed', async () => {
    await expectRefused(uploadForm(appId, { version: '9.0.0' }), 404, 'MINI_APP_NOT_FOUND', undefined, stranger.token)
  })

  test('without a token: 401', async () => {
    const res = await context.call('POST', `/api/mini-apps/by-app-id/${appId}/versions/upload`, { body: uploadForm(appId) })
    expect(res.status).toBe(401)
    expect(res.body.code).toBe('AUTH_REQUIRED')
  })

  test('a JSON body: 415', async () => {
    const res = await context.call('POST', `/api/mini-apps/by-app-id/${appId}/versions/upload`, { token: owner.token, json: { version: '1.0.0' } })
    expect(res.status).toBe(415)
    expect(res.body.code).toBe('UNSUPPORTED_MEDIA_TYPE')
  })

  test('a truncated multipart body: 400 MALFORMED_UPLOAD, nothing left behind', async () => {
    const request = new Request('http://localhost/', { method: 'POST', body: uploadForm(appId, { version: '9.0.0' }) })
    const contentType = request.headers.get('content-type')!
    const full = new Uint8Array(await request.arrayBuffer())
    await expectRefused(full.slice(0, Math.floor(full.length / 2)), 400, 'MALFORMED_UPLOAD', undefined, owner.token, appId, contentType)
  })

  test('re-uploading a published version: 409', async () => {
    const first = await upload(context, owner.token, appId, uploadForm(appId, { version: '5.0.0' }))
    const published = await context.call('POST', `/api/mini-apps/${first.body.miniAppId}/versions/${first.body.id}/publish`, { token: owner.token, json: { notes: 'go' } })
    expect(published.status).toBe(200)
    const blobCount = readdirSync(join(context.dataDir.paths.blobs, 'sha256'), { recursive: true }).length
    await expectRefused(uploadForm(appId, { version: '5.0.0', bundleIos: 'a different bundle' }), 409, 'VERSION_ALREADY_PUBLISHED')
    // the refused upload's new bundle did not stay in the store
    expect(readdirSync(join(context.dataDir.paths.blobs, 'sha256'), { recursive: true }).length).toBe(blobCount)
  })
})

describe('upload: size limit and aborts', () => {
  const small = createTestContext({ uploadLimitBytes: 64 * 1024 })
  afterAll(() => small.close())

  test('a chunked body over the limit is refused with 413 and leaves nothing behind', async () => {
    const user = await createTestUser(small)
    await createMiniApp(small, user.token, 'big.app')
    const form = uploadForm('big.app', { bundleIos: new Uint8Array(200 * 1024).fill(65) })
    // no Content-Length: counted while streaming
    const res = await small.call('POST', '/api/mini-apps/by-app-id/big.app/versions/upload', { token: user.token, body: form })
    expect(res.status).toBe(413)
    expect(res.body.code).toBe('PAYLOAD_TOO_LARGE')
    expect(readdirSync(small.dataDir.paths.tmp)).toEqual([])
    expect(small.dataDir.db.select().from(versions).all()).toEqual([])
  })

  test('a declared Content-Length over the limit is refused with 413 before the body is read', async () => {
    const user = await createTestUser(small)
    const res = await small.call('POST', '/api/mini-apps/by-app-id/big.app/versions/upload', {
      token: user.token,
      body: 'x',
      headers: { 'content-type': 'multipart/form-data; boundary=x', 'content-length': String(1024 * 1024) },
    })
    expect(res.status).toBe(413)
    expect(res.body.code).toBe('PAYLOAD_TOO_LARGE')
  })

  test('a client that goes away mid-upload leaves no row and no temp file', async () => {
    const user = await createTestUser(small)
    await createMiniApp(small, user.token, 'abort.app')
    const controller = new AbortController()
    const encoder = new TextEncoder()
    const boundary = 'abortboundary'
    let sent = 0
    const body = new ReadableStream<Uint8Array>({
      async pull(stream) {
        if (sent === 0) stream.enqueue(encoder.encode(`--${boundary}\r\nContent-Disposition: form-data; name="version"\r\n\r\n1.0.0\r\n--${boundary}\r\nContent-Disposition: form-data; name="bundleIos"; filename="main.ios.jsbundle"\r\n\r\n`))
        else if (sent < 4) stream.enqueue(new Uint8Array(4096).fill(66))
        else {
          controller.abort()
          stream.error(new DOMException('The client went away', 'AbortError'))
          return
        }
        sent++
        await Bun.sleep(5)
      },
    })
    const res = await small.app.handle(
      new Request('http://localhost/api/mini-apps/by-app-id/abort.app/versions/upload', {
        method: 'POST',
        headers: { authorization: `Bearer ${user.token}`, 'content-type': `multipart/form-data; boundary=${boundary}` },
        body,
        signal: controller.signal,
      }),
    )
    expect(res.status).toBe(400)
    expect((await res.json()).code).toBe('REQUEST_ABORTED')
    expect(readdirSync(small.dataDir.paths.tmp)).toEqual([])
    expect(small.dataDir.db.select().from(versions).all()).toEqual([])
  })
})

describe('upload: configured archive limits', () => {
  const limited = createTestContext({ archiveLimits: { maxEntries: 2, maxUnpackedBytes: 1024 * 1024, maxCompressionRatio: 200 } })
  afterAll(() => limited.close())

  test('an archive over the configured entry count: 400 INVALID_ARCHIVE naming the field', async () => {
    const user = await createTestUser(limited)
    await createMiniApp(limited, user.token, appId)
    const entries = [{ name: 'assets/' }, { name: 'assets/a', content: 'a' }, { name: 'assets/b', content: 'b' }]
    const res = await upload(limited, user.token, appId, uploadForm(appId, { assetsIos: buildZip(entries) }))
    expect({ status: res.status, code: res.body.code, field: res.body.details[0].field }).toEqual({ status: 400, code: 'INVALID_ARCHIVE', field: 'assetsIos' })
    expect(res.body.message).toBe('assetsIos has 3 entries; at most 2 are accepted')
    const ok = await upload(limited, user.token, appId, uploadForm(appId, { assetsIos: buildZip(entries.slice(0, 2)), assetsAndroid: buildZip([{ name: 'raw/a', content: 'a' }]) }))
    expect(ok.status).toBe(201)
  })
})
