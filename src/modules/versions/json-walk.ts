// A walk over the structure of JSON text already known to be valid (JSON.parse took it): objects and
// arrays opening and closing, and each object's keys, with their positions. What the manifest checks
// need and JSON.parse does not tell: a key given twice, where a value stands in the text.

export interface JsonVisitor {
  /** an object's key (decoded: `"\u0076ersion"` is `version`) at nesting `depth` (1: the outermost object's); `end` is its closing quote. True stops the walk. */
  key?(key: string, end: number, depth: number): boolean | void
  /** `{` or `[` at `index`; `depth` counts it */
  open?(char: '{' | '[', index: number, depth: number): void
  /** `}` or `]` at `index`; `depth` no longer counts it. True stops the walk. */
  close?(index: number, depth: number): boolean | void
}

/** Walks `text` from `from` (a value's first character) to its end, or until a visitor answers true. */
export function walkJson(text: string, visitor: JsonVisitor, from = 0): void {
  // per open object or array: whether it is an object (keys come after `{` and `,`)
  const objects: boolean[] = []
  let expectKey = false
  let i = from
  while (i < text.length) {
    const char = text[i]!
    if (char === '"') {
      const end = endOfString(text, i)
      if (expectKey) {
        const raw = text.slice(i, end + 1)
        if (visitor.key?.(raw.includes('\\') ? (JSON.parse(raw) as string) : raw.slice(1, -1), end, objects.length) === true) return
        expectKey = false
      }
      i = end + 1
      continue
    }
    if (char === '{' || char === '[') {
      objects.push(char === '{')
      expectKey = char === '{'
      visitor.open?.(char, i, objects.length)
    } else if (char === '}' || char === ']') {
      objects.pop()
      expectKey = false
      if (visitor.close?.(i, objects.length) === true) return
    } else if (char === ',') expectKey = objects[objects.length - 1] === true
    i++
  }
}

/** Index of the closing quote of the string starting at `start`. */
export function endOfString(text: string, start: number): number {
  let i = start + 1
  while (i < text.length) {
    const char = text[i]
    if (char === '\\') i += 2
    else if (char === '"') return i
    else i++
  }
  return text.length - 1
}
