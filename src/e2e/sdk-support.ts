// Shared by the update-client e2e tests: a running binary with an administrator, a miniapp, and versions to publish.
import { join } from 'node:path'
import { buildZip } from '../test-fixtures'
import { callApi, runBinary, startBinary, type RunningBinary } from './support'

export interface Publisher {
  server: RunningBinary
  token: string
  miniAppId: string
  appId: string
  /** uploads a version whose iOS bundle is `ios` (a default of about 100 kB otherwise); answers its id */
  upload(version: string, ios?: string): Promise<string>
  publish(versionId: string, options?: { rolloutPercent?: number; hostVersionRange?: string; mandatory?: boolean }): Promise<void>
  call: (method: string, path: string, json?: unknown) => ReturnType<typeof callApi>
}

/** Starts the binary on `dir`/data with an administrator (made by create-admin) and one miniapp. */
export async function startPublisher(dir: string, appId: string, args: string[] = [], binary?: string): Promise<Publisher> {
  const dataDir = join(dir, 'data')
  const created = await runBinary(['create-admin', '--data-dir', dataDir, '--email', 'admin@example.test', '--password-stdin'], { stdin: 'admin password 1\n', binary })
  if (created.exitCode !== 0) throw new Error(`create-admin failed: ${created.stderr}`)
  const server = await startBinary({ dataDir, args: ['--rate-limit', 'off', ...args], cwd: dir, binary })
  const login = await callApi(server.baseUrl, 'POST', '/api/auth/login', { json: { email: 'admin@example.test', password: 'admin password 1' } })
  if (login.status !== 200) throw new Error(`login failed: ${login.status} ${JSON.stringify(login.body)}`)
  const token = login.body.accessToken as string
  const call = (method: string, path: string, json?: unknown) => callApi(server.baseUrl, method, path, { token, json })
  const miniApp = await call('POST', '/api/mini-apps', { appId, name: 'SDK shop' })
  if (miniApp.status !== 201) throw new Error(`creating the miniapp failed: ${miniApp.status}`)
  return {
    server,
    token,
    miniAppId: miniApp.body.id,
    appId,
    call,
    async upload(version, ios = `/* ios ${version} */ ` + 'var a=1;'.repeat(12_000)) {
      const form = new FormData()
      form.append('version', version)
      form.append('bundleIos', new Blob([ios]), 'main.ios.jsbundle')
      form.append('bundleAndroid', new Blob([`/* android ${version} */`]), 'main.android.bundle')
      form.append('manifest', new Blob([JSON.stringify({ appId, name: 'SDK shop', version, pages: { home: 'Home' } })]), 'app.json')
      form.append('assetsIos', new Blob([buildZip([{ name: 'assets/logo.png', content: `logo ${version}` }]) as BlobPart]), 'assets-ios.zip')
      form.append('assetsAndroid', new Blob([buildZip([{ name: 'raw/a.json', content: '{}' }]) as BlobPart]), 'assets-android.zip')
      const uploaded = await callApi(server.baseUrl, 'POST', `/api/mini-apps/by-app-id/${appId}/versions/upload`, { token, body: form })
      if (uploaded.status !== 201) throw new Error(`upload of ${version} failed: ${uploaded.status} ${JSON.stringify(uploaded.body)}`)
      return uploaded.body.id as string
    },
    async publish(versionId, options = {}) {
      const published = await call('POST', `/api/mini-apps/${miniApp.body.id}/versions/${versionId}/publish`, options)
      if (published.status !== 200) throw new Error(`publish failed: ${published.status} ${JSON.stringify(published.body)}`)
    },
  }
}
