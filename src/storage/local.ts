// The local blob store (decisions §8): content-addressed files under blobs/sha256/<ab>/<hash>, written via tmp/.
import { rename, rm, stat, mkdir, readdir } from 'node:fs/promises'
import { copyFileSync, existsSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { fsyncPath, type DataDirPaths } from '../data-dir'
import { createHolds, sha256Pattern, type BlobStore, type ListedBlob } from './blob-store'

/** Where the blob with this hash lives (whether or not it exists). */
export function blobPath(paths: Pick<DataDirPaths, 'blobs'>, sha256: string): string {
  if (!sha256Pattern.test(sha256)) throw new Error('not a sha256 hex digest')
  return join(paths.blobs, 'sha256', sha256.slice(0, 2), sha256)
}

export interface LocalBlobStore extends BlobStore {
  readonly kind: 'local'
  path(sha256: string): string
}

export function createLocalBlobStore(paths: Pick<DataDirPaths, 'blobs' | 'tmp'>): LocalBlobStore {
  const holds = createHolds()

  async function place(source: string, sha256: string, move: boolean): Promise<void> {
    const directory = join(paths.blobs, 'sha256', sha256.slice(0, 2))
    await mkdir(directory, { recursive: true, mode: 0o700 })
    const target = blobPath(paths, sha256)
    if (move) await rename(source, target)
    else {
      // copied beside the target and renamed: a reader never sees half a blob
      const partial = join(paths.tmp, `place-${Bun.randomUUIDv7()}`)
      copyFileSync(source, partial)
      fsyncPath(partial)
      await rename(partial, target)
    }
    fsyncPath(directory)
  }

  return {
    kind: 'local',
    paths,
    async commit(file) {
      const target = blobPath(paths, file.sha256)
      holds.hold(file.sha256)
      try {
        if (existsSync(target)) {
          await rm(file.path, { force: true })
          return { sha256: file.sha256, created: false }
        }
        await place(file.path, file.sha256, true)
        return { sha256: file.sha256, created: true }
      } catch (error) {
        holds.release([file.sha256])
        throw error
      }
    },
    release: holds.release,
    async removeUnreferenced(sha256s, isReferenced) {
      const removed: string[] = []
      for (const sha256 of new Set(sha256s)) {
        if (holds.isHeld(sha256) || isReferenced(sha256)) continue
        // Synchronous on purpose: between the check above and the unlink no upload's `commit` may
        // run, or it could find this blob, drop its own copy, and record a row for a file that goes.
        rmSync(blobPath(paths, sha256), { force: true })
        removed.push(sha256)
      }
      return removed
    },
    read: (sha256) => Bun.file(blobPath(paths, sha256)),
    async size(sha256) {
      // only a file that is not there is missing: one this user may not read (a data directory
      // chowned half-way, doctor run as another user) is an error, not a reason to restore it
      const found = await stat(blobPath(paths, sha256)).catch((error: NodeJS.ErrnoException) => {
        if (error.code === 'ENOENT' || error.code === 'ENOTDIR') return null
        throw error
      })
      return found?.isFile() ? found.size : null
    },
    async list() {
      const root = join(paths.blobs, 'sha256')
      if (!existsSync(root)) return []
      const found: ListedBlob[] = []
      for (const prefix of await readdir(root)) {
        for (const name of await readdir(join(root, prefix)).catch(() => [] as string[])) {
          if (sha256Pattern.test(name) && name.startsWith(prefix)) found.push({ sha256: name, size: (await stat(join(root, prefix, name))).size })
        }
      }
      return found.sort((a, b) => a.sha256.localeCompare(b.sha256))
    },
    async remove(sha256) {
      await rm(blobPath(paths, sha256), { force: true })
    },
    putFile: (sha256, path) => place(path, sha256, false),
    describe: (sha256) => blobPath(paths, sha256),
    path: (sha256) => blobPath(paths, sha256),
  }
}
