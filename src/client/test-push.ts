// For the CLI's push tests: a build folder as `react-native bundle` writes one, and a stand-in
// server on 127.0.0.1 that answers what a test names and 404 otherwise.
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

/** A build folder push takes under `root`: both bundles, the manifest, an asset folder per platform. */
export function pushBuildFolder(root: string, name: string, manifest = '{}'): string {
  const dir = join(root, name)
  mkdirSync(join(dir, 'ios', 'assets'), { recursive: true })
  mkdirSync(join(dir, 'android', 'res'), { recursive: true })
  writeFileSync(join(dir, 'main.ios.jsbundle'), 'ios')
  writeFileSync(join(dir, 'main.android.bundle'), 'android')
  writeFileSync(join(dir, 'app.json'), manifest)
  return dir
}

/** A server whose `answer` says what each path gets (the body read first); `/api/info` is `{}`, anything else 404 in the error shape. */
export function standInServer(answer: (path: string, request: Request) => Response | undefined) {
  return Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(request) {
      const path = new URL(request.url).pathname
      await request.arrayBuffer()
      if (path === '/api/info') return Response.json({})
      return answer(path, request) ?? Response.json({ statusCode: 404, error: 'Not Found', code: 'ROUTE_NOT_FOUND', message: path }, { status: 404 })
    },
  })
}
