// Memory of the release mirror's copy of a large object (issue 14): a 100 MB bundle copied from blobs/ to releases/ in the bucket.
//
//   node_modules/.bin/bun scripts/bench/mirror-memory.ts [--mb 100] [--rounds 3]
//
// Starts s3rver on 127.0.0.1, stores one random blob through the S3 blob store, then copies it the
// way the mirror does (`writeObject` of `read(sha256)`: a presigned PUT carrying Cache-Control) and,
// as the baseline in the same run, with `Bun.S3Client.write` of the same S3 file. It also measures
// what `miniship backup` does with each blob of a bucket (`Bun.write` of the S3 file into the staging
// directory; no baseline). Sides alternate; each round's figure is the peak RSS (VmHWM, reset before
// each copy) above the RSS before it.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { startTestS3 } from '../../src/storage/test-s3'
import { createS3BlobStore } from '../../src/storage/s3'

const { values: options } = parseArgs({ options: { mb: { type: 'string', default: '100' }, rounds: { type: 'string', default: '3' } } })
const size = Number(options.mb) * 1024 * 1024
const rounds = Number(options.rounds)

const status = async (field: 'VmRSS' | 'VmHWM') => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(await Bun.file('/proc/self/status').text())![1]) / 1024

const s3 = await startTestS3()
const dir = mkdtempSync(join(tmpdir(), 'miniship-bench-mirror-'))
try {
  mkdirSync(join(dir, 'blobs'))
  mkdirSync(join(dir, 'tmp'))
  const config = s3.config('bench')
  const store = createS3BlobStore(config, { blobs: join(dir, 'blobs'), tmp: join(dir, 'tmp') })
  // the blob: random bytes, written to a file and stored, then let go of
  let sha256: string
  {
    const data = new Uint8Array(size)
    for (let offset = 0; offset < size; offset += 65536) crypto.getRandomValues(data.subarray(offset, offset + 65536))
    writeFileSync(join(dir, 'blob'), data)
    sha256 = new Bun.CryptoHasher('sha256').update(data).digest('hex')
  }
  await store.putFile(sha256, join(dir, 'blob'))
  rmSync(join(dir, 'blob'))
  const client = new Bun.S3Client({ bucket: config.bucket, endpoint: config.endpoint!, region: config.region, accessKeyId: config.accessKeyId!, secretAccessKey: config.secretAccessKey! })

  const sides = {
    mirror: () => store.writeObject('releases/com.example.bench/stable/bundles/ios', store.read(sha256), { contentType: 'application/javascript', cacheControl: 'public, max-age=60' }),
    baseline: () => client.write(store.objectKey('releases/com.example.bench/baseline/bundles/ios'), store.read(sha256)).then(() => {}),
    backup: () => Bun.write(join(dir, 'staged-blob'), store.read(sha256)).then(() => {}),
  }
  const peaks: Record<keyof typeof sides, number[]> = { mirror: [], baseline: [], backup: [] }
  const times: Record<keyof typeof sides, number[]> = { mirror: [], baseline: [], backup: [] }
  for (let round = 1; round <= rounds; round++) {
    const order = (round % 2 ? ['mirror', 'baseline', 'backup'] : ['backup', 'baseline', 'mirror']) as (keyof typeof sides)[]
    for (const side of order) {
      Bun.gc(true)
      const before = await status('VmRSS')
      writeFileSync('/proc/self/clear_refs', '5') // resets VmHWM to the current RSS
      const started = performance.now()
      await sides[side]()
      times[side].push(performance.now() - started)
      peaks[side].push((await status('VmHWM')) - before)
    }
    console.error(`round ${round}/${rounds} done`)
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
  console.log(`release mirror copy of a ${options.mb} MB object in the bucket (s3rver), ${rounds} alternating rounds, medians`)
  console.log(`  writeObject (presigned PUT with Cache-Control)  peak ${median(peaks.mirror).toFixed(1)} MB above the RSS before, ${median(times.mirror).toFixed(0)} ms`)
  console.log(`  baseline Bun.S3Client.write of the same file  peak ${median(peaks.baseline).toFixed(1)} MB, ${median(times.baseline).toFixed(0)} ms`)
  console.log(`  backup's download of the blob into a local file  peak ${median(peaks.backup).toFixed(1)} MB, ${median(times.backup).toFixed(0)} ms (no baseline)`)
  console.log(`    per round: mirror ${peaks.mirror.map((value) => value.toFixed(1)).join(', ')} MB; baseline ${peaks.baseline.map((value) => value.toFixed(1)).join(', ')} MB`)
} finally {
  await s3.close()
  rmSync(dir, { recursive: true, force: true })
}
