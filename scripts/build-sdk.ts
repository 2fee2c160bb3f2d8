// `npm run build:sdk`: the update client (src/sdk) as its own npm package in dist/sdk — ESM, type
// declarations, a package.json naming only @noble — and its minified size, with and without the crypto fallback.
//
//   bun scripts/build-sdk.ts [outdir]      (default dist/sdk)
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { gzipSync } from 'node:zlib'
import { join, relative } from 'node:path'

const root = join(import.meta.dir, '..')
const outdir = process.argv[2] ?? join(root, 'dist', 'sdk')
const source = join(root, 'src', 'sdk')
const rootPackage = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string; dependencies: Record<string, string> }
const noble = ['@noble/ed25519', '@noble/hashes']

rmSync(outdir, { recursive: true, force: true })
mkdirSync(outdir, { recursive: true })

// 1. the JavaScript: one ESM file per entry, @noble and node: left to the app's bundler
const built = await Bun.build({
  entrypoints: [join(source, 'index.ts'), join(source, 'node.ts')],
  outdir,
  format: 'esm',
  target: 'node',
  external: [...noble.map((name) => `${name}/*`), ...noble, 'node:*'],
  naming: '[name].js',
})
if (!built.success) {
  for (const log of built.logs) console.error(log)
  process.exit(1)
}

// 2. the declarations, by tsc, from the same sources
// (beside the root tsconfig, so `types` resolve from the root's node_modules)
const tsconfig = join(root, `.tsconfig.sdk-build-${process.pid}.json`)
writeFileSync(
  tsconfig,
  JSON.stringify({
    compilerOptions: {
      target: 'ES2020',
      module: 'ESNext',
      moduleResolution: 'bundler',
      lib: ['ES2020'],
      types: ['bun-types'],
      strict: true,
      skipLibCheck: true,
      declaration: true,
      emitDeclarationOnly: true,
      rootDir: source,
      outDir: outdir,
    },
    files: [join(source, 'index.ts'), join(source, 'node.ts')],
  }),
)
const tsc = Bun.spawnSync([join(root, 'node_modules', '.bin', 'tsc'), '-p', tsconfig], { cwd: root, stdout: 'inherit', stderr: 'inherit' })
rmSync(tsconfig)
if (tsc.exitCode !== 0) {
  console.error('tsc could not write the declarations')
  process.exit(1)
}
// Node's ESM resolution wants extensions in relative imports, in declarations too
for (const name of readdirSync(outdir)) {
  if (!name.endsWith('.d.ts')) continue
  const path = join(outdir, name)
  writeFileSync(path, readFileSync(path, 'utf8').replace(/(from\s+|import\()(['"])(\.\/[^'"]+?)(?:\.ts)?\2/g, '$1$2$3.js$2'))
}

// 3. its own package.json: nothing of the server's
const packageJson = {
  name: '@miniship/sdk',
  version: rootPackage.version,
  description: 'The update client for React Native host apps of a miniship server: check, verified download, atomic switch, crash-loop rollback.',
  type: 'module',
  main: './index.js',
  types: './index.d.ts',
  exports: {
    '.': { types: './index.d.ts', import: './index.js', default: './index.js' },
    './node': { types: './node.d.ts', import: './node.js', default: './node.js' },
    './package.json': './package.json',
  },
  files: ['*.js', '*.d.ts', 'README.md'],
  dependencies: Object.fromEntries(noble.map((name) => [name, rootPackage.dependencies[name]!])),
  engines: { node: '>=20' },
  license: 'UNLICENSED',
}
writeFileSync(join(outdir, 'package.json'), JSON.stringify(packageJson, null, 2) + '\n')
writeFileSync(
  join(outdir, 'README.md'),
  `# @miniship/sdk

The update client for host apps of a miniship server (React Native, Node 20+, Bun). See docs/host-app.md in the
miniship repository for the host-app snippet, the storage adapter interface and an expo-file-system adapter.

\`\`\`js
import { createUpdater } from '@miniship/sdk'
import { fileStorage } from '@miniship/sdk/node' // Node and Bun only
\`\`\`
`,
)

// 4. what a host app pays: minified, without and with the pure-JS crypto fallback
async function minifiedSize(external: string[]): Promise<{ bytes: number; gzip: number }> {
  const result = await Bun.build({ entrypoints: [join(source, 'index.ts')], format: 'esm', target: 'browser', minify: true, external })
  if (!result.success) throw new Error(result.logs.join('\n'))
  const text = await result.outputs[0]!.text()
  return { bytes: Buffer.byteLength(text), gzip: gzipSync(text).length }
}
const without = await minifiedSize([...noble.map((name) => `${name}/*`), ...noble])
const withNoble = await minifiedSize([])
const kB = (bytes: number) => `${bytes} bytes`
const files = readdirSync(outdir).sort()
console.log(`built ${relative(root, outdir) || outdir}: ${files.join(', ')}`)
console.log(`minified size of miniship/sdk: ${kB(without.bytes)} (${kB(without.gzip)} gzipped) without the crypto fallback (goal: under 15000); ${kB(withNoble.bytes)} (${kB(withNoble.gzip)} gzipped) with @noble`)
if (process.argv.includes('--json')) console.log(JSON.stringify({ outdir, files, minified: without.bytes, minifiedGzip: without.gzip, minifiedWithNoble: withNoble.bytes, minifiedWithNobleGzip: withNoble.gzip }))
