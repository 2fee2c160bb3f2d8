// Tests of `miniship create-admin` through commander, with a stand-in terminal, then a login over HTTP.
import { describe, expect, test, afterAll } from 'bun:test'
import { existsSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { eq } from 'drizzle-orm'
import { createAdminCommand, type CreateAdminIo } from './create-admin'
import { passwordFromStdinText } from '../terminal/prompt'
import { createTestContext, tempDir } from '../test-support'
import { auditLogs, users } from '../db/schema'

const dirs: string[] = []
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

function dataDir(): string {
  const dir = tempDir('miniship-create-admin-')
  dirs.push(dir)
  return join(dir, 'data')
}

interface Run {
  out: string[]
  err: string[]
  exitCode: number | null
}

async function run(args: string[], terminal: { stdin?: string; tty?: boolean; answers?: string[] } = {}): Promise<Run> {
  const result: Run = { out: [], err: [], exitCode: null }
  const answers = [...(terminal.answers ?? [])]
  const io: CreateAdminIo = {
    readStdin: async () => terminal.stdin ?? '',
    stdinIsTTY: () => terminal.tty ?? false,
    promptHidden: async () => answers.shift() ?? '',
    out: (line) => result.out.push(line),
    err: (line) => result.err.push(line),
    exit: (code) => {
      result.exitCode = code
    },
  }
  await createAdminCommand(io).parseAsync(args, { from: 'user' })
  return result
}

describe('passwordFromStdinText', () => {
  test.each([
    ['hunter22\n', 'hunter22'],
    ['hunter22\r\n', 'hunter22'],
    ['hunter22', 'hunter22'],
    ['two words here\n', 'two words here'],
    ['hunter22\n\n', 'hunter22\n'],
    [' spaced \n', ' spaced '],
  ])('%p → %p', (text, password) => {
    expect(passwordFromStdinText(text)).toBe(password)
  })
})

describe('create-admin', () => {
  const dir = dataDir()

  test('creates an active admin from --password-stdin and prints one line', async () => {
    const result = await run(['--email', ' Admin@Example.com ', '--display-name', 'The Admin', '--password-stdin', '--data-dir', dir], { stdin: 'hunter22\n' })
    expect(result.exitCode).toBeNull()
    expect(result.err).toEqual([])
    expect(result.out.length).toBe(1)
    expect(result.out[0]).toMatch(/^Created admin admin@example\.com \(id [0-9a-f-]{36}\)/)
    // there was no database: it says so, since an admin in a directory the server does not use signs in nowhere
    expect(result.out[0]).toEndWith(`in ${dir}, a new data directory (there was no database in it): if your server runs with another --data-dir, run this again with that one`)
  })

  test('in a data directory that has a database, the line says only where', async () => {
    const result = await run(['--email', 'second@example.com', '--password-stdin', '--data-dir', dir], { stdin: 'hunter22\n' })
    expect(result.out).toEqual([expect.stringMatching(new RegExp(`^Created admin second@example\\.com \\(id [0-9a-f-]{36}\\) in ${dir}$`))])
    const fresh = dataDir()
    const json = await run(['--email', 'fresh@example.com', '--password-stdin', '--data-dir', fresh, '--json'], { stdin: 'hunter22\n' })
    expect(JSON.parse(json.out[0]!)).toMatchObject({ dataDir: fresh, newDataDir: true })
  })

  test('the admin signs in over HTTP with the password (trailing newline dropped) and is an active ADMIN', async () => {
    const context = createTestContext({ dataDir: dir })
    try {
      const login = await context.call('POST', '/api/auth/login', { json: { email: 'admin@example.com', password: 'hunter22' } })
      expect(login.status).toBe(200)
      const me = await context.call('GET', '/api/auth/me', { token: login.body.accessToken })
      expect(me.body).toMatchObject({ email: 'admin@example.com', displayName: 'The Admin', role: 'ADMIN', status: 'ACTIVE' })
      const listing = await context.call('GET', '/api/admin/users', { token: login.body.accessToken })
      expect(listing.status).toBe(200)
      const entry = context.dataDir.db.select().from(auditLogs).where(eq(auditLogs.action, 'user.create')).get()!
      expect(entry.actorId).toBeNull()
      expect(entry.targetId).toBe(me.body.id)
      expect(JSON.parse(entry.metadata)).toMatchObject({ via: 'cli', role: 'ADMIN' })
    } finally {
      context.close()
    }
  })

  // exit 2 (it was 1): the email must change before the same command can work (docs/operating.md's rule)
  test('refuses an email that exists (any case), exit 2, one line, nothing asked', async () => {
    const result = await run(['--email', 'ADMIN@example.com', '--password-stdin', '--data-dir', dir], { stdin: 'another-pass\n' })
    expect(result.exitCode).toBe(2)
    expect(result.err.length).toBe(1)
    expect(result.err[0]).toContain('admin@example.com already exists')
    expect(result.out).toEqual([])
  })

  test('--json: the created administrator, or the refusal with its code, as one JSON document on stdout', async () => {
    const created = await run(['--email', 'json@example.com', '--password-stdin', '--data-dir', dir, '--json'], { stdin: 'a-password\n' })
    expect(created.exitCode).toBeNull()
    expect(created.out).toHaveLength(1)
    expect(JSON.parse(created.out[0]!)).toEqual({ id: expect.any(String), email: 'json@example.com', displayName: 'json', role: 'ADMIN', status: 'ACTIVE', dataDir: dir, newDataDir: false })
    const again = await run(['--email', 'json@example.com', '--password-stdin', '--data-dir', dir, '--json'], { stdin: 'a-password\n' })
    expect(again.exitCode).toBe(2)
    expect(JSON.parse(again.out.join('\n'))).toEqual({ error: { code: 'EMAIL_TAKEN', message: expect.stringContaining('json@example.com already exists') } })
    const usage = await run(['--email', 'not-an-email', '--password-stdin', '--data-dir', dir, '--json'], { stdin: 'a-password\n' })
    expect(usage.exitCode).toBe(2)
    expect(JSON.parse(usage.out.join('\n')).error.code).toBe('USAGE')
  })

  test('while another process holds the write lock: exit 1, one line (no stack trace), DATABASE_BUSY with --json, nothing created; it works once the lock is gone', async () => {
    const { Database } = await import('bun:sqlite')
    const dir = dataDir()
    expect((await run(['--email', 'first@example.com', '--password-stdin', '--data-dir', dir], { stdin: 'a-password\n' })).exitCode).toBeNull()
    const other = new Database(join(dir, 'miniship.db'))
    other.exec('BEGIN IMMEDIATE')
    other.exec("UPDATE users SET updated_at = updated_at WHERE 0")
    try {
      const busy = await run(['--email', 'busy@example.com', '--password-stdin', '--data-dir', dir, '--json'], { stdin: 'a-password\n' })
      expect(busy.exitCode).toBe(1)
      expect(busy.err).toEqual([expect.stringMatching(/^miniship: the database is busy with another writer; nothing was created: try again in a moment$/)])
      expect(JSON.parse(busy.out.join('\n'))).toEqual({ error: { code: 'DATABASE_BUSY', message: expect.stringContaining('is busy with another writer') } })
    } finally {
      other.exec('ROLLBACK')
      other.close()
    }
    const created = await run(['--email', 'busy@example.com', '--password-stdin', '--data-dir', dir], { stdin: 'a-password\n' })
    expect(created.exitCode).toBeNull()
    expect(created.out[0]).toStartWith('Created admin busy@example.com')
  })

  test('refuses a password shorter than 6 characters', async () => {
    const result = await run(['--email', 'short@example.com', '--password-stdin', '--data-dir', dir], { stdin: '12345\n' })
    expect(result.exitCode).toBe(1)
    expect(result.err).toEqual(['miniship: the password must be at least 6 characters; nothing was created'])
    const context = createTestContext({ dataDir: dir })
    try {
      expect(context.dataDir.db.select().from(users).where(eq(users.email, 'short@example.com')).get()).toBeUndefined()
    } finally {
      context.close()
    }
  })

  test('counts the password in characters (code points): 5 emoji (10 UTF-16 units) are refused, 6 make the admin', async () => {
    const result = await run(['--email', 'emoji@example.com', '--password-stdin', '--data-dir', dir], { stdin: '🚀'.repeat(5) + '\n' })
    expect(result.exitCode).toBe(1)
    expect(result.err).toEqual(['miniship: the password must be at least 6 characters; nothing was created'])
    const created = await run(['--email', 'emoji@example.com', '--password-stdin', '--data-dir', dir], { stdin: '🚀'.repeat(6) + '\n' })
    expect(created.exitCode).toBeNull()
  })

  test('asks twice on a terminal and creates the admin when both answers match', async () => {
    const result = await run(['--email', 'tty@example.com', '--data-dir', dir], { tty: true, answers: ['typed-pass', 'typed-pass'] })
    expect(result.exitCode).toBeNull()
    expect(result.out[0]).toMatch(/^Created admin tty@example\.com/)
  })

  test('refuses two different answers on a terminal', async () => {
    const result = await run(['--email', 'typo@example.com', '--data-dir', dir], { tty: true, answers: ['typed-pass', 'typed-pas'] })
    expect(result.exitCode).toBe(1)
    expect(result.err[0]).toContain('differ')
  })

  test('without --password-stdin and without a terminal: exit 2 naming the flag, data dir untouched', async () => {
    const fresh = dataDir()
    const result = await run(['--email', 'batch@example.com', '--data-dir', fresh], { tty: false })
    expect(result.exitCode).toBe(2)
    expect(result.err.length).toBe(1)
    expect(result.err[0]).toContain('--password-stdin')
    expect(existsSync(fresh)).toBe(false)
  })

  test('--password-stdin on a terminal: exit 2 with one line saying to leave it out, nothing read, data dir untouched', async () => {
    const fresh = dataDir()
    let read = false
    const result = await run(['--email', 'typed@example.com', '--password-stdin', '--data-dir', fresh], {
      tty: true,
      get stdin() {
        read = true
        return 'hunter22\n'
      },
    })
    expect(result.exitCode).toBe(2)
    expect(result.err).toEqual(['miniship: --password-stdin reads the password from a pipe or file; leave it out to be prompted'])
    expect(result.out).toEqual([])
    expect(read).toBe(false)
    expect(existsSync(fresh)).toBe(false)
  })

  test('a malformed email is exit 2', async () => {
    const result = await run(['--email', 'not-an-email', '--password-stdin', '--data-dir', dir], { stdin: 'hunter22\n' })
    expect(result.exitCode).toBe(2)
    expect(result.err[0]).toContain('--email')
  })

  test('an email whose part before the @ is not ASCII: exit 2 saying that part must be ASCII (the server says the same)', async () => {
    const result = await run(['--email', 'jörg@example.com', '--password-stdin', '--data-dir', dir], { stdin: 'hunter22\n' })
    expect(result.exitCode).toBe(2)
    expect(result.err[0]).toContain('--email must have only ASCII')
    expect(result.err[0]).toContain('before the @')
  })

  test('an international domain is an address: the admin is created with its punycode form', async () => {
    const result = await run(['--email', 'root@bücher.example', '--password-stdin', '--data-dir', dir, '--json'], { stdin: 'hunter22\n' })
    expect(result.exitCode).toBeNull()
    expect(JSON.parse(result.out.join('\n')).email).toBe('root@xn--bcher-kva.example')
  })

  test('a display name over 100 characters is exit 2', async () => {
    const result = await run(['--email', 'long@example.com', '--display-name', 'x'.repeat(101), '--password-stdin', '--data-dir', dir], { stdin: 'hunter22\n' })
    expect(result.exitCode).toBe(2)
    expect(result.err[0]).toContain('--display-name')
  })

  test('a bad configuration value prints the ConfigError and exits 2', async () => {
    const previous = process.env.MINISHIP_TOKEN_TTL
    process.env.MINISHIP_TOKEN_TTL = 'forever'
    try {
      const result = await run(['--email', 'cfg@example.com', '--password-stdin', '--data-dir', dir], { stdin: 'hunter22\n' })
      expect(result.exitCode).toBe(2)
      expect(result.err.length).toBe(1)
      expect(result.err[0]).toContain('MINISHIP_TOKEN_TTL')
    } finally {
      if (previous === undefined) delete process.env.MINISHIP_TOKEN_TTL
      else process.env.MINISHIP_TOKEN_TTL = previous
    }
  })

  test('--help shows an example', () => {
    let help = ''
    const command = createAdminCommand().configureOutput({ writeOut: (text) => (help += text) })
    command.outputHelp()
    expect(help).toContain('--password-stdin')
    expect(help).toContain('$ miniship create-admin --email admin@example.com --password-stdin < pw.txt')
  })
})
