// The OpenAPI document says what every operation answers on success, and says it truly: each call
// below is checked against the document (status, content type, schema, and a JSON answer field by
// field against its schema), and each JSON answer is compared with the record its service makes.
// The management answers' schemas are documentation (jsonAnswer), not checked by Elysia at run
// time, so these checks are what keeps them true.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { generateKeyPairSync, sign } from 'node:crypto'
import { createTestContext, type CallOptions, type CallResult } from '../test-support'
import { androidAssets, createTestUser, iosAssets, upload, uploadForm, type TestUser } from '../test-fixtures'
import { fileFields, textFields } from '../modules/versions/upload'
import { buildStatement } from '../sdk/statement'
import { listMembers, listMiniApps, miniAppRecord, type Caller } from '../modules/miniapps/service'
import { getWorkspace } from '../modules/versions/service'
import { listChannels } from '../modules/channels/service'
import { listSigningKeys } from '../modules/signing/service'
import { createTokenService } from '../modules/auth/tokens'
import { miniApps } from '../db/schema'
import { eq } from 'drizzle-orm'

const context = createTestContext()
afterAll(() => context.close())

interface Operation {
  parameters: { name: string; in: string }[]
  requestBody?: { required?: boolean; content: Record<string, { schema: { type?: string; properties?: Record<string, { type?: string; format?: string; anyOf?: { const: string }[] }>; required?: string[] } }> }
  responses: Record<string, { content?: Record<string, { schema?: Record<string, unknown> }>; headers?: Record<string, { description?: string }> }>
}
let paths: Record<string, Record<string, Operation>>

let owner: TestUser
let caller: Caller
beforeAll(async () => {
  paths = (await context.call('GET', '/api/openapi.json')).body.paths
  owner = await createTestUser(context)
  caller = { id: owner.id, email: owner.email, role: 'USER' }
})

/** The operations whose 2xx answers name no content with a schema. */
function undocumentedSuccess(document: Record<string, Record<string, Operation>>): string[] {
  return Object.entries(document).flatMap(([path, operations]) =>
    Object.entries(operations)
      // a HEAD answers no body: its 2xx is documented by its headers
      .filter(([method, operation]) => !Object.entries(operation.responses).some(([status, answer]) => status.startsWith('2') && (method === 'head' ? answer.headers !== undefined : Object.values(answer.content ?? {}).some((media) => Object.keys(media.schema ?? {}).length > 0))))
      .map(([method]) => `${method.toUpperCase()} ${path}`),
  )
}

/**
 * Calls `template` (a path of the document, `{name}` filled from `values`) and checks the answer
 * against the document: its status is documented, with a schema under the content type it came with.
 */
async function answer(method: string, template: string, values: Record<string, string>, options: CallOptions = {}, query = ''): Promise<CallResult> {
  const path = template.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(values[name]!))
  const res = await context.call(method, `${path}${query}`, options)
  const documented = paths[template]?.[method.toLowerCase()]?.responses[String(res.status)]
  const type = res.headers.get('content-type') ?? ''
  const media = Object.entries(documented?.content ?? {}).find(([name]) => type.startsWith(name))
  expect({ call: `${method} ${template}`, status: res.status, schema: media !== undefined && Object.keys(media[1].schema ?? {}).length > 0 }).toEqual({ call: `${method} ${template}`, status: res.status, schema: true })
  // a JSON answer is what its schema says, field by field: no field the schema lacks, none it requires missing
  if (type.startsWith('application/json')) expect({ call: `${method} ${template}`, problems: mismatches(media![1].schema!, res.body) }).toEqual({ call: `${method} ${template}`, problems: [] })
  return res
}

type JsonSchema = { type?: string | string[]; const?: unknown; anyOf?: JsonSchema[]; properties?: Record<string, JsonSchema>; required?: string[]; items?: JsonSchema; patternProperties?: Record<string, JsonSchema>; additionalProperties?: boolean | JsonSchema }

/**
 * Where `value` departs from the JSON Schema `schema` (as the document has it): a property it does
 * not name, a required one missing, a type or constant that differs. The schemas are documentation
 * (jsonAnswer: Elysia does not check them at run time), so this is what keeps them true.
 */
function mismatches(schema: JsonSchema, value: unknown, at = '$'): string[] {
  if (schema.anyOf) return schema.anyOf.some((branch) => mismatches(branch, value, at).length === 0) ? [] : [`${at}: matches no branch of anyOf (${JSON.stringify(value)?.slice(0, 80)})`]
  if ('const' in schema && value !== schema.const) return [`${at}: ${JSON.stringify(value)} is not ${JSON.stringify(schema.const)}`]
  const types = schema.type === undefined ? [] : Array.isArray(schema.type) ? schema.type : [schema.type]
  const kind = value === null ? 'null' : Array.isArray(value) ? 'array' : Number.isInteger(value) ? 'integer' : typeof value
  if (types.length > 0 && !types.includes(kind) && !(kind === 'integer' && types.includes('number'))) return [`${at}: a ${kind}, not ${types.join(' or ')}`]
  if (kind === 'array' && schema.items) return (value as unknown[]).flatMap((item, index) => mismatches(schema.items!, item, `${at}[${index}]`))
  // an object schema that lists no properties (the manifest as uploaded, this document) is open, as JSON Schema reads it
  if (kind === 'object' && schema.properties) {
    const record = value as Record<string, unknown>
    const open = schema.patternProperties !== undefined || (schema.additionalProperties !== undefined && schema.additionalProperties !== false)
    const problems = (schema.required ?? []).filter((name) => !(name in record)).map((name) => `${at}.${name}: required, missing`)
    for (const [name, field] of Object.entries(record)) {
      const property = schema.properties?.[name]
      if (property) problems.push(...mismatches(property, field, `${at}.${name}`))
      else if (!open) problems.push(`${at}.${name}: not in the schema`)
    }
    return problems
  }
  return []
}

test('mismatches: a field the schema lacks, a missing required one, another type, no branch of a union', () => {
  const schema: JsonSchema = { type: 'object', properties: { id: { type: 'string' }, n: { type: 'integer' }, at: { anyOf: [{ type: 'string' }, { type: 'null' }] } }, required: ['id', 'n'] }
  expect(mismatches(schema, { id: 'a', n: 1, at: null })).toEqual([])
  expect(mismatches(schema, { id: 'a', n: 1, extra: true })).toEqual(['$.extra: not in the schema'])
  expect(mismatches(schema, { id: 'a' })).toEqual(['$.n: required, missing'])
  expect(mismatches(schema, { id: 'a', n: 1.5 })).toEqual(['$.n: a number, not integer'])
  expect(mismatches(schema, { id: 'a', n: 1, at: 3 })).toEqual(['$.at: matches no branch of anyOf (3)'])
  expect(mismatches({ type: 'array', items: schema }, [{ id: 'a', n: 1 }, { n: 2 }])).toEqual(['$[1].id: required, missing'])
})

describe('every operation documents its success answer', () => {
  test('the check finds an operation without one', () => {
    const operation = (responses: Operation['responses']): Operation => ({ parameters: [], responses })
    expect(
      undocumentedSuccess({
        '/a': { get: operation({ default: { description: 'Errors' } } as never), post: operation({ 201: { content: { 'application/json': { schema: {} } } } }) },
        '/b': { get: operation({ 200: { content: { 'application/zip': { schema: { type: 'string' } } } } }) },
      }),
    ).toEqual(['GET /a', 'POST /a'])
  })

  test('no operation of /api/openapi.json lacks a 2xx answer with a schema', () => {
    // the document is read: it holds the operations of every module
    expect(Object.values(paths).flatMap((operations) => Object.keys(operations)).length).toBeGreaterThan(50)
    expect(undocumentedSuccess(paths)).toEqual([])
  })
})

describe('the upload form (service-interface.md, decisions §9, §14)', () => {
  const uploadPath = '/api/mini-apps/by-app-id/{appId}/versions/upload'
  const form = () => paths[uploadPath]!.post!.requestBody!

  test('is documented as multipart/form-data: every field the server reads, by name and type, the version and five files required', () => {
    expect({ required: form().required, types: Object.keys(form().content) }).toEqual({ required: true, types: ['multipart/form-data'] })
    const schema = form().content['multipart/form-data']!.schema
    expect(schema.type).toBe('object')
    // what upload.ts reads, no more and no less
    expect(Object.keys(schema.properties!).sort()).toEqual([...textFields, ...fileFields].sort())
    const typeOf = (field: { type?: string; format?: string; anyOf?: { const: string }[] }) => (field.format === 'binary' ? 'file' : field.anyOf ? field.anyOf.map((branch) => branch.const).join('|') : field.type)
    expect(Object.fromEntries(Object.entries(schema.properties!).map(([name, field]) => [name, typeOf(field)]))).toEqual({
      version: 'string',
      changelog: 'string',
      releaseType: 'RELEASE|BETA|ALPHA',
      channel: 'string',
      signatureKeyId: 'string',
      signature: 'string',
      bundleIos: 'file',
      bundleAndroid: 'file',
      manifest: 'file',
      assetsIos: 'file',
      assetsAndroid: 'file',
    })
    expect([...schema.required!].sort()).toEqual(['assetsAndroid', 'assetsIos', 'bundleAndroid', 'bundleIos', 'manifest', 'version'])
  })

  test('a form made from the document alone (its required fields, by their documented names) is an upload the server takes', async () => {
    await context.call('POST', '/api/mini-apps', { token: owner.token, json: { appId: 'com.example.form', name: 'Form' } })
    const schema = form().content['multipart/form-data']!.schema
    const files: Record<string, string | Uint8Array> = { bundleIos: 'console.log(1)', bundleAndroid: 'console.log(2)', manifest: JSON.stringify({ version: '1.0.0', pages: { index: 'index' } }), assetsIos: iosAssets(), assetsAndroid: androidAssets() }
    const body = new FormData()
    for (const name of schema.required!) {
      if (schema.properties![name]!.format === 'binary') body.append(name, new Blob([files[name]! as BlobPart]), name)
      else body.append(name, '1.0.0')
    }
    const res = await answer('POST', uploadPath, { appId: 'com.example.form' }, { token: owner.token, body })
    expect(res.status).toBe(201)
    expect(res.body).toMatchObject({ version: '1.0.0', status: 'DRAFT', releaseType: 'RELEASE' })
  })
})

describe('the release-stable file paths (decisions §9, §10)', () => {
  const scopes = ['', 'channels/{channel}/', 'channels/{channel}/devices/{deviceId}/', 'channels/{channel}/hosts/{hostVersion}/', 'channels/{channel}/devices/{deviceId}/hosts/{hostVersion}/']
  const files: [string, string][] = [
    ['release/bundle', 'application/javascript'],
    ['release/bundles/{platform}', 'application/javascript'],
    ['release/manifest', 'application/json'],
    ['release/assets/{platform}', 'application/zip'],
    ['release/app.json', 'application/json'],
    ['release/bundles/app.json', 'application/json'],
  ]
  const releasePaths = scopes.flatMap((scope) => files.map(([file, type]) => [`/api/mini-apps/access/apps/{appId}/${scope}${file}`, type] as const))

  test('are in the document with their parameters, content type and cache policy; the wildcard route is not', () => {
    expect(paths['/api/mini-apps/access/apps/{appId}/*']).toBeUndefined()
    for (const [path, type] of releasePaths) {
      const operation = paths[path]?.get
      const names = [...path.matchAll(/\{(\w+)\}/g)].map((match) => match[1])
      expect({ path, parameters: operation?.parameters.filter((p) => p.in === 'path').map((p) => p.name), type: Object.keys(operation?.responses['200']?.content ?? {}), cache: operation?.responses['200']?.headers?.['Cache-Control']?.description, security: (operation as { security?: unknown } | undefined)?.security }).toEqual({
        path,
        parameters: names,
        type: [type],
        cache: 'public, max-age=60',
        security: [],
      })
    }
    expect(paths['/api/mini-apps/access/apps/{appId}/release/bundle']!.get.parameters.map((p) => `${p.in} ${p.name}`)).toContain('query platform')
  })

  test('HEAD of every file path is in the document (the GET\'s parameters and headers, no body), and answers so', async () => {
    const filePaths = Object.keys(paths).filter((path) => path.startsWith('/api/mini-apps/access/') && !path.endsWith('/install') && !path.endsWith('/update') && !path.endsWith('/events'))
    expect(filePaths.length).toBe(releasePaths.length + 6)
    for (const path of filePaths) {
      const { get, head } = paths[path]! as Record<string, Operation & { summary: string }>
      expect({ path, head: head !== undefined }).toEqual({ path, head: true })
      expect(head!.parameters).toEqual(get!.parameters)
      expect(head!.summary).not.toContain('HEAD answers')
      expect({ path, content: head!.responses['200']!.content, headers: head!.responses['200']!.headers }).toEqual({ path, content: undefined, headers: get!.responses['200']!.headers })
    }
    // no other path says HEAD
    expect(Object.entries(paths).filter(([path, operations]) => operations.head !== undefined && !filePaths.includes(path))).toEqual([])
    const app = (await context.call('POST', '/api/mini-apps', { token: owner.token, json: { appId: 'com.example.heads', name: 'Heads' } })).body
    const version = (await upload(context, owner.token, app.appId, uploadForm(app.appId, { version: '1.0.0' }))).body
    expect((await context.call('POST', `/api/mini-apps/${app.id}/versions/${version.id}/publish`, { token: owner.token, json: {} })).status).toBe(200)
    const res = await context.call('HEAD', `/api/mini-apps/access/apps/${app.appId}/release/bundles/ios`)
    expect({ status: res.status, cache: res.headers.get('cache-control'), length: Number(res.headers.get('content-length')) > 0 }).toEqual({ status: 200, cache: 'public, max-age=60', length: true })
  })

  test('each answers what the document says, and so do the version-pinned file paths', async () => {
    const app = (await context.call('POST', '/api/mini-apps', { token: owner.token, json: { appId: 'com.example.files', name: 'Files' } })).body
    const version = (await upload(context, owner.token, app.appId, uploadForm(app.appId, { version: '1.0.0' }))).body
    expect((await context.call('POST', `/api/mini-apps/${app.id}/versions/${version.id}/publish`, { token: owner.token, json: {} })).status).toBe(200)
    const values = { appId: app.appId, channel: 'stable', deviceId: 'device-1', hostVersion: '2.0.0', platform: 'android' }
    for (const [path] of releasePaths) {
      const res = await answer('GET', path, values)
      expect({ path, status: res.status, cache: res.headers.get('cache-control') }).toEqual({ path, status: 200, cache: 'public, max-age=60' })
    }
    // the download token install info hands out
    const install = await answer('GET', '/api/mini-apps/access/versions/{versionId}/install', { versionId: version.id }, {}, `?token=${owner.token}`)
    const token = new URL(install.body.manifestUrl).searchParams.get('token')!
    const pinned = Object.keys(paths).filter((path) => path.startsWith('/api/mini-apps/access/versions/{versionId}/') && !path.endsWith('/install'))
    expect(pinned.length).toBe(6)
    for (const path of pinned) {
      const res = await answer('GET', path, { versionId: version.id, platform: 'ios' }, {}, `?token=${encodeURIComponent(token)}`)
      expect({ path, status: res.status }).toEqual({ path, status: 200 })
    }
  })
})

describe('the JSON answers the document describes are the whole records', () => {
  test('miniapps, members, signing keys, versions, channels, metrics and the document itself', async () => {
    const db = context.dataDir.db
    const row = (id: string) => db.select().from(miniApps).where(eq(miniApps.id, id)).get()!
    const tokens = createTokenService(context.dataDir.secret, () => context.now.value, context.config.tokenTtlSeconds)
    const workspace = (id: string) => getWorkspace({ db, clock: () => context.now.value, config: context.config, tokens }, caller, id, 'http://localhost/api')
    // the version record (decisions §2) as the workspace lists it, without the channels it is a release of or was reverted in (the workspace's own)
    const versionOf = async (miniAppId: string, versionId: string) => {
      const { releaseOf: _, revertedIn: __, ...record } = (await workspace(miniAppId)).versions.find((v) => v.id === versionId)!
      return record
    }
    const auth = { token: owner.token }

    const created = await answer('POST', '/api/mini-apps', {}, { ...auth, json: { appId: 'com.example.docs', name: 'Docs' } })
    const id = created.body.id as string
    expect(created.body).toEqual(miniAppRecord(db, row(id)))
    expect((await answer('GET', '/api/mini-apps', {}, auth)).body).toEqual(listMiniApps(db, caller))
    expect((await answer('GET', '/api/mini-apps/{miniAppId}', { miniAppId: id }, auth)).body).toEqual(miniAppRecord(db, row(id)))
    expect((await answer('PATCH', '/api/mini-apps/{miniAppId}', { miniAppId: id }, { ...auth, json: { description: 'described' } })).body).toEqual(miniAppRecord(db, row(id)))

    const other = await createTestUser(context)
    const member = await answer('POST', '/api/mini-apps/{miniAppId}/members', { miniAppId: id }, { ...auth, json: { email: other.email, role: 'DEVELOPER' } })
    expect(member.body).toEqual(listMembers(db, caller, id).find((m) => m.userId === other.id))
    expect((await answer('GET', '/api/mini-apps/{miniAppId}/members', { miniAppId: id }, auth)).body).toEqual(listMembers(db, caller, id))
    expect((await answer('DELETE', '/api/mini-apps/{miniAppId}/members/{userId}', { miniAppId: id, userId: other.id }, auth)).body).toEqual({ success: true, userId: other.id })

    const pair = generateKeyPairSync('ed25519')
    const publicKey = Buffer.from(pair.publicKey.export({ format: 'jwk' }).x!, 'base64url').toString('base64')
    const key = await answer('POST', '/api/mini-apps/{miniAppId}/signing-keys', { miniAppId: id }, { ...auth, json: { name: 'laptop', publicKey } })
    expect(key.body).toEqual(listSigningKeys(db, caller, id)[0])
    expect((await answer('GET', '/api/mini-apps/{miniAppId}/signing-keys', { miniAppId: id }, auth)).body).toEqual(listSigningKeys(db, caller, id))

    // the manifest names another version: the answer's warnings say the stored one was set (decisions §9)
    const first = await answer('POST', '/api/mini-apps/by-app-id/{appId}/versions/upload', { appId: 'com.example.docs' }, { ...auth, body: uploadForm('com.example.docs', { version: '1.0.0', manifest: JSON.stringify({ version: '0.0.1', pages: { index: 'index' } }) }) })
    const { warnings, ...firstRecord } = first.body
    expect(warnings).toEqual([{ code: 'MANIFEST_VERSION_SET', message: expect.any(String) }])
    expect(firstRecord).toEqual(await versionOf(id, first.body.id))
    const second = (await upload(context, owner.token, 'com.example.docs', uploadForm('com.example.docs', { version: '1.1.0' }))).body
    const versionPath = '/api/mini-apps/{miniAppId}/versions/{versionId}'
    expect((await answer('POST', `${versionPath}/review`, { miniAppId: id, versionId: second.id }, auth)).body).toEqual(await versionOf(id, second.id))
    const statement = buildStatement('com.example.docs', '1.0.0', Object.fromEntries(Object.entries(first.body.files as Record<string, { sha256: string }>).map(([kind, file]) => [kind, file.sha256])))
    const signature = sign(null, Buffer.from(statement, 'utf8'), pair.privateKey).toString('base64')
    const signed = await answer('POST', `${versionPath}/signature`, { miniAppId: id, versionId: first.body.id }, { ...auth, json: { keyId: key.body.keyId, signature } })
    expect(signed.body.signature).toMatchObject({ algorithm: 'ed25519', keyName: 'laptop', statement })
    expect(signed.body).toEqual(await versionOf(id, first.body.id))
    expect((await answer('POST', `${versionPath}/publish`, { miniAppId: id, versionId: first.body.id }, { ...auth, json: {} })).body).toEqual(await versionOf(id, first.body.id))
    expect((await answer('POST', `${versionPath}/publish`, { miniAppId: id, versionId: second.id }, { ...auth, json: { notes: 'second' } })).body).toEqual(await versionOf(id, second.id))
    const rolledBack = await answer('POST', '/api/mini-apps/{miniAppId}/rollback', { miniAppId: id }, { ...auth, json: { targetVersionId: first.body.id, notes: 'back' } })
    expect(rolledBack.body).toEqual({ miniApp: miniAppRecord(db, row(id)), version: await versionOf(id, first.body.id), warnings: [] })
    const third = (await upload(context, owner.token, 'com.example.docs', uploadForm('com.example.docs', { version: '1.2.0' }))).body
    expect((await answer('GET', '/api/mini-apps/{miniAppId}/workspace', { miniAppId: id }, auth)).body).toEqual(JSON.parse(JSON.stringify(await workspace(id))))
    expect((await answer('DELETE', versionPath, { miniAppId: id, versionId: third.id }, auth)).body).toEqual({ success: true, versionId: third.id })

    const channel = await answer('POST', '/api/mini-apps/{miniAppId}/channels', { miniAppId: id }, { ...auth, json: { name: 'beta' } })
    expect(channel.body).toEqual(JSON.parse(JSON.stringify(listChannels(db, caller, id).channels.find((c) => c.name === 'beta'))))
    expect((await answer('DELETE', '/api/mini-apps/{miniAppId}/channels/{channel}', { miniAppId: id, channel: 'beta' }, auth)).body).toEqual({ success: true, name: 'beta' })
    const revoked = await answer('DELETE', '/api/mini-apps/{miniAppId}/signing-keys/{keyId}', { miniAppId: id, keyId: key.body.keyId }, auth)
    // 1.0.0, which it signed, is stable's release again (rolled back to above)
    expect(revoked.body).toEqual({ ...listSigningKeys(db, caller, id)[0], warnings: [{ code: 'LIVE_RELEASE_KEY_REVOKED', message: expect.stringMatching(/^1\.0\.0 \(live on stable, complete 100 %\) was signed by this key/) }] })
    expect(revoked.body.revokedAt).toEqual(expect.any(String))

    const admin = await createTestUser(context, { role: 'ADMIN' })
    expect((await answer('GET', '/api/metrics', {}, { token: admin.token })).text).toContain('# TYPE')
    expect((await answer('GET', '/api/openapi.json', {})).body.openapi).toBe('3.1.0')
  })
})
