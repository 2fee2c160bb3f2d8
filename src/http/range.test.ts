// Table-driven tests of Range parsing: what a resuming runtime sends, and what a hostile client might.
import { describe, expect, test } from 'bun:test'
import { parseRange } from './range'

const size = 1000

describe('parseRange', () => {
  const cases: [string | null, number, ReturnType<typeof parseRange>][] = [
    // no header, other units, several ranges: the whole file (200)
    [null, size, 'ignore'],
    ['items=0-5', size, 'ignore'],
    ['bytes=0-1,5-9', size, 'ignore'],
    ['bytes=0-1, 5-', size, 'ignore'],
    // single ranges: 206
    ['bytes=0-0', size, { start: 0, end: 0 }],
    ['bytes=0-9', size, { start: 0, end: 9 }],
    ['bytes=500-', size, { start: 500, end: 999 }],
    ['bytes=999-', size, { start: 999, end: 999 }],
    ['bytes=10-99999', size, { start: 10, end: 999 }],
    ['bytes=-100', size, { start: 900, end: 999 }],
    ['bytes=-5000', size, { start: 0, end: 999 }],
    ['BYTES = 3 - 4', size, { start: 3, end: 4 }],
    // unsatisfiable or malformed bytes ranges: 416
    ['bytes=1000-', size, 'unsatisfiable'],
    ['bytes=999999999-', size, 'unsatisfiable'],
    ['bytes=5-2', size, 'unsatisfiable'],
    ['bytes=-0', size, 'unsatisfiable'],
    ['bytes=-', size, 'unsatisfiable'],
    ['bytes=', size, 'unsatisfiable'],
    ['bytes=abc', size, 'unsatisfiable'],
    ['bytes=1.5-3', size, 'unsatisfiable'],
    ['bytes=-3-4', size, 'unsatisfiable'],
    ['bytes=99999999999999999999999-', size, 'unsatisfiable'],
    // an empty file has no byte to give
    ['bytes=0-', 0, 'unsatisfiable'],
    ['bytes=-1', 0, 'unsatisfiable'],
    [null, 0, 'ignore'],
  ]
  for (const [header, fileSize, expected] of cases) {
    test(`${JSON.stringify(header)} on ${fileSize} bytes → ${JSON.stringify(expected)}`, () => {
      expect(parseRange(header, fileSize)).toEqual(expected)
    })
  }
})
