import { expect, test } from 'bun:test'
import { statfsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { freeBytesAt, spaceNeeded, spaceText, spaceVerdict, type SpaceVerdict } from './disk-space'

const MB = 1024 * 1024
const GB = 1024 * MB

test('needed: two uploads at the limit and a copy of the database; low: twice that, never under 1 GB', () => {
  const table: [uploadLimit: number, database: number, needed: number, low: number][] = [
    [512 * MB, 0, 1 * GB, 2 * GB],
    [512 * MB, 3 * GB, 4 * GB, 8 * GB],
    [10 * MB, 5 * MB, 25 * MB, 1 * GB],
    [1024 * GB, 0, 2048 * GB, 4096 * GB],
  ]
  for (const [uploadLimit, database, needed, low] of table) expect(spaceNeeded(uploadLimit, database)).toEqual({ neededBytes: needed, lowBytes: low })
})

test('short below what is needed, low below twice that, ok above', () => {
  const need = spaceNeeded(512 * MB, 1 * GB) // 2 GB needed, 4 GB low
  const table: [free: number, verdict: SpaceVerdict][] = [
    [0, 'short'],
    [2 * GB - 1, 'short'],
    [2 * GB, 'low'],
    [4 * GB - 1, 'low'],
    [4 * GB, 'ok'],
    [500 * GB, 'ok'],
  ]
  for (const [free, verdict] of table) expect([free, spaceVerdict(free, need)]).toEqual([free, verdict])
})

test('the line says how much is free and how much is needed, in MB or GB', () => {
  const need = spaceNeeded(512 * MB, 300 * MB)
  expect(spaceText('the data directory /srv/m', 700 * MB, need, 'short')).toBe(
    'free space: 700.0 MB free on the file system of the data directory /srv/m, 1.29 GB needed (two uploads at the upload limit and a copy of the database): uploads and backups can fail with "disk full"; free space there or give it a larger disk',
  )
  expect(spaceText('the data directory /srv/m', 2 * GB, need, 'low')).toEndWith('; low, under 2.59 GB')
})

test('free bytes are what statfs says this user may write (bavail, not bfree)', () => {
  const stats = statfsSync(tmpdir())
  expect(Math.abs(freeBytesAt(tmpdir()) - stats.bavail * stats.bsize)).toBeLessThan(64 * MB)
})
