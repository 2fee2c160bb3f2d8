// The storage adapter the update client writes through, and memoryStorage() for tests.
import { toHex } from './encoding'
import { utf8Bytes } from './statement'

/** A file being written chunk by chunk (a download); `close()` completes it. */
export interface StorageWriter {
  write(chunk: Uint8Array): Promise<void>
  close(): Promise<void>
}

/**
 * Where the update client keeps downloaded versions, its state and its pending events.
 *
 * Paths are relative to the adapter's own root, separated by `/` (`versions/01J…/bundle`); the
 * adapter creates parent directories as needed. The library never relies on a write being atomic
 * except `rename`: it writes the small state file to a temporary name and renames it over the
 * old one. A `rename` that replaces its target in one step (`rename(2)`, `FileManager`'s replace,
 * `java.io.File.renameTo` on one volume) is best; one that must remove the target and then move
 * (expo-file-system's `move()`) is safe too: a whole temp file without the state file is taken as
 * the state (docs/host-app.md).
 */
export interface UpdateStorage {
  /** The whole file as text (UTF-8), or null when it does not exist. Only used for small files. */
  readText(path: string): Promise<string | null>
  /** Writes a whole text file, replacing it. Only used for small files, always followed by `rename`. */
  writeText(path: string, text: string): Promise<void>
  /** Opens a file for writing, replacing it; the downloads go through this, one chunk at a time. */
  openWrite(path: string): Promise<StorageWriter>
  /** Renames a file, replacing `to` if it exists (in one step where the platform can). */
  rename(from: string, to: string): Promise<void>
  /** Removes a file, or a directory with everything in it; nothing when it does not exist. */
  remove(path: string): Promise<void>
  /** Names of the entries of a directory ([] when it does not exist). */
  list(dir: string): Promise<string[]>
  /** What the host app hands its loader for `path`: a file path or `file://` URI. */
  uri(path: string): string
}

export interface MemoryStorage extends UpdateStorage {
  /** every file by path, for tests to look at and tamper with */
  readonly files: Map<string, Uint8Array>
}

/** UTF-8 without TextDecoder (Hermes has none): every byte as %XX, decoded (small files only). */
const utf8Text = (bytes: Uint8Array) => decodeURIComponent(toHex(bytes).replace(/../g, '%$&'))

/** An adapter that keeps everything in memory: for tests, and for apps that never persist updates. */
export function memoryStorage(): MemoryStorage {
  const files = new Map<string, Uint8Array>()
  const under = (dir: string) => (dir === '' ? '' : dir.replace(/\/+$/, '') + '/')
  return {
    files,
    async readText(path) {
      const bytes = files.get(path)
      return bytes === undefined ? null : utf8Text(bytes)
    },
    async writeText(path, text) {
      files.set(path, utf8Bytes(text))
    },
    async openWrite(path) {
      files.set(path, new Uint8Array(0))
      return {
        async write(chunk) {
          const before = files.get(path) ?? new Uint8Array(0)
          const after = new Uint8Array(before.length + chunk.length)
          after.set(before)
          after.set(chunk, before.length)
          files.set(path, after)
        },
        async close() {},
      }
    },
    async rename(from, to) {
      const bytes = files.get(from)
      if (bytes === undefined) throw new Error(`rename: ${from} does not exist`)
      files.delete(from)
      files.set(to, bytes)
    },
    async remove(path) {
      files.delete(path)
      const prefix = under(path)
      for (const name of [...files.keys()]) if (name.startsWith(prefix)) files.delete(name)
    },
    async list(dir) {
      const prefix = under(dir)
      const names = new Set<string>()
      for (const name of files.keys()) if (name.startsWith(prefix)) names.add(name.slice(prefix.length).split('/')[0]!)
      return [...names]
    },
    uri: (path) => `memory://${path}`,
  }
}
