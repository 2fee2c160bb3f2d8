// What a rollout change costs the caller with the release mirror on (issue 29): answered after the commit, the mirror written from the queue.
//
//   node_modules/.bin/bun scripts/bench/release-change.ts [--rounds 40]
//
// One app in process (app.handle) on a temp data directory with S3 storage: s3rver on 127.0.0.1
// behind a proxy that can freeze (accept every request and answer none). Each round is a
// `PATCH …/channels/stable/rollout` that moves a staged release between 40 % and 60 %, measured three ways:
//   queued        the answer as the server gives it now (the mirror write queued after the commit);
//   inline        the answer plus the mirror write it causes (drained from the queue before the
//                 clock stops), which is what the request waited for before the queue;
//   frozen        the answer while the bucket is frozen (inline, the request would wait for the
//                 bucket forever; here it answers, and the write waits in the queue).
// Prints medians and 95th percentiles in ms, then how long the queue took to catch up after a thaw.
import { parseArgs } from 'node:util'
import { createTestContext } from '../../src/test-support'
import { createMiniApp, createTestUser, upload, uploadForm } from '../../src/test-fixtures'
import { startTestS3 } from '../../src/storage/test-s3'
import { startFreezableProxy } from '../../src/storage/test-stall'
import { median } from './support'

const { values: options } = parseArgs({ options: { rounds: { type: 'string', default: '40' } } })
const rounds = Number(options.rounds)

const s3 = await startTestS3()
const proxy = startFreezableProxy(s3.endpoint)

const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * p))]!
const ms = (value: number) => value.toFixed(2)

const context = createTestContext({ storage: { ...s3.config('bench'), endpoint: proxy.endpoint, recorded: { owner: 'bench' } }, mirrorReleases: true, cdnUrl: 'https://cdn.example.com' }, { jobs: { attemptTimeoutMs: 5_000 } })
try {
  const owner = await createTestUser(context)
  const appId = 'com.example.bench'
  const miniAppId = (await createMiniApp(context, owner.token, appId)).id
  for (const [version, percent] of [['1.0.0', 100], ['1.1.0', 50]] as const) {
    const uploaded = await upload(context, owner.token, appId, uploadForm(appId, { version }))
    await context.call('POST', `/api/mini-apps/${miniAppId}/versions/${uploaded.body.id}/publish`, { token: owner.token, json: { rolloutPercent: percent } })
  }
  await context.app.store.jobs.drain()
  const rollout = async (round: number) => {
    const started = performance.now()
    const res = await context.call('PATCH', `/api/mini-apps/${miniAppId}/channels/stable/rollout`, { token: owner.token, json: { rolloutPercent: round % 2 === 0 ? 40 : 60 } })
    if (res.status !== 200) throw new Error(`rollout answered ${res.status}: ${res.text}`)
    return performance.now() - started
  }
  const queued: number[] = []
  const inline: number[] = []
  for (let round = 0; round < rounds; round++) {
    // alternate which side goes first
    const sides = round % 2 === 0 ? (['queued', 'inline'] as const) : (['inline', 'queued'] as const)
    for (const side of sides) {
      if (side === 'queued') {
        queued.push(await rollout(round))
        await context.app.store.jobs.drain()
      } else {
        const started = performance.now()
        await rollout(round)
        await context.app.store.jobs.drain()
        inline.push(performance.now() - started)
      }
    }
  }
  proxy.freeze()
  const whileFrozen: number[] = []
  for (let round = 0; round < rounds; round++) whileFrozen.push(await rollout(round))
  context.app.store.jobs.start()
  await Bun.sleep(200)
  const backlog = context.app.store.jobs.backlog().byKind['release-mirror']!
  const thawed = performance.now()
  proxy.thaw()
  // the held write finishes, then the one pending write of the channel runs (its retry made due now)
  context.advance(3_600_000)
  while (context.app.store.jobs.backlog().byKind['release-mirror']!.pending + context.app.store.jobs.backlog().byKind['release-mirror']!.running > 0) await Bun.sleep(10)
  const caughtUp = performance.now() - thawed
  await context.app.store.jobs.stop(5_000)

  console.log(`rollout change with --mirror-releases on, ${rounds} rounds (ms)`)
  console.log(`  queued (now)        median ${ms(median(queued))}  p95 ${ms(percentile(queued, 0.95))}`)
  console.log(`  inline (before)     median ${ms(median(inline))}  p95 ${ms(percentile(inline, 0.95))}`)
  console.log(`  frozen bucket, now  median ${ms(median(whileFrozen))}  p95 ${ms(percentile(whileFrozen, 0.95))}  (before: no answer until the bucket answers)`)
  console.log(`  backlog while frozen: ${backlog.pending + backlog.running} mirror write(s) for the channel after ${rounds} changes; caught up ${ms(caughtUp)} ms after the thaw`)
} finally {
  context.close()
  proxy.stop()
  await s3.close()
}
