// The README's sample output is what the program prints: the status line of a channel rolling out, and push's lines.
import { expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describeChannel } from '../client/status'
import { repoRoot } from './sources'

const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8')
const release = (versionId: string, version: string, rolloutPercent: number) => ({ versionId, version, rolloutPercent, hostVersionRange: null, mandatory: false, releasedAt: '' })

test('step 4: the status line is what status prints for 1.1.0 rolling out to 10 % over 1.0.0', () => {
  const channel = { name: 'stable', state: 'rolling-out' as const, release: release('b', '1.1.0', 10), previousRelease: release('a', '1.0.0', 100) }
  expect(readme).toContain(`\n  channel stable       ${describeChannel(channel)}\n`)
})

test('every sample of push --publish has the Uploaded line push prints before Published', () => {
  const published = [...readme.matchAll(/^Published (\S+) (\S+) to .*$/gm)]
  expect(published.length).toBeGreaterThan(0)
  for (const match of published) {
    const before = readme.slice(0, match.index).trimEnd().split('\n').at(-1)
    expect(before).toMatch(new RegExp(`^Uploaded ${match[1]!.replace(/\./g, '\\.')} ${match[2]!.replace(/\./g, '\\.')} \\(build \\d+, DRAFT\\), version id [0-9a-f-]{36}\\.$`))
  }
})

test('the README stays a landing page: at most 200 lines (the rest is in docs/)', () => {
  expect(readme.trimEnd().split('\n').length).toBeLessThanOrEqual(200)
})

// issue 30: the request log is buffered, and the README says what a crash can lose (createLogSink's flush interval)
test('the README says a stop loses no request-log line and a crash at most the last 100 ms', () => {
  const text = readme.replace(/\s+/g, ' ')
  expect(text).toContain('a stop by SIGTERM or SIGINT loses no line, a crash at most the last 100 ms of them')
})
