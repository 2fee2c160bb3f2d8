// A deleted version's insights go to its miniapp's `other` row (decisions §13: a version the server does not know is counted there), so deleting a draft loses no count.
import type { Db } from '../../db/open'
import { failuresPerVersion, otherPrefix } from './counters'
import { emptySketch, mergeInto, sketchFromRow, sketchRow } from './sketch'

const countColumns = ['install_infos', 'update_checks', 'downloads', 'installed', 'launched', 'failed', 'rolled_back'] as const

/**
 * Moves what insights stored for `versionId` into the `other` row of `miniAppId`: counts added to
 * its counts of the same day, platform and channel, devices merged into its sketch of the same day,
 * failure messages renamed. Run inside the transaction that deletes the version.
 */
export function foldVersionIntoOther(client: Db['$client'], miniAppId: string, versionId: string): void {
  const other = `${otherPrefix}${miniAppId}`
  client.run(
    `INSERT INTO insight_counts (version_id, day, platform, channel, mini_app_id, ${countColumns.join(', ')})
     SELECT ?1, day, platform, channel, mini_app_id, ${countColumns.join(', ')} FROM insight_counts WHERE version_id = ?2 AND true
     ON CONFLICT (version_id, day, platform, channel) DO UPDATE SET ${countColumns.map((column) => `${column} = ${column} + excluded.${column}`).join(', ')}`,
    [other, versionId],
  )
  client.run('DELETE FROM insight_counts WHERE version_id = ?', [versionId])
  const sketchOf = client.prepare<{ hashes: string | null; registers: Uint8Array | null }, [string, string]>('SELECT hashes, registers FROM insight_device_sketches WHERE version_id = ? AND day = ?')
  const put = client.prepare<unknown, [string, string, string | null, Uint8Array | null]>(
    'INSERT INTO insight_device_sketches (version_id, day, hashes, registers) VALUES (?1, ?2, ?3, ?4) ON CONFLICT (version_id, day) DO UPDATE SET hashes = ?3, registers = ?4',
  )
  for (const row of client.query<{ day: string; hashes: string | null; registers: Uint8Array | null }, [string]>('SELECT day, hashes, registers FROM insight_device_sketches WHERE version_id = ?').all(versionId)) {
    const stored = sketchOf.get(other, row.day)
    const sketch = stored ? sketchFromRow(stored.hashes, stored.registers) : emptySketch()
    mergeInto(sketch, sketchFromRow(row.hashes, row.registers))
    const merged = sketchRow(sketch)
    put.run(other, row.day, merged.hashes, merged.registers)
  }
  client.run('DELETE FROM insight_device_sketches WHERE version_id = ?', [versionId])
  // and per channel (what `?channel=` reports count)
  const channelSketchOf = client.prepare<{ hashes: string | null; registers: Uint8Array | null }, [string, string, string]>(
    'SELECT hashes, registers FROM insight_channel_device_sketches WHERE version_id = ? AND day = ? AND channel = ?',
  )
  const putChannel = client.prepare<unknown, [string, string, string, string | null, Uint8Array | null]>(
    'INSERT INTO insight_channel_device_sketches (version_id, day, channel, hashes, registers) VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (version_id, day, channel) DO UPDATE SET hashes = ?4, registers = ?5',
  )
  for (const row of client.query<{ day: string; channel: string; hashes: string | null; registers: Uint8Array | null }, [string]>('SELECT day, channel, hashes, registers FROM insight_channel_device_sketches WHERE version_id = ?').all(versionId)) {
    const stored = channelSketchOf.get(other, row.day, row.channel)
    const sketch = stored ? sketchFromRow(stored.hashes, stored.registers) : emptySketch()
    mergeInto(sketch, sketchFromRow(row.hashes, row.registers))
    const merged = sketchRow(sketch)
    putChannel.run(other, row.day, row.channel, merged.hashes, merged.registers)
  }
  client.run('DELETE FROM insight_channel_device_sketches WHERE version_id = ?', [versionId])
  client.run('UPDATE insight_failures SET version_id = ? WHERE version_id = ?', [other, versionId])
  // the other row keeps its last few per channel, like any version (failures stored before schema 15, with no channel, as one more)
  client.run(
    'DELETE FROM insight_failures AS f WHERE version_id = ?1 AND id NOT IN (SELECT id FROM insight_failures WHERE version_id = ?1 AND channel IS f.channel ORDER BY id DESC LIMIT ?2)',
    [other, failuresPerVersion],
  )
}
