// The main entry of miniship/sdk stays what React Native's bundler and Hermes take as they are (decisions §17).
import { expect, test } from 'bun:test'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

const dir = import.meta.dir
/** the files the main entry is made of: everything in src/sdk but tests and the node entry */
const mainEntryFiles = readdirSync(dir).filter((name) => name.endsWith('.ts') && !name.endsWith('.test.ts') && name !== 'node.ts')

test('the main entry imports only its own files and @noble: no Node built-in, nothing of the server', () => {
  expect(mainEntryFiles).toContain('index.ts')
  for (const name of mainEntryFiles) {
    const source = readFileSync(join(dir, name), 'utf8')
    const specifiers = [...source.matchAll(/(?:^|\n)\s*(?:import|export)\b[^'"]*?from\s+['"]([^'"]+)['"]/g), ...source.matchAll(/import\(\s*['"]([^'"]+)['"]/g)].map((match) => match[1]!)
    for (const specifier of specifiers) expect(`${name}: ${specifier}`).toMatch(/: (\.\/[a-z-]+|@noble\/(ed25519|hashes\/sha2\.js))$/)
  }
})

test('the main entry uses none of what Hermes or React Native lack (TextEncoder, URL, Object.hasOwn, .at, structuredClone, Buffer)', () => {
  const forbidden = [/\bTextEncoder\b/, /\bTextDecoder\b/, /\bnew URL\b/, /\bURLSearchParams\b/, /\bObject\.hasOwn\b/, /\.at\(/, /\bstructuredClone\b/, /\bBuffer\b/, /\batob\b/, /\bbtoa\b/, /\bprocess\./, /\brequire\(/]
  for (const name of mainEntryFiles) {
    // comments may name them
    const code = readFileSync(join(dir, name), 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '')
    for (const pattern of forbidden) expect(`${name} ${pattern.test(code) ? 'uses' : 'avoids'} ${pattern.source}`).toContain('avoids')
  }
})

test('the main entry stays under its documented size: 15,000 bytes minified without the crypto fallback (docs/host-app.md)', async () => {
  // as scripts/build-sdk.ts measures it: one minified ESM file for the browser target, @noble left out
  const built = await Bun.build({ entrypoints: [join(dir, 'index.ts')], format: 'esm', target: 'browser', minify: true, external: ['@noble/ed25519', '@noble/hashes', '@noble/*'] })
  expect(built.success).toBe(true)
  const bytes = Buffer.byteLength(await built.outputs[0]!.text())
  expect(bytes).toBeGreaterThan(5_000)
  expect(bytes).toBeLessThan(15_000)
})
