import { createHash } from 'node:crypto';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { scanPartitions } from '../../src/duckdb/partitions.js';
import { testDir, writeParquet } from '../helpers/tmp.js';

/** A line per file: its name, size and time in milliseconds (rounded). */
async function lines(files: string[]): Promise<string> {
  let text = '';
  for (const file of files) {
    const info = await stat(file, { bigint: true });
    const millis = (info.mtimeNs + 500_000n) / 1_000_000n;
    text += `${file.split('/').at(-1)}:${info.size}:${millis}\n`;
  }
  return text;
}

describe('partition fingerprints', () => {
  it('are a line per file for a few files, the SHA-1 of those lines for many, and change with a file', async () => {
    const folder = join(await testDir(), 'items');
    const one = join(folder, 'day=2026-01-01', 'data.parquet');
    await writeParquet(one, `SELECT 1 AS x`);
    const many = Array.from({ length: 12 }, (_, i) =>
      join(folder, 'day=2026-01-02', `data_${String(i).padStart(2, '0')}.parquet`),
    );
    for (const file of many) await writeParquet(file, `SELECT 2 AS x`);
    const { partitions } = scanPartitions(folder);
    const few = partitions.get('2026-01-01')!;
    expect(few).toBe(await lines([one]));
    expect(partitions.get('2026-01-02')).toBe(
      createHash('sha1')
        .update(await lines(many))
        .digest('hex'),
    );
    // A file written again is another fingerprint.
    await writeParquet(one, `SELECT range AS x FROM range(1000)`);
    expect(scanPartitions(folder).partitions.get('2026-01-01')).not.toBe(few);
  });
});
