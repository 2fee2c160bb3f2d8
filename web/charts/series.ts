// What the downloads chart plots: downloads per day and platform (the adoption chart is charts/adoption.ts).
import type { Insights } from '../api.ts'
import type { Series } from './bars.ts'

/** What the downloads chart reads of the insights answer. */
type Days = { days: { versions: Pick<Insights['days'][number]['versions'][number], 'downloads'>[] }[] }

/** Downloads per day, iOS and Android stacked. */
export function downloadSeries(insights: Days): Series[] {
  return [
    { name: 'iOS', values: insights.days.map((d) => d.versions.reduce((sum, v) => sum + v.downloads.ios, 0)) },
    { name: 'Android', values: insights.days.map((d) => d.versions.reduce((sum, v) => sum + v.downloads.android, 0)) },
  ]
}
