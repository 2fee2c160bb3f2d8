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

const svgNs = 'http://www.w3.org/2000/svg'
/** Colour-blind-friendly (Okabe–Ito), cycled. */
const palette = ['#0072B2', '#E69F00', '#009E73', '#CC79A7', '#56B4E9', '#D55E00', '#F0E442', '#999999']

function svg<K extends keyof SVGElementTagNameMap>(tag: K, attributes: Record<string, string | number>, ...children: (SVGElement | string)[]): SVGElementTagNameMap[K] {
  const element = document.createElementNS(svgNs, tag)
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value))
  for (const child of children) element.append(child)
  return element
}

const percent = (share: number) => `${Math.round(share * 100)}%`

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
  caption.textContent = 'Adoption: share of devices per version'
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
  // one day of data is drawn as a band across the plot (a point has no width to see)
  const columns = dayCount === 1 ? [0, 0] : series.days.map((_, dayIndex) => dayIndex)
  const x = (column: number) => margin.left + (dayCount === 1 ? column * plotWidth : (column / (dayCount - 1)) * plotWidth)
  const y = (share: number) => margin.top + (1 - share) * plotHeight

  const chart = svg('svg', { viewBox: `0 0 ${width} ${height}`, width, height, role: 'img', 'aria-label': 'Share of active devices per version and day' })
  for (const share of [0, 0.5, 1]) {
    chart.append(
      svg('line', { x1: margin.left, x2: width - margin.right, y1: y(share), y2: y(share), stroke: '#ddd' }),
      svg('text', { x: margin.left - 6, y: y(share) + 4, 'text-anchor': 'end', 'font-size': 11, fill: '#555' }, percent(share)),
    )
  }
  const below = series.days.map(() => 0)
  series.versions.forEach((version, versionIndex) => {
    const above = below.map((base, dayIndex) => base + series.shares[versionIndex]![dayIndex]!)
    const point = (shares: number[]) => columns.map((column, at) => `${x(dayCount === 1 ? at : column).toFixed(1)},${y(shares[column]!).toFixed(1)}`)
    const top = point(above)
    const bottom = point(below).reverse()
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

  // the legend: each version's share on the latest day that saw devices, of the denominator it names
  let latest = dayCount - 1
  while (latest > 0 && series.shares.every((shares) => shares[latest] === 0)) latest--
  const denominator = report.days[latest]?.devices
  const legend = document.createElement('ul')
  legend.className = 'chart-legend'
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
  figure.append(legend)
  return figure
}
