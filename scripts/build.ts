// `npm run build`: compile src/main.ts, the migrations and the console into one executable, dist/miniship.
import { readdirSync, rmSync, statSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'

const root = join(import.meta.dir, '..')
const outfile = process.argv[2] ?? join(root, 'dist', 'miniship')

const args = [
  'build',
  '--compile',
  '--minify',
  '--sourcemap',
  '--bytecode',
  // code splitting: `serve` loads the chunks of its own imports only, not those of the developer's
  // CLI, backup and restore (archiver) or the upload parsers it loads later; in one 1.2 MB module
  // the binary spent about 15 ms more before its first line ran (issue 30: start to first 200).
  // Bun 1.4.5 gives the chunk holding the HTML import (web/index.html) a path outside the
  // executable's file system, so an import() inside that chunk fails: src/http/console-page.ts
  // keeps the HTML import in a chunk of its own, with no import() in it.
  '--splitting',
  // bytecode builds default to CommonJS, where top-level await does not build
  '--format=esm',
  // the binary must not pick up a .env or bunfig.toml from whatever directory it is run in
  '--no-compile-autoload-dotenv',
  '--no-compile-autoload-bunfig',
  '--outfile',
  outfile,
  join(root, 'src', 'main.ts'),
]

const started = performance.now()
// what this build writes is at least as new as this (file times are whole milliseconds or coarser)
const startedAt = Math.floor(Date.now() / 1000) * 1000
const build = Bun.spawnSync([process.execPath, ...args], { cwd: root, stdout: 'inherit', stderr: 'inherit' })
if (build.exitCode !== 0) {
  console.error(`build failed (exit ${build.exitCode})`)
  process.exit(build.exitCode ?? 1)
}
// The source maps are embedded in the executable; the copies bun also writes beside it (one per
// chunk: main-<hash>.js.map, chunk-<hash>.js.map, …) are not needed.
const outdir = dirname(outfile)
for (const name of readdirSync(outdir)) {
  const written = name.endsWith('.map') && statSync(join(outdir, name)).mtimeMs >= startedAt
  if (name === `${basename(outfile)}.map` || (written && /^[a-z0-9_-]+-[a-z0-9]{8}\.js\.map$/.test(name))) rmSync(join(outdir, name), { force: true })
}
console.log(`built ${outfile} in ${((performance.now() - started) / 1000).toFixed(1)} s`)
