// What "fits the screen" means for a console page, measured in the page itself: no sideways scroll,
// no control cut off or wider than its box, no ordinary word broken across two lines.
import type { Page } from 'playwright-core'

/** Pages of the console at their addresses, each with the element that says it is drawn. */
export interface ConsolePage {
  name: string
  path: string
  ready: string
}

/**
 * The problems of the page as drawn, as sentences (empty when it fits):
 * - the document is wider than the viewport;
 * - a visible button, select, input or link lies partly outside the viewport or out of the content box
 *   of the card it sits in (into its padding), or its content is wider than its box (text cut off) — unless it sits in a
 *   horizontal scroller, which is how a row of tabs or a wide table is meant to fit;
 * - a select is narrower than the text of its chosen option (a truncated choice);
 * - the cards a responsive table becomes on a phone are wider than the scroller around them (they scroll sideways);
 * - a badge (a version's state or signature, a status) sticks out of the box it sits in or off the screen,
 *   where a card's border or the screen's edge cuts it off;
 * - a word of up to 24 characters is broken across lines (a long App ID may break, a scope label may not;
 *   text styled `word-break: break-all`, a URL or a hash, is meant to).
 */
export function layoutProblems(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const problems: string[] = []
    const root = document.documentElement
    if (root.scrollWidth > root.clientWidth) problems.push(`the page is ${root.scrollWidth} px wide on a ${root.clientWidth} px screen`)
    const width = root.clientWidth
    const describe = (el: Element): string => {
      const id = el.getAttribute('data-testid') ?? el.getAttribute('name') ?? ''
      const text = (el.textContent ?? '').trim().slice(0, 40)
      return `<${el.tagName.toLowerCase()}${id ? ` ${id}` : ''}>${text ? ` “${text}”` : ''}`
    }
    const visible = (el: Element): boolean => {
      if (!(el instanceof HTMLElement) || el.closest('[hidden]') || el.getClientRects().length === 0) return false
      if (el instanceof HTMLInputElement && el.type === 'hidden') return false
      const style = getComputedStyle(el)
      return style.visibility !== 'hidden' && style.display !== 'none'
    }
    const inScroller = (el: Element): boolean => {
      for (let parent = el.parentElement; parent && parent !== document.body; parent = parent.parentElement) {
        const overflowX = getComputedStyle(parent).overflowX
        if (overflowX === 'auto' || overflowX === 'scroll') return true
      }
      return false
    }
    /** text for screen readers only (clipped to a pixel): it has no lines to break */
    const readerOnly = (el: Element): boolean => {
      for (let node: Element | null = el; node && node !== document.body; node = node.parentElement) {
        const style = getComputedStyle(node)
        if (style.position === 'absolute' && (style.clip !== 'auto' || node.getBoundingClientRect().width <= 1)) return true
      }
      return false
    }
    const canvas = document.createElement('canvas').getContext('2d')!
    for (const el of document.querySelectorAll('button, select, input, textarea, a')) {
      if (!visible(el)) continue
      const box = el.getBoundingClientRect()
      if (box.width === 0) continue
      if (!inScroller(el) && (box.left < -0.5 || box.right > width + 0.5)) problems.push(`${describe(el)} reaches from ${Math.round(box.left)} to ${Math.round(box.right)} px on a ${width} px screen`)
      else if (!inScroller(el)) {
        // inside the screen, but out of the room its card gives its content (into the padding or past the border)
        const card = el.parentElement?.closest('.card')
        if (card) {
          const edge = card.getBoundingClientRect()
          const cardStyle = getComputedStyle(card)
          const left = edge.left + parseFloat(cardStyle.borderLeftWidth) + parseFloat(cardStyle.paddingLeft)
          const right = edge.right - parseFloat(cardStyle.borderRightWidth) - parseFloat(cardStyle.paddingRight)
          if (box.left < left - 0.5 || box.right > right + 0.5) problems.push(`${describe(el)} reaches from ${Math.round(box.left)} to ${Math.round(box.right)} px, out of its card's content (${Math.round(left)} to ${Math.round(right)} px)`)
        }
      }
      const style = getComputedStyle(el)
      // text fields scroll their own value by design; everything else must show all of its content
      const textField = el instanceof HTMLTextAreaElement || (el instanceof HTMLInputElement && !['button', 'submit', 'reset', 'checkbox', 'radio'].includes(el.type))
      if (!textField && style.display !== 'inline' && el.scrollWidth > el.clientWidth + 1) problems.push(`${describe(el)} is cut off: ${el.scrollWidth} px of content in ${el.clientWidth} px`)
      if (el instanceof HTMLSelectElement) {
        const chosen = el.selectedOptions[0]?.textContent ?? ''
        canvas.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`
        const needed = canvas.measureText(chosen).width + parseFloat(style.paddingLeft) + parseFloat(style.borderLeftWidth) + 16
        if (el.offsetWidth < needed) problems.push(`${describe(el)} is ${el.offsetWidth} px wide, too narrow for “${chosen}” (${Math.ceil(needed)} px)`)
      }
    }
    // on a phone a responsive table is one card per row inside its scroller: the cards must fit it, not scroll
    for (const table of document.querySelectorAll('table.responsive')) {
      const wrap = table.parentElement
      if (!wrap || !visible(table) || getComputedStyle(table).display === 'table') continue
      if (wrap.scrollWidth > wrap.clientWidth + 1) problems.push(`the cards of the table ${table.getAttribute('data-testid') ?? ''} scroll sideways: ${wrap.scrollWidth} px in ${wrap.clientWidth} px`)
    }
    // badges hold their text on one line unless told otherwise: one wider than its box runs under the card's edge
    for (const el of document.querySelectorAll('.badge, .status')) {
      if (!visible(el) || inScroller(el) || readerOnly(el)) continue
      const box = el.getBoundingClientRect()
      const parent = el.parentElement!
      const edge = parent.getBoundingClientRect()
      const style = getComputedStyle(parent)
      const left = edge.left + parseFloat(style.borderLeftWidth) + parseFloat(style.paddingLeft)
      const right = edge.right - parseFloat(style.borderRightWidth) - parseFloat(style.paddingRight)
      if (box.left < -0.5 || box.right > width + 0.5) problems.push(`${describe(el)} reaches from ${Math.round(box.left)} to ${Math.round(box.right)} px on a ${width} px screen`)
      else if (box.left < left - 0.5 || box.right > right + 0.5) problems.push(`${describe(el)} reaches from ${Math.round(box.left)} to ${Math.round(box.right)} px, out of the box it sits in (${Math.round(left)} to ${Math.round(right)} px)`)
    }
    // words broken in the middle: a word's text spread over two line boxes
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT)
    const range = document.createRange()
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const parent = node.parentElement
      // the body of a closed <details> still has boxes in Chromium, but nobody sees its lines
      if (!parent || !visible(parent) || parent.closest('svg, script, style, dialog:not([open])') || parent.closest('details:not([open]) > :not(summary)')) continue
      // a URL or a hash is set to break anywhere on purpose
      if (getComputedStyle(parent).wordBreak === 'break-all') continue
      if (readerOnly(parent)) continue
      const text = node.textContent ?? ''
      for (const match of text.matchAll(/[^\s\-–—/,·(){}[\]]+/g)) {
        const word = match[0]
        if (word.length < 2 || word.length > 24) continue
        range.setStart(node, match.index!)
        range.setEnd(node, match.index! + word.length)
        const tops = new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top)))
        if (tops.size > 1) problems.push(`the word “${word}” in ${describe(parent)} is broken across lines`)
      }
    }
    return problems
  })
}
