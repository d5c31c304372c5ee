import { appendFile, mkdir, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { damagedFiles } from '../../src/duckdb/damaged.js';
import { Database } from '../../src/duckdb/database.js';
import { PartitionIndex, scanPartitions } from '../../src/duckdb/partitions.js';
import { testDir, writeParquet } from '../helpers/tmp.js';

async function dataset(): Promise<string> {
  const folder = join(await testDir(), 'items');
  for (const day of ['2026-01-01', '2026-01-02', '2026-01-03'])
    await writeParquet(join(folder, `day=${day}`, 'data.parquet'), `SELECT 1 AS x`);
  return folder;
}

describe('the partitions a run knows (PartitionIndex)', () => {
  it('gives what a fresh look gives, a partition added or gone at once, a file written once it is said', async () => {
    const folder = await dataset();
    const index = new PartitionIndex();
    expect(index.scan(folder)).toEqual(scanPartitions(folder));
    // Partitions are listed at every look: one added or removed shows at once.
    await writeParquet(join(folder, 'day=2026-01-04', 'data.parquet'), `SELECT 4 AS x`);
    await rm(join(folder, 'day=2026-01-01'), { recursive: true });
    expect(index.scan(folder)).toEqual(scanPartitions(folder));
    expect([...index.scan(folder).partitions.keys()].sort()).toEqual([
      '2026-01-02',
      '2026-01-03',
      '2026-01-04',
    ]);
    // A partition rewritten is seen once the writer says so (recordFile does).
    const file = join(folder, 'day=2026-01-02', 'data.parquet');
    const before = index.scan(folder).partitions.get('2026-01-02');
    await writeParquet(file, `SELECT range AS x FROM range(100)`);
    expect(index.scan(folder).partitions.get('2026-01-02')).toBe(before);
    index.forget(file);
    expect(index.scan(folder)).toEqual(scanPartitions(folder));
    expect(index.scan(folder).partitions.get('2026-01-02')).not.toBe(before);
    // Another file in the partition (a second part) changes it too.
    const second = join(folder, 'day=2026-01-03', 'data_1.parquet');
    await writeParquet(second, `SELECT 5 AS x`);
    index.forget(second);
    expect(index.scan(folder)).toEqual(scanPartitions(folder));
    expect(index.files(folder).sort()).toEqual(
      [
        join(folder, 'day=2026-01-02', 'data.parquet'),
        join(folder, 'day=2026-01-03', 'data.parquet'),
        second,
        join(folder, 'day=2026-01-04', 'data.parquet'),
      ].sort(),
    );
  });

  it('finds a file cut short or not Parquet, and one damaged after it was found whole once its partition is read again', async () => {
    const folder = await dataset();
    const db = await Database.open();
    try {
      const index = new PartitionIndex();
      expect(await damagedFiles(db, folder, index)).toEqual([]);
      const cut = join(folder, 'day=2026-01-02', 'data.parquet');
      await appendFile(cut, 'trailing bytes');
      await mkdir(join(folder, 'day=2026-01-05'));
      const text = join(folder, 'day=2026-01-05', 'data.parquet');
      await writeFile(text, 'not parquet at all');
      // The new partition is read at once; the changed file once it is forgotten.
      expect(await damagedFiles(db, folder, index)).toEqual([text]);
      index.forget(cut);
      expect((await damagedFiles(db, folder, index)).sort()).toEqual([cut, text].sort());
      // A fresh look agrees.
      expect((await damagedFiles(db, folder)).sort()).toEqual([cut, text].sort());
    } finally {
      db.close();
    }
  });

  it('opens only the partitions changed since they were last known whole (a checkpoint of fingerprints)', async () => {
    const folder = await dataset();
    const db = await Database.open();
    try {
      const known = Object.fromEntries(scanPartitions(folder).partitions);
      expect(await damagedFiles(db, folder, new PartitionIndex(), known)).toEqual([]);
      // Cut short in place: its size differs from the fingerprint's, so it is opened and named.
      const cut = join(folder, 'day=2026-01-02', 'data.parquet');
      await appendFile(cut, 'trailing bytes');
      // A partition not known then (a new one) is opened too.
      const text = join(folder, 'day=2026-01-05', 'data.parquet');
      await mkdir(join(folder, 'day=2026-01-05'));
      await writeFile(text, 'not parquet at all');
      expect(new PartitionIndex().filesChangedSince(folder, known).sort()).toEqual(
        [cut, text].sort(),
      );
      expect((await damagedFiles(db, folder, new PartitionIndex(), known)).sort()).toEqual(
        [cut, text].sort(),
      );
      // What the fingerprint cannot see (the same size and time): a file whose partition is
      // unchanged is not opened; without the fingerprints it is.
      const same = join(folder, 'day=2026-01-03', 'data.parquet');
      const { size, atime, mtime } = await stat(same);
      await writeFile(same, Buffer.alloc(size, 0x41));
      await utimes(same, atime, mtime);
      const again = {
        ...known,
        '2026-01-05': scanPartitions(folder).partitions.get('2026-01-05')!,
      };
      expect(new PartitionIndex().filesChangedSince(folder, again)).toEqual([cut]);
      expect((await damagedFiles(db, folder)).sort()).toEqual([cut, same, text].sort());
    } finally {
      db.close();
    }
  });
});
