import { describe, expect, test } from 'bun:test'
import { createAdminCommandLine, firstAdminAdvice, publicUrlWarning } from './startup-notes'

describe('--public-url without /api', () => {
  const table: [string | null, boolean][] = [
    [null, false],
    ['https://apps.example.com/api', false],
    ['https://example.com/miniship/api', false],
    ['https://apps.example.com', true],
    ['https://apps.example.com/apix', true],
    ['https://apps.example.com/miniship', true],
  ]
  for (const [publicUrl, warns] of table) {
    test(`${publicUrl}: ${warns ? 'warns' : 'quiet'}`, () => {
      const warning = publicUrlWarning({ publicUrl })
      expect(warning !== null).toBe(warns)
      if (warning) expect(warning).toContain(`${publicUrl}/api`)
    })
  }
})

describe('first administrator', () => {
  test('nothing once an admin exists (no token)', () => {
    expect(firstAdminAdvice({ publicUrl: null, host: '0.0.0.0', dataDir: '/data' }, 3001, null)).toEqual([])
  })
  test('the command and the link, on the listening address or the public origin', () => {
    const local = firstAdminAdvice({ publicUrl: null, host: '0.0.0.0', dataDir: '/var/lib/miniship' }, 3001, 'tok')
    expect(local).toContain('  miniship create-admin --data-dir /var/lib/miniship --email you@example.com')
    expect(local).toContain('  http://localhost:3001/setup?token=tok')
    expect(firstAdminAdvice({ publicUrl: 'https://apps.example.com/api', host: '127.0.0.1', dataDir: '/d' }, 3001, 'tok')).toContain('  https://apps.example.com/setup?token=tok')
    expect(firstAdminAdvice({ publicUrl: null, host: '::1', dataDir: '/d' }, 8080, 'tok')).toContain('  http://[::1]:8080/setup?token=tok')
  })
})

describe('the create-admin command to copy', () => {
  const table: [string, string][] = [
    ['/var/lib/miniship', 'miniship create-admin --data-dir /var/lib/miniship --email you@example.com'],
    ['/home/me/my data', "miniship create-admin --data-dir '/home/me/my data' --email you@example.com"],
    ["/srv/it's", "miniship create-admin --data-dir '/srv/it'\\''s' --email you@example.com"],
    ['/srv/$HOME', "miniship create-admin --data-dir '/srv/$HOME' --email you@example.com"],
  ]
  for (const [dataDir, line] of table) test(dataDir, () => expect(createAdminCommandLine(dataDir)).toBe(line))
  test('serve names the data directory quoted', () => {
    expect(firstAdminAdvice({ publicUrl: null, host: '0.0.0.0', dataDir: '/a b' }, 3001, 'tok')).toContain("  miniship create-admin --data-dir '/a b' --email you@example.com")
  })
})
