// Test-only proxies on 127.0.0.1 in front of the test S3: a TCP one that passes traffic, freezes (accepts, never answers), freezes writes only, or stalls answers mid-body; and an HTTP one that holds requests while frozen and lets them on when thawed.
import { createServer, connect, type Socket } from 'node:net'
import type { Server } from 'bun'

/**
 * `pass`: both ways, untouched. `freeze`: connections are accepted (and existing ones kept) but
 * nothing goes either way, as a bucket whose process is stopped. `freeze-writes`: a connection
 * that sends a PUT or POST is frozen from then on; reads pass. `stall-body`: each answer's headers
 * and its first `stallAfter` body bytes pass, then nothing more.
 */
export type StallMode = 'pass' | 'freeze' | 'freeze-writes' | 'stall-body'

export interface StallProxy {
  endpoint: string
  mode: StallMode
  close(): Promise<void>
}

export async function startStallProxy(upstreamPort: number, stallAfter = 1024): Promise<StallProxy> {
  const sockets = new Set<Socket>()
  const proxy: StallProxy = { endpoint: '', mode: 'pass', close: async () => {} }
  const server = createServer((client) => {
    sockets.add(client)
    client.on('error', () => {})
    client.on('close', () => sockets.delete(client))
    if (proxy.mode === 'freeze') {
      client.on('data', () => {})
      return
    }
    let frozen = false
    // per answer: the header text seen so far, then the body bytes still allowed through
    let header = ''
    let allowed: number | null = null
    const upstream = connect(upstreamPort, '127.0.0.1')
    sockets.add(upstream)
    upstream.on('error', () => client.destroy())
    upstream.on('close', () => {
      sockets.delete(upstream)
      client.destroy()
    })
    client.on('close', () => upstream.destroy())
    client.on('data', (chunk: Buffer) => {
      if (proxy.mode === 'freeze-writes' && /^(PUT|POST) /.test(chunk.subarray(0, 5).toString('latin1'))) frozen = true
      if (frozen || proxy.mode === 'freeze') return
      upstream.write(chunk)
    })
    upstream.on('data', (chunk: Buffer) => {
      if (frozen || proxy.mode === 'freeze') return
      if (proxy.mode !== 'stall-body') return void client.write(chunk)
      if (allowed === null) {
        header += chunk.toString('latin1')
        const end = header.indexOf('\r\n\r\n')
        if (end < 0) return void client.write(chunk)
        const bodyHere = header.length - (end + 4)
        allowed = Math.max(0, stallAfter - bodyHere)
        // pass the header and as much of this chunk's body as is allowed
        return void client.write(chunk.subarray(0, chunk.length - Math.max(0, bodyHere - stallAfter)))
      }
      const pass = chunk.subarray(0, allowed)
      allowed -= pass.length
      if (pass.length > 0) client.write(pass)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  proxy.endpoint = `http://127.0.0.1:${port}`
  proxy.close = async () => {
    for (const socket of sockets) socket.destroy()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  }
  return proxy
}

/** An S3 endpoint on 127.0.0.1 that forwards to s3rver, or, while frozen, accepts every request and answers none until thawed. */
export function startFreezableProxy(target: string) {
  let frozen = false
  const held: (() => void)[] = []
  const server: Server<undefined> = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    idleTimeout: 0,
    async fetch(request) {
      if (frozen) await new Promise<void>((resolve) => held.push(resolve))
      const url = new URL(request.url)
      const headers = new Headers(request.headers)
      headers.delete('host')
      const body = request.method === 'GET' || request.method === 'HEAD' ? undefined : await request.arrayBuffer()
      const answer = await fetch(`${target}${url.pathname}${url.search}`, { method: request.method, headers, body, redirect: 'manual' })
      return new Response(answer.body, { status: answer.status, headers: answer.headers })
    },
  })
  return {
    endpoint: `http://127.0.0.1:${server.port}`,
    held: () => held.length,
    freeze() {
      frozen = true
    },
    thaw() {
      frozen = false
      for (const resume of held.splice(0)) resume()
    },
    stop: () => server.stop(true),
  }
}
