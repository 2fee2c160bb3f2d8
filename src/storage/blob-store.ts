// The blob-store interface: content-addressed stored files in the data directory or in an S3 bucket.
import type { DataDirPaths } from '../data-dir'

export const sha256Pattern = /^[0-9a-f]{64}$/

/** A file written to tmp/, hashed while it streamed; not yet in the store. */
export interface TempFile {
  path: string
  sha256: string
  size: number
}

/** A placed blob as `list` finds it. */
export interface ListedBlob {
  sha256: string
  size: number
}

/**
 * Where stored files live. Uploads are always received into the local tmp/, hashed and checked
 * there, and only then committed, so nothing becomes visible in either store before it is checked.
 * The store remembers which hashes uploads in flight are about to refer to, so that deleting a
 * version (or cleaning up a failed upload) never removes a blob another upload has just committed
 * but not yet recorded in the database.
 */
export interface BlobStore {
  readonly kind: 'local' | 's3'
  /** tmp/ receives uploads; blobs/ is the local store's root (and where backups stage) */
  readonly paths: Pick<DataDirPaths, 'blobs' | 'tmp'>
  /**
   * Moves (local) or copies (S3) a temp file into the store and holds its hash until `release`.
   * `created` is false when an identical blob was already stored: identical files are stored once.
   * The temp file is gone afterwards when the store took it over (local), left to the caller otherwise.
   */
  commit(file: TempFile): Promise<{ sha256: string; created: boolean }>
  release(sha256s: Iterable<string>): void
  /** Removes each blob that no database row refers to (`isReferenced`) and no upload holds. */
  removeUnreferenced(sha256s: Iterable<string>, isReferenced: (sha256: string) => boolean): Promise<string[]>
  /** The bytes of a blob (a `Bun.file` or an `S3File`: both Blobs with `slice` and `stream`); reading a missing one fails. */
  read(sha256: string): Blob
  /** Its size in bytes, or null when it is not stored. */
  size(sha256: string): Promise<number | null>
  /** Every correctly named blob, sorted by hash. */
  list(): Promise<ListedBlob[]>
  /** Removes one blob outright (garbage collection under the data directory's lock). */
  remove(sha256: string): Promise<void>
  /** Stores a local file under `sha256` without moving it (restore, migrate-storage); its hash is the caller's to check. */
  putFile(sha256: string, path: string): Promise<void>
  /** Where a blob lives, for messages to operators: a path, or s3://bucket/key. */
  describe(sha256: string): string
}

/** The bookkeeping of hashes held by uploads in flight, shared by both stores. */
export function createHolds() {
  const held = new Map<string, number>()
  return {
    hold(sha256: string): void {
      held.set(sha256, (held.get(sha256) ?? 0) + 1)
    },
    release(sha256s: Iterable<string>): void {
      for (const sha256 of sha256s) {
        const count = (held.get(sha256) ?? 0) - 1
        if (count > 0) held.set(sha256, count)
        else held.delete(sha256)
      }
    },
    isHeld: (sha256: string) => held.has(sha256),
  }
}
