// Finds a key repeated within one JSON object, which JSON.parse silently resolves (the last wins; other runtimes take the first).

/**
 * The path of the first key that appears twice in the same object (`version`, `pages.home`), or
 * null. `text` must already be valid JSON (JSON.parse succeeded): this scanner only tracks
 * structure, strings and keys, and decodes keys with escapes (`"\u0076ersion"` is `version`).
 */
export function findDuplicateKey(text: string): string | null {
  // one frame per open object or array: the keys seen so far (objects only) and the path to it
  const stack: { keys: Set<string> | null; path: string; pendingKey: string | null }[] = []
  let expectKey = false
  let i = 0
  while (i < text.length) {
    const char = text[i]!
    if (char === '"') {
      const end = endOfString(text, i)
      const frame = stack[stack.length - 1]
      if (frame?.keys && expectKey) {
        const raw = text.slice(i, end + 1)
        const key = raw.includes('\\') ? (JSON.parse(raw) as string) : raw.slice(1, -1)
        if (frame.keys.has(key)) return join(frame.path, key)
        frame.keys.add(key)
        frame.pendingKey = key
        expectKey = false
      }
      i = end + 1
      continue
    }
    if (char === '{' || char === '[') {
      const parent = stack[stack.length - 1]
      const path = parent ? join(parent.path, parent.keys ? (parent.pendingKey ?? '') : '[]') : ''
      stack.push({ keys: char === '{' ? new Set() : null, path, pendingKey: null })
      expectKey = char === '{'
    } else if (char === '}' || char === ']') {
      stack.pop()
      expectKey = false
    } else if (char === ',') {
      expectKey = stack[stack.length - 1]?.keys != null
    }
    i++
  }
  return null
}

function join(path: string, key: string): string {
  if (key === '[]') return `${path}[]`
  return path === '' ? key : `${path}.${key}`
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
