// What free text (names, descriptions, changelogs) may hold: no control characters and no bidi overrides.

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
