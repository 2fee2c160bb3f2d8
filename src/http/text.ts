// What free text (names, descriptions, changelogs) may hold: no control characters and no bidi overrides,
// and for names at least one visible character.
import { AppError } from './app-error'

/**
 * C0 (but tab, line feed, carriage return where lines are allowed), DEL, C1, and the bidi
 * embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069) that make a name display as
 * something else in the console, a terminal or an audit log. All in the BMP: the patterns work
 * with and without the `u` flag, as TypeBox compiles them.
 */
const forbiddenAlways = '\\u000B\\u000C\\u000E-\\u001F\\u007F-\\u009F\\u202A-\\u202E\\u2066-\\u2069'
const lineBreaksAndTab = '\\u0009\\u000A\\u000D'

/** For TypeBox `pattern`: one line of text (names, display names). */
export const singleLinePattern = `^[^\\u0000-\\u0008${lineBreaksAndTab}${forbiddenAlways}]*$`
/** For TypeBox `pattern`: text with line breaks and tabs (descriptions, changelogs). */
export const multiLinePattern = `^[^\\u0000-\\u0008${forbiddenAlways}]*$`

const singleLine = new RegExp(singleLinePattern)
const multiLine = new RegExp(multiLinePattern)

/** True when `text` holds only characters allowed in one line (or, with `lines`, in several). */
export function isCleanText(text: string, lines = false): boolean {
  return (lines ? multiLine : singleLine).test(text)
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
