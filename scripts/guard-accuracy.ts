// How exact the release guard's F, T and F/T are (decisions §15): its two sketches (insights/sketch.ts) filled with
// random device hashes, as HMAC digests are, at several fleet sizes; prints the spread of the estimates over many trials.
//
//   node_modules/.bin/bun scripts/guard-accuracy.ts [--trials 40] [--rate 0.05]
import { parseArgs } from 'node:util'
import { randomBytes } from 'node:crypto'
import { addDigest, countOf, emptySketch } from '../src/modules/insights/sketch'

const { values } = parseArgs({ options: { trials: { type: 'string', default: '40' }, rate: { type: 'string', default: '0.05' } } })
const trials = Number(values.trials)
const rate = Number(values.rate)

const spread = (errors: number[]) => {
  const mean = errors.reduce((a, b) => a + b, 0) / errors.length
  const sd = Math.sqrt(errors.reduce((a, b) => a + (b - mean) ** 2, 0) / errors.length)
  return { sd, worst: Math.max(...errors.map(Math.abs)) }
}
const pct = (x: number) => `${(x * 100).toFixed(2)} %`

for (const devices of [20, 1_000, 10_000, 100_000]) {
  const failing = Math.round(devices * rate)
  const tErrors: number[] = []
  const fErrors: number[] = []
  const rateErrors: number[] = []
  for (let trial = 0; trial < trials; trial++) {
    const all = emptySketch()
    const failed = emptySketch()
    for (let index = 0; index < devices; index++) {
      const digest = randomBytes(32)
      addDigest(all, digest)
      if (index < failing) addDigest(failed, digest)
    }
    const f = countOf(failed)
    const t = Math.max(countOf(all), f)
    tErrors.push(t / devices - 1)
    fErrors.push(failing > 0 ? f / failing - 1 : 0)
    rateErrors.push(f / t - failing / devices)
  }
  const [t, f, r] = [spread(tErrors), spread(fErrors), spread(rateErrors)]
  console.log(
    `${String(devices).padStart(7)} devices, ${failing} failing: T off by ${pct(t.sd)} (worst ${pct(t.worst)}), F off by ${pct(f.sd)} (worst ${pct(f.worst)}), F/T off by ${(r.sd * 100).toFixed(3)} points (worst ${(r.worst * 100).toFixed(3)}) over ${trials} trials`,
  )
}
