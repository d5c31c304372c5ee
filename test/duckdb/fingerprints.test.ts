import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { scanPartitions } from '../../src/duckdb/partitions.js';
import { testDir, writeParquet } from '../helpers/tmp.js';

/** The SHA-1 of a line per file: its name and the SHA-256 of its bytes. */
async function print(files: string[]): Promise<string> {
  let text = '';
  for (const file of files) {
    const sha256 = createHash('sha256')
      .update(await readFile(file))
      .digest('hex');
    text += `${file.split('/').at(-1)}:${sha256}\n`;
  }
  return createHash('sha1').update(text).digest('hex');
}

describe('partition fingerprints', () => {
  it('are the SHA-1 of a line of name and content per file, change with the bytes, and not with the time', async () => {
    const folder = join(await testDir(), 'items');
    const one = join(folder, 'day=2026-01-01', 'data.parquet');
    await writeParquet(one, `SELECT 1 AS x`);
    const many = Array.from({ length: 12 }, (_, i) =>
      join(folder, 'day=2026-01-02', `data_${String(i).padStart(2, '0')}.parquet`),
    );
    for (const file of many) await writeParquet(file, `SELECT 2 AS x`);
    const { partitions } = scanPartitions(folder);
    const few = partitions.get('2026-01-01')!;
    expect(few).toBe(await print([one]));
    expect(partitions.get('2026-01-02')).toBe(await print(many));
    // The same bytes written again (another time): the same fingerprint.
    await writeParquet(one, `SELECT 1 AS x`);
    expect(scanPartitions(folder).partitions.get('2026-01-01')).toBe(few);
    // Other bytes: another fingerprint.
    await writeParquet(one, `SELECT range AS x FROM range(1000)`);
    expect(scanPartitions(folder).partitions.get('2026-01-01')).not.toBe(few);
  });
});
