// Free space on the data directory's file systems, and how much the next uploads and backup need there.
import { existsSync, statfsSync, statSync } from 'node:fs'
import { sizeText } from './terminal/size'

const gigabyte = 1024 * 1024 * 1024

export interface SpaceNeed {
  /** below this the next upload at the limit, or the next backup, can fail with "disk full": a problem */
  neededBytes: number
  /** below this the room is low: a warning */
  lowBytes: number
}

/**
 * What the next steps need on a file system of the data directory: two uploads at the limit at
 * once (each is received whole into tmp/ before it is checked and stored) and one copy of the
 * database (a backup's snapshot in tmp/, a migration's rewrite). Low is twice that, and never
 * under 1 GB: a database grows, and logs and the system share the disk.
 */
export function spaceNeeded(uploadLimitBytes: number, databaseBytes: number): SpaceNeed {
  const neededBytes = 2 * uploadLimitBytes + databaseBytes
  return { neededBytes, lowBytes: Math.max(2 * neededBytes, gigabyte) }
}

export type SpaceVerdict = 'short' | 'low' | 'ok'

export function spaceVerdict(freeBytes: number, need: SpaceNeed): SpaceVerdict {
  if (freeBytes < need.neededBytes) return 'short'
  if (freeBytes < need.lowBytes) return 'low'
  return 'ok'
}

/** One line for the operator: how much is free where, how much is needed, and what to do when short. */
export function spaceText(where: string, freeBytes: number, need: SpaceNeed, verdict: SpaceVerdict): string {
  const needed = `${sizeText(need.neededBytes)} needed (two uploads at the upload limit and a copy of the database)`
  if (verdict === 'short') return `free space: ${sizeText(freeBytes)} free on the file system of ${where}, ${needed}: uploads and backups can fail with "disk full"; free space there or give it a larger disk`
  if (verdict === 'low') return `free space: ${sizeText(freeBytes)} free on the file system of ${where}, ${needed}; low, under ${sizeText(need.lowBytes)}`
  return `free space: ${sizeText(freeBytes)} free on the file system of ${where}, ${needed}`
}

/** Bytes this user may still write on the file system holding `path`. */
export function freeBytesAt(path: string): number {
  const stats = statfsSync(path)
  return stats.bavail * stats.bsize
}

/** The database with its WAL: what a copy of it takes. */
export function databaseBytes(database: string): number {
  return [database, `${database}-wal`].reduce((sum, file) => sum + (existsSync(file) ? statSync(file).size : 0), 0)
}

export interface SpaceReport {
  path: string
  freeBytes: number
  neededBytes: number
  lowBytes: number
  verdict: SpaceVerdict
  text: string
}

/** The data directory's file system, and tmp/'s when it is another (a tmpfs, a mount of its own). */
export function spaceReports(paths: { root: string; tmp: string; database: string }, uploadLimitBytes: number): SpaceReport[] {
  const need = spaceNeeded(uploadLimitBytes, databaseBytes(paths.database))
  const places = [{ path: paths.root, where: `the data directory ${paths.root}` }]
  if (existsSync(paths.tmp) && statSync(paths.tmp).dev !== statSync(paths.root).dev) places.push({ path: paths.tmp, where: `${paths.tmp}, where uploads and backups are received` })
  return places.map(({ path, where }) => {
    const freeBytes = freeBytesAt(path)
    const verdict = spaceVerdict(freeBytes, need)
    return { path, freeBytes, ...need, verdict, text: spaceText(where, freeBytes, need, verdict) }
  })
}
