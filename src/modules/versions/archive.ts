// Checks an uploaded assets archive (decisions §5): a real zip whose entries stay in the platform's folders.
import type yauzlModule from 'yauzl'

export type Platform = 'ios' | 'android'

/** Where each platform's runtime expects the archive's entries when it unpacks next to the bundle. */
const allowedTop: Record<Platform, { test: (first: string) => boolean; describe: string }> = {
  ios: { test: (first) => first === 'assets', describe: 'under assets/' },
  android: { test: (first) => first === 'raw' || /^drawable-[A-Za-z0-9_]+(?:-[A-Za-z0-9_]+)*$/.test(first), describe: 'under drawable-*/ or raw/' },
}

/**
 * Why the name is unacceptable, or null. yauzl already refuses absolute paths and `..` on its
 * error event; these checks repeat them so the rule does not depend on a library default.
 */
export function entryNameProblem(name: string, platform: Platform): string | null {
  if (name.startsWith('/') || /^[A-Za-z]:/.test(name) || name.startsWith('\\')) return `has an absolute path (${name})`
  const segments = name.replace(/\\/g, '/').split('/')
  if (segments.includes('..')) return `has a path that leaves its folder (${name})`
  if (segments.includes('.') || segments.slice(0, -1).includes('')) return `has an unusual path (${name})`
  const first = segments[0]!
  if (!allowedTop[platform].test(first)) return `has an entry outside the allowed folders, which must be ${allowedTop[platform].describe} (${name})`
  return null
}

function isSymbolicLink(entry: yauzlModule.Entry): boolean {
  const madeBy = entry.versionMadeBy >> 8
  // Only archives made on unix (3) or macOS (19) carry unix modes in the external attributes.
  if (madeBy !== 3 && madeBy !== 19) return false
  const mode = (entry.externalFileAttributes >>> 16) & 0xffff
  return (mode & 0o170000) === 0o120000
}

function describeZipError(error: Error): string {
  const text = error.message
  const absolute = /^absolute path: (.*)$/.exec(text)
  if (absolute) return `has an absolute path (${absolute[1]})`
  const relative = /^invalid relative path: (.*)$/.exec(text)
  if (relative) return `has a path that leaves its folder (${relative[1]})`
  return 'is not a valid zip archive'
}

/**
 * Reads the central directory of the zip at `path` and returns the first problem as a phrase
 * to follow the field name ("assetsIos is not a valid zip archive"), or null when it is fine.
 */
export async function checkAssetsArchive(path: string, platform: Platform): Promise<string | null> {
  // loaded on the first upload rather than at start-up (the binary starts faster without it)
  const { default: yauzl } = (await import('yauzl')) as { default: typeof yauzlModule }
  return new Promise((resolve) => {
    yauzl.open(path, { lazyEntries: true, autoClose: true, strictFileNames: false, validateEntrySizes: true }, (openError, zip) => {
      if (openError || !zip) {
        resolve(describeZipError(openError ?? new Error('not a zip')))
        return
      }
      let settled = false
      // yauzl closes the file itself on `end` and `error` (autoClose); a refusal of ours closes it.
      const finish = (problem: string | null, close = false) => {
        if (settled) return
        settled = true
        if (close) zip.close()
        resolve(problem)
      }
      zip.on('error', (error: Error) => finish(describeZipError(error)))
      zip.on('end', () => finish(null))
      zip.on('entry', (entry: yauzlModule.Entry) => {
        if (isSymbolicLink(entry)) return finish(`contains a symbolic link (${entry.fileName}); archives must hold plain files`, true)
        const problem = entryNameProblem(entry.fileName, platform)
        if (problem) return finish(problem, true)
        zip.readEntry()
      })
      zip.readEntry()
    })
  })
}
