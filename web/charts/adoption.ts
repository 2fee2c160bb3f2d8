// The adoption chart: each version's share of the devices seen per day, as stacked SVG areas (no library, no CDN).

/** The parts of GET /api/mini-apps/{id}/insights this chart reads. */
export interface AdoptionReport {
  /** `devices`: the distinct devices seen that day, the denominator of its shares (older servers do not send it) */
  days: { day: string; devices?: number; versions: { versionId: string | null; version: string; activeDevices: number }[] }[]
  adoption: { versionId: string | null; share: number; devices?: number; day?: string | null }
}

export interface AdoptionSeries {
  days: string[]
  /** versions in the order they are stacked: the oldest first seen at the bottom; `other` (versionId null) is what devices run that is no release */
  versions: { versionId: string | null; version: string }[]
  /** shares[v][d]: version v's share (0..1) of the distinct devices seen on day d; a day without devices is all 0 */
  shares: number[][]
  /** whether any day saw any device */
  empty: boolean
}

/** The numbers behind the chart, a pure function so it can be tested without a browser. */
export function adoptionSeries(report: AdoptionReport): AdoptionSeries {
  const versions: AdoptionSeries['versions'] = []
  const index = new Map<string | null, number>()
  for (const day of report.days) {
    for (const version of day.versions) {
      if (version.activeDevices > 0 && !index.has(version.versionId)) {
        index.set(version.versionId, versions.length)
        versions.push({ versionId: version.versionId, version: version.version })
      }
    }
  }
  const shares = versions.map(() => report.days.map(() => 0))
  report.days.forEach((day, dayIndex) => {
    // the day's distinct devices (a device that moved versions that day counts once), as the headline share;
    // an older server sends none: the sum, which is what it had
    const total = day.devices ?? day.versions.reduce((sum, version) => sum + version.activeDevices, 0)
    if (total === 0) return
    for (const version of day.versions) {
      const at = index.get(version.versionId)
      if (at !== undefined) shares[at]![dayIndex] = Math.min(1, version.activeDevices / total)
    }
  })
  return { days: report.days.map((day) => day.day), versions, shares, empty: versions.length === 0 }
}

/**
 * The heights to stack, per version and day: the shares, scaled down on a day whose shares add up to
 * more than 1 (a device that moved to another version that day counts in both), so that a day's
 * stack ends at 100 % instead of running off the top of the chart. The labels keep the shares.
 */
export function stackedShares(series: AdoptionSeries): number[][] {
  const sums = series.days.map((_, day) => series.shares.reduce((sum, shares) => sum + shares[day]!, 0))
  return series.shares.map((shares) => shares.map((share, day) => (sums[day]! > 1 ? share / sums[day]! : share)))
}

/**
 * How to draw the series: stacked areas need two days with devices to say anything; with fewer (a
 * new install's first day) an area is a sliver at the edge, so each day becomes a stacked bar
 * instead, over the days from the first one that saw devices (`from`).
 */
export function adoptionShape(series: AdoptionSeries): { shape: 'areas' | 'bars'; from: number } {
  const seen = series.days.map((_, day) => series.shares.some((shares) => shares[day]! > 0))
  const daysSeen = seen.filter(Boolean).length
  if (daysSeen >= 2) return { shape: 'areas', from: 0 }
  return { shape: 'bars', from: Math.max(0, seen.indexOf(true)) }
}

/** A bar is at most this wide (SVG units), so that one day is a bar and not a wall. */
const MAX_BAR_WIDTH = 56

const svgNs = 'http://www.w3.org/2000/svg'
/** Colour-blind-friendly (Okabe–Ito), cycled. */
const palette = ['#0072B2', '#E69F00', '#009E73', '#CC79A7', '#56B4E9', '#D55E00', '#F0E442', '#999999']

function svg<K extends keyof SVGElementTagNameMap>(tag: K, attributes: Record<string, string | number>, ...children: (SVGElement | string)[]): SVGElementTagNameMap[K] {
  const element = document.createElementNS(svgNs, tag)
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value))
  for (const child of children) element.append(child)
  return element
}

/** A share as the rest of the console and the CLI write it: "83 %". */
export const percent = (share: number): string => `${Math.round(share * 100)} %`

/**
 * A `<figure data-testid="adoption-chart">`: stacked areas of each version's share per day, a legend
 * with each version's share on the last day that saw devices, and the current release marked; or,
 * without any device seen, an empty state that says so (never a blank box).
 */
export function adoptionChart(report: AdoptionReport, options: { width?: number; height?: number } = {}): HTMLElement {
  const series = adoptionSeries(report)
  const figure = document.createElement('figure')
  figure.className = 'chart adoption-chart'
  figure.setAttribute('data-testid', 'adoption-chart')
  const caption = document.createElement('figcaption')
  caption.textContent = 'Adoption by version'
  figure.append(caption)
  if (series.empty) {
    const empty = document.createElement('p')
    empty.className = 'chart-empty'
    empty.setAttribute('data-testid', 'adoption-chart-empty')
    empty.textContent = 'No devices seen in this period yet. Devices appear here once they check for updates, install, or send events.'
    figure.append(empty)
    return figure
  }
  const width = options.width ?? 640
  const height = options.height ?? 220
  const margin = { top: 8, right: 8, bottom: 24, left: 40 }
  const plotWidth = width - margin.left - margin.right
  const plotHeight = height - margin.top - margin.bottom
  const dayCount = series.days.length
  const x = (dayIndex: number) => margin.left + (dayCount === 1 ? plotWidth / 2 : (dayIndex / (dayCount - 1)) * plotWidth)
  const y = (share: number) => margin.top + (1 - share) * plotHeight
  const { shape, from } = adoptionShape(series)

  const chart = svg('svg', { viewBox: `0 0 ${width} ${height}`, width, height, role: 'img', 'aria-label': 'Share of active devices per version and day' })
  for (const share of [0, 0.5, 1]) {
    chart.append(
      svg('line', { x1: margin.left, x2: width - margin.right, y1: y(share), y2: y(share), stroke: '#ddd' }),
      svg('text', { x: margin.left - 6, y: y(share) + 4, 'text-anchor': 'end', 'font-size': 11, fill: '#555' }, percent(share)),
    )
  }
  if (shape === 'bars') {
    drawBars(chart, series, from, { width, height, margin, plotWidth, plotHeight, y })
    figure.append(chart)
    figure.append(legendOf(series, report))
    return figure
  }
  const heights = stackedShares(series)
  const below = series.days.map(() => 0)
  series.versions.forEach((version, versionIndex) => {
    const above = below.map((base, dayIndex) => base + heights[versionIndex]![dayIndex]!)
    const top = above.map((share, dayIndex) => `${x(dayIndex).toFixed(1)},${y(share).toFixed(1)}`)
    const bottom = below.map((share, dayIndex) => `${x(dayIndex).toFixed(1)},${y(share).toFixed(1)}`).reverse()
    const colour = palette[versionIndex % palette.length]!
    const area = svg('polygon', { points: [...top, ...bottom].join(' '), fill: colour, 'fill-opacity': 0.85, 'data-version': version.version })
    area.append(svg('title', {}, version.version))
    chart.append(area)
    above.forEach((share, dayIndex) => (below[dayIndex] = share))
  })
  chart.append(
    svg('text', { x: margin.left, y: height - 6, 'font-size': 11, fill: '#555' }, series.days[0]!),
    svg('text', { x: width - margin.right, y: height - 6, 'text-anchor': 'end', 'font-size': 11, fill: '#555' }, series.days[dayCount - 1]!),
  )
  figure.append(chart)
  figure.append(legendOf(series, report))
  return figure
}

interface Frame {
  width: number
  height: number
  margin: { top: number; right: number; bottom: number; left: number }
  plotWidth: number
  plotHeight: number
  y: (share: number) => number
}

/** One stacked bar per day from `from` on, each version's share written inside when it is tall enough. */
function drawBars(chart: SVGSVGElement, series: AdoptionSeries, from: number, frame: Frame): void {
  const { width, height, margin, plotWidth, plotHeight, y } = frame
  const days = series.days.length - from
  const slot = plotWidth / days
  const barWidth = Math.min(MAX_BAR_WIDTH, slot * 0.8)
  const centre = (day: number) => margin.left + (day - from + 0.5) * slot
  const heights = stackedShares(series)
  for (let day = from; day < series.days.length; day++) {
    let below = 0
    series.versions.forEach((version, versionIndex) => {
      const share = series.shares[versionIndex]![day]!
      const height = heights[versionIndex]![day]!
      if (share <= 0) return
      const bar = svg('rect', {
        x: (centre(day) - barWidth / 2).toFixed(1),
        y: y(below + height).toFixed(1),
        width: barWidth.toFixed(1),
        height: (height * plotHeight).toFixed(1),
        fill: palette[versionIndex % palette.length]!,
        'data-version': version.version,
        'data-day': series.days[day]!,
      })
      bar.append(svg('title', {}, `${version.version} on ${series.days[day]}: ${percent(share)}`))
      chart.append(bar)
      // the share beside a lone bar, where there is room to read it
      if (days <= 3 && height * plotHeight >= 14) {
        chart.append(svg('text', { x: (centre(day) + barWidth / 2 + 6).toFixed(1), y: (y(below + height / 2) + 4).toFixed(1), 'font-size': 11, fill: '#555' }, `${version.version} ${percent(share)}`))
      }
      below += height
    })
  }
  if (days === 1) chart.append(svg('text', { x: centre(from).toFixed(1), y: height - 6, 'text-anchor': 'middle', 'font-size': 11, fill: '#555' }, series.days[from]!))
  else {
    chart.append(
      svg('text', { x: margin.left, y: height - 6, 'font-size': 11, fill: '#555' }, series.days[from]!),
      svg('text', { x: width - margin.right, y: height - 6, 'text-anchor': 'end', 'font-size': 11, fill: '#555' }, series.days.at(-1)!),
    )
  }
}

/** The legend: each version's share on the latest day that saw devices, of the denominator it names. */
function legendOf(series: AdoptionSeries, report: AdoptionReport): HTMLUListElement {
  let latest = series.days.length - 1
  while (latest > 0 && series.shares.every((shares) => shares[latest] === 0)) latest--
  const legend = document.createElement('ul')
  legend.className = 'chart-legend'
  const denominator = report.days[latest]?.devices
  if (denominator !== undefined) {
    const head = document.createElement('li')
    head.className = 'legend-denominator'
    head.setAttribute('data-testid', 'adoption-denominator')
    head.textContent = `Share of the ${denominator} device${denominator === 1 ? '' : 's'} seen on ${series.days[latest]}:`
    legend.append(head)
  }
  series.versions.forEach((version, versionIndex) => {
    const item = document.createElement('li')
    item.setAttribute('data-version-id', version.versionId ?? 'other')
    const swatch = svg('svg', { width: 10, height: 10, 'aria-hidden': 'true' }, svg('rect', { width: 10, height: 10, fill: palette[versionIndex % palette.length]! }))
    const current = version.versionId === report.adoption.versionId ? ' (current release)' : ''
    const name = version.versionId === null ? 'other (versions that are no release)' : version.version
    item.append(swatch, ` ${name}${current}: ${percent(series.shares[versionIndex]![latest]!)}`)
    legend.append(item)
  })
  // a device that updated that day ran two versions and is in both shares: say so, or 100 % + 10 % reads as a wrong sum
  if (series.shares.reduce((sum, shares) => sum + shares[latest]!, 0) > 1 + 1e-9) {
    const note = document.createElement('li')
    note.className = 'legend-note'
    note.setAttribute('data-testid', 'adoption-overlap')
    note.textContent = 'A device that changed version that day counts under each version it ran, so these add up to more than 100 %.'
    legend.append(note)
  }
  return legend
}
