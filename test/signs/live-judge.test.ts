import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Database, quotedString } from '../../src/duckdb/database.js';
import { judgeSnapshot } from '../../src/sources/signs/live-judge.js';

let db: Database;
let dir: string;

/** A snapshot file of the ids `from` .. `to` - 1 (as sign ids), with `extra` more ids of its own. */
async function snapshotOf(name: string, from: number, to: number, extra = 0): Promise<string> {
  const file = join(dir, `${name}.parquet`);
  await db.run(
    `COPY (SELECT 'sign-' || i AS sign_id, TIMESTAMPTZ '2026-11-20 06:00:00+00' AS downloaded_at FROM range(${from}, ${to}) t(i)
           UNION ALL SELECT 'new-' || i, TIMESTAMPTZ '2026-11-20 06:00:00+00' FROM range(${extra}) t(i))
     TO ${quotedString(file)} (FORMAT parquet)`,
  );
  return file;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'road-etl-live-judge-'));
  db = await Database.open({ threads: 1 });
  // The last snapshot: 10,000 signs.
  const last = await snapshotOf('last', 0, 10_000);
  await db.run(`CREATE VIEW signs_live AS SELECT * FROM read_parquet(${quotedString(last)})`);
});

afterAll(async () => {
  db.close();
  await rm(dir, { recursive: true, force: true });
});

const judge = (file: string, rows: number, maxGone = 0.05) =>
  judgeSnapshot(db, { file, rows, features: rows, maxGone });

describe('judgeSnapshot', () => {
  it('counts the signs of the last snapshot a new one leaves out, exactly', async () => {
    // 600 of the 10,000 gone (6%), 5,000 new ones that do not make up for them.
    const file = await snapshotOf('six', 600, 10_000, 5_000);
    const problem = await judge(file, 14_400);
    expect(problem).toContain(
      'leaves out 600 of the 10000 signs of the last snapshot (2026-11-20T06:00:00.000Z), 6%',
    );
    expect(await judge(file, 14_400, 0.07)).toBeUndefined();
  });

  it('lets a day through that removes within the share, and growth never counts', async () => {
    expect(await judge(await snapshotOf('four', 400, 10_000), 9_600)).toBeUndefined();
    expect(await judge(await snapshotOf('grown', 0, 10_000, 90_000), 100_000)).toBeUndefined();
  });

  it('does not judge a handful of signs by their share', async () => {
    const small = await Database.open({ threads: 1 });
    try {
      const last = join(dir, 'last.parquet');
      await small.run(
        `CREATE VIEW signs_live AS SELECT * FROM read_parquet(${quotedString(last)}) WHERE sign_id IN ('sign-1', 'sign-2')`,
      );
      // One of two replaced: half gone, but one sign.
      const file = await snapshotOf('replaced', 1, 2, 1);
      expect(
        await judgeSnapshot(small, { file, rows: 2, features: 2, maxGone: 0.05 }),
      ).toBeUndefined();
    } finally {
      small.close();
    }
  });
});
