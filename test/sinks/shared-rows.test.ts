import { mkdir, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Database } from '../../src/duckdb/database.js';
import { describe as describeColumns } from '../../src/sinks/columns.js';
import { PLAN_TABLE, keptPlanRows, letGo, setApart } from '../../src/sinks/record-plan.js';
import { ORDERED_ROWS, ROW_HASH } from '../../src/sinks/row-order.js';
import { dataPrint, letGoKept, rowsByFingerprint } from '../../src/sinks/shared-rows.js';
import { testDir, writeParquet } from '../helpers/tmp.js';
import { discoverDatasets } from '../../src/duckdb/datasets.js';
import { readFolders } from '../../src/steps/export-file.js';

let db: Database;
beforeAll(async () => {
  db = await Database.open({ threads: 1 });
});
afterAll(() => {
  letGoKept(db);
  db.close();
});

describe('the print of a folder’s data', () => {
  it('changes with a Parquet file rewritten, added or removed, not with an extract or the state', async () => {
    const output = await testDir();
    const file = join(output, 'things', 'part-0.parquet');
    await writeParquet(file, 'SELECT 1 AS id');
    const first = dataPrint(output);
    await mkdir(join(output, 'exports'), { recursive: true });
    await writeFile(join(output, 'exports', 'things.csv'), 'id\n1\n');
    await mkdir(join(output, '.state', 'tmp'), { recursive: true });
    await writeFile(join(output, '.state', 'tmp', 'plan.parquet'), 'x');
    expect(dataPrint(output)).toBe(first);
    // The same size, another time: a rewrite.
    await utimes(file, new Date('2026-11-20T06:00:00Z'), new Date('2026-11-20T06:00:00Z'));
    const touched = dataPrint(output);
    expect(touched).not.toBe(first);
    await writeParquet(join(output, 'things', 'part-1.parquet'), 'SELECT 2 AS id');
    expect(dataPrint(output)).not.toBe(touched);
  });

  it('over the datasets a statement names (by any of their views) changes with theirs only', async () => {
    const output = await testDir();
    await writeParquet(
      join(output, 'signs', 'live_snapshots', 'snapshot_date=2026-11-26', 'a.parquet'),
      'SELECT 1 AS id',
    );
    await writeParquet(join(output, 'derived', 'other', 'a.parquet'), 'SELECT 1 AS id');
    const datasets = await discoverDatasets(output);
    // The latest snapshot's view, and a view the dataset gives, name the snapshots.
    for (const sql of ['SELECT * FROM signs_live', 'SELECT * FROM signs_live_history'])
      expect(readFolders(sql, datasets)).toEqual(['signs/live_snapshots']);
    expect(
      readFolders('SELECT * FROM signs_live_changes_x JOIN other USING (id)', datasets),
    ).toEqual(['derived/other']);
    // Naming none of them: all of them.
    expect(readFolders('SELECT 1', datasets)).toBeUndefined();
    const folders = readFolders('SELECT * FROM signs_live', datasets);
    const first = dataPrint(output, folders);
    await writeParquet(join(output, 'derived', 'other', 'b.parquet'), 'SELECT 2 AS id');
    expect(dataPrint(output, folders)).toBe(first);
    expect(dataPrint(output)).not.toBe(dataPrint(output, ['derived/other']));
    await writeParquet(
      join(output, 'signs', 'live_snapshots', 'snapshot_date=2026-11-27', 'b.parquet'),
      'SELECT 2 AS id',
    );
    expect(dataPrint(output, folders)).not.toBe(first);
  });
});

describe('rows picked by their fingerprints', () => {
  it('are read once for a key, and again for another key or a fingerprint not held', async () => {
    await db.run(`CREATE TABLE source AS SELECT i AS id, 'v' || i AS v FROM range(10) t(i)`);
    const keyed = `(SELECT *, hash(id, v) AS ${ROW_HASH} FROM source)`;
    const print = async (ids: number[]) => {
      const rows = await db.all(
        `SELECT list(hash(id, v) ORDER BY id)::VARCHAR[] AS f FROM source WHERE id IN (${ids.join(', ')})`,
      );
      return rows[0]!['f'] as string[];
    };
    const pick = async (key: string, ids: number[]) => {
      const from = await rowsByFingerprint(db, key, keyed, 'r', await print(ids), {});
      return (await db.all(`SELECT r.id, r.v FROM ${from} ORDER BY r.id`)).map((r) => r['v']);
    };
    expect(await pick('night-2', [2, 5])).toEqual(['v2', 'v5']);
    // Changed under the same key (which a print of the data forbids): the rows kept are
    // given, so the source was not read again.
    await db.run(`UPDATE source SET v = 'w' || id WHERE id = 2`);
    const twoKept = await db.all(`SELECT hash(2::BIGINT, 'v2') AS h`);
    const kept = await rowsByFingerprint(db, 'night-2', keyed, 'r', [String(twoKept[0]!['h'])], {});
    expect((await db.all(`SELECT r.v FROM ${kept}`)).map((r) => r['v'])).toEqual(['v2']);
    // Another key, or a fingerprint the kept rows lack: read from the source.
    expect(await pick('night-3', [2])).toEqual(['w2']);
    expect(await pick('night-3', [2, 7])).toEqual(['w2', 'v7']);
  });
});

describe('keys and fingerprints set apart', () => {
  it('are read once for the rows of one print, with the point position a FlatGeobuf of them orders by', async () => {
    const scratch = await testDir();
    await db.run(
      `CREATE TABLE points AS SELECT i AS id, 4.0 + i / 10 AS longitude, 52.0 + i / 10 AS latitude, ` +
        `('POINT (' || (4.0 + i / 10) || ' ' || (52.0 + i / 10) || ')')::GEOMETRY AS geometry FROM range(5) t(i)`,
    );
    const columns = await describeColumns(db, { sql: 'points', params: {} });
    const keyed = `(SELECT *, hash(id, longitude, latitude) AS ${ROW_HASH} FROM points) AS ${ORDERED_ROWS}`;
    const planned = async (keep: string[], print: string) => {
      const apart = await setApart(db, { keyed, keep, columns }, {}, scratch, print);
      try {
        return await db.all(`SELECT * FROM ${PLAN_TABLE} ORDER BY ${keep[0]}`);
      } finally {
        await letGo(db, apart);
      }
    };
    // A CSV's plan (its key, the id) keeps the position too.
    const first = await planned(['"id"'], 'print-1');
    expect(first.map((r) => [r['id'], r['longitude'], r['latitude']])).toEqual(
      [0, 1, 2, 3, 4].map((i) => [String(i), 4 + i / 10, 52 + i / 10]),
    );
    // Changed under the same print (which the data's print forbids): the FlatGeobuf's plan
    // (its position) is the one kept, so the source was not read again.
    await db.run(`UPDATE points SET longitude = 9`);
    const kept = await planned(['"longitude"', '"latitude"'], 'print-1');
    expect(kept.map((r) => r['longitude'])).toEqual([4, 4.1, 4.2, 4.3, 4.4]);
    expect(kept.map((r) => String(r[ROW_HASH]))).toEqual(first.map((r) => String(r[ROW_HASH])));
    // Another print: read from the source.
    const read = await planned(['"longitude"', '"latitude"'], 'print-2');
    expect(read.map((r) => r['longitude'])).toEqual([9, 9, 9, 9, 9]);
    // Without a point position, the plan holds the keys asked for and the fingerprint.
    const plain = await describeColumns(db, {
      sql: '(SELECT id, longitude FROM points)',
      params: {},
    });
    const apart = await setApart(
      db,
      {
        keyed: `(SELECT id, longitude, hash(id) AS ${ROW_HASH} FROM points)`,
        keep: ['"id"'],
        columns: plain,
      },
      {},
      scratch,
      'print-3',
    );
    const names = await db.all(`SELECT column_name FROM (DESCRIBE ${PLAN_TABLE})`);
    await letGo(db, apart);
    expect(names.map((r) => r['column_name'])).toEqual(['id', ROW_HASH]);
  });

  it('give a later extract of the same rows their positions from the plan, not from the source', async () => {
    const scratch = await testDir();
    await db.run(
      `CREATE TABLE spots AS SELECT i AS id, CASE WHEN i = 2 THEN 200 ELSE 4.0 + i / 10 END AS longitude, ` +
        `52.0 + i / 10 AS latitude, 'POINT (4 52)'::GEOMETRY AS geometry FROM range(4) t(i)`,
    );
    const columns = await describeColumns(db, { sql: 'spots', params: {} });
    const keyed = `(SELECT *, hash(id, longitude, latitude) AS ${ROW_HASH} FROM spots) AS ${ORDERED_ROWS}`;
    const apart = await setApart(db, { keyed, keep: ['"id"'], columns }, {}, scratch, 'print-5');
    await letGo(db, apart);
    const position = ['"longitude"', '"latitude"'];
    const rows = { keyed, columns };
    // The source changes under the same print (which the data's print forbids): the plan is what is read.
    await db.run(`UPDATE spots SET longitude = 4`);
    const plan = keptPlanRows(db, rows, position, {}, 'print-5');
    expect(plan).toBeDefined();
    const read = await db.all(`SELECT longitude, latitude FROM ${plan!} ORDER BY latitude`);
    expect(read.map((r) => [r['longitude'], r['latitude']])).toEqual([
      [4, 52],
      [4.1, 52.1],
      [200, 52.2],
      [4.3, 52.3],
    ]);
    // Another print, another statement, or a column the plan does not hold: none.
    expect(keptPlanRows(db, rows, position, {}, 'print-6')).toBeUndefined();
    expect(
      keptPlanRows(db, { keyed: `${keyed} WHERE true`, columns }, position, {}, 'print-5'),
    ).toBeUndefined();
    expect(keptPlanRows(db, rows, ['"geometry"'], {}, 'print-5')).toBeUndefined();
    expect(keptPlanRows(db, rows, position, {}, undefined)).toBeUndefined();
  });
});
