// The signed side of scripts/bench/runtime.ts (issue 27): the same releases signed, so the runtime's answers
// carry `signature`, against the unsigned ones on the same server. Signing stores the statement and the
// signature once; install info and the update check only copy them, so the ratio should be 1.00.
import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto'
import { buildStatement } from '../../src/sdk/statement'
import { readFileSync } from 'node:fs'
import { call, median, type Load } from './support'

export interface SigningSideInput {
  base: string
  accessToken: string
  /** the unsigned app's upload form (its 5 MB bundle and the rest), reused with the signed app's appId */
  form: FormData
  rounds: number
  seconds: number
  load(url: string, connections: number, script?: string): Promise<Load>
  /** the unsigned app's URLs: per-version install info, release install, update check (deviceId appended per request) */
  unsigned: { install: string; release: string; update: string }
  /** the server's process id: its CPU time per request is measured too, which other load on the machine shakes less than req/s */
  serverPid: number
  /** the server's data directory: the same answers are also timed in this process, through app.handle */
  dataDir: string
}

/**
 * The same answers timed in this process through app.handle on a second connection to the data
 * directory (WAL; nothing here writes), in small alternating batches: drift in the machine's load
 * falls on both sides alike, which wrk's seconds-long runs cannot promise on a shared machine.
 */
async function inProcess(dataDir: string, sides: { name: string; signed: string; unsigned: string }[]): Promise<void> {
  const { loadConfig } = await import('../../src/config')
  const { openDataDir } = await import('../../src/data-dir')
  const { createApp } = await import('../../src/app')
  const config = loadConfig({ dataDir, host: '127.0.0.1' }, {})
  const { db, paths, secret } = openDataDir(dataDir, { sweepTmp: false })
  const app = createApp({ config, db, paths, secret, log: () => {} })
  let device = 0
  // the update URLs end in `deviceId=bench-device-`: a new device per request, as wrk's script does
  const url = (base: string) => (base.endsWith('-') ? `${base}${++device}` : base)
  const batch = async (base: string, count: number) => {
    const started = performance.now()
    for (let i = 0; i < count; i++) await (await app.handle(new Request(url(base)))).text()
    return performance.now() - started
  }
  console.log('  in process (app.handle, 200 alternating batches of 200 requests per side; "A/A" times the unsigned answer against itself: the noise floor)')
  for (const side of sides.flatMap((side) => [side, { name: `${side.name}, A/A`, signed: side.unsigned, unsigned: side.unsigned }])) {
    for (const which of [side.signed, side.unsigned]) {
      const answer = await app.handle(new Request(url(which)))
      if (answer.status !== 200) throw new Error(`${which} answered ${answer.status}`)
      await batch(which, 2000)
    }
    let signed = 0
    let unsigned = 0
    for (let round = 0; round < 200; round++) {
      if (round % 2) {
        signed += await batch(side.signed, 200)
        unsigned += await batch(side.unsigned, 200)
      } else {
        unsigned += await batch(side.unsigned, 200)
        signed += await batch(side.signed, 200)
      }
    }
    const perRequest = (ms: number) => ((ms * 1000) / 40_000).toFixed(1)
    const [a, b] = side.signed === side.unsigned ? ['unsigned (slot 1)', 'unsigned (slot 2)'] : ['signed', 'unsigned']
    console.log(`    ${side.name}  ${a} ${perRequest(signed)} µs   ${b} ${perRequest(unsigned)} µs per request   ratio ${(signed / unsigned).toFixed(2)}${side.signed === side.unsigned ? '' : ' (target ≈ 1.00)'}`)
  }
  db.$client.close()
}

/** User + system CPU time of a process in seconds (Linux /proc; clock ticks of 1/100 s). */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
  return (Number(fields[11]) + Number(fields[12])) / 100
}

async function sha256(blob: Blob): Promise<string> {
  return new Bun.CryptoHasher('sha256').update(new Uint8Array(await blob.arrayBuffer())).digest('hex')
}

/** Uploads `version` of `appId` signed by `privateKey` (key `keyId`), the manifest naming the version so it is stored as sent. */
async function uploadSigned(input: SigningSideInput, appId: string, version: string, keyId: string, privateKey: KeyObject): Promise<{ id: string }> {
  const form = new FormData()
  form.append('version', version)
  form.set('manifest', new Blob([JSON.stringify({ appId, name: 'Bench signed', version, pages: { index: 'index' } })], { type: 'application/json' }), 'app.json')
  for (const field of ['bundleIos', 'bundleAndroid', 'assetsIos', 'assetsAndroid']) form.set(field, input.form.get(field) as File)
  const digests: Record<string, string> = {}
  for (const [field, value] of form.entries()) if (typeof value !== 'string') digests[field] = await sha256(value)
  form.append('signatureKeyId', keyId)
  form.append('signature', sign(null, Buffer.from(buildStatement(appId, version, digests)), privateKey).toString('base64'))
  return call(input.base, 'POST', `/api/mini-apps/by-app-id/${appId}/versions/upload`, { token: input.accessToken, body: form })
}

export async function benchSigning(input: SigningSideInput): Promise<void> {
  const { base, accessToken, load } = input
  const appId = 'com.example.benchsigned'
  const miniApp = await call(base, 'POST', '/api/mini-apps', { token: accessToken, json: { appId, name: 'Bench signed' } })
  const pair = generateKeyPairSync('ed25519')
  const publicKey = Buffer.from(pair.publicKey.export({ format: 'jwk' }).x!, 'base64url').toString('base64')
  const key = await call(base, 'POST', `/api/mini-apps/${miniApp.id}/signing-keys`, { token: accessToken, json: { name: 'bench', publicKey } })
  // the same two releases as the unsigned app: 1.0.0, then 1.1.0 at 25 %
  const first = await uploadSigned(input, appId, '1.0.0', key.keyId, pair.privateKey)
  await call(base, 'POST', `/api/mini-apps/${miniApp.id}/versions/${first.id}/publish`, { token: accessToken, json: {} })
  const next = await uploadSigned(input, appId, '1.1.0', key.keyId, pair.privateKey)
  await call(base, 'POST', `/api/mini-apps/${miniApp.id}/versions/${next.id}/publish`, { token: accessToken, json: { rolloutPercent: 25 } })
  const info = await call(base, 'GET', `/api/mini-apps/access/versions/${first.id}/install?token=${accessToken}`)
  const token = new URL(info.bundleUrl, base).searchParams.get('token')!
  const signed = {
    install: `${base}/api/mini-apps/access/versions/${first.id}/install?token=${token}`,
    release: `${base}/api/mini-apps/access/apps/${appId}/release/install`,
    update: `${base}/api/mini-apps/access/apps/${appId}/update?platform=ios&currentVersion=1.0.0&deviceId=bench-device-`,
  }
  for (const url of [signed.install, signed.release]) if (!(await (await fetch(url)).json()).signature) throw new Error(`${url} carries no signature`)

  const sides = [
    { name: 'install info (published)', signed: signed.install, unsigned: input.unsigned.install, script: undefined },
    { name: 'release install (no deviceId)', signed: signed.release, unsigned: input.unsigned.release, script: undefined },
    { name: 'update check (25 % rollout, a new deviceId per request)', signed: signed.update, unsigned: input.unsigned.update, script: 'devices.lua' },
  ]
  for (const side of sides) {
    await load(side.signed, 16, side.script)
    await load(side.unsigned, 16, side.script)
  }
  const results = sides.map(() => ({ signed: [] as number[], unsigned: [] as number[], signedCpu: [] as number[], unsignedCpu: [] as number[] }))
  for (let round = 1; round <= input.rounds; round++) {
    for (const [index, side] of sides.entries()) {
      const measure = async (which: 'signed' | 'unsigned') => {
        const before = cpuSeconds(input.serverPid)
        const run = await load(side[which], 32, side.script)
        results[index]![which].push(run.requestsPerSecond)
        results[index]![`${which}Cpu`].push(((cpuSeconds(input.serverPid) - before) * 1e6) / (run.requestsPerSecond * input.seconds))
      }
      if (round % 2) {
        await measure('signed')
        await measure('unsigned')
      } else {
        await measure('unsigned')
        await measure('signed')
      }
    }
    console.error(`signing round ${round}/${input.rounds} done`)
  }
  console.log(`signing benchmark: ${input.rounds} alternating rounds of ${input.seconds} s each, wrk -t1 -c32, medians; a signed release against the same release unsigned`)
  for (const [index, side] of sides.entries()) {
    const { signed: on, unsigned: off } = results[index]!
    // each round's two runs are back to back: their ratio is less shaken by the machine's load drifting between rounds
    const paired = median(on.map((value, round) => value / off[round]!))
    console.log(`  ${side.name}  signed ${median(on).toFixed(0)} req/s   unsigned ${median(off).toFixed(0)} req/s   ratio ${(median(on) / median(off)).toFixed(2)}, median of per-round ratios ${paired.toFixed(2)} (target ≈ 1.00)`)
    console.log(`    per round: signed ${on.map((value) => value.toFixed(0)).join(', ')}; unsigned ${off.map((value) => value.toFixed(0)).join(', ')} req/s`)
    const { signedCpu, unsignedCpu } = results[index]!
    console.log(`    server CPU per request: signed ${median(signedCpu).toFixed(1)} µs   unsigned ${median(unsignedCpu).toFixed(1)} µs   ratio ${(median(signedCpu) / median(unsignedCpu)).toFixed(2)}`)
  }
  await inProcess(input.dataDir, sides)
}
