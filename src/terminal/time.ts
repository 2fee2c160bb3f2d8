// How the CLI's human output writes a moment: "2026-11-27 14:59 UTC", the same on every machine (pure).
// `--json` keeps the API's ISO strings; this is for the lines a person reads.

/** "2026-11-27T14:59:42.990Z" → "2026-11-27 14:59 UTC"; a string that is no date stays as it is. */
export function timeText(iso: string): string {
  const ms = Date.parse(iso)
  if (Number.isNaN(ms)) return iso
  const text = new Date(ms).toISOString()
  return `${text.slice(0, 10)} ${text.slice(11, 16)} UTC`
}
