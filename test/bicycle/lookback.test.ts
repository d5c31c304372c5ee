/**
 * The gaps a lookback asks for again, against a table made by hand: the hours
 * each location could count (its validity in the catalog), less those the
 * folder holds.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Database } from '../../src/duckdb/database.js';
import { DISK } from '../../src/duckdb/folder-files.js';
import { missingHours } from '../../src/sources/bicycle/lookback.js';
import { testDir, writeParquet } from '../helpers/tmp.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const FROM = Date.parse('2026-09-28T00:00:00Z');
const TO = FROM + 2 * DAY;
const ts = (ms: number) => `TIMESTAMPTZ '${new Date(ms).toISOString()}'`;

let db: Database;
beforeAll(async () => {
  db = await Database.open({ threads: 1 });
});
afterAll(() => db.close());

/**
 * A folder with a catalog of four locations over two days: A counts throughout,
 * B stopped at noon of the first day, C began at noon of the second, D ended
 * before both. The folder holds every hour of each, except A's hours 3 and 30
 * and C's hour 40.
 */
async function folder(): Promise<string> {
  const output = join(await testDir(), 'output');
  await writeParquet(
    join(output, 'bicycle/locations/data.parquet'),
    `SELECT * FROM (VALUES
       ('A', NULL::TIMESTAMPTZ, NULL::TIMESTAMPTZ),
       ('B', NULL, ${ts(FROM + 12 * HOUR)}),
       ('C', ${ts(FROM + 36 * HOUR)}, NULL),
       ('D', NULL, ${ts(FROM - DAY)})) t(location_id, valid_from, valid_until)`,
  );
  const held: [string, number][] = [];
  for (let h = 0; h < 48; h++) {
    if (h !== 3 && h !== 30) held.push(['A', h]);
    if (h < 12) held.push(['B', h]);
    if (h >= 36 && h !== 40) held.push(['C', h]);
  }
  for (const day of [0, 1]) {
    const date = new Date(FROM + day * DAY).toISOString().slice(0, 10);
    const rows = held
      .filter(([, h]) => Math.floor(h / 24) === day)
      .map(([id, h]) => `('${id}', ${ts(FROM + h * HOUR)})`);
    await writeParquet(
      join(output, `bicycle/measurements/date=${date}/data.parquet`),
      `SELECT * FROM (VALUES ${rows.join(', ')}) t(location_id, measurement_hour)`,
    );
  }
  return output;
}

describe('the lookback', () => {
  it('asks for the hours each location could count and the folder does not hold, and no others', async () => {
    const output = await folder();
    const gaps = await missingHours(db, {
      output,
      files: DISK,
      ids: ['A', 'B', 'C', 'D'],
      from: FROM,
      to: TO,
    });
    // A: hours 3 and 30; C: hour 40. B after its end, C before its start and D not at all.
    expect(gaps).toEqual({ ids: ['A', 'C'], from: FROM + 3 * HOUR, to: TO, hours: 3 });
  });

  it('asks for nothing where the folder holds every hour that could be counted', async () => {
    const output = await folder();
    const gaps = await missingHours(db, {
      output,
      files: DISK,
      ids: ['B', 'D'],
      from: FROM,
      to: TO,
    });
    expect(gaps).toBeUndefined();
  });
});
