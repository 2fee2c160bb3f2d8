// Backup and restore on real temp data directories: round trip, damaged archives, refusals, schema versions, GC.
import { afterEach, describe, expect, test } from 'bun:test'
import { createWriteStream, existsSync, lstatSync, symlinkSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs'
import { createReadStream } from 'node:fs'
import { createGunzip } from 'node:zlib'
import { pipeline } from 'node:stream/promises'
import { basename, dirname, join, relative } from 'node:path'
import { Database } from 'bun:sqlite'
import { TarArchive } from 'archiver'
import { dataDirPaths, openDataDir, type OpenedDataDir } from '../data-dir'
import { appliedMigrationCount, schemaVersion } from '../db/open'
import { blobPath } from '../storage'
import { collectGarbage, findGarbage } from '../storage/gc'
import { tempDir } from '../test-support'
import { productVersion } from '../version'
import { backupTarget, createBackup, defaultBackupName, diskFullText, isDiskFull, stagingSpaceProblem } from './create'
import { BackupError, parseManifest, type BackupManifest } from './manifest'
import { removeRestoreLeftovers, restoreBackup } from './restore'
import { readTar } from './tar-reader'

const cleanups: string[] = []
afterEach(() => {
  for (const path of cleanups.splice(0)) rmSync(path, { recursive: true, force: true })
})

function scratch(): string {
  const directory = tempDir('miniship-backup-test-')
  cleanups.push(directory)
  return directory
}

const sha256 = (bytes: Uint8Array | string) => new Bun.CryptoHasher('sha256').update(bytes).digest('hex')

/** Puts `content` into the blob store the way the store lays it out. */
function putBlob(opened: OpenedDataDir, content: string): { sha256: string; size: number } {
  const hash = sha256(content)
  const path = blobPath(opened.paths, hash)
  mkdirSync(dirname(path), { recursive: true })
  writeFileSync(path, content, { mode: 0o600 })
  return { sha256: hash, size: Buffer.byteLength(content) }
}

const now = '2026-11-22T10:00:00.000Z'

/** A version row whose five files are `<label>-<file>` blobs (the same label, the same blobs). */
function addVersion(opened: OpenedDataDir, miniAppId: string, version: string, label: string, id = `v-${label}`): string[] {
  const files = ['bundle-ios', 'bundle-android', 'manifest', 'assets-ios', 'assets-android'].map((file) => putBlob(opened, `${label}-${file}`))
  opened.db.$client
    .query(`INSERT INTO versions (id, mini_app_id, version, build_number, release_type, status, created_at, updated_at) VALUES (?, ?, ?, 1, 'RELEASE', 'DRAFT', ?, ?)`)
    .run(id, miniAppId, version, now, now)
  const kinds = ['bundleIos', 'bundleAndroid', 'manifest', 'assetsIos', 'assetsAndroid']
  files.forEach((file, index) => opened.db.$client.query('INSERT INTO version_files (version_id, kind, sha256, size) VALUES (?, ?, ?, ?)').run(id, kinds[index]!, file.sha256, file.size))
  return files.map((file) => file.sha256)
}

/** An initialised data directory with a user, a miniapp and two versions (10 blobs). */
function populatedDataDir(): { root: string; opened: OpenedDataDir; blobs: string[] } {
  const root = join(scratch(), 'data')
  const opened = openDataDir(root)
  opened.db.$client
    .query("INSERT INTO users (id, email, display_name, password_hash, role, status, created_at, updated_at) VALUES ('u1', 'a@example.com', 'A', 'hash', 'ADMIN', 'ACTIVE', ?, ?)")
    .run(now, now)
  opened.db.$client.query("INSERT INTO mini_apps (id, app_id, name, created_by, created_at, updated_at) VALUES ('m1', 'demo', 'Demo', 'u1', ?, ?)").run(now, now)
  const blobs = [...addVersion(opened, 'm1', '1.0.0', 'one'), ...addVersion(opened, 'm1', '1.1.0', 'two')]
  return { root, opened, blobs }
}

/** Relative path → sha256 of every file under `root` (what "left as it was" is compared by). */
function snapshotTree(root: string): Record<string, string> {
  const result: Record<string, string> = {}
  const walk = (directory: string) => {
    for (const entry of readdirSync(directory, { withFileTypes: true })) {
      const path = join(directory, entry.name)
      if (entry.isDirectory()) walk(path)
      else result[relative(root, path)] = sha256(readFileSync(path))
    }
  }
  if (existsSync(root)) walk(root)
  return result
}

async function readEntries(archive: string): Promise<Map<string, Buffer>> {
  const entries = new Map<string, Buffer>()
  await pipeline(createReadStream(archive), createGunzip(), (source: AsyncIterable<Uint8Array>) =>
    readTar(source, (entry) => {
      const chunks: Uint8Array[] = []
      return { write: (chunk) => void chunks.push(chunk), end: () => void entries.set(entry.name, Buffer.concat(chunks)) }
    }),
  )
  return entries
}

async function writeEntries(archive: string, entries: Map<string, Buffer | string>): Promise<void> {
  const output = createWriteStream(archive)
  const tar = new TarArchive({ gzip: true, gzipOptions: { level: 1 } })
  const closed = new Promise((resolve, reject) => {
    output.on('close', resolve)
    tar.on('error', reject)
  })
  tar.pipe(output)
  for (const [name, content] of entries) tar.append(Buffer.from(content), { name })
  await tar.finalize()
  await closed
}

async function backupOf(root: string): Promise<{ archive: string; manifest: BackupManifest }> {
  const archive = join(scratch(), 'backup.tar.gz')
  const result = await createBackup({ dataDir: root, out: archive })
  return { archive, manifest: result.manifest }
}

/**
 * Every refusal comes from the first pass, which only reads the archive: the target and its
 * parent are left as they were, and the restore never got as far as naming its staging directory
 * (it registers that for cleanup before writing anything).
 */
async function expectRestoreFailure(archive: string, message: RegExp | string): Promise<void> {
  const staged: string[] = []
  class Recording extends Set<string> {
    override add(path: string): this {
      staged.push(path)
      return super.add(path)
    }
  }
  // A target with contents and --force: the strictest case for "left as it was".
  const { root: target } = populatedDataDir()
  const before = snapshotTree(target)
  const parentBefore = readdirSync(dirname(target)).sort()
  const error = await restoreBackup({ archive, dataDir: target, force: true, cleanup: new Recording() }).catch((caught: unknown) => caught)
  expect(error).toBeInstanceOf(BackupError)
  expect((error as Error).message).toMatch(message)
  expect(staged).toEqual([])
  expect(snapshotTree(target)).toEqual(before)
  expect(readdirSync(dirname(target)).sort()).toEqual(parentBefore)
}

describe('backup', () => {
  test('writes backup.json first, with product and schema version and every file hashed', async () => {
    const { root, opened, blobs } = populatedDataDir()
    const { archive, manifest } = await backupOf(root)
    opened.db.$client.close()
    expect(manifest.productVersion).toBe(productVersion)
    expect(manifest.schemaVersion).toBe(schemaVersion)
    expect(manifest.files.map((file) => file.path).sort()).toEqual(['insights.key', 'miniship.db', 'secret.key', ...blobs.map((hash) => `blobs/sha256/${hash.slice(0, 2)}/${hash}`)].sort())
    const entries = await readEntries(archive)
    expect([...entries.keys()][0]).toBe('backup.json')
    expect(parseManifest(entries.get('backup.json')!)).toEqual(manifest)
    for (const file of manifest.files) {
      expect(sha256(entries.get(file.path)!)).toBe(file.sha256)
      expect(entries.get(file.path)!.byteLength).toBe(file.size)
    }
    expect(entries.get('secret.key')!.toString()).toBe(readFileSync(join(root, 'secret.key'), 'utf8'))
    expect(statSync(archive).mode & 0o777).toBe(0o600)
    // the staging directory is gone
    expect(readdirSync(join(root, 'tmp'))).toEqual([])
  })

  test('backup.json carries the installation id of S3 storage (owner), refuses one that is not an id, and has none for local storage', async () => {
    const { root, opened } = populatedDataDir()
    const { archive, manifest } = await backupOf(root)
    opened.db.$client.close()
    expect(manifest.owner).toBeUndefined()
    const listed = JSON.parse((await readEntries(archive)).get('backup.json')!.toString())
    const bytes = (value: object) => Buffer.from(JSON.stringify({ ...listed, ...value }))
    expect(parseManifest(bytes({ owner: '0199aa00-0000-7000-8000-000000000001' })).owner).toBe('0199aa00-0000-7000-8000-000000000001')
    expect(() => parseManifest(bytes({ owner: 42 }))).toThrow('owner is not an installation id')
    expect(() => parseManifest(bytes({ owner: 'a b' }))).toThrow('owner is not an installation id')
  })

  test('leaves out blobs no row refers to and snapshots uncommitted-to-disk WAL content', async () => {
    const { root, opened } = populatedDataDir()
    const orphan = putBlob(opened, 'orphan').sha256
    // still open, writes only in the WAL: VACUUM INTO must see them
    opened.db.$client.query("UPDATE mini_apps SET name = 'Renamed' WHERE id = 'm1'").run()
    const { archive, manifest } = await backupOf(root)
    opened.db.$client.close()
    expect(manifest.files.some((file) => file.path.endsWith(orphan))).toBe(false)
    const target = join(scratch(), 'restored')
    await restoreBackup({ archive, dataDir: target })
    const restored = new Database(join(target, 'miniship.db'), { readonly: true })
    expect(restored.query("SELECT name FROM mini_apps WHERE id = 'm1'").get()).toEqual({ name: 'Renamed' })
    restored.close()
  })

  test('the default name is a UTC timestamp', () => {
    expect(defaultBackupName(new Date('2026-11-22T10:00:05.123Z'))).toBe('miniship-backup-20261122T100005Z.tar.gz')
  })

  test('--out: a file, or a directory (ending in / or existing; made 0700 when missing) for the default name', async () => {
    const at = new Date('2026-11-22T10:00:05.123Z')
    const name = defaultBackupName(at)
    const cwd = scratch()
    mkdirSync(join(cwd, 'existing'))
    writeFileSync(join(cwd, 'a-file'), 'x')
    expect(backupTarget(undefined, at, cwd)).toBe(join(cwd, name))
    expect(backupTarget('nightly.tar.gz', at, cwd)).toBe(join(cwd, 'nightly.tar.gz'))
    expect(backupTarget('existing', at, cwd)).toBe(join(cwd, 'existing', name))
    expect(backupTarget('.', at, cwd)).toBe(join(cwd, name))
    expect(existsSync(join(cwd, 'later'))).toBe(false)
    expect(backupTarget('later/nested/', at, cwd)).toBe(join(cwd, 'later', 'nested', name))
    expect(statSync(join(cwd, 'later', 'nested')).isDirectory()).toBe(true)
    expect(statSync(join(cwd, 'later', 'nested')).mode & 0o777).toBe(0o700)
    expect(() => backupTarget('a-file/', at, cwd)).toThrow(BackupError)

    // the whole way: `--out somedir/` that does not exist yet ends up as somedir/<default name>
    const { root, opened } = populatedDataDir()
    opened.db.$client.close()
    const result = await createBackup({ dataDir: root, out: backupTarget('somedir/', at, cwd), now: () => at })
    expect(result.out).toBe(join(cwd, 'somedir', name))
    expect(statSync(join(cwd, 'somedir')).isDirectory()).toBe(true)
    expect(readdirSync(join(cwd, 'somedir'))).toEqual([name])
  })

  test('two runs in a row to the same --out: the second replaces the first whole, nothing else is left beside it', async () => {
    const { root, opened } = populatedDataDir()
    opened.db.$client.close()
    const directory = scratch()
    const out = join(directory, 'nightly.tar.gz')
    const first = await createBackup({ dataDir: root, out, now: () => new Date('2026-11-22T01:00:00.000Z') })
    const second = await createBackup({ dataDir: root, out, now: () => new Date('2026-11-23T01:00:00.000Z') })
    expect(second.out).toBe(first.out)
    expect(readdirSync(directory)).toEqual(['nightly.tar.gz'])
    const restored = join(scratch(), 'restored')
    const result = await restoreBackup({ archive: out, dataDir: restored })
    expect(result.manifest.createdAt).toBe('2026-11-23T01:00:00.000Z')
  })

  test('the .partial archives killed runs left in the directory (this --out\'s, or default-named ones) are removed; a live backup\'s and others\' files stay', async () => {
    const { root, opened } = populatedDataDir()
    opened.db.$client.close()
    const directory = scratch()
    const deadPid = Bun.spawnSync(['true']).pid
    // a backup still writing: its command line names miniship backup
    const live = Bun.spawn(['bash', '-c', 'sleep 30; true', 'miniship', 'backup'])
    try {
      const leftovers = [`nightly.tar.gz.${deadPid}.partial`, 'nightly.tar.gz.partial', `miniship-backup-20261101T010000Z.tar.gz.${deadPid}.partial`]
      const kept = [`nightly.tar.gz.${live.pid}.partial`, `other.tar.gz.${deadPid}.partial`, 'notes.txt']
      for (const name of [...leftovers, ...kept]) writeFileSync(join(directory, name), 'a copy of the secret and the database')
      await createBackup({ dataDir: root, out: join(directory, 'nightly.tar.gz') })
      expect(readdirSync(directory).sort()).toEqual(['nightly.tar.gz', ...kept].sort())
    } finally {
      live.kill()
    }
  })

  test('a run that fails leaves the existing archive as it was', async () => {
    const { root, opened, blobs } = populatedDataDir()
    opened.db.$client.close()
    const out = join(scratch(), 'nightly.tar.gz')
    writeFileSync(out, 'last night')
    rmSync(blobPath(dataDirPaths(root), blobs[0]!))
    await expect(createBackup({ dataDir: root, out })).rejects.toThrow(/do not exist/)
    expect(readFileSync(out, 'utf8')).toBe('last night')
    expect(readdirSync(dirname(out))).toEqual(['nightly.tar.gz'])
  })

  test('an --out that exists but is not a file is refused', async () => {
    const { root, opened } = populatedDataDir()
    opened.db.$client.close()
    const out = join(scratch(), 'fifo')
    Bun.spawnSync(['mkfifo', out])
    await expect(createBackup({ dataDir: root, out })).rejects.toThrow(/exists and is not a file/)
  })

  test('fails clearly, with no archive or .partial, when a referenced file is missing or damaged', async () => {
    const { root, opened, blobs } = populatedDataDir()
    opened.db.$client.close()
    const out = join(scratch(), 'b.tar.gz')
    writeFileSync(blobPath(dataDirPaths(root), blobs[3]!), 'flipped bits')
    await expect(createBackup({ dataDir: root, out })).rejects.toThrow(`stored file ${blobPath(dataDirPaths(root), blobs[3]!)} is damaged`)
    rmSync(blobPath(dataDirPaths(root), blobs[3]!))
    await expect(createBackup({ dataDir: root, out })).rejects.toThrow(/refers to 1 stored file\(s\) that do not exist/)
    expect(readdirSync(dirname(out))).toEqual([])
    expect(readdirSync(join(root, 'tmp'))).toEqual([])
  })

  test('a staged file removed while the archive is being written fails the backup (no hang, no uncaught error), leaving no archive, .partial or staging', async () => {
    const { root, opened } = populatedDataDir()
    // a database large enough that the archive is still writing it when the staged blobs go
    opened.db.$client.run('CREATE TABLE filler (x BLOB)')
    opened.db.$client.run('INSERT INTO filler VALUES (randomblob(40000000))')
    opened.db.$client.close()
    const out = join(scratch(), 'b.tar.gz')
    const tmp = join(root, 'tmp')
    let removed = 0
    const removeStagedBlobs = () => {
      for (const staging of readdirSync(tmp)) {
        const blobsDir = join(tmp, staging, 'blobs')
        if (!existsSync(blobsDir)) continue
        for (const entry of readdirSync(blobsDir, { recursive: true, withFileTypes: true })) {
          if (!entry.isFile()) continue
          rmSync(join(entry.parentPath, entry.name))
          removed++
        }
      }
    }
    // once the archive has bytes of the database, every entry was queued and looked at: the blobs are read later
    const watch = setInterval(() => {
      if ((statSync(`${out}.${process.pid}.partial`, { throwIfNoEntry: false })?.size ?? 0) < 1_000_000) return
      clearInterval(watch)
      removeStagedBlobs()
    }, 1)
    const outcome = await Promise.race([
      createBackup({ dataDir: root, out }).then(
        () => 'finished',
        (error: unknown) => error,
      ),
      Bun.sleep(20_000).then(() => 'hung'),
    ])
    clearInterval(watch)
    expect(removed).toBeGreaterThan(0)
    expect(outcome).toBeInstanceOf(BackupError)
    expect((outcome as BackupError).message).toMatch(/ENOENT/)
    expect(readdirSync(dirname(out))).toEqual([])
    expect(readdirSync(tmp)).toEqual([])
  })

  test('fails clearly on a directory that is not a data directory', async () => {
    await expect(createBackup({ dataDir: scratch(), out: join(scratch(), 'x.tar.gz') })).rejects.toThrow(/no miniship database/)
  })
})

describe('restore', () => {
  test('round trip: the same database rows, secret and blobs, and an empty tmp/', async () => {
    const { root, opened } = populatedDataDir()
    opened.db.$client.exec('PRAGMA wal_checkpoint(TRUNCATE)')
    const { archive } = await backupOf(root)
    const rowsBefore = opened.db.$client.query('SELECT * FROM versions ORDER BY id').all()
    opened.db.$client.close()
    const target = join(scratch(), 'nested', 'restored')
    const result = await restoreBackup({ archive, dataDir: target })
    expect(result).toMatchObject({ migrated: 0, replaced: false })
    const restored = new Database(join(target, 'miniship.db'), { readonly: true })
    expect(restored.query('SELECT * FROM versions ORDER BY id').all()).toEqual(rowsBefore)
    restored.close()
    const withoutDatabase = (tree: Record<string, string>) => Object.fromEntries(Object.entries(tree).filter(([path]) => !path.startsWith('miniship.db')))
    expect(withoutDatabase(snapshotTree(target))).toEqual(withoutDatabase(snapshotTree(root)))
    expect(readdirSync(join(target, 'tmp'))).toEqual([])
    // tmp/ holds uploads in flight (drafts): the owner's alone, as a directory miniship makes
    expect(statSync(join(target, 'tmp')).mode & 0o777).toBe(0o700)
    expect(statSync(join(target, 'secret.key')).mode & 0o777).toBe(0o600)
    expect(readFileSync(join(target, 'insights.key'), 'utf8')).toBe(readFileSync(join(root, 'insights.key'), 'utf8'))
    expect(statSync(join(target, 'insights.key')).mode & 0o777).toBe(0o600)
    expect(readdirSync(dirname(target))).toEqual(['restored'])
  })

  test('refuses a non-empty target without --force and replaces it with --force', async () => {
    const { root, opened } = populatedDataDir()
    opened.db.$client.close()
    const { archive } = await backupOf(root)
    const target = scratch()
    writeFileSync(join(target, 'keep.txt'), 'mine')
    await expect(restoreBackup({ archive, dataDir: target })).rejects.toThrow(/is not empty; .*--force/)
    expect(readdirSync(target)).toEqual(['keep.txt'])
    const result = await restoreBackup({ archive, dataDir: target, force: true })
    expect(result.replaced).toBe(true)
    expect(existsSync(join(target, 'keep.txt'))).toBe(false)
    expect(existsSync(join(target, 'miniship.db'))).toBe(true)
    expect(readdirSync(dirname(target)).filter((name) => name.includes('.restore-') || name.includes('.replaced-'))).toEqual([])
  })

  test('removes what killed restores into the same target left beside it, says so in one line, and spares live restores', async () => {
    const { root, opened } = populatedDataDir()
    opened.db.$client.close()
    const { archive } = await backupOf(root)
    const parent = scratch()
    const target = join(parent, 'data')
    const deadPid = Bun.spawnSync(['true']).pid
    const leftovers = ['.data.restore-0123456789ab', `.data.restore-${deadPid}-abcdef012345`, `.data.restore-${process.pid}-00000000aaaa`]
    for (const name of leftovers) {
      mkdirSync(join(parent, name))
      writeFileSync(join(parent, name, 'secret.key'), 'a copy of the secret')
    }
    // not leftovers of this target: another target's, a name we never make, a live process's restore
    const kept = ['.other.restore-0123456789ab', '.data.restore-x.restore-0123456789ab', '.data.restore-notours', `.data.restore-${process.ppid}-0123456789ab`]
    for (const name of kept) mkdirSync(join(parent, name))

    const notices: string[] = []
    let ownStagingSweep: string | null | undefined
    let ownStaging: string[] = []
    const progress = (line: string) => {
      if (line !== 'checking the database…') return
      // mid-restore, with its own staging directory full: a sweep must not take it for a leftover
      ownStaging = readdirSync(parent).filter((name) => name.startsWith(`.data.restore-${process.pid}-`))
      ownStagingSweep = removeRestoreLeftovers(target)
    }
    await restoreBackup({ archive, dataDir: target, notice: (line) => notices.push(line), progress })
    expect(ownStaging).toHaveLength(1)
    expect(ownStagingSweep).toBeNull()
    expect(existsSync(join(target, 'miniship.db'))).toBe(true)
    expect(notices).toHaveLength(1)
    expect(notices[0]).not.toContain('\n')
    expect(notices[0]).toContain(`left beside ${target}`)
    for (const name of leftovers) expect(notices[0]).toContain(name)
    expect(readdirSync(parent).sort()).toEqual(['data', ...kept].sort())

    // nothing left: nothing said
    const quiet: string[] = []
    await restoreBackup({ archive, dataDir: target, force: true, notice: (line) => quiet.push(line) })
    expect(quiet).toEqual([])
  })

  test('the old directory a killed restore --force was still removing (.data.replaced-…) goes at the next restore; a live restore\'s stays', async () => {
    const { root, opened } = populatedDataDir()
    opened.db.$client.close()
    const { archive } = await backupOf(root)
    const parent = scratch()
    const target = join(parent, 'data')
    await restoreBackup({ archive, dataDir: target })
    // SIGKILL while the replaced directory (its database, its secret, its stored files) was being removed
    const deadPid = Bun.spawnSync(['true']).pid
    const leftovers = ['.data.replaced-0123456789ab', `.data.replaced-${deadPid}-abcdef012345`]
    for (const name of leftovers) {
      mkdirSync(join(parent, name, 'blobs'), { recursive: true })
      writeFileSync(join(parent, name, 'secret.key'), 'the old secret')
    }
    const kept = [`.data.replaced-${process.ppid}-0123456789ab`, '.other.replaced-0123456789ab']
    for (const name of kept) mkdirSync(join(parent, name))
    const notices: string[] = []
    await restoreBackup({ archive, dataDir: target, force: true, notice: (line) => notices.push(line) })
    expect(readdirSync(parent).sort()).toEqual(['data', ...kept].sort())
    expect(notices).toHaveLength(1)
    for (const name of leftovers) expect(notices[0]).toContain(name)
  })

  test('through a symbolic link, the directory it points to is replaced and the link stays', async () => {
    const { root, opened } = populatedDataDir()
    opened.db.$client.close()
    const { archive } = await backupOf(root)
    const { root: real } = populatedDataDir()
    const link = join(scratch(), 'link')
    symlinkSync(real, link)
    await restoreBackup({ archive, dataDir: link, force: true })
    expect(lstatSync(link).isSymbolicLink()).toBe(true)
    expect(readFileSync(join(real, 'secret.key'), 'utf8')).toBe(readFileSync(join(root, 'secret.key'), 'utf8'))
  })

  test('an existing empty directory is a fine target', async () => {
    const { root, opened } = populatedDataDir()
    opened.db.$client.close()
    const { archive } = await backupOf(root)
    const target = scratch()
    await restoreBackup({ archive, dataDir: target })
    expect(existsSync(join(target, 'secret.key'))).toBe(true)
  })

  test('refuses a target a live server holds, even with --force', async () => {
    const { root, opened } = populatedDataDir()
    opened.db.$client.close()
    const { archive } = await backupOf(root)
    const { root: target } = populatedDataDir()
    writeFileSync(join(target, 'miniship.lock'), `${process.pid}\n`)
    await expect(restoreBackup({ archive, dataDir: target, force: true })).rejects.toThrow(`another miniship (pid ${process.pid}) is already serving ${target}; stop it first`)
  })

  test('a truncated archive fails before touching the target', async () => {
    const { root, opened } = populatedDataDir()
    opened.db.$client.close()
    const { archive } = await backupOf(root)
    truncateSync(archive, Math.floor(statSync(archive).size * 0.7))
    await expectRestoreFailure(archive, /is truncated/)
  })

  test('one changed blob fails before touching the target, naming the file', async () => {
    const { root, opened, blobs } = populatedDataDir()
    opened.db.$client.close()
    const { archive } = await backupOf(root)
    const entries = await readEntries(archive)
    const path = `blobs/sha256/${blobs[4]!.slice(0, 2)}/${blobs[4]}`
    const content = Buffer.from(entries.get(path)!)
    content[0] = content[0]! ^ 1
    entries.set(path, content)
    const damaged = join(scratch(), 'damaged.tar.gz')
    await writeEntries(damaged, entries)
    await expectRestoreFailure(damaged, `${path} in the archive is damaged`)
  })

  describe('a changed non-blob file is refused before anything is written', () => {
    // Blobs are named after their hash; the database, the secret and backup.json are not, so only
    // the comparison with backup.json protects them.
    async function archiveWith(change: (entries: Map<string, Buffer>, manifest: BackupManifest) => void): Promise<string> {
      const { root, opened } = populatedDataDir()
      opened.db.$client.close()
      const { archive } = await backupOf(root)
      const entries = await readEntries(archive)
      change(entries, parseManifest(entries.get('backup.json')!))
      const changed = join(scratch(), 'changed.tar.gz')
      await writeEntries(changed, entries)
      return changed
    }

    test('secret.key with other bytes of the same size', async () => {
      const archive = await archiveWith((entries) => {
        const secret = entries.get('secret.key')!
        const forged = Buffer.from('f'.repeat(secret.length - 1) + '\n')
        expect(forged.length).toBe(secret.length)
        expect(forged.equals(secret)).toBe(false)
        entries.set('secret.key', forged)
      })
      await expectRestoreFailure(archive, /^secret\.key in the archive is damaged: its sha256 is [0-9a-f]{64}, backup\.json says [0-9a-f]{64}$/)
    })

    test('the database snapshot, edited into another valid database of the same size', async () => {
      const archive = await archiveWith((entries) => {
        // an attacker's edit: the same page count, a valid database, the admin's email changed
        const file = join(scratch(), 'edited.db')
        writeFileSync(file, entries.get('miniship.db')!)
        const database = new Database(file)
        expect(database.query("UPDATE users SET email = 'z@example.com' WHERE id = 'u1'").run().changes).toBe(1)
        database.close()
        const edited = readFileSync(file)
        expect(edited.length).toBe(entries.get('miniship.db')!.length)
        entries.set('miniship.db', edited)
      })
      await expectRestoreFailure(archive, /^miniship\.db in the archive is damaged: its sha256 is/)
    })

    test('backup.json listing another hash or size for the secret or the database', async () => {
      const changes: [string, (file: { path: string; sha256: string; size: number }) => void, RegExp][] = [
        ['secret.key', (file) => void (file.sha256 = sha256('another secret')), /^secret\.key in the archive is damaged: its sha256 is/],
        ['miniship.db', (file) => void (file.sha256 = sha256('another database')), /^miniship\.db in the archive is damaged: its sha256 is/],
        ['secret.key', (file) => void (file.size += 1), /^secret\.key in the archive has \d+ bytes where backup\.json says \d+/],
        ['miniship.db', (file) => void (file.size -= 1), /^miniship\.db in the archive has \d+ bytes where backup\.json says \d+/],
      ]
      for (const [path, change, message] of changes) {
        const archive = await archiveWith((entries, manifest) => {
          change(manifest.files.find((file) => file.path === path)!)
          entries.set('backup.json', Buffer.from(JSON.stringify(manifest)))
        })
        await expectRestoreFailure(archive, message)
      }
    })
  })

  test('a missing backup.json fails before touching the target', async () => {
    const { root, opened } = populatedDataDir()
    opened.db.$client.close()
    const { archive } = await backupOf(root)
    const entries = await readEntries(archive)
    entries.delete('backup.json')
    const damaged = join(scratch(), 'no-manifest.tar.gz')
    await writeEntries(damaged, entries)
    await expectRestoreFailure(damaged, /has no backup.json/)
  })

  test('a file listed but absent, or present but unlisted, or not ours, fails naming it', async () => {
    const { root, opened, blobs } = populatedDataDir()
    opened.db.$client.close()
    const { archive } = await backupOf(root)
    const entries = await readEntries(archive)
    const path = `blobs/sha256/${blobs[0]!.slice(0, 2)}/${blobs[0]}`

    const absent = new Map(entries)
    absent.delete(path)
    const absentArchive = join(scratch(), 'absent.tar.gz')
    await writeEntries(absentArchive, absent)
    await expectRestoreFailure(absentArchive, `${path} listed in backup.json is missing from the archive`)

    const extraHash = sha256('extra')
    const extra = new Map(entries).set(`blobs/sha256/${extraHash.slice(0, 2)}/${extraHash}`, Buffer.from('extra'))
    const extraArchive = join(scratch(), 'extra.tar.gz')
    await writeEntries(extraArchive, extra)
    await expectRestoreFailure(extraArchive, /is in the archive but not listed in backup.json/)

    const foreign = new Map(entries).set('blobs/notes.txt', Buffer.from('x'))
    const foreignArchive = join(scratch(), 'foreign.tar.gz')
    await writeEntries(foreignArchive, foreign)
    await expectRestoreFailure(foreignArchive, 'unexpected file "blobs/notes.txt"')
  })

  test('not a gzip at all, or not a backup', async () => {
    const notGzip = join(scratch(), 'notes.tar.gz')
    writeFileSync(notGzip, 'just some text')
    await expectRestoreFailure(notGzip, /damaged or not a .tar.gz backup/)
    await expectRestoreFailure(join(scratch(), 'nope.tar.gz'), /does not exist/)
  })

  test('a backup from a newer schema is refused, naming both versions', async () => {
    const { root, opened } = populatedDataDir()
    opened.db.$client.close()
    const { archive } = await backupOf(root)
    const entries = await readEntries(archive)
    const manifest = parseManifest(entries.get('backup.json')!)
    entries.set('backup.json', Buffer.from(JSON.stringify({ ...manifest, schemaVersion: schemaVersion + 1, productVersion: '9.0.0' })))
    const newer = join(scratch(), 'newer.tar.gz')
    await writeEntries(newer, entries)
    await expectRestoreFailure(newer, `the backup has database schema version ${schemaVersion + 1}, newer than this miniship ${productVersion} knows (${schemaVersion}); restore it with miniship 9.0.0 or newer`)
  })

  test('a backup from an older schema is migrated', async () => {
    // schema version 0: a database with no migrations applied, as the oldest miniship would leave it
    const root = join(scratch(), 'old')
    mkdirSync(root)
    new Database(join(root, 'miniship.db'), { create: true }).close()
    writeFileSync(join(root, 'secret.key'), 'x'.repeat(64) + '\n', { mode: 0o600 })
    const { archive, manifest } = await backupOf(root)
    expect(manifest.schemaVersion).toBe(0)
    const target = join(scratch(), 'restored')
    const result = await restoreBackup({ archive, dataDir: target })
    expect(result.migrated).toBe(schemaVersion)
    const restored = new Database(join(target, 'miniship.db'), { readonly: true })
    expect(appliedMigrationCount(restored)).toBe(schemaVersion)
    restored.close()
  })
})

/**
 * A process that is a running `miniship … backup` (its command line says so, as `bun src/main.ts backup` does) and one
 * that has ended, each with a staging directory named by its pid in `tmp` (`live`, `dead`); stop `running` when done.
 */
async function backupStagings(tmp: string) {
  const running = Bun.spawn([process.execPath, '-e', 'setTimeout(() => {}, 60000)', 'src/main.ts', 'backup'], { stdout: 'ignore', stderr: 'ignore' })
  const ended = Bun.spawn([process.execPath, '-e', '0', 'src/main.ts', 'backup'], { stdout: 'ignore', stderr: 'ignore' })
  await ended.exited
  await Bun.sleep(100)
  const live = join(tmp, `backup-${running.pid}-0192f0aa-0000-7000-8000-000000000001`)
  const dead = join(tmp, `backup-${ended.pid}-0192f0aa-0000-7000-8000-000000000002`)
  return { running, live, dead }
}

describe('garbage collection', () => {
  test("a running backup's staging in tmp/ is no leftover: serve's start, doctor --fix, init and create-admin leave it; a dead backup's is swept", async () => {
    const { opened } = populatedDataDir()
    // a running miniship backup, one that has ended, and a process that runs some other program's
    // backup (`restic backup`): only the first is a miniship backup
    const other = Bun.spawn([process.execPath, '-e', 'setTimeout(() => {}, 60000)', 'restic', 'backup'], { stdout: 'ignore', stderr: 'ignore' })
    const { running, live, dead } = await backupStagings(opened.paths.tmp)
    try {
      const notOurs = join(opened.paths.tmp, `backup-${other.pid}-0192f0aa-0000-7000-8000-000000000003`)
      for (const staging of [live, dead, notOurs]) {
        mkdirSync(join(staging, 'blobs'), { recursive: true })
        writeFileSync(join(staging, 'blobs', 'a-file'), 'staged')
      }
      writeFileSync(join(opened.paths.tmp, 'upload-1'), 'half an upload')
      expect(findGarbage(opened.paths, opened.db.$client).tmpLeftovers.sort()).toEqual([basename(dead), basename(notOurs), 'upload-1'].sort())
      // a server starting (openDataDir sweeps tmp/ when nobody holds the lock), then doctor --fix's collection
      openDataDir(dirname(opened.paths.tmp)).db.$client.close()
      expect(readdirSync(opened.paths.tmp)).toEqual([basename(live)])
      expect(readFileSync(join(live, 'blobs', 'a-file'), 'utf8')).toBe('staged')
      collectGarbage(opened.paths, opened.db.$client)
      expect(readdirSync(opened.paths.tmp)).toEqual([basename(live)])
    } finally {
      running.kill()
      other.kill()
      await Promise.all([running.exited, other.exited])
    }
    // once it has ended, it is a leftover like any other
    expect(findGarbage(opened.paths, opened.db.$client).tmpLeftovers).toEqual([expect.stringMatching(/^backup-/)])
    opened.db.$client.close()
  })

  test("the next backup sweeps a killed backup's staging (a database copy, password hashes included) from tmp/, and leaves a running backup's and an upload's", async () => {
    const { root, opened } = populatedDataDir()
    const { running, live, dead } = await backupStagings(opened.paths.tmp)
    try {
      for (const staging of [live, dead]) {
        mkdirSync(staging, { recursive: true })
        writeFileSync(join(staging, 'miniship.db'), 'a copy of the database')
      }
      // a server beside it may have an upload in flight: not the backup's to touch
      writeFileSync(join(opened.paths.tmp, 'upload-1'), 'half an upload')
      // it stayed until the next server start or doctor --fix
      await createBackup({ dataDir: root, out: join(scratch(), 'nightly.tar.gz') })
      expect(readdirSync(opened.paths.tmp).sort()).toEqual([basename(live), 'upload-1'].sort())
    } finally {
      running.kill()
      await running.exited
      opened.db.$client.close()
    }
  })

  test('removes unreferenced blobs, strays and tmp/ leftovers, never a referenced blob', () => {
    const { opened, blobs } = populatedDataDir()
    const orphan = putBlob(opened, 'orphan from a crash').sha256
    const stray = join(opened.paths.blobs, 'sha256', 'ab', 'not-a-blob')
    mkdirSync(dirname(stray), { recursive: true })
    writeFileSync(stray, 'x')
    writeFileSync(join(opened.paths.tmp, 'upload-1'), 'half an upload')
    mkdirSync(join(opened.paths.tmp, 'backup-1'))
    const garbage = findGarbage(opened.paths, opened.db.$client)
    expect(garbage.unreferenced.map((file) => file.path).sort()).toEqual([blobPath(opened.paths, orphan), stray].sort())
    expect(garbage.tmpLeftovers.sort()).toEqual(['backup-1', 'upload-1'])
    const lines: string[] = []
    const collected = collectGarbage(opened.paths, opened.db.$client, (line) => lines.push(line))
    expect(collected).toEqual({ removedFiles: 2, removedBytes: Buffer.byteLength('orphan from a crash') + 1, removedTmp: 2 })
    expect(lines).toEqual([`removed 2 stored file(s) no version refers to (${collected.removedBytes} bytes) and 2 leftover(s) in tmp/`])
    for (const hash of blobs) expect(existsSync(blobPath(opened.paths, hash))).toBe(true)
    expect(existsSync(blobPath(opened.paths, orphan))).toBe(false)
    expect(readdirSync(opened.paths.tmp)).toEqual([])
    expect(collectGarbage(opened.paths, opened.db.$client)).toEqual({ removedFiles: 0, removedBytes: 0, removedTmp: 0 })
    opened.db.$client.close()
  })

  test('a blob shared by a deleted and a remaining version stays', () => {
    const { opened, blobs } = populatedDataDir()
    addVersion(opened, 'm1', '1.2.0', 'one', 'v-same-files-as-one')
    opened.db.$client.query("DELETE FROM versions WHERE id = 'v-one'").run()
    collectGarbage(opened.paths, opened.db.$client)
    for (const hash of blobs) expect(existsSync(blobPath(opened.paths, hash))).toBe(true)
    opened.db.$client.close()
  })

  test('openDataDir leaves tmp/ alone while a live server holds the lock', () => {
    const { root, opened } = populatedDataDir()
    opened.db.$client.close()
    writeFileSync(join(root, 'tmp', 'upload-in-flight'), 'x')
    writeFileSync(join(root, 'miniship.lock'), `${process.pid}\n`)
    openDataDir(root).db.$client.close()
    expect(readdirSync(join(root, 'tmp'))).toEqual(['upload-in-flight'])
    rmSync(join(root, 'miniship.lock'))
    openDataDir(root).db.$client.close()
    expect(readdirSync(join(root, 'tmp'))).toEqual([])
  })
})

// A full file system cannot be made here without root (a small mount); the decision and the
// recognition of the two "full" errors are tested instead, each with a real error where one can be had.
describe('a full data disk', () => {
  test('the staging check names the directory, what the database copy needs and what is free, in MB or GB', () => {
    const MB = 1024 * 1024
    expect(stagingSpaceProblem('/srv/miniship/tmp', 100 * MB, 200 * MB)).toBeNull()
    expect(stagingSpaceProblem('/srv/miniship/tmp', 100 * MB, 110 * MB)).toBeNull()
    expect(stagingSpaceProblem('/srv/miniship/tmp', 100 * MB, 110 * MB - 1)).toBe(
      'the file system of /srv/miniship/tmp is full: the backup copies the database there first and needs about 110.0 MB, 110.0 MB are free; free space on it (miniship doctor says how much uploads and backups need), then run the backup again',
    )
    expect(stagingSpaceProblem('/srv/miniship/tmp', 3 * 1024 * MB, 12 * MB)).toStartWith('the file system of /srv/miniship/tmp is full: the backup copies the database there first and needs about 3.30 GB, 12.0 MB are free;')
  })

  test('a disk that fills while the backup runs: from a bucket, the staging in tmp/; a local store (its files linked, not copied), the archive\'s disk too', () => {
    const MB = 1024 * 1024
    const tmp = { dir: '/srv/miniship/tmp', free: 0 }
    const out = { dir: '/backups', free: 3 * MB }
    expect(diskFullText(true, tmp, out)).toBe('the file system of /srv/miniship/tmp is full: the backup stages the stored files it downloads from the bucket there (0 B free); free space on it, then run the backup again')
    expect(diskFullText(false, tmp, out)).toBe('a file system is full: 3.0 MB free where the archive is written (/backups), 0 B in /srv/miniship/tmp; free space, then run the backup again')
  })

  test('ENOSPC and SQLite\'s own "database or disk is full" (a real one: a database at its page limit) count as full; other errors do not', () => {
    const database = new Database(':memory:')
    database.exec('CREATE TABLE t (x BLOB)')
    database.exec('PRAGMA max_page_count = 2')
    const full = (() => {
      try {
        database.query('INSERT INTO t VALUES (?)').run(new Uint8Array(64 * 1024))
      } catch (error) {
        return error
      }
    })()
    database.close()
    expect(isDiskFull(full)).toBe(true)
    expect(isDiskFull(Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' }))).toBe(true)
    expect(isDiskFull(Object.assign(new Error('EACCES: permission denied'), { code: 'EACCES' }))).toBe(false)
    expect(isDiskFull(new Error('database is locked'))).toBe(false)
  })
})
