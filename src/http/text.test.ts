import { describe, expect, test } from 'bun:test'
import { isCleanText } from './text'

describe('free text', () => {
  const table: [string, string, boolean, boolean][] = [
    ['plain', 'Shop app', true, true],
    ['accents and emoji', 'Café 🚀 Ünïcode', true, true],
    ['right-to-left script', 'متجر', true, true],
    ['NUL', 'a\u0000b', false, false],
    ['bell', 'a\u0007b', false, false],
    ['escape (terminal sequences)', 'a\u001b[31mred', false, false],
    ['DEL', 'a\u007fb', false, false],
    ['C1 (CSI)', 'a\u009bb', false, false],
    ['line feed', 'line one\nline two', false, true],
    ['tab', 'a\tb', false, true],
    ['CRLF', 'a\r\nb', false, true],
    ['vertical tab', 'a\u000bb', false, false],
    ['RLO override', 'invoice\u202Efdp.exe', false, false],
    ['LRE', 'a\u202Ab', false, false],
    ['PDF', 'a\u202Cb', false, false],
    ['RLI isolate', 'a\u2067b', false, false],
    ['PDI', 'a\u2069b', false, false],
    ['ZWJ is fine', 'a\u200db', true, true],
  ]
  for (const [what, text, single, multi] of table) {
    test(`${what}: one line ${single ? 'ok' : 'refused'}, lines ${multi ? 'ok' : 'refused'}`, () => {
      expect(isCleanText(text)).toBe(single)
      expect(isCleanText(text, true)).toBe(multi)
    })
  }
})
