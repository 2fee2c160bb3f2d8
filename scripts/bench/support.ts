// Shared by the benchmarks: a free port, a JSON API call, waiting for a server's health.

export async function freePort(): Promise<number> {
  const probe = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response() })
  const port = probe.port!
  await probe.stop(true)
  return port
}

/** One API call; a non-2xx answer throws with its status and (the start of) its body. */
export async function call(base: string, method: string, path: string, init: { token?: string; json?: unknown; body?: FormData } = {}) {
  const headers: Record<string, string> = {}
  if (init.token) headers.authorization = `Bearer ${init.token}`
  if (init.json !== undefined) headers['content-type'] = 'application/json'
  const response = await fetch(base + path, { method, headers, body: init.json !== undefined ? JSON.stringify(init.json) : init.body })
  const text = await response.text()
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text.slice(0, 300)}`)
  return JSON.parse(text)
}

/** Waits until `base`/api/health answers 200, or throws after `timeoutMs`. */
export async function waitForHealth(base: string, timeoutMs = 20_000): Promise<void> {
  for (let waited = 0; ; waited += 50) {
    try {
      if ((await fetch(`${base}/api/health`)).ok) return
    } catch {
      // not listening yet
    }
    if (waited > timeoutMs) throw new Error(`miniship did not start within ${timeoutMs / 1000} s`)
    await Bun.sleep(50)
  }
}
