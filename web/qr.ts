// QR codes drawn locally as SVG (uqr encodes; nothing is fetched from anywhere).
import { encode } from 'uqr'

const SVG_NS = 'http://www.w3.org/2000/svg'

/** An SVG QR code of `text`, one <path> for all dark modules, with a quiet zone of 2 modules. */
export function qrCode(text: string, label: string): SVGSVGElement {
  const { data, size } = encode(text, { ecc: 'M', border: 2 })
  let path = ''
  data.forEach((row, y) => {
    row.forEach((dark, x) => {
      if (dark) path += `M${x} ${y}h1v1h-1z`
    })
  })
  const svg = document.createElementNS(SVG_NS, 'svg')
  svg.setAttribute('viewBox', `0 0 ${size} ${size}`)
  svg.setAttribute('role', 'img')
  svg.setAttribute('aria-label', label)
  svg.setAttribute('shape-rendering', 'crispEdges')
  svg.setAttribute('class', 'qr')
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
