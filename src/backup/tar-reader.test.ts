// The tar reader against archives archiver writes, and against damaged ones.
import { describe, expect, test } from 'bun:test'
import { Writable } from 'node:stream'
import { TarArchive } from 'archiver'
import { readTar, TarFormatError, type TarEntry } from './tar-reader'

type Item = { name: string; content?: string; type?: 'directory' | 'symlink' }

/** An uncompressed tar as archiver 8 writes it. */
async function tarOf(items: Item[]): Promise<Uint8Array> {
  const chunks: Buffer[] = []
  const sink = new Writable({
    write(chunk, _encoding, callback) {
      chunks.push(chunk)
      callback()
    },
  })
  const archive = new TarArchive()
  const finished = new Promise((resolve) => sink.on('finish', resolve))
  archive.pipe(sink)
  for (const item of items) {
    if (item.type === 'symlink') archive.symlink(item.name, 'target')
    else if (item.type === 'directory') archive.append(null as unknown as string, { name: item.name, type: 'directory' } as never)
    else archive.append(Buffer.from(item.content ?? ''), { name: item.name })
  }
  await archive.finalize()
  await finished
  return new Uint8Array(Buffer.concat(chunks))
}

/** Feeds `bytes` in small uneven chunks, as a decompressor would. */
async function* chunked(bytes: Uint8Array, size = 333): AsyncIterable<Uint8Array> {
  for (let offset = 0; offset < bytes.byteLength; offset += size) yield bytes.subarray(offset, offset + size)
}

async function read(bytes: Uint8Array): Promise<{ entry: TarEntry; content: string }[]> {
  const result: { entry: TarEntry; content: string }[] = []
  await readTar(chunked(bytes), (entry) => {
    const parts: Uint8Array[] = []
    const item = { entry, content: '' }
    result.push(item)
    return {
      write: (chunk) => void parts.push(Uint8Array.from(chunk)),
      end: () => void (item.content = Buffer.concat(parts).toString()),
    }
  })
  return result
}

describe('readTar', () => {
  test('reads files of any size and long names in order', async () => {
    const prefixed = `blobs/sha256/ab/${'a'.repeat(64)}/${'b'.repeat(80)}` // ustar prefix field
    const longName = `dir/${'c'.repeat(120)}` // pax header
    const items: Item[] = [
      { name: 'backup.json', content: '{"a":1}' },
      { name: 'empty', content: '' },
      { name: 'exactly-512', content: 'x'.repeat(512) },
      { name: 'big', content: 'y'.repeat(70_001) },
      { name: prefixed, content: 'prefixed' },
      { name: longName, content: 'long' },
    ]
    const entries = await read(await tarOf(items))
    expect(entries.map(({ entry, content }) => ({ name: entry.name, content }))).toEqual(items.map(({ name, content }) => ({ name, content: content! })))
    expect(entries.find(({ entry }) => entry.name === 'big')!.entry).toEqual({ name: 'big', type: 'file', size: 70_001 })
  })

  test('reports directories without content', async () => {
    const entries = await read(await tarOf([{ name: 'blobs/', type: 'directory' }, { name: 'blobs/a', content: 'a' }]))
    expect(entries.map(({ entry }) => entry)).toEqual([
      { name: 'blobs/', type: 'directory', size: 0 },
      { name: 'blobs/a', type: 'file', size: 1 },
    ])
  })

  const cases: [string, (tar: Uint8Array) => Uint8Array, RegExp][] = [
    ['cut inside an entry', (tar) => tar.subarray(0, 512 + 100), /ends in the middle of a \(truncated\)/],
    ['cut inside a header', (tar) => tar.subarray(0, 300), /middle of a tar header/],
    [
      'a flipped header byte',
      (tar) => {
        const copy = Uint8Array.from(tar)
        copy[10] = copy[10]! ^ 0x20
        return copy
      },
      /checksum mismatch/,
    ],
  ]
  for (const [name, damage, message] of cases) {
    test(`refuses ${name}`, async () => {
      const tar = await tarOf([{ name: 'a', content: 'z'.repeat(2000) }])
      const error = await read(damage(tar)).catch((caught: unknown) => caught)
      expect(error).toBeInstanceOf(TarFormatError)
      expect((error as Error).message).toMatch(message)
    })
  }

  test('refuses a symbolic link', async () => {
    const error = await read(await tarOf([{ name: 'link', type: 'symlink' }])).catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(TarFormatError)
    expect((error as Error).message).toBe('the archive holds link, which is not a regular file or directory (tar type "2")')
  })
})
