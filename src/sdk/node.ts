// miniship/sdk/node: a storage adapter on node:fs, and node's native sha256/Ed25519, for Node, Bun and tests.
import { createHash, createPublicKey, verify } from 'node:crypto'
import { mkdir, open, readdir, readFile, rename, rm } from 'node:fs/promises'
import { dirname, join, resolve, sep } from 'node:path'
import type { UpdateCrypto } from './crypto'
import type { StorageWriter, UpdateStorage } from './storage'

/**
 * Keeps the update client's files under `dir` (created when missing). Files are fsynced before the
 * rename that publishes them and the directory after it, so a power cut leaves the old state or the new.
 */
export function fileStorage(dir: string): UpdateStorage {
  const root = resolve(dir)
  const full = (path: string) => {
    const target = resolve(root, path)
    if (target !== root && !target.startsWith(root + sep)) throw new Error(`fileStorage: ${path} is outside ${root}`)
    return target
  }
  return {
    async readText(path) {
      try {
        return await readFile(full(path), 'utf8')
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null
        throw error
      }
    },
    async writeText(path, text) {
      const target = full(path)
      await mkdir(dirname(target), { recursive: true })
      const handle = await open(target, 'w')
      try {
        await handle.writeFile(text, 'utf8')
        await handle.sync()
      } finally {
        await handle.close()
      }
    },
    async openWrite(path): Promise<StorageWriter> {
      const target = full(path)
      await mkdir(dirname(target), { recursive: true })
      const handle = await open(target, 'w')
      return {
        async write(chunk) {
          let offset = 0
          while (offset < chunk.length) offset += (await handle.write(chunk, offset, chunk.length - offset)).bytesWritten
        },
        async close() {
          try {
            await handle.sync()
          } finally {
            await handle.close()
          }
        },
      }
    },
    async rename(from, to) {
      const target = full(to)
      await mkdir(dirname(target), { recursive: true })
      await rename(full(from), target)
      // the rename itself survives a power cut once its directory is synced
      const directory = await open(dirname(target), 'r')
      try {
        await directory.sync()
      } catch {
        // some file systems cannot sync a directory; the rename stands
      } finally {
        await directory.close()
      }
    },
    async remove(path) {
      await rm(full(path), { recursive: true, force: true })
    },
    async list(path) {
      try {
        return await readdir(full(path))
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return []
        throw error
      }
    },
    uri: (path) => join(root, path),
  }
}

/** node:crypto's sha256 and Ed25519 for `createUpdater({ crypto })`: faster than the pure-JS fallback. */
export function nodeCrypto(): UpdateCrypto {
  // SPKI prefix of an Ed25519 public key (RFC 8410): the raw 32 bytes follow it
  const spkiPrefix = new Uint8Array([0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00])
  return {
    sha256: () => createHash('sha256'),
    verifyEd25519(publicKey, message, signature) {
      const der = new Uint8Array(spkiPrefix.length + publicKey.length)
      der.set(spkiPrefix)
      der.set(publicKey, spkiPrefix.length)
      try {
        return verify(null, message, createPublicKey({ key: Buffer.from(der), format: 'der', type: 'spki' }), signature)
      } catch {
        return false
      }
    },
  }
}
