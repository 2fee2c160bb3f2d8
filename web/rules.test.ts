// Table-driven checks of the console's pure rules (lifecycle buttons, install URLs, routes).
import { describe, expect, test } from 'bun:test'
import { parseRoute, type Route } from './router.ts'
import { absoluteInstallUrl, allowedActions } from './rules.ts'

describe('allowedActions', () => {
  const app = { currentReviewVersionId: 'r', currentReleaseVersionId: 'live' }
  const cases: [string, { id: string; status: 'DRAFT' | 'IN_REVIEW' | 'PUBLISHED' }, string][] = [
    ['draft', { id: 'd', status: 'DRAFT' }, 'review publish remove'],
    ['draft that is the review version', { id: 'r', status: 'DRAFT' }, 'publish remove'],
    ['in review, the review version', { id: 'r', status: 'IN_REVIEW' }, 'publish remove'],
    ['in review, a historical one', { id: 'h', status: 'IN_REVIEW' }, 'review publish remove'],
    ['published, not live', { id: 'old', status: 'PUBLISHED' }, 'rollback'],
    ['published and live', { id: 'live', status: 'PUBLISHED' }, ''],
  ]
  for (const [name, version, expected] of cases) {
    test(name, () => {
      const allowed = allowedActions(version, app)
      const shown = (['review', 'publish', 'rollback', 'remove'] as const).filter((k) => allowed[k]).join(' ')
      expect(shown).toBe(expected)
    })
  }
})

describe('absoluteInstallUrl', () => {
  const cases: [string, string][] = [
    ['/api/mini-apps/access/versions/v1/install?token=t', 'https://ms.example/api/mini-apps/access/versions/v1/install?token=t'],
    ['https://cdn.example/x/install?token=t', 'https://cdn.example/x/install?token=t'],
    ['mini-apps/access/versions/v1/install?token=t', 'https://ms.example/api/mini-apps/access/versions/v1/install?token=t'],
  ]
  for (const [input, expected] of cases) {
    test(input, () => expect(absoluteInstallUrl(input, 'https://ms.example')).toBe(expected))
  }
})

describe('parseRoute', () => {
  const at = (pathname: string, search = '', hash = '') => ({ pathname, search, hash }) as Location
  const cases: [Location, Route][] = [
    [at('/'), { name: 'apps' }],
    [at('/', '', '#/apps'), { name: 'apps' }],
    [at('/', '', '#/apps/01J%2FX'), { name: 'workspace', id: '01J/X' }],
    [at('/', '', '#/admin'), { name: 'admin' }],
    [at('/', '', '#/signin'), { name: 'signin' }],
    [at('/', '', '#/nope/x/y'), { name: 'notfound', path: '/nope/x/y' }],
    [at('/cli/authorize', '?code=ABCD-1234'), { name: 'cli', code: 'ABCD-1234' }],
    [at('/cli/authorize/', ''), { name: 'cli', code: '' }],
  ]
  for (const [location, expected] of cases) {
    test(`${location.pathname}${location.search}${location.hash}`, () => expect(parseRoute(location)).toEqual(expected))
  }
})
