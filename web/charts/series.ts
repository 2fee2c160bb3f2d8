// What the insights charts plot: adoption (active devices per version per day) and downloads per platform.
import type { Insights } from '../api.ts'
import type { Series } from './bars.ts'

type Days = Pick<Insights, 'days'>

/** The adoption chart: each day's active devices split by version (the `biggest` largest, the rest as "other"). */
export function adoptionSeries(insights: Days, biggest = 4): Series[] {
  const totals = new Map<string, { name: string; devices: number }>()
  for (const day of insights.days) {
    for (const v of day.versions) {
      const entry = totals.get(v.versionId) ?? { name: v.version, devices: 0 }
      entry.devices += v.activeDevices
      totals.set(v.versionId, entry)
    }
  }
  const top = [...totals.entries()].filter(([, t]) => t.devices > 0).sort((a, b) => b[1].devices - a[1].devices).slice(0, biggest).map(([id]) => id)
  const series: Series[] = top.map((id) => ({ name: totals.get(id)!.name, values: insights.days.map((d) => d.versions.find((v) => v.versionId === id)?.activeDevices ?? 0) }))
  const otherValues = insights.days.map((d) => d.versions.filter((v) => !top.includes(v.versionId)).reduce((sum, v) => sum + v.activeDevices, 0))
  if (otherValues.some((n) => n > 0)) series.push({ name: 'other', values: otherValues })
  return series
}

/** Downloads per day, iOS and Android stacked. */
export function downloadSeries(insights: Days): Series[] {
  return [
    { name: 'iOS', values: insights.days.map((d) => d.versions.reduce((sum, v) => sum + v.downloads.ios, 0)) },
    { name: 'Android', values: insights.days.map((d) => d.versions.reduce((sum, v) => sum + v.downloads.android, 0)) },
  ]
}
