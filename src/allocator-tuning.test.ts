import { expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { allocatorOptions, allocatorTunedEnv, reexecArguments } from './allocator-tuning'
import { tempDir } from './test-support'
import { join } from 'node:path'

test('serve, and only serve, is re-executed with the allocator options, unless the operator set one', () => {
  expect(allocatorTunedEnv(['bun', 'src/main.ts', 'serve', '--port', '1'], { PATH: '/bin' })).toEqual({ PATH: '/bin', ...allocatorOptions })
  expect(allocatorTunedEnv(['bun', 'src/main.ts', 'doctor'], { PATH: '/bin' })).toBeNull()
  expect(allocatorTunedEnv(['bun', 'src/main.ts', 'serve'], { MIMALLOC_PURGE_DELAY: '10' })).toBeNull()
  expect(allocatorTunedEnv(['bun', 'src/main.ts', 'serve'], { MIMALLOC_PURGE_HOLES: '1' })).toBeNull()
  // bun's own flags (a profiler, an inspector) would be lost, and a profiler's signal could reach the new image
  expect(allocatorTunedEnv(['bun', 'src/main.ts', 'serve'], {}, ['--cpu-prof'])).toBeNull()
})

test('the re-execution keeps the arguments: a compiled binary drops its embedded entry, bun keeps the script', () => {
  expect(reexecArguments('/usr/bin/miniship', ['bun', '/$bunfs/root/miniship', 'serve', '--port', '3001'])).toEqual(['/usr/bin/miniship', 'serve', '--port', '3001'])
  expect(reexecArguments('C:/miniship.exe', ['bun', 'B:/~BUN/root/miniship.exe', 'serve'])).toEqual(['C:/miniship.exe', 'serve'])
  expect(reexecArguments('/usr/bin/bun', ['/usr/bin/bun', '/srv/src/main.ts', 'serve'])).toEqual(['/usr/bin/bun', '/srv/src/main.ts', 'serve'])
})

test('a running serve has the options in its environment, same pid as spawned; an operator\'s own value is kept', async () => {
  // `miniship --json serve` is `serve --json`: re-executed the same way
  for (const [env, expected, before] of [
    [{}, allocatorOptions.MIMALLOC_PURGE_HOLES, []],
    [{ MIMALLOC_PURGE_HOLES: '1' }, '1', []],
    [{}, allocatorOptions.MIMALLOC_PURGE_HOLES, ['--json']],
  ] as const) {
    const probe = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response() })
    const port = probe.port!
    await probe.stop(true)
    const child = Bun.spawn([process.execPath, join(import.meta.dir, 'main.ts'), ...before, 'serve', '--data-dir', tempDir(), '--host', '127.0.0.1', '--port', String(port)], {
      stdout: 'ignore',
      stderr: 'ignore',
      env: { ...process.env, MIMALLOC_PURGE_HOLES: undefined, MIMALLOC_PURGE_DELAY: undefined, ...env },
    })
    try {
      for (let waited = 0; ; waited += 50) {
        const ok = await fetch(`http://127.0.0.1:${port}/api/health`).then((response) => response.ok, () => false)
        if (ok) break
        if (waited > 20_000) throw new Error('serve did not start')
        await Bun.sleep(50)
      }
      const environ = readFileSync(`/proc/${child.pid}/environ`, 'utf8').split('\0')
      expect(environ).toContain(`MIMALLOC_PURGE_HOLES=${expected}`)
    } finally {
      child.kill('SIGTERM')
      await child.exited
    }
  }
}, 60_000)
