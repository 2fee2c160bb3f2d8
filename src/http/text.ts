// What free text (names, descriptions, changelogs) may hold: no control characters and no bidi overrides,
// a length counted in characters (code points), and for names at least one visible character; passwords' length too.
import { AppError } from './app-error'

/**
 * C0 (but tab, line feed, carriage return where lines are allowed), DEL, C1, and the bidi
 * embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069) that make a name display as
 * something else in the console, a terminal or an audit log. All in the BMP: the patterns work
 * with and without the `u` flag, as TypeBox compiles them.
 */
const forbiddenAlways = '\\u000B\\u000C\\u000E-\\u001F\\u007F-\\u009F\\u202A-\\u202E\\u2066-\\u2069'
const lineBreaksAndTab = '\\u0009\\u000A\\u000D'

/**
 * One character of clean text: a BMP character that is not forbidden, or a surrogate pair (one
 * character beyond the BMP). Counting these counts code points with and without the `u` flag (with
 * it a pair is one match of the first branch), so `{0,N}` is a limit of N characters: an emoji is
 * one, not the two UTF-16 units TypeBox's `maxLength` counts. A lone surrogate is no character.
 */
function character(forbidden: string): string {
  return `(?:[^${forbidden}\\uD800-\\uDFFF]|[\\uD800-\\uDBFF][\\uDC00-\\uDFFF])`
}
const singleLineCharacter = character(`\\u0000-\\u0008${lineBreaksAndTab}${forbiddenAlways}`)
const multiLineCharacter = character(`\\u0000-\\u0008${forbiddenAlways}`)

/**
 * For TypeBox `pattern`: one line of text (names, display names) of at most `maxCharacters`
 * characters. Use it instead of `maxLength`, which counts UTF-16 units.
 */
export function singleLinePattern(maxCharacters: number): string {
  return `^${singleLineCharacter}{0,${maxCharacters}}$`
}
/** The longest release notes (a publish's, a rollback's) and pause reason, in characters. */
export const notesMaxLength = 2000

/** For TypeBox `pattern`: text with line breaks and tabs (descriptions, notes) of at most `maxCharacters` characters. */
export function multiLinePattern(maxCharacters: number): string {
  return `^${multiLineCharacter}{0,${maxCharacters}}$`
}

/**
 * One character of any text (passwords, which may hold anything): a code point, a lone surrogate
 * counted as one (a password set before may hold one, and must still sign in). The pair branch comes
 * first and a high surrogate may stand alone only when no low one follows, so a pair is never split
 * into two, with and without the `u` flag: `{N,M}` counts code points.
 */
const anyCharacter = '(?:[\\uD800-\\uDBFF][\\uDC00-\\uDFFF]|[\\uD800-\\uDBFF](?![\\uDC00-\\uDFFF])|[^\\uD800-\\uDBFF])'

/**
 * For TypeBox `pattern`: any text (passwords) of `minCharacters` to `maxCharacters` characters. Use it
 * instead of `minLength`/`maxLength`, which count UTF-16 units: 3 emoji would pass a minimum of 6.
 */
export function lengthPattern(minCharacters: number, maxCharacters: number): string {
  return `^${anyCharacter}{${minCharacters},${maxCharacters}}$`
}

const singleLine = new RegExp(`^${singleLineCharacter}*$`)
const multiLine = new RegExp(`^${multiLineCharacter}*$`)

/** True when `text` holds only characters allowed in one line (or, with `lines`, in several). */
export function isCleanText(text: string, lines = false): boolean {
  return (lines ? multiLine : singleLine).test(text)
}

/** The length of `text` in characters (code points), the unit every text limit is stated in. */
export function textLength(text: string): number {
  let length = text.length
  for (let i = 0; i < text.length - 1; i++) {
    const unit = text.charCodeAt(i)
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = text.charCodeAt(i + 1)
      if (next >= 0xdc00 && next <= 0xdfff) {
        length--
        i++
      }
    }
  }
  return length
}

/** `text` cut to at most `maxCharacters` characters, never between the two halves of one. */
export function cutText(text: string, maxCharacters: number): string {
  if (text.length <= maxCharacters) return text
  let end = 0
  for (let count = 0; count < maxCharacters && end < text.length; count++) {
    const unit = text.charCodeAt(end)
    end += unit >= 0xd800 && unit <= 0xdbff && end + 1 < text.length ? 2 : 1
  }
  return text.slice(0, end)
}

/**
 * A character that shows: not white space, not default-ignorable (zero-width space and joiners,
 * word joiner, BOM, soft hyphen, variation selectors, Hangul fillers, tags), not a format or control
 * character, not a combining mark (alone it has nothing to sit on), and not the blank braille pattern.
 */
const visibleCharacter = /[^\p{White_Space}\p{Default_Ignorable_Code_Point}\p{Cc}\p{Cf}\p{Cs}\p{M}\u2800]/u

/** True when `text` has at least one character a reader can see. */
export function hasVisibleCharacter(text: string): boolean {
  return visibleCharacter.test(text)
}

const invisibleName = 'must hold at least one visible character, not only spaces or invisible ones such as zero-width spaces, joiners or lone combining marks'

/**
 * A name as people will see it (miniapp, display, key names), trimmed: a blank one and one with no
 * visible character are both 400 VALIDATION_ERROR on `field`, each saying which it was.
 */
export function requireVisibleName(raw: string, field = 'name'): string {
  const name = raw.trim()
  if (name === '') throw new AppError(400, 'VALIDATION_ERROR', `Invalid body: ${field} must not be blank`, [{ field, message: 'must not be blank' }])
  if (!hasVisibleCharacter(name)) throw new AppError(400, 'VALIDATION_ERROR', `Invalid body: ${field} ${invisibleName}`, [{ field, message: invisibleName }])
  return name
}
