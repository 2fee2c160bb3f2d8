import { describe, expect, test } from 'bun:test'
import { createAdminCommandLine, firstAdminAdvice, listeningUrl, publicUrlWarning, startupDocument } from './startup-notes'

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

describe('serve --json: the start-up lines as one object', () => {
  test('the listening address as a URL, an IPv6 address in brackets', () => {
    expect(listeningUrl('0.0.0.0', 3001)).toBe('http://0.0.0.0:3001')
    expect(listeningUrl('127.0.0.1', 8080)).toBe('http://127.0.0.1:8080')
    expect(listeningUrl('::', 3001)).toBe('http://[::]:3001')
    expect(listeningUrl('::1', 3001)).toBe('http://[::1]:3001')
  })
  test('no administrator and a public URL without /api: the setup link and command, the warning and the advice as one note each, in the words of the text', () => {
    const config = { publicUrl: 'https://apps.example.com', host: '0.0.0.0', dataDir: '/a b' }
    const document = startupDocument(config, '1.2.3', 3001, 'tok', ['startup: removed 1 leftover(s) in tmp/'])
    expect(document).toEqual({
      version: '1.2.3',
      listening: 'http://0.0.0.0:3001',
      port: 3001,
      dataDir: '/a b',
      setup: { url: 'https://apps.example.com/setup?token=tok', createAdmin: "miniship create-admin --data-dir '/a b' --email you@example.com" },
      notes: [
        'startup: removed 1 leftover(s) in tmp/',
        publicUrlWarning(config)!,
        "no administrator exists yet. Create one with: miniship create-admin --data-dir '/a b' --email you@example.com or open this one-time link to create it in the browser (it works once, until the next restart): https://apps.example.com/setup?token=tok",
      ],
    })
  })
  test('an administrator and good settings: setup null, no notes', () => {
    expect(startupDocument({ publicUrl: 'https://apps.example.com/api', host: '127.0.0.1', dataDir: '/d' }, '1.2.3', 3001, null)).toEqual({ version: '1.2.3', listening: 'http://127.0.0.1:3001', port: 3001, dataDir: '/d', setup: null, notes: [] })
  })
})
