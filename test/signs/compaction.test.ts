import { readdir, readFile, stat } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Database } from '../../src/duckdb/database.js';
import { compactEvents, type CompactionPaths } from '../../src/sources/signs/compaction.js';
import { parseUnitFile } from '../../src/sources/signs/landing.js';
import { duck, outputHashes, testDir, writeParquet } from '../helpers/tmp.js';
import { DISK } from '../../src/duckdb/folder-files.js';

const DAY = 'publication_date=2024-01-01';
const OTHER_DAY = 'publication_date=2024-01-02';

let db: Database;
beforeAll(async () => {
  db = await Database.open({ threads: 1 });
});
afterAll(() => db.close());

/** Rows of one event per line: id, feed_index and the file it came from does not matter. */
function rows(ids: number[]): string {
  return `SELECT * FROM (VALUES ${ids.map((id) => `(${id}, ${id % 7}, 'event ${id}')`).join(', ')}) t(id, feed_index, raw_event)`;
}

/**
 * An output folder whose events partition DAY holds three small files of step
 * `ev`, one of another step, and OTHER_DAY one file of `ev`.
 */
async function landedOutput(): Promise<{ output: string; paths: CompactionPaths }> {
  const dir = await testDir();
  const output = join(dir, 'output');
  const events = join(output, 'signs/events');
  await writeParquet(join(events, DAY, 'ev-1000-0.parquet'), rows([1, 2, 3]));
  await writeParquet(join(events, DAY, 'ev-2000-4.parquet'), rows([4, 5]));
  await writeParquet(join(events, DAY, 'ev-2000-4-1.parquet'), rows([6]));
  await writeParquet(join(events, DAY, 'ev-3000-0.parquet'), rows([7, 8, 9, 10]));
  await writeParquet(join(events, DAY, 'other-1500-0.parquet'), rows([100, 101]));
  await writeParquet(join(events, OTHER_DAY, 'ev-90000000-0.parquet'), rows([11]));
  return {
    output,
    paths: {
      output,
      files: DISK,
      scratch: join(output, '.state/tmp'),
    },
  };
}

/** Every row of the dataset with its partition, in one order. */
async function dataset(output: string): Promise<Record<string, unknown>[]> {
  return duck(
    `SELECT publication_date::VARCHAR AS day, id, feed_index, raw_event
     FROM read_parquet('${output}/signs/events/**/*.parquet', hive_partitioning = true)
     ORDER BY day, id`,
  );
}

describe('compactEvents', () => {
  it("merges a step's small files of a partition into one named after its first unit, and leaves the rest", async () => {
    const { output, paths } = await landedOutput();
    const before = await dataset(output);
    const otherDay = await outputHashes(join(output, 'signs/events', OTHER_DAY));
    const other = await readFile(join(output, 'signs/events', DAY, 'other-1500-0.parquet'));

    const result = await compactEvents(db, paths, 'ev', new AbortController().signal);

    const names = (await readdir(join(output, 'signs/events', DAY))).sort();
    expect(names).toHaveLength(2);
    expect(names).toContain('other-1500-0.parquet');
    const merged = names.find((n) => n.startsWith('ev-'))!;
    expect(merged).toMatch(/^ev-1000-0-m[0-9a-f]{8}\.parquet$/);
    // Still a file of the step's first unit there: a reset or a rerun finds it as such.
    expect(parseUnitFile('ev', merged)).toEqual({ ms: 1000, index: 0 });
    expect(result).toEqual({
      partitions: 1,
      replaced: 4,
      merged: [join(output, 'signs/events', DAY, merged)],
    });
    expect(await dataset(output)).toEqual(before);
    expect(await readFile(join(output, 'signs/events', DAY, 'other-1500-0.parquet'))).toEqual(
      other,
    );
    expect(await outputHashes(join(output, 'signs/events', OTHER_DAY))).toEqual(otherDay);

    // Nothing more to merge: a second pass changes nothing.
    const hashes = await outputHashes(output);
    expect(await compactEvents(db, paths, 'ev', new AbortController().signal)).toEqual({
      partitions: 0,
      replaced: 0,
      merged: [],
    });
    expect(await outputHashes(output)).toEqual(hashes);
  });

  it('merges a merged file again with the files landed after it', async () => {
    const { output, paths } = await landedOutput();
    await compactEvents(db, paths, 'ev', new AbortController().signal);
    await writeParquet(join(output, 'signs/events', DAY, 'ev-4000-0.parquet'), rows([12, 13]));
    const before = await dataset(output);
    await compactEvents(db, paths, 'ev', new AbortController().signal);
    const names = (await readdir(join(output, 'signs/events', DAY))).sort();
    expect(names.filter((n) => n.startsWith('ev-'))).toEqual([
      expect.stringMatching(/^ev-1000-0-m[0-9a-f]{8}\.parquet$/),
    ]);
    expect(await dataset(output)).toEqual(before);
  });

  it('leaves files of a useful size alone', async () => {
    const { output, paths } = await landedOutput();
    // About 40 MB of incompressible text: over the size a merge is for.
    await db.run(
      `COPY (SELECT i AS id, 0 AS feed_index, md5(i::VARCHAR) || repeat(md5((i * 7)::VARCHAR), 40) AS raw_event FROM range(30000) t(i))
       TO '${join(output, 'signs/events', DAY, 'ev-1500-0.parquet')}' (FORMAT parquet, COMPRESSION uncompressed)`,
    );
    const big = join(output, 'signs/events', DAY, 'ev-1500-0.parquet');
    expect((await stat(big)).size).toBeGreaterThan(32 * 2 ** 20);
    const bigHash = (await outputHashes(output)).get(relative(output, big));
    const before = await dataset(output);
    await compactEvents(db, paths, 'ev', new AbortController().signal);
    const names = (await readdir(join(output, 'signs/events', DAY))).sort();
    // The small files on either side of it are merged in runs that do not cross it
    // (a run of one stays as it is).
    expect(names).toEqual([
      'ev-1000-0.parquet',
      'ev-1500-0.parquet',
      expect.stringMatching(/^ev-2000-4-m[0-9a-f]{8}\.parquet$/),
      'other-1500-0.parquet',
    ]);
    expect((await outputHashes(output)).get(relative(output, big))).toBe(bigHash);
    expect(await dataset(output)).toEqual(before);
  });
});
