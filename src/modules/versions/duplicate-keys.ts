// Finds a key repeated within one JSON object, which JSON.parse silently resolves (the last wins; other runtimes take the first).
import { walkJson } from './json-walk'

/**
 * The path of the first key that appears twice in the same object (`version`, `pages.home`), or
 * null. `text` must already be valid JSON (JSON.parse succeeded): this scanner only tracks
 * structure, strings and keys, and decodes keys with escapes (`"\u0076ersion"` is `version`).
 */
export function findDuplicateKey(text: string): string | null {
  // one frame per open object or array: the keys seen so far (objects only) and the path to it
  const stack: { keys: Set<string> | null; path: string; pendingKey: string | null }[] = []
  let duplicate: string | null = null
  walkJson(text, {
    key(key) {
      const frame = stack[stack.length - 1]!
      if (frame.keys!.has(key)) {
        duplicate = join(frame.path, key)
        return true
      }
      frame.keys!.add(key)
      frame.pendingKey = key
    },
    open(char) {
      const parent = stack[stack.length - 1]
      const path = parent ? join(parent.path, parent.keys ? (parent.pendingKey ?? '') : '[]') : ''
      stack.push({ keys: char === '{' ? new Set() : null, path, pendingKey: null })
    },
    close() {
      stack.pop()
    },
  })
  return duplicate
}

function join(path: string, key: string): string {
  if (key === '[]') return `${path}[]`
  return path === '' ? key : `${path}.${key}`
}
