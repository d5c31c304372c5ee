import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Database } from '../../src/duckdb/database.js';
import { putViewBack, putViewsBack, setViewsAside } from '../../src/steps/sql-views.js';
import { testDir, writeParquet } from '../helpers/tmp.js';

async function viewsOf(db: Database): Promise<string[]> {
  const rows = await db.all(
    `SELECT view_name AS name FROM duckdb_views() WHERE NOT internal AND NOT temporary ORDER BY 1`,
  );
  return rows.map((row) => String(row['name']));
}

describe("a sql step's output views while its file runs", () => {
  it('set aside for a partial build and put back as they were, new partitions included', async () => {
    const folder = join(await testDir(), 'daily');
    await writeParquet(join(folder, 'day=2026-01-01', 'data.parquet'), `SELECT 1 AS x`);
    const db = await Database.open();
    try {
      await db.run(
        `CREATE VIEW daily AS SELECT * FROM read_parquet('${folder}/*/*.parquet', hive_partitioning = true)`,
      );
      const aside = await setViewsAside(db, ['daily', 'absent'], true);
      expect([...aside.keys()]).toEqual(['daily']);
      // The file makes a table of the output's name, which is written and dropped.
      await db.run(`CREATE TABLE daily AS SELECT 2 AS x`);
      await writeParquet(join(folder, 'day=2026-01-02', 'data.parquet'), `SELECT 2 AS x`);
      await db.run(`DROP TABLE daily`);
      expect(await putViewBack(db, aside, 'daily')).toBe(true);
      expect(await putViewBack(db, aside, 'absent')).toBe(false);
      expect(await viewsOf(db)).toEqual(['daily']);
      const rows = await db.all(`SELECT x, CAST(day AS VARCHAR) AS day FROM daily ORDER BY x`);
      expect(rows).toEqual([
        { x: 1, day: '2026-01-01' },
        { x: 2, day: '2026-01-02' },
      ]);
    } finally {
      db.close();
    }
  });

  it('dropped for a full build, and put back after a file that failed (its table gone)', async () => {
    const db = await Database.open();
    try {
      await db.run(`CREATE VIEW a AS SELECT 1 AS x`);
      await db.run(`CREATE VIEW b AS SELECT 2 AS x`);
      expect((await setViewsAside(db, ['a'], false)).size).toBe(0);
      expect(await viewsOf(db)).toEqual(['b']);
      const aside = await setViewsAside(db, ['b'], true);
      await db.run(`CREATE TABLE b AS SELECT 'half made' AS x`);
      await putViewsBack(db, aside);
      expect(await viewsOf(db)).toEqual(['b']);
      expect(await db.all(`SELECT x FROM b`)).toEqual([{ x: 2 }]);
    } finally {
      db.close();
    }
  });
});
