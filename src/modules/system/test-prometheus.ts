// Test-only: a Prometheus text-format (0.0.4) parser that checks what promtool would, for the metrics tests.

export interface Sample {
  name: string
  labels: Record<string, string>
  value: number
}

export interface Family {
  name: string
  type: string
  help: string
  samples: Sample[]
}

/**
 * Parses text format 0.0.4 strictly enough to catch what promtool would: names and label syntax,
 * values, HELP/TYPE before samples, families not interleaved, no duplicate series, histograms with
 * cumulative buckets ending in +Inf equal to _count, and a final newline.
 */
export function parsePrometheusText(text: string): Map<string, Family> {
  if (!text.endsWith('\n')) throw new Error('the text must end with a newline')
  const families = new Map<string, Family>()
  const seenSeries = new Set<string>()
  let current: Family | null = null
  const familyOf = (sampleName: string): Family | undefined => {
    for (const suffix of ['', '_bucket', '_sum', '_count']) {
      if (suffix !== '' && !sampleName.endsWith(suffix)) continue
      const family = families.get(sampleName.slice(0, sampleName.length - suffix.length))
      if (family && (suffix === '' || family.type === 'histogram' || family.type === 'summary')) return family
    }
    return undefined
  }
  text
    .slice(0, -1)
    .split('\n')
    .forEach((line, index) => {
      const where = `line ${index + 1} "${line}"`
      if (line === '') throw new Error(`${where}: empty line`)
      const meta = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$/.exec(line)
      if (meta) {
        const [, kind, name, rest] = meta as unknown as [string, string, string, string]
        let family = families.get(name)
        if (!family) {
          if (current && current.samples.length === 0 && current.name !== name) throw new Error(`${where}: family ${current.name} has no samples`)
          family = { name, type: 'untyped', help: '', samples: [] }
          families.set(name, family)
        } else if (family !== current) throw new Error(`${where}: ${name} described twice`)
        if (family.samples.length > 0) throw new Error(`${where}: ${kind} after samples of ${name}`)
        if (kind === 'TYPE') {
          if (!['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(rest)) throw new Error(`${where}: unknown type`)
          family.type = rest
        } else family.help = rest
        current = family
        return
      }
      if (line.startsWith('#')) return
      const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: -?\d+)?$/.exec(line)
      if (!sample) throw new Error(`${where}: not a sample`)
      const [, name, labelText, valueText] = sample as unknown as [string, string, string | undefined, string]
      const labels: Record<string, string> = {}
      if (labelText !== undefined && labelText !== '') {
        const labelPattern = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"(,|$)/y
        let at = 0
        while (at < labelText.length) {
          labelPattern.lastIndex = at
          const match = labelPattern.exec(labelText)
          if (!match) throw new Error(`${where}: bad labels at ${at}`)
          if (match[1]! in labels) throw new Error(`${where}: label ${match[1]} twice`)
          labels[match[1]!] = match[2]!.replace(/\\n/g, '\n').replace(/\\(["\\])/g, '$1')
          at = labelPattern.lastIndex
          if (match[3] === '' && at < labelText.length) throw new Error(`${where}: bad labels`)
        }
      }
      const value = valueText === '+Inf' ? Infinity : valueText === '-Inf' ? -Infinity : valueText === 'NaN' ? NaN : Number(valueText)
      if (!/^(NaN|[+-]Inf|[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?)$/.test(valueText)) throw new Error(`${where}: bad value`)
      const family = familyOf(name)
      if (!family) throw new Error(`${where}: sample without HELP/TYPE`)
      if (family !== current) throw new Error(`${where}: ${family.name} interleaved with ${current?.name}`)
      const series = `${name}{${Object.entries(labels).sort().map(([key, text]) => `${key}=${text}`).join(',')}}`
      if (seenSeries.has(series)) throw new Error(`${where}: duplicate series`)
      seenSeries.add(series)
      if (family.type === 'counter' && (value < 0 || !family.name.endsWith('_total'))) throw new Error(`${where}: a counter must be ≥ 0 and named *_total`)
      family.samples.push({ name, labels, value })
    })
  for (const family of families.values()) {
    if (family.type !== 'histogram') continue
    const byLabels = new Map<string, Sample[]>()
    for (const sample of family.samples) {
      const { le: _le, ...rest } = sample.labels
      const key = JSON.stringify(rest)
      byLabels.set(key, [...(byLabels.get(key) ?? []), sample])
    }
    for (const [key, samples] of byLabels) {
      const buckets = samples.filter((sample) => sample.name.endsWith('_bucket'))
      const count = samples.find((sample) => sample.name.endsWith('_count'))
      if (!count || !samples.some((sample) => sample.name.endsWith('_sum'))) throw new Error(`${family.name}${key}: _sum or _count missing`)
      let previous = -Infinity
      let previousValue = 0
      for (const bucket of buckets) {
        const le = bucket.labels.le === '+Inf' ? Infinity : Number(bucket.labels.le)
        if (!(le > previous) || bucket.value < previousValue) throw new Error(`${family.name}${key}: buckets not cumulative and ordered`)
        previous = le
        previousValue = bucket.value
      }
      if (previous !== Infinity || previousValue !== count.value) throw new Error(`${family.name}${key}: the +Inf bucket must equal _count`)
    }
  }
  return families
}

