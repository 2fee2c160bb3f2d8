// For tests (the library's own and the end-to-end ones on the compiled binary): a storage adapter that
// fails at a chosen write, as a process killed there would leave it. Not part of the package (no entry
// point imports it).
import type { UpdateStorage } from './storage'

/**
 * An adapter whose `failAt`-th write (writeText, chunk write, rename, remove) fails, half done where a write
 * can be. With `splitRename`, rename is two writes, "remove the target, then move" (as on file APIs whose
 * move refuses an existing target), so a crash can fall in between.
 */
export function failingStorage(inner: UpdateStorage, failAt: number, splitRename = false): UpdateStorage & { writes: number } {
  const state = { writes: 0 }
  const hit = () => ++state.writes === failAt
  const crash = () => new Error(`simulated crash at write ${failAt}`)
  return {
    get writes() {
      return state.writes
    },
    readText: (path) => inner.readText(path),
    async writeText(path, text) {
      if (hit()) {
        await inner.writeText(path, text.slice(0, text.length >> 1))
        throw crash()
      }
      return inner.writeText(path, text)
    },
    async openWrite(path) {
      const writer = await inner.openWrite(path)
      return {
        async write(chunk) {
          if (hit()) {
            await writer.write(chunk.subarray(0, chunk.length >> 1))
            throw crash()
          }
          return writer.write(chunk)
        },
        close: () => writer.close(),
      }
    },
    async rename(from, to) {
      if (splitRename) {
        if (hit()) throw crash()
        await inner.remove(to)
      }
      if (hit()) throw crash()
      return inner.rename(from, to)
    },
    async remove(path) {
      if (hit()) throw crash()
      return inner.remove(path)
    },
    list: (dir) => inner.list(dir),
    uri: (path) => inner.uri(path),
  }
}
