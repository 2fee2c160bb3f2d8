// Does a host app's version satisfy a release's hostVersionRange? node-semver's reading (Bun.semver's, the
// server's) of the range forms the server accepts (comparators, ^ ~ x-ranges, hyphen ranges, ||), without a
// dependency: Bun.semver is not there on a phone. A prerelease satisfies a range only when one of its
// comparators has a prerelease of the same major.minor.patch, as in node-semver.

/** major, minor, patch, prerelease identifiers */
type Version = [number, number, number, string[]]
type Comparator = [operator: string, version: Version]

// node-semver's full version: numbers without leading zeros, prerelease identifiers, build metadata
const fullVersion = /^v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*))*))?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$/
// the server checked the range's form before storing it: read it without checking it again
const partialVersion = /^(<=|>=|<|>|=|~>?|\^)?[v=]*(\d+|[xX*])(?:\.(\d+|[xX*])(?:\.(\d+|[xX*])(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?)?)?$/

function parse(text: string): Version | null {
  const match = fullVersion.exec(text.trim())
  return match && [+match[1]!, +match[2]!, +match[3]!, match[4] ? match[4].split('.') : []]
}

const isNumeric = (identifier: string) => /^\d+$/.test(identifier)

/** node-semver's order: a prerelease below its release, identifiers one by one, numbers below words. */
function compare(a: Version, b: Version): number {
  for (let i = 0; i < 3; i++) if (a[i] != b[i]) return (a[i] as number) - (b[i] as number)
  const x = a[3]
  const y = b[3]
  if (x.length == 0 || y.length == 0) return y.length - x.length
  for (let i = 0; i < x.length && i < y.length; i++) {
    if (x[i] == y[i]) continue
    if (isNumeric(x[i]!) && isNumeric(y[i]!)) return +x[i]! - +y[i]!
    return isNumeric(x[i]!) ? -1 : isNumeric(y[i]!) ? 1 : x[i]! < y[i]! ? -1 : 1
  }
  return x.length - y.length
}

/** `<M.m.p-0`: below every prerelease of M.m.p, as node-semver bounds its ranges from above */
const below = (major: number, minor: number, patch: number): Comparator => ['<', [major, minor, patch, ['0']]]

/** One item of a range as node-semver desugars it: [] is any version; null, text it cannot read. */
function comparators(item: string): Comparator[] | null {
  const match = partialVersion.exec(item)
  if (!match) return null
  const operator = match[1] ?? ''
  // major, minor, patch; -1 where x, * or left out
  const [M, m, given] = [match[2], match[3], match[4]].map((value) => (value === undefined || /[xX*]/.test(value) ? -1 : +value)) as [number, number, number]
  // a wildcard ends the version: 1.x.0 is 1.x, and a wildcard's prerelease is dropped (node-semver)
  const p = m < 0 ? -1 : given
  const pre = match[5] && p >= 0 ? match[5].split('.') : []
  if (M < 0) return operator == '<' || operator == '>' ? [below(0, 0, 0)] : []
  const ranged = operator[0] == '~' || operator == '^'
  if (p >= 0 && !ranged) return [[operator == '=' ? '' : operator, [M, m, p, pre]]]
  const low: Comparator = ['>=', p < 0 ? [M, m < 0 ? 0 : m, 0, []] : [M, m, p, pre]]
  // below the first version past the parts given: 1 → <2.0.0-0, 1.2 and ~1.2.3 → <1.3.0-0
  const next = m < 0 ? below(M + 1, 0, 0) : below(M, m + 1, 0)
  // ^ keeps the first part that is not 0: ^1.2 → <2.0.0-0, ^0.2.3 → <0.3.0-0, ^0.0.3 → <0.0.4-0
  if (operator == '^' && m >= 0) return [low, M > 0 ? below(M + 1, 0, 0) : p < 0 || m > 0 ? next : below(0, 0, p + 1)]
  // with an operator: >1.2 is >=1.3.0, <=1.2 is <1.3.0-0, <1.2 is <1.2.0-0, >=1.2 is >=1.2.0
  if (operator == '>') return [['>=', [next[1][0], next[1][1], 0, []]]]
  if (operator == '<=') return [next]
  if (operator == '<') return [below(M, m < 0 ? 0 : m, 0)]
  return operator == '>=' ? [low] : [low, next]
}

function holds([operator, bound]: Comparator, version: Version): boolean {
  const order = compare(version, bound)
  return order < 0 ? operator[0] == '<' : order > 0 ? operator[0] == '>' : operator != '<' && operator != '>'
}

/** True when `version` satisfies `range` as node-semver decides; a range or version it cannot read is not satisfied. */
export function satisfiesRange(version: string, range: string): boolean {
  const parsed = parse(version)
  if (!parsed) return false
  for (const alternative of range.split('||')) {
    const text = alternative.trim().replace(/(<=|>=|<|>|=|~>?|\^)\s+/g, '$1')
    const hyphen = /^(\S+)\s+-\s+(\S+)$/.exec(text)
    const items = hyphen ? ['>=' + hyphen[1], '<=' + hyphen[2]] : text == '' ? [] : text.split(/\s+/)
    const set: Comparator[] = []
    for (const item of items) {
      const more = comparators(item)
      if (!more) return false
      set.push(...more)
    }
    if (!set.every((comparator) => holds(comparator, parsed))) continue
    // a prerelease only where the range names one of the same release
    if (parsed[3].length == 0 || set.some(([, bound]) => bound[3].length > 0 && bound[0] == parsed[0] && bound[1] == parsed[1] && bound[2] == parsed[2])) return true
  }
  return false
}

/**
 * A host app's version as the server takes it (`1.2.3`, `1.2.3-beta.1`): `1` is `1.0.0`, `1.5` is
 * `1.5.0` (iOS's CFBundleShortVersionString often has two parts); a leading `v`, leading zeros and
 * `+build` are dropped. Null: not a version.
 */
export function normalizeVersion(text: string): string | null {
  const match = /^v?(\d+)(?:\.(\d+)(?:\.(\d+))?)?(-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/.exec(text.trim())
  if (!match) return null
  const [major, minor, patch] = [match[1], match[2], match[3]].map((value) => (value ?? '0').replace(/^0+(?=\d)/, ''))
  const version = `${major}.${minor}.${patch}${match[4] ?? ''}`
  return version.length <= 64 && parse(version) ? version : null
}
