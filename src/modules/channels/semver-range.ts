// Checks a host-version range before it is stored: Bun.semver.satisfies treats text it cannot parse as "any".

const part = '(?:\\*|x|X|0|[1-9]\\d{0,8})'
const comparator = new RegExp(`^(?:<=|>=|<|>|=|~|\\^)?v?${part}(?:\\.${part}(?:\\.${part}(?:-[0-9A-Za-z.-]+)?(?:\\+[0-9A-Za-z.-]+)?)?)?$`)
const plainVersion = new RegExp(`^v?${part}(?:\\.${part}(?:\\.${part}(?:-[0-9A-Za-z.-]+)?)?)?$`)

/**
 * True when `range` is a node-semver range: comparators (`>=2.3.0 <3`, `^1.2`, `~2.0`, `1.x`)
 * joined by spaces, hyphen ranges (`1.0.0 - 2.0.0`), alternatives joined by `||`.
 */
export function isSemverRange(range: string): boolean {
  if (range.trim() === '' || range.length > 256) return false
  return range.split('||').every((alternative) => {
    // ">= 2" is ">=2"
    const text = alternative.trim().replace(/(<=|>=|<|>|=|~|\^)\s+/g, '$1')
    if (text === '') return false
    const hyphen = /^(\S+)\s+-\s+(\S+)$/.exec(text)
    if (hyphen) return plainVersion.test(hyphen[1]!) && plainVersion.test(hyphen[2]!)
    return text.split(/\s+/).every((item) => comparator.test(item))
  })
}
