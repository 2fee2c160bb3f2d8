import { describe, expect, test } from 'bun:test'
import { cutText, hasVisibleCharacter, isCleanText, lengthPattern, multiLinePattern, singleLinePattern, textLength } from './text'

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

describe('a visible character', () => {
  const table: [string, string, boolean][] = [
    ['a letter', 'a', true],
    ['an emoji', '🚀', true],
    ['Thai with its vowel mark', 'กั', true],
    ['a zero-width space between letters', 'a\u200Bb', true],
    ['spaces', ' \t ', false],
    ['a zero-width space', '\u200B', false],
    ['ZWNJ, ZWJ, word joiner, BOM', '\u200C\u200D\u2060\uFEFF', false],
    ['a combining mark alone', '\u0301', false],
    ['Hangul fillers', '\u3164\u115F\uFFA0', false],
    ['a soft hyphen', '\u00AD', false],
    ['variation selectors', '\uFE0F\u{E0100}', false],
    ['tag characters', '\u{E0041}\u{E007F}', false],
    ['the blank braille pattern', '\u2800', false],
    ['an ideographic space', '\u3000', false],
  ]
  for (const [what, text, visible] of table) {
    test(`${what}: ${visible ? 'visible' : 'nothing to see'}`, () => expect(hasVisibleCharacter(text)).toBe(visible))
  }
})

describe('text length is counted in characters (code points)', () => {
  test('textLength: an emoji is one character, a lone surrogate one too', () => {
    expect(textLength('')).toBe(0)
    expect(textLength('Shop')).toBe(4)
    expect(textLength('🚀'.repeat(100))).toBe(100)
    expect(textLength('a🚀b')).toBe(3)
    expect(textLength('\uD800x')).toBe(2)
  })
  test('the patterns hold N characters, with and without the u flag', () => {
    for (const flags of ['', 'u']) {
      const single = new RegExp(singleLinePattern(100), flags)
      const multi = new RegExp(multiLinePattern(3), flags)
      expect([single.test('🚀'.repeat(100)), single.test('🚀'.repeat(101)), single.test('x'.repeat(100)), single.test('x'.repeat(101))]).toEqual([true, false, true, false])
      expect([single.test('a\nb'), single.test('\uD800'), single.test('a\u202Eb')]).toEqual([false, false, false])
      expect([multi.test('🚀\n🚀'), multi.test('🚀\n🚀🚀')]).toEqual([true, false])
    }
  })
  test('lengthPattern counts any text in characters, a pair never split, a lone surrogate one, with and without the u flag', () => {
    for (const flags of ['', 'u']) {
      const password = new RegExp(lengthPattern(6, 8), flags)
      // 3 emoji are 6 UTF-16 units but 3 characters; 8 emoji are 16 units but 8 characters
      expect(['🚀'.repeat(3), '🚀'.repeat(5), '🚀'.repeat(6), '🚀'.repeat(8), '🚀'.repeat(9)].map((text) => password.test(text))).toEqual([false, false, true, true, false])
      expect(['x'.repeat(5), 'x'.repeat(6), 'x'.repeat(8), 'x'.repeat(9)].map((text) => password.test(text))).toEqual([false, true, true, false])
      // anything goes in a password: control characters, line breaks, lone surrogates (one character each)
      expect([password.test('a\u0000b\nc\u202Ed'), password.test('\uD800\uD800\uDC00abcd'), password.test('\uDC00'.repeat(6)), password.test('\uD800'.repeat(9))]).toEqual([true, true, true, false])
    }
  })
  test('cutText never splits an emoji', () => {
    expect(cutText('🚀'.repeat(600), 500)).toBe('🚀'.repeat(500))
    expect(cutText('a'.repeat(499) + '🚀🚀', 500)).toBe('a'.repeat(499) + '🚀')
    expect(cutText('short', 500)).toBe('short')
  })
})
