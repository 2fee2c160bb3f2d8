// What `serve --help` says of its settings matches what they do.
import { expect, test } from 'bun:test'
import { defaultRateLimits } from '../config'
import { runCli } from './test-run'

test('--rate-limit names everything it limits (every limit --rate-limits sets), not only login, register and device sessions', async () => {
  const help = (await runCli(['serve', '--help'])).stdout.replace(/\s+/g, ' ')
  const described = /--rate-limit <mode> (.*?)\(env MINISHIP_RATE_LIMIT/.exec(help)?.[1] ?? ''
  const words: Record<keyof typeof defaultRateLimits, string> = {
    login: 'login',
    register: 'register',
    cliSessionCreate: 'command-line sign-ins (create',
    cliSessionPoll: 'poll',
    cliSessionApprove: 'approve)',
    memberUnknownEmail: 'members added by an unknown email',
    events: 'device events',
    apiKeyFailures: 'failed API keys',
  }
  expect(Object.keys(words).sort()).toEqual(Object.keys(defaultRateLimits).sort())
  for (const word of Object.values(words)) expect(described).toContain(word)
})

test('--json is described with the object it prints, and shown in an example', async () => {
  const help = (await runCli(['serve', '--help'])).stdout.replace(/\s+/g, ' ')
  expect(help).toContain('--json print the start-up lines')
  expect(help).toContain('{"version", "listening", "port", "dataDir", "setup", "notes"}')
  expect(help).toContain('$ miniship serve --json')
})
