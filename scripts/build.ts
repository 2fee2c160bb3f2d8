// `npm run build`: compile src/main.ts, the migrations and the console into one executable, dist/miniship.
import { readdirSync, rmSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'

const root = join(import.meta.dir, '..')
const outfile = process.argv[2] ?? join(root, 'dist', 'miniship')

const args = [
  'build',
  '--compile',
  '--minify',
  '--sourcemap',
  '--bytecode',
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
const build = Bun.spawnSync([process.execPath, ...args], { cwd: root, stdout: 'inherit', stderr: 'inherit' })
if (build.exitCode !== 0) {
  console.error(`build failed (exit ${build.exitCode})`)
  process.exit(build.exitCode ?? 1)
}
// The source map is embedded in the executable; the copies bun also writes beside it are not needed.
const outdir = dirname(outfile)
for (const name of readdirSync(outdir)) {
  if (name === `${basename(outfile)}.map` || /^chunk-[a-z0-9]+\.js\.map$/.test(name)) rmSync(join(outdir, name), { force: true })
}
console.log(`built ${outfile} in ${((performance.now() - started) / 1000).toFixed(1)} s`)
