// Who the console's release history names for an entry.
import { expect, test } from 'bun:test'
import { historyActor, historyLine } from './history.ts'

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
