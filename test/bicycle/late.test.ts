/**
 * Counters that deliver late, night after night: a quarter of them upload in
 * batches every 1 to 4 days, and some other hours come a day or two late.
 * Nights that each ask for their own day, then nights missed and caught up
 * by runs given only their end, must end with what one run over the period
 * gives once everything was delivered: each night also asks for the hours
 * missing in the week before it (lookback), and a run without start goes on
 * where the folder's data ends.
 */
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  idsWithPrefix,
  landedMeasurements,
  measurementsPipeline,
  shippedBicycle,
  truthMeasurements,
  withoutExports,
} from '../helpers/bicycle.js';
import { runCli } from '../helpers/cli.js';
import { runDefinition } from '../helpers/pipeline.js';
import { useSimulator } from '../helpers/simulator.js';
import { duck, testDir, writeFiles } from '../helpers/tmp.js';

const DAY = 86_400_000;
const simulator = await useSimulator({
  seed: 41,
  now: '2026-10-01T00:00:00Z',
  bicycle: { locations: 30, batchUploadRate: 0.25, lateHourRate: 0.02 },
});
const ids = idsWithPrefix(simulator, 'GAL', 'UTR');
const iso = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');
const START = Date.parse('2026-10-01T00:00:00Z');
const END = START + 6 * DAY;

/** pipelines/bicycle.yaml (its tables, not its extracts) over [start, end), or from where the folder ends. */
async function runBicycle(dir: string, end: number, start?: number) {
  const { yaml, sql } = await shippedBicycle();
  const params = { ...(start === undefined ? {} : { start: iso(start) }), end: iso(end) };
  const result = await runDefinition(dir, withoutExports(yaml), sql, {
    env: { ...simulator.env },
    params: { ...params, prefixes: 'GAL,UTR' },
  });
  expect(result.summary.status, result.failure?.message).toBe('succeeded');
  return result.output;
}

/** A night's run at 06:00 after its last hour: with its start, or with its end only (a catch-up). */
async function night(dir: string, end: number, start?: number) {
  simulator.world.setNow(iso(end + 6 * 3_600_000));
  return runBicycle(dir, end, start);
}

/** Rows of a derived table on the local dates wholly inside [START, END) that differ between two folders. */
async function derivedDifference(a: string, b: string, table: string): Promise<number> {
  const read = (folder: string) =>
    `(SELECT * FROM read_parquet('${folder}/derived/${table}/**/*.parquet', hive_partitioning = true)
      WHERE local_date BETWEEN DATE '2026-10-02' AND DATE '2026-10-06')`;
  const [row] = await duck(
    `SELECT count(*) AS n FROM ((FROM ${read(a)} EXCEPT ALL FROM ${read(b)}) UNION ALL (FROM ${read(b)} EXCEPT ALL FROM ${read(a)}))`,
  );
  return Number(row?.['n']);
}

/** The landed rows of hours in [START, END). */
const inPeriod = (rows: string[]) =>
  rows.filter((r) => {
    const hour = Date.parse(r.split(' ')[1]!);
    return hour >= START && hour < END;
  });

describe('counters that deliver late', () => {
  it('nights of one day each, some missed and caught up by runs given their end only, end equal to one run made after everything was delivered', async () => {
    // The service holds back hours past the night that asks for them: without the
    // lookback, they would never land.
    const bicycle = simulator.world.bicycle;
    let late = 0;
    for (const id of ids)
      for (let hour = START; hour < END; hour += 3_600_000) {
        const askedAt = Math.floor(hour / DAY) * DAY + DAY + 6 * 3_600_000;
        if (bicycle.servedAt(bicycle.byId(id)!, hour) > askedAt) late++;
      }
    expect(late).toBeGreaterThan(50);

    const dir = await testDir();
    // Two nights of their own day; two missed; then nights given their end only, past the
    // period, until the slowest counter has uploaded.
    await night(dir, START + DAY, START);
    await night(dir, START + 2 * DAY, START + DAY);
    let output = '';
    for (let end = START + 5 * DAY; end <= END + 5 * DAY; end += DAY)
      output = await night(dir, end);

    // One run over the period, made once everything was delivered.
    simulator.world.setNow(iso(END + 8 * DAY));
    const truth = truthMeasurements(simulator, ids, iso(START), iso(END)).kept;
    const once = await runBicycle(await testDir(), END, START);
    expect(await landedMeasurements(once)).toEqual(truth);
    expect(inPeriod(await landedMeasurements(output))).toEqual(truth);
    // The tables built from them, counter health included, were built again where late
    // hours landed: the same as the one run's.
    for (const table of ['bicycle_hourly', 'bicycle_counter_days', 'bicycle_daily']) {
      const [rows] = await duck(
        `SELECT count(*) AS n FROM read_parquet('${once}/derived/${table}/**/*.parquet', hive_partitioning = true)
         WHERE local_date BETWEEN DATE '2026-10-02' AND DATE '2026-10-06'`,
      );
      expect(Number(rows?.['n']), table).toBeGreaterThan(0);
      expect(await derivedDifference(once, output, table), table).toBe(0);
    }
  }, 120_000);

  it('without start on a folder without data: exit 2, and nothing is written', async () => {
    const dir = await testDir();
    await writeFiles(dir, {
      'p.yaml': measurementsPipeline({ end: iso(START + DAY), prefixes: ['GAL'] }),
    });
    const output = join(dir, 'output');
    const result = await runCli(['run', join(dir, 'p.yaml'), '--output', output], {
      env: { ...simulator.env },
    });
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toMatch(/start is not given, and .* holds no measurements .*give start/);
    await expect(stat(output)).rejects.toThrow();
  });
});
