// Breaks one security rule at a time in a copy of the source tree and checks that a test notices (CAUGHT) or not (MISSED).
//
//   npx bun scripts/mutation-check.ts              every mutation
//   npx bun scripts/mutation-check.ts range token  only those whose file or why contains "range" or "token"
//   npx bun scripts/mutation-check.ts --list       the list, with a check that every `find` still matches
//
// Exit codes: 0 every mutation CAUGHT; 1 some MISSED; 2 the list or the tests themselves are broken
// (a `find` that no longer matches exactly once, a missing test file, tests failing unmutated).
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync, copyFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'

interface Mutation {
  /** the source file, relative to the repository root */
  file: string
  /** text that occurs exactly once in `file` (one line, or part of one) */
  find: string
  replace: string
  /** the test files expected to notice, relative to the repository root */
  tests: string[]
  /** the rule this breaks, in a few words */
  why: string
}

const runtimeTests = ['src/modules/runtime/runtime.test.ts']
const signingTests = ['src/modules/signing/signing.test.ts']
const draftLinkTests = ['src/modules/runtime/draft-links.test.ts']

/**
 * One entry per broken rule. To guard a new rule, add an entry: `find` must occur exactly once in
 * `file` (the run stops with an error otherwise, so the list cannot silently rot), and `tests`
 * should be the few files that ought to notice; keep e2e tests out (they need the binary built).
 */
const mutations: Mutation[] = [
  // insights count a version-pinned download under the channel its URL names only when the miniapp has it: made-up names add no rows
  {
    file: 'src/modules/runtime/service.ts',
    find: 'return channelFacts(facts.appId, channel) === null ? defaultChannel : channel',
    replace: 'return channel',
    tests: ['src/modules/insights/insights.test.ts'],
    why: "a download's channel for insights is one the miniapp has",
  },
  // the runtime's answer caches (issue 30): a published version's token is let through by comparison, and only its own
  {
    file: 'src/modules/runtime/service.ts',
    find: 'if (facts !== null && facts.openedBy === token) return facts',
    replace: 'if (facts !== null && facts.openedBy !== undefined) return facts',
    tests: ['src/modules/runtime/answer-caches.test.ts'],
    why: 'a remembered download token opens only the version it was checked for',
  },
  // who is calling (src/modules/auth/access.ts, the verifier src/http/guards.ts is handed; src/modules/auth/tokens.ts)
  {
    file: 'src/modules/auth/access.ts',
    find: 'row.tokenVersion !== result.claims.tv || ',
    replace: '',
    tests: ['src/modules/admin/admin.test.ts', 'src/modules/auth/auth.test.ts'],
    why: 'token version: an access token issued before a role change, disable or password reset is refused',
  },
  {
    file: 'src/modules/auth/access.ts',
    find: " || row.status !== 'ACTIVE'",
    replace: '',
    tests: ['src/modules/admin/admin.test.ts', 'src/modules/auth/auth.test.ts'],
    why: 'a disabled user’s access token is refused, whatever its token version',
  },
  {
    file: 'src/modules/auth/access.ts',
    find: "if (result.kind !== 'access') throw",
    replace: 'if (false) throw',
    tests: ['src/modules/auth/auth.test.ts', 'src/modules/miniapps/miniapps.test.ts'],
    why: 'a download token cannot call the API',
  },
  {
    file: 'src/modules/auth/tokens.ts',
    find: "if (claims.exp !== undefined && claims.exp <= nowSeconds()) return { ok: false, reason: 'expired' }",
    replace: '',
    tests: ['src/modules/auth/auth.test.ts', ...runtimeTests],
    why: 'an expired token is refused, also when its verification is cached',
  },

  {
    file: 'src/modules/auth/service.ts',
    find: 'if (!hasActiveAdmin(db)) {',
    replace: 'if (false) {',
    tests: ['src/modules/auth/setup-required.test.ts'],
    why: 'no open door: register is 403 SETUP_REQUIRED until an administrator exists (decisions §13)',
  },
  {
    file: 'src/modules/auth/service.ts',
    find: 'const password = requirePassword(input.password, input.passwordMinLength)',
    replace: 'const password = requirePassword(input.password)',
    tests: ['src/modules/auth/setup-required.test.ts'],
    why: 'the operator\'s --password-min-length applies to every new account (decisions §13)',
  },
  {
    file: 'src/modules/auth/service.ts',
    find: 'if (!row || !matches) {',
    replace: 'if (!row) {',
    tests: ['src/modules/auth/auth.test.ts'],
    why: 'login: a wrong password is refused',
  },
  {
    file: 'src/modules/cli-sessions/service.ts',
    find: "if (session.status === 'pending') return { status: 'pending' as const }",
    replace: '',
    tests: ['src/modules/cli-sessions/cli-sessions.test.ts'],
    why: 'CLI login: a code nobody approved hands out no token',
  },
  {
    file: 'src/modules/cli-sessions/service.ts',
    find: "session.status === 'consumed' || ",
    replace: '',
    tests: ['src/modules/cli-sessions/cli-sessions.test.ts'],
    why: 'CLI login: an approved code hands out its token once',
  },

  // download-token scope (src/modules/runtime/service.ts): the cached fast path and the full path
  {
    file: 'src/modules/runtime/service.ts',
    find: 'claims.vid !== versionId || ',
    replace: '',
    tests: runtimeTests,
    why: 'download-token scope, fast path: a known token opens only its own version',
  },
  {
    file: 'src/modules/runtime/service.ts',
    find: '(claims.exp !== undefined && claims.exp * 1000 <= clock())',
    replace: 'false',
    tests: runtimeTests,
    why: 'download-token expiry, fast path: a known token stops working when it expires',
  },
  {
    file: 'src/modules/runtime/service.ts',
    find: 'if (verified.claims.vid !== versionId) {',
    replace: 'if (false) {',
    tests: runtimeTests,
    why: 'download-token scope, full path: a token of another version is 403 TOKEN_WRONG_VERSION',
  },
  {
    file: 'src/modules/runtime/service.ts',
    find: `const user = await userFromAccessToken(db, tokens, token)
    const facts = versionFacts(versionId)
    if (!facts || !canSeeMiniApp(db, user, facts.miniAppId)) throw versionNotFound(versionId)`,
    replace: `const user = await userFromAccessToken(db, tokens, token)
    const facts = versionFacts(versionId)
    if (!facts) throw versionNotFound(versionId)`,
    tests: runtimeTests,
    why: 'downloads with an access token: only members and admins, others 404',
  },
  {
    file: 'src/modules/runtime/service.ts',
    find: 'if (facts && facts.currentReleaseVersionId === facts.id) return { facts }',
    replace: 'if (facts) return { facts }',
    tests: runtimeTests,
    why: 'without a token the derived manifest paths answer the current release only',
  },

  {
    file: 'src/modules/runtime/service.ts',
    find: 'if (!app?.experiencePublic) {',
    replace: 'if (false) {',
    tests: ['src/modules/runtime/existing-clients.test.ts'],
    why: 'experience install without a token: only while the miniapp’s experiencePublic is on',
  },
  {
    file: 'src/modules/runtime/service.ts',
    find: "if (!app || !canSeeMiniApp(db, user, app.id)) throw new AppError(404, 'MINI_APP_NOT_FOUND'",
    replace: "if (!app) throw new AppError(404, 'MINI_APP_NOT_FOUND'",
    tests: ['src/modules/runtime/existing-clients.test.ts'],
    why: 'experience install with an access token: members and admins only, others 404',
  },

  // device ids (decisions §18, src/http/urls.ts, src/modules/insights/service.ts)
  {
    file: 'src/http/urls.ts',
    find: "return deviceIdPattern.test(value) && value !== '.' && value !== '..'",
    replace: "return value !== ''",
    tests: ['src/modules/runtime/device-id.test.ts', 'src/http/urls.test.ts'],
    why: 'device ids: only 1–200 of [A-Za-z0-9._:-], never "." or "..", on every endpoint (400 INVALID_DEVICE_ID)',
  },
  {
    file: 'src/http/urls.ts',
    find: "&& value !== '.' && value !== '..'",
    replace: '',
    tests: ['src/modules/runtime/device-id.test.ts', 'src/http/urls.test.ts'],
    why: 'device ids: "." and ".." would make device-scoped URLs resolve to another path',
  },
  {
    file: 'src/modules/insights/service.ts',
    find: 'if (event.deviceId !== undefined && !isDeviceId(event.deviceId)) {',
    replace: 'if (false) {',
    tests: ['src/modules/runtime/device-id.test.ts'],
    why: 'device ids: an event with a bad deviceId is refused on its own (INVALID_DEVICE_ID)',
  },
  // grants that end (decisions §18, src/modules/auth/grants.ts): a draft link dies with the authority it was handed out on
  {
    file: 'src/modules/auth/grants.ts',
    find: 'holder.generation !== (claims.ug ?? 0)',
    replace: 'false',
    tests: draftLinkTests,
    why: 'grants that end: a draft link stops when its user leaves the miniapp (their grant generation moved)',
  },
  {
    file: 'src/modules/auth/grants.ts',
    find: 'issuer.revoked || ',
    replace: '',
    tests: draftLinkTests,
    why: 'grants that end: a draft link handed out through an API key stops when the key is revoked',
  },
  {
    file: 'src/modules/auth/grants.ts',
    find: 'if (!open) return publicEnded()',
    replace: '',
    tests: ['src/modules/runtime/existing-clients.test.ts'],
    why: "grants that end: a draft link from the public experience install stops when experiencePublic is turned off",
  },
  {
    file: 'src/modules/miniapps/service.ts',
    find: 'tx.update(users).set({ grantGeneration: bumpedGrantGeneration }).where(eq(users.id, userId)).run()',
    replace: '',
    tests: draftLinkTests,
    why: 'grants that end: removing a member ends the links handed out on their authority',
  },
  {
    file: 'src/modules/admin/service.ts',
    find: '...(revoke ? { grantGeneration: bumpedGrantGeneration } : {}),',
    replace: '',
    tests: draftLinkTests,
    why: 'grants that end: disabling a user ends their links for good (enabling them again brings none back)',
  },
  {
    file: 'src/modules/runtime/service.ts',
    find: 'if (grants.refusal(claims, clock()) !== null) return null',
    replace: '',
    tests: draftLinkTests,
    why: 'grants that end, fast path: a known download token is checked against its grant too',
  },
  {
    file: 'src/modules/versions/service.ts',
    find: 'expiresAt === null ? undefined : grant)',
    replace: 'undefined)',
    tests: draftLinkTests,
    why: 'grants that end: the workspace’s draft access links name the viewer’s grant',
  },

  // membership (src/modules/miniapps/service.ts): a miniapp the caller may not see is 404
  {
    file: 'src/modules/miniapps/service.ts',
    find: "if (user.role === 'ADMIN' || memberRole(db, user.id, row.id) !== null) return row",
    replace: 'return row',
    tests: ['src/modules/miniapps/miniapps.test.ts', 'src/modules/versions/lifecycle.test.ts'],
    why: 'membership: a non-member gets 404 for the miniapp and its versions',
  },
  {
    file: 'src/modules/miniapps/service.ts',
    find: "if (user.role !== 'ADMIN' && memberRole(db, user.id, row.id) === null) throw missing",
    replace: '',
    tests: ['src/modules/versions/upload.test.ts'],
    why: 'membership: a non-member cannot upload by appId (404)',
  },
  {
    file: 'src/modules/miniapps/service.ts',
    find: "if (user.role !== 'ADMIN' && memberRole(db, user.id, row.id) !== 'OWNER') {",
    replace: 'if (false) {',
    tests: ['src/modules/miniapps/miniapps.test.ts'],
    why: 'only owners and admins manage members (403 OWNER_REQUIRED)',
  },
  {
    file: 'src/app.ts',
    find: 'findVisibleMiniApp(input.db, caller, idOrAppId)?.id ?? null',
    replace: "findVisibleMiniApp(input.db, { ...caller, role: 'ADMIN', apiKey: undefined }, idOrAppId)?.id ?? null",
    tests: ['src/modules/miniapps/app-id-paths.test.ts'],
    why: "membership: a non-member's 404 for an existing appId names what was sent, not the miniapp's UUID (App IDs cannot be probed)",
  },

  // archive entry checks (src/modules/versions/archive.ts)
  {
    file: 'src/modules/versions/archive.ts',
    find: "if (segments.includes('..')) return",
    replace: 'if (false) return',
    tests: ['src/modules/versions/archive.test.ts', 'src/modules/versions/upload.test.ts'],
    why: 'archive entries: no path that leaves its folder (..)',
  },
  {
    file: 'src/modules/versions/archive.ts',
    find: "if (name.startsWith('/') || /^[A-Za-z]:/.test(name) || name.startsWith('\\\\')) return",
    replace: 'if (false) return',
    tests: ['src/modules/versions/archive.test.ts', 'src/modules/versions/upload.test.ts'],
    why: 'archive entries: no absolute path',
  },
  {
    file: 'src/modules/versions/archive.ts',
    find: 'if (type === TYPE_LINK) return `contains a symbolic link',
    replace: 'if (type === TYPE_LINK) return null; if (false) return `contains a symbolic link',
    tests: ['src/modules/versions/archive.test.ts', 'src/modules/versions/upload.test.ts'],
    why: 'archive entries: no symbolic link, whatever "made by" says',
  },
  {
    file: 'src/modules/versions/archive.ts',
    find: 'if (!localName.equals(entry.rawName)) {',
    replace: 'if (false) {',
    tests: ['src/modules/versions/archive.test.ts'],
    why: 'archive entries: the local header names what the central directory names (Java reads the local one)',
  },
  {
    file: 'src/modules/versions/archive.ts',
    find: 'const problem = entryNameProblem(name, platform) ?? unicodePathProblem(fields, platform) ?? typeProblem(',
    replace: 'const problem = entryNameProblem(name, platform) ?? typeProblem(',
    tests: ['src/modules/versions/archive.test.ts'],
    why: 'archive entries: a name hidden in the Unicode Path extra field (0x7075) is checked too',
  },
  {
    file: 'src/modules/versions/archive.ts',
    find: 'if (end.entryCount > limits.maxEntries) return',
    replace: 'if (false) return',
    tests: ['src/modules/versions/archive.test.ts'],
    why: 'archive limits: at most maxEntries entries, refused before they are read',
  },
  {
    file: 'src/modules/versions/archive.ts',
    find: 'if (values.size >= ratioFloorBytes && values.size > values.packedSize * limits.maxCompressionRatio) {',
    replace: 'if (false) {',
    tests: ['src/modules/versions/archive.test.ts'],
    why: 'archive limits: an entry that unpacks past the compression ratio is refused',
  },
  {
    file: 'src/modules/versions/archive.ts',
    find: 'if (!allowedTop[platform].test(first)) return',
    replace: 'if (false) return',
    tests: ['src/modules/versions/archive.test.ts', 'src/modules/versions/upload.test.ts'],
    why: 'archive entries: only the platform’s folders',
  },

  // the lifecycle table (src/modules/versions/lifecycle.ts): one forbidden cell allowed at a time
  {
    file: 'src/modules/versions/lifecycle.ts',
    find: "upload: { DRAFT: 'DRAFT', IN_REVIEW: 'DRAFT' },",
    replace: "upload: { DRAFT: 'DRAFT', IN_REVIEW: 'DRAFT', PUBLISHED: 'DRAFT' },",
    tests: ['src/modules/versions/lifecycle.test.ts'],
    why: 'lifecycle: a published version cannot be replaced by an upload',
  },
  {
    file: 'src/modules/versions/lifecycle.ts',
    find: "review: { DRAFT: 'IN_REVIEW', IN_REVIEW: 'IN_REVIEW' },",
    replace: "review: { DRAFT: 'IN_REVIEW', IN_REVIEW: 'IN_REVIEW', PUBLISHED: 'IN_REVIEW' },",
    tests: ['src/modules/versions/lifecycle.test.ts'],
    why: 'lifecycle: a published version cannot go back to review',
  },
  {
    file: 'src/modules/channels/service.ts',
    find: 'if (live.some((row) => row.versionId === version.id)) {',
    replace: 'if (false) {',
    tests: ['src/modules/versions/lifecycle.test.ts', 'src/modules/channels/channels.test.ts'],
    why: 'publish: a version live in a channel is not released into it again (409)',
  },
  {
    file: 'src/modules/versions/lifecycle.ts',
    find: "rollback: { PUBLISHED: 'PUBLISHED' },",
    replace: "rollback: { PUBLISHED: 'PUBLISHED', DRAFT: 'DRAFT' },",
    tests: ['src/modules/versions/lifecycle.test.ts'],
    why: 'lifecycle: only a published version can be rolled back to',
  },
  {
    file: 'src/modules/versions/lifecycle.ts',
    find: 'delete: { DRAFT: deleted, IN_REVIEW: deleted },',
    replace: 'delete: { DRAFT: deleted, IN_REVIEW: deleted, PUBLISHED: deleted },',
    tests: ['src/modules/versions/lifecycle.test.ts'],
    why: 'lifecycle: a published version is kept for rollback, never deleted',
  },

  // rate limits (src/http/rate-limit.ts)
  {
    file: 'src/http/rate-limit.ts',
    find: 'if (times.length >= perMinute) {',
    replace: 'if (times.length > perMinute) {',
    tests: ['src/modules/auth/auth.test.ts', 'src/modules/cli-sessions/cli-sessions.test.ts'],
    why: 'rate limit: the request past the budget is refused, not the one after it',
  },
  {
    file: 'src/http/rate-limit.ts',
    find: 'if (!enabled) return',
    replace: 'return',
    tests: ['src/modules/auth/auth.test.ts', 'src/modules/cli-sessions/cli-sessions.test.ts'],
    why: 'rate limit: login, register and device sessions are limited at all',
  },

  // restore (src/backup/restore.ts): every file of the archive is checked against backup.json
  {
    file: 'src/backup/restore.ts',
    find: 'if (actual.sha256 !== listed.sha256) throw',
    replace: 'if (false) throw',
    tests: ['src/backup/backup.test.ts'],
    why: 'restore: a file whose sha256 is not the one backup.json lists is refused (secret, database)',
  },
  {
    file: 'src/backup/restore.ts',
    find: 'if (actual.size !== listed.size) throw',
    replace: 'if (false) throw',
    tests: ['src/backup/backup.test.ts'],
    why: 'restore: a file whose size is not the one backup.json lists is refused',
  },
  {
    file: 'src/backup/restore.ts',
    find: 'if (manifest) checkEntry(entry.name, hashed, listed.get(entry.name))',
    replace: 'void manifest',
    tests: ['src/backup/backup.test.ts'],
    why: 'restore: damaged files are refused while reading, before anything is written',
  },
  {
    file: 'src/backup/restore.ts',
    find: 'if (!isArchivePath(entry.name)) throw',
    replace: 'if (false) throw',
    tests: ['src/backup/backup.test.ts'],
    why: 'restore: an archive entry that is not ours (a path outside the layout) is refused',
  },

  // range parsing (src/http/range.ts)
  {
    file: 'src/http/range.ts',
    find: "if (start >= size) return 'unsatisfiable'",
    replace: "if (start > size) return 'unsatisfiable'",
    tests: ['src/http/range.test.ts', 'src/modules/runtime/files.test.ts'],
    why: 'range: a range starting at the end of the file is 416',
  },
  {
    file: 'src/http/range.ts',
    find: "if (end < start) return 'unsatisfiable'",
    replace: '',
    tests: ['src/http/range.test.ts', 'src/modules/runtime/files.test.ts'],
    why: 'range: a reversed range is 416',
  },
  {
    file: 'src/http/range.ts',
    find: 'return { start, end: Math.min(end, size - 1) }',
    replace: 'return { start, end }',
    tests: ['src/http/range.test.ts', 'src/modules/runtime/files.test.ts'],
    why: 'range: a range past the end is cut at the last byte',
  },
  {
    file: 'src/http/range.ts',
    find: 'return { start: Math.max(0, size - length), end: size - 1 }',
    replace: 'return { start: size - length, end: size - 1 }',
    tests: ['src/http/range.test.ts', 'src/modules/runtime/files.test.ts'],
    why: 'range: a suffix longer than the file is the whole file',
  },
  // which release a device gets (src/modules/channels/decide.ts, decisions §10)
  {
    file: 'src/modules/channels/decide.ts',
    find: 'if (bucket === null || bucket >= newest.rolloutPercent) start = 1',
    replace: 'if (bucket === null || bucket > newest.rolloutPercent) start = 1',
    tests: ['src/modules/channels/decide.test.ts'],
    why: 'rollout: a device whose bucket equals the percent gets the previous release',
  },
  {
    file: 'src/db/write-watch.ts',
    find: '      watch.epoch++',
    replace: '',
    tests: ['src/db/write-watch.test.ts', 'src/modules/channels/channels.test.ts', ...runtimeTests],
    why: 'cache: a publish or rollback is seen by the next install-info answer, not a second later',
  },
  {
    file: 'src/modules/channels/decide.ts',
    find: 'return digestView.getUint32(0) % 100',
    replace: 'return digestView.getUint32(0, true) % 100',
    tests: ['src/modules/channels/decide.test.ts'],
    why: 'rollout: the bucket is the big-endian first 4 bytes of the sha256, as other tools compute it',
  },
  {
    file: 'src/modules/channels/decide.ts',
    find: "if (device.hostVersion === undefined || satisfies(device.hostVersion, candidate.hostVersionRange)) {",
    replace: 'if (true) {',
    tests: ['src/modules/channels/decide.test.ts', 'src/modules/channels/channels.test.ts'],
    why: 'targeting: a host app outside a release\'s range never gets it',
  },
  {
    file: 'src/modules/channels/decide.ts',
    find: 'mandatory = candidate.mandatory && ',
    replace: 'mandatory = false && ',
    tests: ['src/modules/channels/decide.test.ts', 'src/modules/channels/channels.test.ts'],
    why: 'mandatory: a mandatory release is never skipped silently by a later optional one',
  },
  {
    file: 'src/modules/channels/service.ts',
    find: "if (live.some((row) => row.versionId === version.id)) {",
    replace: 'if (false) {',
    tests: ['src/modules/channels/channels.test.ts'],
    why: 'channels: a version already live in a channel is not released there twice',
  },
  {
    file: 'src/modules/channels/service.ts',
    find: "if (!earlier && version.channel !== channel) {",
    replace: 'if (false) {',
    tests: ['src/modules/channels/channels.test.ts'],
    why: 'channels: rollback only to a version the channel served',
  },
  {
    file: 'src/http/urls.ts',
    find: '    if (!hostPattern.test(host)) {',
    replace: '    if (false) {',
    tests: ['src/http/urls.test.ts', 'src/modules/runtime/existing-clients.test.ts'],
    why: 'origins: a Host header that is not a host name never reaches a URL handed to phones',
  },
  {
    file: 'src/http/rate-limit.ts',
    find: "return `${address.parts.slice(0, 4).map((part) => part.toString(16)).join(':')}::/64`",
    replace: 'return key',
    tests: ['src/modules/auth/auth.test.ts'],
    why: "rate limits: an IPv6 client's /64 spends one budget, not one per address",
  },
  // API keys (src/modules/api-keys/service.ts, src/modules/miniapps/service.ts)
  {
    file: 'src/modules/api-keys/service.ts',
    find: 'if (scope !== null && !scopes.includes(scope)) {',
    replace: 'if (false) {',
    tests: ['src/modules/api-keys/api-keys.test.ts'],
    why: 'API keys: a key calls only what its scopes allow (403 SCOPE_REQUIRED)',
  },
  {
    file: 'src/modules/api-keys/service.ts',
    find: "if (row.revokedAt !== null) throw new AppError(401, 'API_KEY_REVOKED'",
    replace: "if (false) throw new AppError(401, 'API_KEY_REVOKED'",
    tests: ['src/modules/api-keys/api-keys.test.ts'],
    why: 'API keys: a revoked key stops working at once',
  },
  {
    file: 'src/modules/api-keys/service.ts',
    find: 'if (row.expiresAt !== null && Date.parse(row.expiresAt) <= now) {',
    replace: 'if (false) {',
    tests: ['src/modules/api-keys/api-keys.test.ts'],
    why: 'API keys: an expired key is refused',
  },
  {
    file: 'src/modules/api-keys/service.ts',
    find: "if (row.status !== 'ACTIVE') throw new AppError(401, 'API_KEY_OWNER_DISABLED'",
    replace: "if (false) throw new AppError(401, 'API_KEY_OWNER_DISABLED'",
    tests: ['src/modules/api-keys/api-keys.test.ts'],
    why: "API keys: a disabled owner's keys stop working",
  },
  {
    file: 'src/modules/miniapps/service.ts',
    find: 'return allowed === undefined || allowed === null || allowed.includes(miniAppId)',
    replace: 'return true',
    tests: ['src/modules/api-keys/api-keys.test.ts'],
    why: 'API keys: a key restricted to some mini apps sees no other (404)',
  },
  {
    file: 'src/modules/insights/index.ts',
    find: "auth: 'read',",
    replace: "auth: 'any-key',",
    tests: ['src/modules/api-keys/api-keys.test.ts'],
    why: 'API keys: insights take the read scope, no other (403 SCOPE_REQUIRED)',
  },
  // webhooks (src/modules/webhooks/, decisions §16): where deliveries may go, and their signature
  {
    file: 'src/modules/webhooks/service.ts',
    find: '  limit(row.id)\n',
    replace: '\n',
    tests: ['src/modules/webhooks/webhooks.test.ts'],
    why: 'webhook test deliveries: 5 a minute per webhook, then 429 (each is retried six times: no unbounded posting)',
  },
  {
    file: 'src/modules/webhooks/address.ts',
    find: '`${url.hostname} resolves to an address that is not public: ${privateAdvice}`',
    replace: '`${url.hostname} resolves to ${address}, which is not public: ${privateAdvice}`',
    tests: ['src/modules/webhooks/webhooks.test.ts'],
    why: "webhook address refusal: a name's resolved private address is not told (creation is no DNS lookup of internal names)",
  },
  {
    file: 'src/modules/webhooks/address.ts',
    find: "return parsed.range() === 'unicast'",
    replace: 'return true',
    tests: ['src/modules/webhooks/webhooks.test.ts'],
    why: 'webhook address rule: loopback, private, link-local, unique-local, CGNAT, metadata and the like are refused',
  },
  {
    file: 'src/modules/webhooks/address.ts',
    find: 'if (v6.isIPv4MappedAddress()) return isPublicAddress(v6.toIPv4Address().toString())',
    replace: '',
    tests: ['src/modules/webhooks/webhooks.test.ts'],
    why: 'webhook address rule: an IPv4-mapped IPv6 address is judged by the IPv4 address it carries',
  },
  {
    file: 'src/modules/webhooks/address.ts',
    find: 'if (parts[0] === 0 && parts[1] === 0 && parts[2] === 0 && parts[3] === 0 && parts[4] === 0 && parts[5] === 0) return false',
    replace: '',
    tests: ['src/modules/webhooks/webhooks.test.ts'],
    why: 'webhook address rule: the deprecated IPv4-compatible IPv6 form ::a.b.c.d is refused (ipaddr.js calls it unicast)',
  },
  {
    file: 'src/modules/webhooks/service.ts',
    find: 'if (!(error as { unresolved?: boolean }).unresolved) throw error',
    replace: 'void error',
    tests: ['src/modules/webhooks/webhooks.test.ts'],
    why: 'webhook address rule at creation: a refused URL is 400 WEBHOOK_URL_NOT_ALLOWED',
  },
  {
    file: 'src/modules/webhooks/service.ts',
    find: 'throw new Error(`refused: ${(error as Error).message}`)',
    replace: 'void error',
    tests: ['src/modules/webhooks/webhooks.test.ts'],
    why: 'webhook address rule again at delivery, after DNS: a name that resolves to loopback gets nothing',
  },
  {
    file: 'src/modules/webhooks/service.ts',
    find: "redirect: 'manual',",
    replace: "redirect: 'follow',",
    tests: ['src/modules/webhooks/webhooks.test.ts'],
    why: 'webhook deliveries follow no redirect (it could lead past the address rule)',
  },
  {
    file: 'src/modules/webhooks/service.ts',
    find: "return message.replace(/\\b(https?:\\/\\/[^\\s\"'/?#]+)[^\\s\"']*/gi, '$1')",
    replace: 'return message',
    tests: ['src/modules/webhooks/webhooks.test.ts'],
    why: "webhook failures name no URL path or query (a Slack webhook's path is its credential) in the server log or the deliveries list",
  },
  {
    file: 'src/modules/webhooks/service.ts',
    find: 'origin: url.origin, events, format',
    replace: 'origin: url.href, events, format',
    tests: ['src/modules/webhooks/webhooks.test.ts'],
    why: "the audit log names a webhook by its URL's origin, not its path (a Slack webhook's credential)",
  },
  {
    file: 'src/modules/webhooks/service.ts',
    find: "createHmac('sha256', secret).update(body, 'utf8').digest('hex')",
    replace: "createHmac('sha256', 'not-the-secret').update(body, 'utf8').digest('hex')",
    tests: ['src/modules/webhooks/webhooks.test.ts'],
    why: 'webhook signature: HMAC-SHA256 of the raw body with the webhook\'s secret',
  },
  {
    file: 'src/modules/webhooks/service.ts',
    find: "user.role !== 'ADMIN' && memberRole(db, user.id, row.id) !== 'OWNER'",
    replace: 'false',
    tests: ['src/modules/webhooks/webhooks.test.ts'],
    why: 'webhooks are managed by the miniapp\'s owners and administrators only',
  },
  // signed releases (decisions §14)
  {
    file: 'src/modules/signing/service.ts',
    find: 'if (!verify(null, utf8Bytes(statement), publicKey, value)) {',
    replace: 'if (false) {',
    tests: signingTests,
    why: 'signing: a signature that does not verify over the statement of the stored files is refused',
  },
  {
    file: 'src/modules/signing/keys.ts',
    find: "if (point.isSmallOrder() || !point.isTorsionFree()) return 'is a weak",
    replace: "if (false) return 'is a weak",
    tests: signingTests,
    why: 'signing: a small- or mixed-order public key (under which anyone forges signatures) is not trusted',
  },
  {
    file: 'src/modules/signing/keys.ts',
    find: 'point = Point.fromBytes(raw, false)',
    replace: 'point = (() => { try { return Point.fromBytes(raw, false) } catch { return Point.BASE } })()',
    tests: signingTests,
    why: 'signing: 32 bytes that are no point of the curve are not a public key',
  },
  {
    file: 'src/cli/doctor.ts',
    find: 'return unsound === null ? [] : [`signing key',
    replace: 'return true ? [] : [`signing key',
    tests: ['src/cli/doctor.test.ts'],
    why: 'doctor: a trusted signing key stored before weak keys were refused is named',
  },
  {
    file: 'src/client/keys.ts',
    find: 'if (unsound !== null) throw new CliError(2, `The public key ${unsound}`)',
    replace: 'if (false) throw new CliError(2, `The public key ${unsound}`)',
    tests: ['src/client/verify.test.ts'],
    why: 'miniship verify: a --public-key under which anyone can sign (small order, no point) is refused',
  },
  {
    file: 'src/sdk/crypto.ts',
    find: 'return !Point.fromBytes(raw, false).isSmallOrder()',
    replace: 'return true',
    tests: ['src/sdk/sdk.test.ts'],
    why: 'update client: a pinned key of small order (anyone can sign for it) or no point of the curve is INVALID_OPTION',
  },
  {
    file: 'src/modules/versions/service.ts',
    find: "requireSignedIfRequired(current, rollbackSignature !== undefined, 'publish', row.version)",
    replace: '',
    tests: signingTests,
    why: 'signing: under requireSignature a rollback to an unsigned version is refused',
  },
  {
    file: 'src/modules/versions/service.ts',
    find: 'if (rollbackSignature) requireUsableKey(tx, app.id, rollbackSignature.keyId, { appId: app.appId, version: row.version })',
    replace: '',
    tests: signingTests,
    why: 'signing: a rollback to a version signed by a revoked key is refused',
  },
  {
    file: 'src/modules/signing/service.ts',
    find: 'if (row.revokedAt) {\n    const how',
    replace: 'if (false) {\n    const how',
    tests: signingTests,
    why: 'signing: a revoked key signs nothing (upload, signing later, publish)',
  },
  {
    file: 'src/modules/signing/service.ts',
    find: 'const row = db.select().from(signingKeys).where(and(eq(signingKeys.miniAppId, miniAppId), eq(signingKeys.keyId, keyId))).get()',
    replace: 'const row = db.select().from(signingKeys).where(eq(signingKeys.keyId, keyId)).get()',
    tests: signingTests,
    why: "signing: a key is trusted only by the mini app it was added to",
  },
  {
    file: 'src/modules/signing/service.ts',
    find: 'if (!app.requireSignature || signed) return',
    replace: 'return',
    tests: signingTests,
    why: 'signing: requireSignature refuses unsigned uploads and the publish of unsigned versions',
  },
  {
    file: 'src/modules/signing/service.ts',
    find: "if (user.role !== 'ADMIN' && memberRole(db, user.id, row.id) !== 'OWNER') {",
    replace: 'if (false) {',
    tests: signingTests,
    why: 'signing: only owners and admins add and revoke signing keys',
  },
  {
    file: 'src/modules/miniapps/service.ts',
    find: "throw new AppError(403, 'OWNER_REQUIRED', 'Only owners of this miniapp and administrators may change requireSignature')",
    replace: '{}',
    tests: signingTests,
    why: 'signing: only owners and admins switch requireSignature',
  },
  {
    file: 'src/modules/versions/service.ts',
    find: "const signature = input.signature && verifySignature(db, miniApp.id, input.signature.keyId, input.signature.value, statementOf(miniApp.appId, input.version, input.files))",
    replace: "const signature = input.signature && { keyId: input.signature.keyId, value: input.signature.value, statement: statementOf(miniApp.appId, input.version, input.files) }",
    tests: signingTests,
    why: 'signing: an upload\'s signature is checked before the version exists',
  },
  {
    file: 'src/modules/api-keys/service.ts',
    find: '    deps.failures.check(address)\n',
    replace: '',
    tests: ['src/modules/api-keys/key-guessing.test.ts'],
    why: 'API keys: an address that used up its failed authentications is refused (429 RATE_LIMITED), good key or not',
  },
  {
    file: 'src/modules/api-keys/service.ts',
    find: 'if (error instanceof AppError && authenticationFailures.has(error.code)) deps.failures.failed(address)',
    replace: '',
    tests: ['src/modules/api-keys/key-guessing.test.ts'],
    why: 'API keys: each failed authentication counts against its address',
  },
  // the release guard (decisions §15): the events endpoint is public, so devices are counted, not events
  {
    file: 'src/modules/channels/guard.ts',
    find: 'const digest = hashDevice(deviceId)',
    replace: 'const digest = hashDevice(`${deviceId}:${Math.random()}`)',
    tests: ['src/modules/channels/guard.test.ts'],
    why: "the guard's distinct-device count: one device sending 50 failed events counts once and cannot pause a rollout",
  },
  // the update client on phones (src/sdk/index.ts): what it installs is what was published and signed
  {
    file: 'src/sdk/index.ts',
    find: "if (digest != expected.sha256.toLowerCase()) throw",
    replace: 'if (false) throw',
    tests: ['src/sdk/sdk.test.ts'],
    why: 'update client: a file whose sha256 differs from install info is refused (SHA256_MISMATCH)',
  },
  {
    file: 'src/sdk/index.ts',
    find: 'if (received !== expected.size) throw',
    replace: 'if (false) throw',
    tests: ['src/sdk/sdk.test.ts'],
    why: 'update client: a file shorter than install info says is refused (SIZE_MISMATCH)',
  },
  {
    file: 'src/sdk/index.ts',
    find: "if (!signature) throw new UpdateError('SIGNATURE_REQUIRED'",
    replace: "if (!signature) return; if (false) throw new UpdateError('SIGNATURE_REQUIRED'",
    tests: ['src/sdk/sdk.test.ts'],
    why: 'update client: with pinned keys an unsigned update is refused (SIGNATURE_REQUIRED)',
  },
  {
    file: 'src/sdk/index.ts',
    find: '    if (!options.trustedKeys) return',
    replace: '    if (!trustedKeys.length) return',
    tests: ['src/sdk/sdk.test.ts'],
    why: 'update client: trustedKeys given but empty trusts no key (it does not turn signature checks off)',
  },
  {
    file: 'src/sdk/index.ts',
    find: 'if (!valid) throw invalid(',
    replace: 'if (false) throw invalid(',
    tests: ['src/sdk/sdk.test.ts'],
    why: 'update client: a signature no pinned key made is refused (SIGNATURE_INVALID)',
  },
  {
    file: 'src/sdk/index.ts',
    find: 'statement.appId !== options.appId || ',
    replace: '',
    tests: ['src/sdk/sdk.test.ts'],
    why: "update client: a signed statement of another app is refused",
  },
  {
    file: 'src/sdk/index.ts',
    find: "if (statement.files[kind] != install.files[kind]!.sha256.toLowerCase()) throw",
    replace: 'if (false) throw',
    tests: ['src/sdk/sdk.test.ts'],
    why: 'update client: install info must name the digests the signed statement lists',
  },
  {
    file: 'src/sdk/index.ts',
    find: 'const back = outside(state.previous) ? null : state.previous',
    replace: 'const back = state.previous',
    tests: ['src/sdk/sdk.test.ts'],
    why: 'update client: a crash-loop rollback never goes back to an update made for another native host (§17)',
  },
  {
    file: 'src/sdk/index.ts',
    find: " && !(status > 499 || status == 429))) await quietly(record('failed'",
    replace: ")) await quietly(record('failed'",
    tests: ['src/sdk/sdk.test.ts'],
    why: 'update client: a download a server or CDN answered 5xx or 429 is no failed event (an outage must not make the release guard pause a good release)',
  },
  {
    file: 'src/sdk/index.ts',
    find: 'running[id] || (running[id] = download(update, downloadOptions)',
    replace: '(download(update, downloadOptions)',
    tests: ['src/sdk/sdk.test.ts'],
    why: 'update client: two download() of one update at once download and report installed once',
  },
  {
    file: 'src/modules/webhooks/address.ts',
    find: 'if (url.href.length > webhookUrlLimit) {',
    replace: 'if (false) {',
    tests: ['src/modules/webhooks/webhooks.test.ts'],
    why: 'webhooks: a URL longer than 2000 characters once percent-encoded (as stored and sent to) is refused',
  },
  {
    file: 'src/modules/channels/service.ts',
    find: 'textLength(input.reason) > pauseReasonMaxLength',
    replace: 'textLength(input.reason) < 0',
    tests: ['src/modules/channels/pause.test.ts'],
    why: 'rollout: a pause reason over 2000 characters (stored, listed with every channel and sent in webhooks) is refused',
  },
  {
    file: 'src/sdk/semver.ts',
    find: 'if (parsed[3].length == 0 || set.some(',
    replace: 'if (true || set.some(',
    tests: ['src/sdk/sdk.test.ts'],
    why: 'update client: a prerelease host (2.0.0-beta.1) is outside ">=1.0.0 <2", as the server judges it, so an old update never runs on it (§17)',
  },
  // the bucket never holds a release that is not live (decisions §18): what nothing keeps true any more goes
  {
    file: 'src/cli/serve.ts',
    find: 'if (mirror) return mirror.syncAll()',
    replace: 'return mirror?.syncAll()',
    tests: ['src/storage/s3.test.ts'],
    why: "release mirror: a serve with the mirror off removes the folders under releases/ (a rollback would not reach them)",
  },
  {
    file: 'src/modules/mirror/service.ts',
    find: 'return removeChannel(blobs, job.appId, channel, step)',
    replace: 'return',
    tests: ['src/storage/s3.test.ts'],
    why: 'release mirror: the folder of an appId no miniapp has (a restored older database) is removed at start',
  },
  {
    file: 'src/modules/auth/service.ts',
    find: 'if (length < minLength) throw invalidField',
    replace: 'if (length < 0) throw invalidField',
    tests: ['src/modules/auth/auth.test.ts', 'src/modules/auth/setup-required.test.ts'],
    why: 'passwords: shorter than the minimum (--password-min-length, counted in characters) is refused',
  },
  {
    file: 'src/sdk/index.ts',
    find: "if (!isText(file.sha256) || !/^[0-9a-f]{64}$/i.test(file.sha256)) throw",
    replace: 'if (false) throw',
    tests: ['src/sdk/sdk.test.ts'],
    why: 'update client: install info whose sha256 is no digest is refused before any download',
  },
  {
    file: 'src/modules/webhooks/service.ts',
    find: "if (delivery.status === 'delivered') return",
    replace: '',
    tests: ['src/modules/webhooks/webhooks.test.ts'],
    why: 'webhooks: a delivery the receiver took is never posted again (its success was recorded late, or a crash left its job)',
  },
  {
    file: 'src/modules/channels/index.ts',
    find: 'beforeResume: (miniAppId) => deps.releaseGuard.beforeResume(miniAppId, params.channel),',
    replace: '',
    tests: ['src/modules/channels/guard.test.ts'],
    why: 'release guard: a person who resumes holds it at every failing device reported so far, so it does not pause again at once for those',
  },
  {
    file: 'src/sdk/index.ts',
    find: 'if (wrapped != error || (',
    replace: 'if ((',
    tests: ['src/sdk/sdk.test.ts'],
    why: 'update client: only the storage adapter\'s refusals go unreported; anything else thrown in a download (a verifier that throws on a forged signature) is still reported failed',
  },
  {
    file: 'src/cli/doctor.ts',
    find: "`last error: ${trouble.lastError === null ? 'none recorded' : withoutUrlPaths(trouble.lastError)}`",
    replace: "`last error: ${trouble.lastError}`",
    tests: ['src/cli/doctor.test.ts'],
    why: 'doctor: a webhook URL\'s path (often its credential) in a stored delivery error never reaches its output',
  },
  {
    file: 'src/modules/channels/decide.ts',
    find: '(candidate.paused && !keepsPaused(appId, candidate, device))',
    replace: '(false)',
    tests: ['src/modules/channels/decide.test.ts', 'src/modules/channels/publish-over-pause.test.ts'],
    why: 'a paused release a fix was published over goes only to the devices that run it, not to every device outside the new rollout',
  },
  {
    file: 'src/modules/channels/decide.ts',
    find: '(candidate.rolloutPercent === 0 || (candidate.paused',
    replace: '(false || (candidate.paused',
    tests: ['src/modules/channels/decide.test.ts', 'src/modules/channels/publish-over-revert.test.ts'],
    why: 'a reverted release a fix was published over goes to no device: it does not come back to the devices outside the new rollout',
  },
  // release truth: what the console and the CLI say of a release matches what phones get
  {
    file: 'src/modules/channels/words.ts',
    find: 'if (channel.revertedReleases?.some((release) => release.versionId === versionId)) {',
    replace: 'if (false) {',
    tests: ['src/modules/channels/words.test.ts', 'src/modules/channels/publish-over-revert.test.ts'],
    why: 'a version reverted and then published over reads "reverted on <channel>", not "replaced", in versions ls and the console',
  },
  {
    file: 'src/modules/versions/service.ts',
    find: "if (paused) warnings.push({ code: 'ROLLBACK_CLEARS_PAUSE'",
    replace: "if (false) warnings.push({ code: 'ROLLBACK_CLEARS_PAUSE'",
    tests: ['src/modules/channels/rollback-to-paused.test.ts'],
    why: 'a rollback to a paused release below the newest warns that it clears the pause and sends it to every device',
  },
  {
    file: 'src/modules/channels/words.ts',
    find: 'const paused = (channel.pausedBelow ?? channel.pausedReleases)?.find(',
    replace: 'const paused = channel.pausedReleases?.find(',
    tests: ['src/modules/channels/rollback-to-paused.test.ts', 'src/modules/channels/words.test.ts'],
    why: "the Roll back… dialog names the pause a rollback clears wherever the paused release stands below the newest, as the answer's warning does",
  },
  {
    file: 'src/modules/channels/service.ts',
    find: 'if (change.rolloutPercent < change.previousPercent) return { lowerTo: change.rolloutPercent }',
    replace: 'if (false) return { lowerTo: change.rolloutPercent }',
    tests: ['src/modules/channels/fallback-signature.test.ts'],
    why: 'a lower rollout percent, which sends adopters outside it back to an unsigned fallback, warns FALLBACK_UNSIGNED as a pause does',
  },
  {
    file: 'web/rules.ts',
    find: 'if (channel.name !== undefined && version.releaseOf?.includes(channel.name)) return true',
    replace: 'if (false) return true',
    tests: ['web/publish-held.test.ts', 'web/rules.test.ts'],
    why: "the console offers Publish… into a channel only where the server takes the version: not where it is still a release far below the newest",
  },
  {
    file: 'src/modules/channels/service.ts',
    find: '.map((version) => ({ ...version, standings: versionStandings(version.versionId, records).filter((standing) => standing.live).map((standing) => standing.text) }))',
    replace: '.map((version) => ({ ...version, standings: versionStandings(version.versionId, records).map((standing) => standing.text) }))',
    tests: ['src/modules/signing/revoke-warnings.test.ts'],
    why: 'revoking a key warns LIVE_RELEASE_KEY_REVOKED only of the versions it signed that devices get now, not of one replaced',
  },
  {
    file: 'src/modules/signing/service.ts',
    find: 'const live = changed && liveSignedBy ? liveSignedBy(app.id, keyId) : []',
    replace: 'const live: { version: string; standings: string[] }[] = []',
    tests: ['src/modules/signing/revoke-warnings.test.ts', 'src/client/keys-revoke.test.ts'],
    why: 'revoking a key that signed what devices get now warns LIVE_RELEASE_KEY_REVOKED (host apps that drop the key refuse it)',
  },
  {
    file: 'src/backup/create.ts',
    find: 'for (const name of deadBackupStagings(paths.tmp)) rmSync(join(paths.tmp, name), { recursive: true, force: true })',
    replace: 'for (const name of [] as string[]) rmSync(join(paths.tmp, name), { recursive: true, force: true })',
    tests: ['src/backup/backup.test.ts'],
    why: "the next backup removes a killed backup's staging (a database copy with password hashes) from tmp/",
  },
  {
    file: 'src/client/sign.ts',
    find: 'if (!old || old.keyId === keyId || old.keyRevokedAt) return []',
    replace: 'return []',
    tests: ['src/client/sign.test.ts'],
    why: 'signing over a signature of another key still trusted warns SIGNATURE_REPLACED (host apps that pin only that key refuse the version)',
  },
  {
    file: 'src/modules/channels/words.ts',
    find: 'if (!revoked && (signature !== null || !app.requireSignature)) return null',
    replace: 'if (!revoked) return null',
    tests: ['src/modules/channels/words.test.ts', 'src/modules/channels/fallback-signature.test.ts'],
    why: 'a pause or revert whose fallback is unsigned while signatures are required warns FALLBACK_UNSIGNED',
  },
  {
    file: 'src/modules/versions/service.ts',
    find: "if (reverted) warnings.push({ code: 'ROLLBACK_OF_REVERTED'",
    replace: "if (false) warnings.push({ code: 'ROLLBACK_OF_REVERTED'",
    tests: ['src/modules/channels/rollback-to-paused.test.ts'],
    why: 'a rollback to a reverted release below the newest (which no device gets) warns that it sends it to every device',
  },
  {
    file: 'src/modules/channels/words.ts',
    find: ' || version.revertedIn?.includes(channel.name)) return rollbackOfRevertedText',
    replace: ') return rollbackOfRevertedText',
    tests: ['src/modules/channels/rollback-to-paused.test.ts'],
    why: "the Roll back… dialog warns of a reverted release a rollback withdrew since (the workspace's revertedIn), as the answer's ROLLBACK_OF_REVERTED does",
  },
  {
    file: 'src/modules/runtime/index.ts',
    find: 'if (subject !== null) counters.countUpdateCheck(subject,',
    replace: 'if (subject === undefined) counters.countUpdateCheck(subject,',
    tests: ['src/modules/insights/count-everything.test.ts'],
    why: 'an update check answered 404 (every release of the channel reverted) still counts the device under the version it runs: insights do not lose exactly those devices',
  },
  {
    file: 'src/modules/runtime/index.ts',
    find: "counters.countUpdateCheck(subject, query.channel || 'stable',",
    replace: "counters.countUpdateCheck(subject, query.channel ?? 'stable',",
    tests: ['src/modules/insights/count-everything.test.ts'],
    why: "an empty ?channel= counts as stable, as it is answered, not as a channel '' of its own",
  },
]

const root = resolve(import.meta.dir, '..')
/** A mutated run is stopped after this long (and counted CAUGHT: the tests did not pass). */
const timeoutMs = 180_000
const tty = process.stderr.isTTY === true

function occurrences(text: string, find: string): number {
  let count = 0
  for (let at = text.indexOf(find); at !== -1; at = text.indexOf(find, at + 1)) count++
  return count
}

/** Every problem with the list: files and tests that do not exist, `find` texts not there exactly once. */
function listProblems(list: Mutation[]): string[] {
  const problems: string[] = []
  for (const [index, mutation] of list.entries()) {
    const where = `mutation ${index + 1} (${mutation.why})`
    const path = join(root, mutation.file)
    if (!existsSync(path)) {
      problems.push(`${where}: ${mutation.file} does not exist`)
      continue
    }
    const count = occurrences(readFileSync(path, 'utf8'), mutation.find)
    if (count !== 1) problems.push(`${where}: its find text ${JSON.stringify(mutation.find)} occurs ${count} times in ${mutation.file}, not once`)
    if (mutation.find === mutation.replace) problems.push(`${where}: replace is the same as find`)
    if (mutation.tests.length === 0) problems.push(`${where}: names no test file`)
    for (const test of mutation.tests) if (!existsSync(join(root, test))) problems.push(`${where}: test file ${test} does not exist`)
  }
  return problems
}

/** The working tree (tracked and untracked, not ignored) copied into a temp directory, node_modules linked. */
function copyTree(): string {
  const listed = Bun.spawnSync(['git', 'ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: root })
  if (listed.exitCode !== 0) throw new Error(`git ls-files failed: ${listed.stderr.toString()}`)
  const copy = mkdtempSync(join(tmpdir(), 'miniship-mutation-'))
  for (const file of listed.stdout.toString().split('\0')) {
    if (file === '' || file === 'node_modules' || file.startsWith('node_modules/') || file.startsWith('dist/')) continue
    const from = join(root, file)
    if (!existsSync(from) || !statSync(from).isFile()) continue // deleted in the working tree, or a symbolic link to a folder
    mkdirSync(dirname(join(copy, file)), { recursive: true })
    copyFileSync(from, join(copy, file))
  }
  symlinkSync(realpathSync(join(root, 'node_modules')), join(copy, 'node_modules'))
  return copy
}

interface TestRun {
  passed: boolean
  timedOut: boolean
  /** the first `(fail)` line, or the last lines of output when there is none */
  firstFailure: string
  seconds: number
}

/** Runs `tests` in the copy; `bail` stops at the first failure (enough to call a mutation CAUGHT). */
/** The test run in progress (in its own process group), for an interrupt to stop. */
let running: ChildProcess | null = null

function stopGroup(child: ChildProcess): void {
  try {
    process.kill(-child.pid!, 'SIGKILL')
  } catch {
    child.kill('SIGKILL')
  }
}

function runTests(copy: string, tests: string[], bail: boolean): Promise<TestRun> {
  const started = performance.now()
  return new Promise((resolveRun) => {
    // bun 1.4.5 ignores bunfig's [test] timeout: without the flag a test gets 5 s, and on a busy
    // machine a slow (argon2) test would time out and count as catching the mutation
    const flags = ['--timeout', '60000', ...(bail ? ['--bail'] : [])]
    const child = spawn(process.execPath, ['test', ...flags, ...tests.map((test) => `./${test}`)], {
      cwd: copy,
      env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0', MINISHIP_BINARY: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    })
    running = child
    let output = ''
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()))
    let timedOut = false
    const timer = setTimeout(() => {
      timedOut = true
      stopGroup(child) // the test run and anything it started
    }, timeoutMs)
    child.on('close', (code) => {
      clearTimeout(timer)
      running = null
      const lines = output.split('\n')
      const failure = lines.find((line) => line.startsWith('(fail)'))
      resolveRun({
        passed: code === 0 && !timedOut,
        timedOut,
        firstFailure: failure ?? lines.filter((line) => line.trim() !== '').slice(-5).join(' | '),
        seconds: (performance.now() - started) / 1000,
      })
    })
  })
}

/**
 * On a terminal, one line that the next status or result overwrites, redrawn every second with the
 * time spent so far (a mutated run can take a minute); nothing when piped.
 */
let statusText: (() => string) | null = null
const statusTimer = tty ? setInterval(() => drawStatus(), 1000) : null
statusTimer?.unref()

function drawStatus(): void {
  if (tty && statusText) process.stderr.write(`\r\x1b[2K${statusText().slice(0, (process.stderr.columns ?? 100) - 1)}`)
}

function status(text: () => string): void {
  statusText = text
  drawStatus()
}

function clearStatus(): void {
  statusText = null
  if (tty) process.stderr.write('\r\x1b[2K')
}

async function main(): Promise<number> {
  const args = process.argv.slice(2)
  const listOnly = args.includes('--list')
  const filters = args.filter((arg) => !arg.startsWith('--')).map((arg) => arg.toLowerCase())
  const problems = listProblems(mutations)
  if (problems.length > 0) {
    for (const problem of problems) console.error(`ERROR ${problem}`)
    console.error(`mutation-check: ${problems.length} problem(s) with the list in scripts/mutation-check.ts; fix the entries (a find text must match the source exactly once)`)
    return 2
  }
  const chosen = filters.length === 0 ? mutations : mutations.filter((m) => filters.some((filter) => `${m.file} ${m.why}`.toLowerCase().includes(filter)))
  if (listOnly) {
    for (const m of chosen) console.log(`${m.file}: ${m.why}\n    ${JSON.stringify(m.find)} → ${JSON.stringify(m.replace)}\n    tests: ${m.tests.join(', ')}`)
    console.log(`${chosen.length} mutation(s); every find text matches once`)
    return 0
  }
  if (chosen.length === 0) {
    console.error(`mutation-check: no mutation matches ${filters.join(', ')}`)
    return 2
  }

  const started = performance.now()
  const elapsed = () => ((performance.now() - started) / 1000).toFixed(0)
  const copy = copyTree()
  // Ctrl-C: the test run sits in its own process group, so it is stopped here, and the copy removed
  process.once('SIGINT', () => {
    if (running) stopGroup(running)
    clearStatus()
    rmSync(copy, { recursive: true, force: true })
    console.error('mutation-check: interrupted')
    process.exit(130)
  })
  try {
    const allTests = [...new Set(chosen.flatMap((m) => m.tests))].sort()
    status(() => `unmutated: running ${allTests.length} test file(s)… ${elapsed()} s`)
    const baseline = await runTests(copy, allTests, false)
    clearStatus()
    if (!baseline.passed) {
      console.error(`mutation-check: the tests fail without any mutation, so they cannot tell a mutation apart: ${baseline.firstFailure}`)
      return 2
    }
    console.log(`unmutated: ${allTests.length} test file(s) pass (${baseline.seconds.toFixed(1)} s)`)

    const missed: Mutation[] = []
    for (const [index, mutation] of chosen.entries()) {
      const path = join(copy, mutation.file)
      const original = readFileSync(path, 'utf8')
      writeFileSync(path, original.replace(mutation.find, () => mutation.replace))
      status(() => `[${index + 1}/${chosen.length}] ${elapsed()} s  ${mutation.why}`)
      let run: TestRun
      try {
        run = await runTests(copy, mutation.tests, true)
      } finally {
        writeFileSync(path, original)
      }
      clearStatus()
      const verdict = run.passed ? 'MISSED' : 'CAUGHT'
      if (run.passed) missed.push(mutation)
      const detail = run.passed ? `no test in ${mutation.tests.join(', ')} failed` : run.timedOut ? `the tests did not finish within ${timeoutMs / 1000} s` : run.firstFailure
      console.log(`${verdict} [${index + 1}/${chosen.length}] ${mutation.why} (${mutation.file}, ${run.seconds.toFixed(1)} s)\n    ${detail}`)
    }
    const seconds = ((performance.now() - started) / 1000).toFixed(0)
    if (missed.length > 0) {
      console.log(`\n${missed.length} of ${chosen.length} mutation(s) MISSED in ${seconds} s: no test noticed these rules broken:`)
      for (const m of missed) console.log(`  ${m.file}: ${m.why}`)
      return 1
    }
    console.log(`\nall ${chosen.length} mutation(s) CAUGHT in ${seconds} s`)
    return 0
  } finally {
    rmSync(copy, { recursive: true, force: true })
  }
}

process.exitCode = await main()
