import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
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
});
