import { createHash } from 'node:crypto';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { hashedPrint, samePrint } from '../../src/duckdb/fingerprints.js';
import { scanPartitions } from '../../src/duckdb/partitions.js';
import { testDir, writeParquet } from '../helpers/tmp.js';

/** The fingerprint as earlier versions kept it: the SHA-1 of a line per file. */
async function earlierPrint(files: string[]): Promise<string> {
  const hash = createHash('sha1');
  for (const file of files) {
    const info = await stat(file, { bigint: true });
    const millis = (info.mtimeNs + 500_000n) / 1_000_000n;
    hash.update(`${file.split('/').at(-1)}:${info.size}:${millis}\n`);
  }
  return hash.digest('hex');
}

describe('partition fingerprints', () => {
  it('are text for a few files, a hash for many, and match what earlier versions recorded', async () => {
    const folder = join(await testDir(), 'items');
    const one = join(folder, 'day=2026-01-01', 'data.parquet');
    await writeParquet(one, `SELECT 1 AS x`);
    const many = Array.from({ length: 12 }, (_, i) =>
      join(folder, 'day=2026-01-02', `data_${String(i).padStart(2, '0')}.parquet`),
    );
    for (const file of many) await writeParquet(file, `SELECT 2 AS x`);
    const { partitions } = scanPartitions(folder);
    const few = partitions.get('2026-01-01')!;
    expect(few).toMatch(/^data\.parquet:\d+:\d+\n$/);
    expect(partitions.get('2026-01-02')).toMatch(/^[0-9a-f]{40}$/);
    // A checkpoint of an earlier version: every fingerprint hashed.
    expect(samePrint(await earlierPrint([one]), few)).toBe(true);
    expect(samePrint(await earlierPrint(many), partitions.get('2026-01-02'))).toBe(true);
    expect(hashedPrint(few)).toBe(await earlierPrint([one]));
    // Another file, or none, is not the same.
    expect(samePrint(await earlierPrint(many), few)).toBe(false);
    expect(samePrint(undefined, few)).toBe(false);
    expect(samePrint(few, undefined)).toBe(false);
    await writeParquet(one, `SELECT range AS x FROM range(1000)`);
    expect(samePrint(few, scanPartitions(folder).partitions.get('2026-01-01'))).toBe(false);
  });
});
