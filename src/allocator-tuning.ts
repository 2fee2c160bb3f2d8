// `serve` runs with Bun's allocator (mimalloc) tuned for a server answering many small requests (issue 30).
//
// Bun's mimalloc returns freed memory to the system eagerly: freed blocks inside pages still in use
// ("holes") on a thread of their own, whole pages 100 ms after they empty. Under a stream of update
// checks, whose answers are fresh strings, that thread and the purge thread took 3 to 4 µs of CPU
// per request (a quarter of the answer's cost; scripts/bench/runtime.ts, /proc per thread), for
// about 13 MB less RSS. So `serve` asks for holes to stay and for pages to be returned after a
// second: memory is still returned, a little later. mimalloc reads its options from the
// environment once, at process start, so `serve` re-executes itself (same pid, same arguments)
// with them set. An operator who sets either variable keeps their own settings and no re-exec happens.

/** The options serve starts with, unless the environment already names one of them. */
export const allocatorOptions = { MIMALLOC_PURGE_HOLES: '0', MIMALLOC_PURGE_DELAY: '1000' } as const

/**
 * The environment to re-execute with, or null: this is not serve, the options are set (by us or
 * the operator), or Bun was started with flags of its own (`execArgv`: --cpu-prof, --inspect…):
 * those are not carried over, and a profiler's signals must not reach the new image.
 */
export function allocatorTunedEnv(argv: readonly string[], env: Record<string, string | undefined>, execArgv: readonly string[] = []): Record<string, string> | null {
  if (argv[2] !== 'serve' || execArgv.length > 0) return null
  if (Object.keys(allocatorOptions).some((name) => env[name] !== undefined)) return null
  const tuned: Record<string, string> = {}
  for (const [name, value] of Object.entries(env)) if (value !== undefined) tuned[name] = value
  return { ...tuned, ...allocatorOptions }
}

/**
 * The arguments to re-execute this program with: a compiled binary's argv[1] is its embedded entry
 * ("/$bunfs/root/…", "B:/~BUN/root/…"), not an argument; `bun src/main.ts` keeps the script path.
 */
export function reexecArguments(execPath: string, argv: readonly string[]): string[] {
  const entry = argv[1] ?? ''
  const compiled = entry.includes('/$bunfs/') || entry.includes('~BUN')
  return [execPath, ...argv.slice(compiled ? 2 : 1)]
}
