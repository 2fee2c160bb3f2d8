import { describe, expect, test } from 'bun:test'
import { findDuplicateKey } from './duplicate-keys'

describe('duplicate keys in JSON', () => {
  const table: [string, string | null][] = [
    ['{}', null],
    ['{"a":1,"b":2}', null],
    ['{"version":"1.0.0","version":"2.0.0"}', 'version'],
    ['{"version":"1.0.0","\\u0076ersion":"2.0.0"}', 'version'],
    ['{"pages":{"home":"a","home":"b"}}', 'pages.home'],
    ['{"a":{"x":1},"b":{"x":1}}', null],
    ['{"list":[{"k":1},{"k":2}]}', null],
    ['{"list":[{"k":1,"k":2}]}', 'list[].k'],
    ['{"s":"a \\"version\\": 1, \\"version\\"","version":1}', null],
    ['{"a":[1,"a",{"a":1}],"a":2}', 'a'],
    ['{ "deep" : { "er" : { "x" : 1 , "x" : 2 } } }', 'deep.er.x'],
    ['{"":1,"":2}', ''],
    ['{"k\\"q":1,"k\\"q":2}', 'k"q'],
  ]
  for (const [json, expected] of table) {
    test(`${json} → ${expected}`, () => {
      JSON.parse(json) // every case is valid JSON
      expect(findDuplicateKey(json)).toBe(expected)
    })
  }
})
