// For the command-line tests: `miniship ARGS` run from the sources in a child process, as a user runs it.
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface CliRun {
  stdout: string
  stderr: string
  exitCode: number
}

const mainPath = join(import.meta.dir, '..', 'main.ts')

/** Runs the program with `args`; no saved sign-in (an empty config folder), server, token or data directory unless `env` gives them. */
export async function runCli(args: string[], options: { env?: Record<string, string>; stdin?: string; cwd?: string } = {}): Promise<CliRun> {
  const env: Record<string, string | undefined> = { ...process.env, MINISHIP_SERVER: undefined, MINISHIP_TOKEN: undefined, MINISHIP_DATA_DIR: undefined, XDG_CONFIG_HOME: join(tmpdir(), 'miniship-test-no-config'), DISPLAY: '', WAYLAND_DISPLAY: '', ...options.env }
  const child = Bun.spawn([process.execPath, mainPath, ...args], {
    cwd: options.cwd,
    env: Object.fromEntries(Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined)),
    stdin: options.stdin === undefined ? 'ignore' : new TextEncoder().encode(options.stdin),
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [stdout, stderr, exitCode] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited])
  return { stdout, stderr, exitCode }
}

/** The one JSON document a --json run printed on stdout (the test fails on anything else). */
export function jsonDocument(run: CliRun): Record<string, unknown> {
  try {
    return JSON.parse(run.stdout) as Record<string, unknown>
  } catch {
    throw new Error(`stdout is not one JSON document (exit ${run.exitCode}):\n${run.stdout}\nstderr:\n${run.stderr}`)
  }
}
