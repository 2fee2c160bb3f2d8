// backup.json: what a backup archive holds (every file with its sha256 and size) and which schema it carries.
import { ownerIdPattern } from '../config'

export const manifestName = 'backup.json'
export const manifestFormat = 'miniship-backup'
/** Bumped only if the archive layout changes in a way an older restore could not read. */
export const manifestFormatVersion = 1

export interface ManifestFile {
  path: string
  size: number
  sha256: string
}

export interface BackupManifest {
  format: typeof manifestFormat
  formatVersion: number
  productVersion: string
  /** migrations applied to the database in the archive */
  schemaVersion: number
  createdAt: string
  files: ManifestFile[]
  /**
   * Where the stored files were and whether the archive holds them (issue 14). `included: false`
   * is `backup --skip-blobs`: the bucket (with its own versioning) keeps them, and restore checks
   * that it still does. Absent in archives from before: a local store, blobs included.
   */
  blobs?: { included: boolean; storage: 'local' | 's3'; bucket?: string; prefix?: string }
  /**
   * The installation id of a data directory with S3 storage (storage.json's `owner`, named by the
   * prefix's owner marker). A restore keeps it: the same installation moved still owns its prefix.
   * Absent for local storage and in archives from before owner markers.
   */
  owner?: string
}

/** A backup that cannot be restored as it is; the message names the problem for the operator. */
export class BackupError extends Error {}

/**
 * A backup or restore refused for what the operator must change (an `--out` whose directory does
 * not exist, a backup of a newer schema than this miniship knows): reported as any other bad input
 * (exit 2, with `code` in --json), not as a failed backup or restore (exit 1).
 */
export class BackupInputError extends BackupError {
  constructor(
    message: string,
    readonly code: 'OUT_DIR_NOT_FOUND' | 'OUT_NOT_A_FILE' | 'NEWER_SCHEMA' | 'DATA_DIR_NOT_EMPTY',
  ) {
    super(message)
  }
}

const sha256Pattern = /^[0-9a-f]{64}$/
const blobEntryPattern = /^blobs\/sha256\/([0-9a-f]{2})\/([0-9a-f]{64})$/

/** How many stored files (blobs) an archive holds: its files but the database, the secret and the insights key. */
export function storedFileCount(manifest: Pick<BackupManifest, 'files'>): number {
  return manifest.files.filter((file) => blobEntryPattern.test(file.path)).length
}

/** The archive paths a backup may hold: the database, the secret, the insights key and content-addressed blobs. */
export function isArchivePath(path: string): boolean {
  if (path === 'miniship.db' || path === 'secret.key' || path === 'insights.key') return true
  const match = blobEntryPattern.exec(path)
  return match !== null && match[2]!.startsWith(match[1]!)
}

/** The sha256 a blob path is named after, or null for the database and secret. */
export function blobHashOfPath(path: string): string | null {
  const match = blobEntryPattern.exec(path)
  return match ? match[2]! : null
}

export function blobArchivePath(sha256: string): string {
  return `blobs/sha256/${sha256.slice(0, 2)}/${sha256}`
}

/** Parses and checks backup.json; throws BackupError naming the first thing wrong with it. */
export function parseManifest(bytes: Uint8Array): BackupManifest {
  let value: unknown
  try {
    value = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes))
  } catch {
    throw new BackupError('backup.json in the archive is not valid JSON: the archive is damaged')
  }
  const bad = (what: string): never => {
    throw new BackupError(`backup.json in the archive is damaged: ${what}`)
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return bad('it is not an object')
  const record = value as Record<string, unknown>
  if (record.format !== manifestFormat) throw new BackupError('the archive is not a miniship backup (backup.json has no "format": "miniship-backup")')
  if (!Number.isInteger(record.formatVersion)) return bad('formatVersion is missing')
  if ((record.formatVersion as number) > manifestFormatVersion) {
    throw new BackupError(`the backup uses archive format ${record.formatVersion}, newer than this miniship reads (${manifestFormatVersion}); restore it with miniship ${String(record.productVersion)} or newer`)
  }
  if (typeof record.productVersion !== 'string') return bad('productVersion is missing')
  if (!Number.isInteger(record.schemaVersion) || (record.schemaVersion as number) < 0) return bad('schemaVersion is missing')
  if (typeof record.createdAt !== 'string') return bad('createdAt is missing')
  if (!Array.isArray(record.files)) return bad('files is missing')
  const seen = new Set<string>()
  const files: ManifestFile[] = []
  for (const entry of record.files as unknown[]) {
    const file = entry as Partial<ManifestFile> | null
    if (!file || typeof file.path !== 'string' || !isArchivePath(file.path)) return bad(`it lists an unexpected file ${JSON.stringify(file?.path)}`)
    if (!Number.isSafeInteger(file.size) || (file.size as number) < 0) return bad(`the size of ${file.path} is not a number`)
    if (typeof file.sha256 !== 'string' || !sha256Pattern.test(file.sha256)) return bad(`the sha256 of ${file.path} is not a hash`)
    if (seen.has(file.path)) return bad(`it lists ${file.path} twice`)
    seen.add(file.path)
    files.push({ path: file.path, size: file.size as number, sha256: file.sha256 })
  }
  for (const required of ['miniship.db', 'secret.key']) if (!seen.has(required)) return bad(`it does not list ${required}`)
  const blobs = record.blobs as BackupManifest['blobs'] | undefined
  if (blobs !== undefined && (typeof blobs !== 'object' || blobs === null || typeof blobs.included !== 'boolean' || (blobs.storage !== 'local' && blobs.storage !== 's3'))) return bad('blobs is not { included, storage }')
  if (record.owner !== undefined && (typeof record.owner !== 'string' || !ownerIdPattern.test(record.owner))) return bad('owner is not an installation id')
  return {
    format: manifestFormat,
    formatVersion: record.formatVersion as number,
    productVersion: record.productVersion,
    schemaVersion: record.schemaVersion as number,
    createdAt: record.createdAt,
    files,
    ...(blobs ? { blobs } : {}),
    ...(typeof record.owner === 'string' ? { owner: record.owner } : {}),
  }
}
