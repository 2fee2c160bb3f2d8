// Stacked bar charts as plain SVG (no library): downloads per day and the adoption of versions.
// The layout is a pure function (tested in bars.test.ts); drawing only turns it into elements.

const SVG_NS = 'http://www.w3.org/2000/svg'

export interface Series {
  name: string
  /** one value per day, same length as `days` */
  values: number[]
}

export interface BarRect {
  series: number
  day: number
  x: number
  y: number
  width: number
  height: number
  value: number
}

export interface BarLayout {
  rects: BarRect[]
  /** the top of the value axis: a round number at or above the highest stack */
  max: number
  width: number
  height: number
}

/** 1, 2, 2.5 or 5 times a power of ten, at or above `value`: axis tops people read at a glance. */
export function niceCeiling(value: number): number {
  if (!(value > 0)) return 1
  const power = 10 ** Math.floor(Math.log10(value))
  for (const step of [1, 2, 2.5, 5, 10]) if (value <= step * power) return step * power
  return 10 * power
}

/**
 * Where each bar segment goes in a `width` × `height` plot: one column per day, segments stacked
 * bottom-up in series order. `percent` scales every day to its own total (shares, 0–100 %).
 */
export function layoutBars(days: number, series: Series[], width: number, height: number, percent = false): BarLayout {
  const totals = Array.from({ length: days }, (_, d) => series.reduce((sum, s) => sum + Math.max(0, s.values[d] ?? 0), 0))
  const max = percent ? 100 : niceCeiling(Math.max(0, ...totals))
  const slot = days > 0 ? width / days : width
  const gap = slot > 6 ? Math.min(4, slot * 0.2) : 0
  const rects: BarRect[] = []
  for (let d = 0; d < days; d++) {
    let base = height
    for (let i = 0; i < series.length; i++) {
      const raw = Math.max(0, series[i]!.values[d] ?? 0)
      const value = percent ? (totals[d]! > 0 ? (raw / totals[d]!) * 100 : 0) : raw
      if (value <= 0) continue
      const h = (value / max) * height
      base -= h
      rects.push({ series: i, day: d, x: d * slot + gap / 2, y: base, width: slot - gap, height: h, value: raw })
    }
  }
  return { rects, max, width, height }
}

export interface ChartOptions {
  /** YYYY-MM-DD per column */
  days: string[]
  series: Series[]
  percent?: boolean
  /** the accessible name of the chart */
  label: string
  testId: string
}

function svgElement<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number>): SVGElementTagNameMap[K] {
  const element = document.createElementNS(SVG_NS, tag)
  for (const [name, value] of Object.entries(attrs)) element.setAttribute(name, String(value))
  return element
}

const PLOT_WIDTH = 600
const PLOT_HEIGHT = 160
const AXIS = 18

/** A figure with the SVG chart (scales with its box), its day range and a legend; colours come from CSS (--series-N). */
export function stackedBarChart(options: ChartOptions): HTMLElement {
  const { days, series, percent = false } = options
  const layout = layoutBars(days.length, series, PLOT_WIDTH, PLOT_HEIGHT, percent)
  const svg = svgElement('svg', { viewBox: `0 0 ${PLOT_WIDTH} ${PLOT_HEIGHT + AXIS}`, role: 'img', 'aria-label': options.label, class: 'bar-chart', preserveAspectRatio: 'none' })
  svg.append(svgElement('line', { x1: 0, x2: PLOT_WIDTH, y1: PLOT_HEIGHT + 0.5, y2: PLOT_HEIGHT + 0.5, class: 'chart-axis' }))
  for (const rect of layout.rects) {
    const bar = svgElement('rect', { x: rect.x.toFixed(2), y: rect.y.toFixed(2), width: rect.width.toFixed(2), height: rect.height.toFixed(2), class: `series-${rect.series % 6}` })
    const title = svgElement('title', {})
    title.textContent = `${days[rect.day]} · ${series[rect.series]!.name}: ${rect.value}`
    bar.append(title)
    svg.append(bar)
  }
  const figure = document.createElement('figure')
  figure.className = 'chart-box'
  figure.dataset.testid = options.testId
  const top = document.createElement('p')
  top.className = 'chart-scale'
  top.textContent = percent ? '100 %' : `${layout.max}`
  const range = document.createElement('p')
  range.className = 'chart-range'
  range.textContent = days.length ? `${days[0]} – ${days[days.length - 1]}` : ''
  const legend = document.createElement('ul')
  legend.className = 'chart-legend'
  series.forEach((s, i) => {
    const item = document.createElement('li')
    const swatch = document.createElement('span')
    swatch.className = `swatch series-${i % 6}`
    item.append(swatch, ` ${s.name}`)
    legend.append(item)
  })
  figure.append(top, svg, range, legend)
  return figure
}
