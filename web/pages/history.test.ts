// Who the console's release history names for an entry.
import { expect, test } from 'bun:test'
import { historyActor, historyLine, pausedByName } from './history.ts'

test("a pause the release guard made (no person) is the release guard's, not someone's; a person's entry is theirs", () => {
  expect(historyActor({ actor: null, notes: 'paused by release-guard: 12 of 140 devices failed (8.6 %)' })).toBe('the release guard')
  expect(historyActor({ actor: { id: 'u', email: 'ana@example.test', displayName: 'Ana' }, notes: 'paused by ana@example.test: crash' })).toBe('Ana (ana@example.test)')
  expect(historyActor({ actor: null, notes: null })).toBe('someone')
})

test('a publish in the history goes to its channel, as the notice and the CLI say it ("to beta", not "on beta")', () => {
  const names: Record<string, string> = { v0: '1.0.0' }
  const rc = { versionName: (id: string) => names[id] ?? null }
  const entry = { action: 'PUBLISH', version: '1.1.0', channel: 'beta', rolloutPercent: 10, previousVersionId: 'v0', notes: null } as unknown as Parameters<typeof historyLine>[0]
  expect(historyLine(entry, rc)).toBe('Published 1.1.0 to beta at 10 % (replacing 1.0.0)')
  expect(historyLine({ ...entry, rolloutPercent: 100, previousVersionId: null }, rc)).toBe('Published 1.1.0 to beta')
})

test('the paused card names who paused as History does: display name with email, or the release guard', () => {
  const ana = { id: 'u', email: 'ana@example.test', displayName: 'Ana' }
  const history = [
    { action: 'ROLLOUT' as const, versionId: 'v1', channel: 'beta', actor: ana, notes: 'paused by ana@example.test: crash' },
    { action: 'ROLLOUT' as const, versionId: 'v1', channel: 'stable', actor: { ...ana, displayName: 'Not this one' }, notes: 'paused by ana@example.test' },
  ]
  expect(pausedByName('beta', { versionId: 'v1', pausedBy: 'ana@example.test' }, history)).toBe(historyActor(history[0]!))
  expect(pausedByName('beta', { versionId: 'v1', pausedBy: 'ana@example.test' }, history)).toBe('Ana (ana@example.test)')
  expect(pausedByName('beta', { versionId: 'v1', pausedBy: 'release-guard' }, [])).toBe(historyActor({ actor: null, notes: 'paused by release-guard: 12 of 140 devices failed (8.6 %)' }))
  // the pause is not in the history at hand: the server's words
  expect(pausedByName('beta', { versionId: 'v2', pausedBy: 'ana@example.test' }, history)).toBe('ana@example.test')
})

test('a pause or resume made with an API key is the key\'s, in the words the CLI and the audit log use, not its owner\'s as if by hand', () => {
  const owner = { id: 'u', email: 'ana@example.test', displayName: 'Ana' }
  const paused = { action: 'ROLLOUT' as const, versionId: 'v1', channel: 'stable', actor: owner, notes: 'paused by API key "ci: nightly" of ana@example.test: crash on Android 9' }
  expect(historyActor(paused)).toBe('API key "ci: nightly" of ana@example.test')
  expect(historyActor({ actor: owner, notes: 'resumed by API key "GitHub Actions" of ana@example.test' })).toBe('API key "GitHub Actions" of ana@example.test')
  // the channel card says what `miniship channels ls` says: "Paused by API key "…" of ana@example.test"
  expect(pausedByName('stable', { versionId: 'v1', pausedBy: 'API key "ci: nightly" of ana@example.test' }, [paused])).toBe('API key "ci: nightly" of ana@example.test')
  expect(pausedByName('stable', { versionId: 'v1', pausedBy: 'API key "ci: nightly" of ana@example.test' }, [])).toBe('API key "ci: nightly" of ana@example.test')
})

test('a publish, rollout change or rollback made with an API key is the key\'s (the server names it in apiKey), not its owner\'s', () => {
  const owner = { id: 'u', email: 'ana@example.test', displayName: 'Ana' }
  expect(historyActor({ actor: owner, apiKey: { name: 'GitHub Actions' }, notes: 'from CI' })).toBe('API key "GitHub Actions" of ana@example.test')
  expect(historyActor({ actor: owner, apiKey: null, notes: null })).toBe('Ana (ana@example.test)')
  // an older server sends no apiKey: the person
  expect(historyActor({ actor: owner, notes: null })).toBe('Ana (ana@example.test)')
})
