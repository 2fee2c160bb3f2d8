// QR codes drawn locally as SVG (uqr encodes; nothing is fetched from anywhere).
import { encode } from 'uqr'

const SVG_NS = 'http://www.w3.org/2000/svg'

/** The quiet zone the QR specification asks for: scanners find the code by its empty margin. */
const QUIET_ZONE_MODULES = 4
/** Smallest module a phone camera reads reliably from a laptop screen. */
const MIN_MODULE_PX = 4

/** Pixels per module: at least MIN_MODULE_PX, more for short texts so the code is about `targetPx` wide. */
export function modulePixels(modules: number, targetPx = 232): number {
  return Math.max(MIN_MODULE_PX, Math.floor(targetPx / modules))
}

/**
 * An SVG QR code of `text`, one <path> for all dark modules, with a 4-module quiet zone, drawn at
 * a whole number of pixels per module (data-module-px) so no module is blurred or shrunk.
 * ECC level L: a screen shows it undamaged, and the fewer modules stay big on a phone-sized dialog.
 */
export function qrCode(text: string, label: string): SVGSVGElement {
  const { data, size } = encode(text, { ecc: 'L', border: QUIET_ZONE_MODULES })
  let path = ''
  data.forEach((row, y) => {
    row.forEach((dark, x) => {
      if (dark) path += `M${x} ${y}h1v1h-1z`
    })
  })
  const px = modulePixels(size)
  const svg = document.createElementNS(SVG_NS, 'svg')
  svg.setAttribute('viewBox', `0 0 ${size} ${size}`)
  svg.setAttribute('width', String(size * px))
  svg.setAttribute('height', String(size * px))
  svg.setAttribute('role', 'img')
  svg.setAttribute('aria-label', label)
  svg.setAttribute('shape-rendering', 'crispEdges')
  svg.setAttribute('class', 'qr')
  svg.dataset.modules = String(size)
  svg.dataset.modulePx = String(px)
  const background = document.createElementNS(SVG_NS, 'rect')
  background.setAttribute('width', String(size))
  background.setAttribute('height', String(size))
  background.setAttribute('fill', '#fff')
  const modules = document.createElementNS(SVG_NS, 'path')
  modules.setAttribute('d', path)
  modules.setAttribute('fill', '#000')
  svg.append(background, modules)
  return svg
}
