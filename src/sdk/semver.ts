// Does a host app's version satisfy a release's hostVersionRange? node-semver's range forms (those the
// server accepts: comparators, ^ ~ x-ranges, hyphen ranges, ||), without a dependency; Bun.semver is
// not there on a phone. Prerelease tags order below their release and are otherwise compared as text.

type Version = [number, number, number, string]

function parse(text: string): Version | null {
  const match = /^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$/.exec(text.trim())
  if (!match) return null
  return [Number(match[1]), Number(match[2] ?? 0), Number(match[3] ?? 0), match[4] ?? '']
}

function compare(a: Version, b: Version): number {
  for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return (a[i] as number) < (b[i] as number) ? -1 : 1
  if (a[3] === b[3]) return 0
  if (a[3] === '') return 1
  if (b[3] === '') return -1
  return a[3] < b[3] ? -1 : 1
}

type Test = (version: Version) => boolean

/** A partial version (`1`, `1.2`, `1.x`, `*`): the parts given, and how many there are. */
function partial(text: string): { parts: number[]; pre: string } | null {
  const match = /^v?([0-9xX*]+)(?:\.([0-9xX*]+))?(?:\.([0-9xX*]+))?(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$/.exec(text)
  if (!match) return null
  const parts: number[] = []
  for (const part of [match[1], match[2], match[3]]) {
    if (part === undefined || /^[xX*]$/.test(part)) break
    if (!/^\d+$/.test(part)) return null
    parts.push(Number(part))
  }
  return { parts, pre: match[4] ?? '' }
}

const at = (parts: number[], pre = ''): Version => [parts[0] ?? 0, parts[1] ?? 0, parts[2] ?? 0, pre]
/** the smallest version above every version matching the partial `parts` */
function after(parts: number[]): Version {
  if (parts.length === 1) return [parts[0]! + 1, 0, 0, '']
  if (parts.length === 2) return [parts[0]!, parts[1]! + 1, 0, '']
  return [parts[0]!, parts[1]!, parts[2]! + 1, '']
}

const atLeast = (v: Version): Test => (x) => compare(x, v) >= 0
const below = (v: Version): Test => (x) => compare(x, v) < 0

function comparator(item: string): Test[] | null {
  const match = /^(<=|>=|<|>|=|~|\^)?(.*)$/.exec(item)!
  const operator = match[1] ?? ''
  const version = partial(match[2]!)
  if (!version) return null
  const { parts, pre } = version
  if (parts.length === 0) return operator === '<' || operator === '>' ? [() => false] : []
  const low = at(parts, pre)
  switch (operator) {
    case '>=':
      return [atLeast(low)]
    case '>':
      return parts.length === 3 ? [(x) => compare(x, low) > 0] : [atLeast(after(parts))]
    case '<':
      return [below(low)]
    case '<=':
      return parts.length === 3 ? [(x) => compare(x, low) <= 0] : [below(after(parts))]
    case '~':
      return [atLeast(low), below(parts.length === 1 ? after(parts) : after(parts.slice(0, 2)))]
    case '^': {
      const first = parts[0]! !== 0 || parts.length === 1 ? 0 : parts[1]! !== 0 || parts.length === 2 ? 1 : 2
      return [atLeast(low), below(after(parts.slice(0, first + 1)))]
    }
    default:
      return parts.length === 3 ? [(x) => compare(x, low) === 0] : [atLeast(low), below(after(parts))]
  }
}

/** True when `version` satisfies `range`; a range or version it cannot read is not satisfied. */
export function satisfiesRange(version: string, range: string): boolean {
  const parsed = parse(version)
  if (!parsed) return false
  const alternatives = range.split('||')
  for (const alternative of alternatives) {
    const text = alternative.trim().replace(/(<=|>=|<|>|=|~|\^)\s+/g, '$1')
    let tests: Test[] | null = []
    const hyphen = /^(\S+)\s+-\s+(\S+)$/.exec(text)
    if (hyphen) {
      const from = partial(hyphen[1]!)
      const to = partial(hyphen[2]!)
      if (from && to) {
        tests.push(atLeast(at(from.parts, from.pre)))
        if (to.parts.length === 3) tests.push((x) => compare(x, at(to.parts, to.pre)) <= 0)
        else if (to.parts.length > 0) tests.push(below(after(to.parts)))
      } else tests = null
    } else if (text !== '') {
      for (const item of text.split(/\s+/)) {
        const more = comparator(item)
        if (!more) {
          tests = null
          break
        }
        for (const test of more) tests.push(test)
      }
    } else tests = null
    if (tests && tests.every((test) => test(parsed))) return true
  }
  return false
}
