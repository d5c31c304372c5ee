import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Database } from '../../src/duckdb/database.js';
import { createDatasetViews, discoverDatasets } from '../../src/duckdb/datasets.js';
import { openOutputFolder } from '../../src/duckdb/folder.js';
import { testDir, writeParquet, duck } from '../helpers/tmp.js';

/** A snapshot of `rows` signs taken at `moment`, in its date's partition. */
async function snapshot(output: string, moment: string, rows: number): Promise<void> {
  const day = moment.slice(0, 10);
  const name = `signs_live-${moment.replace(/[-:.]/g, '')}.parquet`;
  await writeParquet(
    join(output, 'signs', 'live_snapshots', `snapshot_date=${day}`, name),
    `SELECT 'sign-' || range AS sign_id, TIMESTAMPTZ '${moment}' AS snapshot FROM range(${rows})`,
  );
}

/** The latest snapshot as read from every file (the ground truth): its moment and rows. */
async function latestOfAll(output: string): Promise<Record<string, unknown>> {
  const files = `read_parquet('${output}/signs/live_snapshots/*/*.parquet', hive_partitioning = true)`;
  const [row] = await duck(
    `SELECT strftime(max(snapshot), '%Y-%m-%dT%H:%M:%S') AS moment, count(*) FILTER (WHERE snapshot = (SELECT max(snapshot) FROM ${files})) AS n FROM ${files}`,
  );
  return row!;
}

/** The latest snapshot as the view `signs_live` of the folder gives it. */
async function latestOfView(output: string): Promise<Record<string, unknown>> {
  const db = await Database.open();
  try {
    await createDatasetViews(db, await discoverDatasets(output));
    const [row] = await db.all(`SELECT count(*) AS n FROM signs_live`);
    const [moment] = await db.all(
      `SELECT strftime(max(snapshot), '%Y-%m-%dT%H:%M:%S') AS moment FROM signs_live_snapshots WHERE sign_id IN (SELECT sign_id FROM signs_live)`,
    );
    const [plan] = await db.all(`SELECT sql FROM duckdb_views() WHERE view_name = 'signs_live'`);
    return { moment: moment!['moment'], n: row!['n'], sql: plan!['sql'] };
  } finally {
    db.close();
  }
}

describe('the view of the latest snapshot', () => {
  it('is the latest of all the files, read from its date alone, over days, a second download a day and an empty date', async () => {
    const output = await testDir();
    await snapshot(output, '2026-11-01T06:00:00Z', 3);
    await snapshot(output, '2026-11-02T06:00:00Z', 5);
    let view = await latestOfView(output);
    expect({ moment: view['moment'], n: view['n'] }).toEqual(await latestOfAll(output));
    expect(view['n']).toBe('5');
    // Only the latest date's partition is read.
    expect(view['sql']).toContain(`snapshot_date = '2026-11-02'`);

    // A second download of the same date, later: the latest.
    await snapshot(output, '2026-11-02T18:30:00Z', 4);
    view = await latestOfView(output);
    expect({ moment: view['moment'], n: view['n'] }).toEqual(await latestOfAll(output));
    expect(view['moment']).toBe('2026-11-02T18:30:00');

    // A date folder without a file (a landing undone) is not the latest date.
    await mkdir(join(output, 'signs', 'live_snapshots', 'snapshot_date=2026-11-03'));
    view = await latestOfView(output);
    expect({ moment: view['moment'], n: view['n'] }).toEqual(await latestOfAll(output));
    expect(view['n']).toBe('4');
  });

  it('of a folder a run keeps open is made anew when a snapshot of a new date lands', async () => {
    const output = await testDir();
    await snapshot(output, '2026-11-20T23:59:00Z', 3);
    const folder = await openOutputFolder(output);
    try {
      const count = async () =>
        (await folder.db.all(`SELECT count(*) AS n FROM signs_live`))[0]!['n'];
      expect(await count()).toBe('3');
      // The next night, past midnight: a snapshot of the next date.
      await snapshot(output, '2026-11-21T00:10:00Z', 5);
      await folder.refresh();
      expect(await count()).toBe('5');
      expect(await count()).toBe((await latestOfAll(output))['n']);
    } finally {
      folder.close();
    }
  });
});
