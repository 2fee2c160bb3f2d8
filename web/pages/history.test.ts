// Who the console's release history names for an entry.
import { expect, test } from 'bun:test'
import { historyActor } from './history.ts'

test("a pause the release guard made (no person) is the release guard's, not someone's; a person's entry is theirs", () => {
  expect(historyActor({ actor: null, notes: 'paused by release-guard: 12 of 140 devices failed (8.6 %)' })).toBe('the release guard')
  expect(historyActor({ actor: { id: 'u', email: 'ana@example.test', displayName: 'Ana' }, notes: 'paused by ana@example.test: crash' })).toBe('Ana (ana@example.test)')
  expect(historyActor({ actor: null, notes: null })).toBe('someone')
})
