// The signing key a command is given (--sign-key): a wrong file is exit 2 with what to give instead; what keys generate says next.
import { afterAll, describe, expect, test } from 'bun:test'
import { generateKeyPairSync } from 'node:crypto'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { readSigningKey } from './keys'
import { CliError } from './http'
import { jsonDocument, runCli } from '../cli/test-run'

const dir = mkdtempSync(join(tmpdir(), 'miniship-keys-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

function refusal(path: string): CliError {
  try {
    readSigningKey(path)
  } catch (error) {
    if (error instanceof CliError) return error
    throw error
  }
  throw new Error(`${path} was taken as a signing key`)
}

describe('--sign-key FILE', () => {
  const pair = generateKeyPairSync('ed25519')
  const raw = Buffer.from(pair.publicKey.export({ format: 'jwk' }).x!, 'base64url').toString('base64')

  test('the public half (PEM, or the base64 keys generate printed) is named as such, and the private key file is asked for', () => {
    for (const [name, text] of [
      ['release.pub.pem', pair.publicKey.export({ format: 'pem', type: 'spki' }).toString()],
      ['release.pub', `${raw}\n`],
    ] as const) {
      const path = join(dir, name)
      writeFileSync(path, text)
      const error = refusal(path)
      expect(error.exitCode).toBe(2)
      expect(error.message).toBe(`${path} holds a public key; --sign-key takes the private key file miniship keys generate wrote (PKCS#8 PEM)`)
    }
  })

  test('the key itself where its file goes (its PEM, or the base64 line inside) is refused without repeating it', () => {
    const pem = pair.privateKey.export({ format: 'pem', type: 'pkcs8' }).toString()
    for (const given of [pem, pem.split('\n')[1]!]) {
      const error = refusal(given)
      expect(error.exitCode).toBe(2)
      expect(error.message).toStartWith('the signing key was given where its file goes (it is not repeated here)')
      expect(error.message).not.toContain(pem.split('\n')[1]!.slice(16))
    }
  })

  test('nor when it arrived damaged, as CI secrets do (no key parser accepts it), nor anything that may be key material', () => {
    const pem = pair.privateKey.export({ format: 'pem', type: 'pkcs8' }).toString()
    const secret = pem.split('\n')[1]!.slice(16)
    const damaged = [
      pem.replaceAll('\n', ' '),
      pem.trim().replaceAll('\n', '\\n'),
      pem.replace('PRIVATE', 'PRIVAT'),
      `PRIVATE ${secret}`,
      Buffer.alloc(40, 9).toString('base64'),
    ]
    for (const given of damaged) {
      const error = refusal(given)
      expect(error.exitCode).toBe(2)
      expect(error.message).toStartWith('the signing key was given where its file goes (it is not repeated here)')
      expect(error.message).not.toContain(given.slice(30, 50))
    }
    expect(refusal('release.pm').message).toBe('cannot read the signing key release.pm: no such file')
  })

  test('a file that holds no key does not send the reader to overwrite it (keys generate never does)', () => {
    const path = join(dir, 'notes.txt')
    writeFileSync(path, 'not a key')
    const error = refusal(path)
    expect(error.exitCode).toBe(2)
    expect(error.message).not.toContain(`--out ${path}`)
    expect(error.message).toContain('miniship keys generate --out NEW-FILE')
  })

  test('the private key keys generate writes is read', () => {
    const path = join(dir, 'release.pem')
    writeFileSync(path, pair.privateKey.export({ format: 'pem', type: 'pkcs8' }).toString())
    expect(readSigningKey(path).publicKey).toBe(raw)
  })
})

describe('keys generate --json', () => {
  test('names the same next commands as the text: keys add with --name, then push --sign-key', async () => {
    const text = await runCli(['keys', 'generate', '--out', join(dir, 'text.pem')])
    expect(text.exitCode).toBe(0)
    const document = jsonDocument(await runCli(['keys', 'generate', '--out', join(dir, 'json.pem'), '--json'])) as { publicKey: string; next: string; push: string }
    expect(document.next).toBe(`miniship keys add --app APPID ${document.publicKey} --name "json.pem"`)
    expect(document.push).toBe(`miniship push build --app APPID --version 1.0.0 --sign-key ${join(dir, 'json.pem')}`)
    // the text's two lines, with its own key and file
    const textKey = /Public key: (\S+)/.exec(text.stdout)![1]
    expect(text.stdout).toContain(`miniship keys add --app APPID ${textKey} --name "text.pem"`)
    expect(text.stdout).toContain(`miniship push build --app APPID --version 1.0.0 --sign-key ${join(dir, 'text.pem')}`)
  })
})

describe('a private key pasted where a public key (keys add, verify --public-key) or its file (--sign-key, MINISHIP_SIGNING_KEY_FILE) goes is refused without repeating it', () => {
  const pair = generateKeyPairSync('ed25519')
  const pem = pair.privateKey.export({ format: 'pem', type: 'pkcs8' }).toString()
  const line = pem.split('\n')[1]!
  const secret = line.slice(16, 60)
  const table: [string, string[], string][] = [
    ['its PEM as an option value', ['verify', '--app', 'com.example.shop', '--public-key', pem], 'that is a private key, not a public one (it is not repeated here'],
    // commander took the PEM's dashes for an option: "unknown option '-----BEGIN PRIVATE KEY----- …'"
    ['its PEM as an argument', ['keys', 'add', pem, '--app', 'com.example.shop'], 'an argument is a PEM block, not an option (not repeated here'],
    ['the base64 line inside the PEM (keys add)', ['keys', 'add', line, '--app', 'com.example.shop'], 'that is a private key, not a public one (it is not repeated here'],
    ['the base64 line inside the PEM (verify)', ['verify', '--app', 'com.example.shop', '--public-key', line], 'that is a private key, not a public one (it is not repeated here'],
    ['its PEM in MINISHIP_SIGNING_KEY_FILE (push)', ['push', '.', '--app', 'com.example.shop', '--version', '1.0.0'], 'the signing key was given where its file goes'],
    ['its PEM as --sign-key (sign)', ['sign', '1.0.0', '--app', 'com.example.shop', '--sign-key', pem], 'the signing key was given where its file goes'],
  ]
  for (const [what, args, message] of table) {
    test(what, async () => {
      const run = await runCli([...args, '--server', 'http://127.0.0.1:9', '--json'], { env: { MINISHIP_TOKEN: 'msk_test', MINISHIP_SIGNING_KEY_FILE: pem } })
      expect(run.exitCode).toBe(2)
      expect(jsonDocument(run)).toEqual({ error: { code: 'USAGE', message: expect.stringContaining(message) } })
      expect(run.stdout + run.stderr).not.toContain(secret)
    })
  }
  // a CI secret that arrived with its line breaks as spaces or as a literal \n: "cannot read the signing key -----BEGIN PRIVATE KEY-----\nMC4C…: no such file"
  const damaged: [string, string][] = [
    ['line breaks as spaces', pem.replaceAll('\n', ' ')],
    ['line breaks as a literal \\n', pem.trim().replaceAll('\n', '\\n')],
  ]
  for (const [how, given] of damaged) {
    for (const [command, args, env] of [
      ['push, MINISHIP_SIGNING_KEY_FILE', ['push', '.', '--app', 'com.example.shop', '--version', '1.0.0'], { MINISHIP_SIGNING_KEY_FILE: given }],
      ['sign --sign-key', ['sign', '1.0.0', '--app', 'com.example.shop', '--sign-key', given], {}],
    ] as const) {
      test(`its PEM with ${how} (${command}), in text and in --json`, async () => {
        for (const json of [false, true]) {
          const run = await runCli([...args, '--server', 'http://127.0.0.1:9', ...(json ? ['--json'] : [])], { env: { MINISHIP_TOKEN: 'msk_test', ...env } })
          expect(run.exitCode).toBe(2)
          expect(run.stderr).toContain('the signing key was given where its file goes (it is not repeated here)')
          if (json) expect(jsonDocument(run)).toEqual({ error: { code: 'USAGE', message: expect.stringContaining('the signing key was given where its file goes') } })
          expect(run.stdout + run.stderr).not.toContain(secret)
        }
      })
    }
  }
  test('other base64 of key length is not repeated either; a short word still is', async () => {
    const long = Buffer.alloc(64, 7).toString('base64')
    const refused = await runCli(['keys', 'add', long, '--app', 'com.example.shop', '--server', 'http://127.0.0.1:9', '--json'], { env: { MINISHIP_TOKEN: 'msk_test' } })
    expect(refused.exitCode).toBe(2)
    expect(refused.stdout + refused.stderr).not.toContain(long.slice(0, 20))
    const typo = await runCli(['keys', 'add', 'release.pm', '--app', 'com.example.shop', '--server', 'http://127.0.0.1:9', '--json'], { env: { MINISHIP_TOKEN: 'msk_test' } })
    expect(jsonDocument(typo)).toEqual({ error: { code: 'USAGE', message: '"release.pm" is neither the base64 of a 32-byte public key nor a file' } })
  })
})

describe('keys generate --out where no key file can go: exit 2 with the code backup --out uses, never the system error', () => {
  const cases = () => {
    const file = join(dir, 'a-file')
    writeFileSync(file, 'x')
    mkdirSync(join(dir, 'keys-folder'), { recursive: true })
    return [
      { out: join(dir, 'missing', 'k.pem'), code: 'OUT_DIR_NOT_FOUND', message: `the directory ${join(dir, 'missing')} for k.pem does not exist; create it, or give an --out in one that does` },
      { out: join(file, 'k.pem'), code: 'OUT_DIR_NOT_FOUND', message: `${file}, where k.pem would go, is a file, not a directory` },
      { out: join(file, 'deeper', 'k.pem'), code: 'OUT_DIR_NOT_FOUND', message: `${file}, where k.pem would go, is a file, not a directory` },
      { out: join(dir, 'keys-folder'), code: 'OUT_NOT_A_FILE', message: `${join(dir, 'keys-folder')} is a directory; --out names the key file to create, e.g. ${join(dir, 'keys-folder', 'miniship-signing-key.pem')}` },
    ]
  }
  test('a missing directory, a file on the way, a directory given as the file', async () => {
    for (const { out, code, message } of cases()) {
      for (const json of [false, true]) {
        const run = await runCli(['keys', 'generate', '--out', out, ...(json ? ['--json'] : [])])
        expect(run.exitCode).toBe(2)
        expect(run.stderr).toBe(`miniship: ${message}\n`)
        if (json) expect(jsonDocument(run)).toEqual({ error: { code, message } })
      }
    }
  })
})
