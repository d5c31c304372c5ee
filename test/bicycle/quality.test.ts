/**
 * Counter health (sql/bicycle_quality.sql) against the simulator's ground truth:
 * counters with faults of every kind at known location-days, over two months
 * that hold the start of summer time, landed by pipelines/bicycle.yaml. The
 * fourth category is an indicator (1 for every hour delivered), which counts
 * no passages: a dead hour must still count 0. Values that cannot be counts,
 * put into an answer by a proxy, are set apart and their days judged faulty.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FAULT_KINDS, type FaultKind } from '../../src/simulator/bicycle/counts.js';
import { idsWithPrefix, shippedBicycle, withoutExports } from '../helpers/bicycle.js';
import { runDefinition } from '../helpers/pipeline.js';
import { useSimulator } from '../helpers/simulator.js';
import { useProxy } from '../helpers/proxy.js';
import { BICYCLE_PATHS } from '../../src/endpoints.js';
import { datasetDifference, duck, testDir } from '../helpers/tmp.js';

const simulator = await useSimulator({
  seed: 11,
  now: '2026-06-01T00:00:00Z',
  bicycle: { locations: 100, maxLocations: 50, faultRate: 0.06, indicatorCategory: true },
});
const proxy = await useProxy(simulator.env.ROAD_ETL_BICYCLE_URL);

// The datasets are what is judged here: the extracts are left out.
const shipped = await shippedBicycle();
const yaml = withoutExports(shipped.yaml);
const sql = shipped.sql;

let lastCounts: Record<string, number> | undefined;

async function land(
  dir: string,
  start: string,
  end: string,
  prefixes: string,
  env: Record<string, string> = { ...simulator.env },
): Promise<string> {
  const result = await runDefinition(dir, yaml, sql, {
    env,
    params: { start, end, prefixes },
  });
  expect(result.summary.status, result.failure?.message).toBe('succeeded');
  lastCounts = result.summary.counts;
  return result.output;
}

interface Judged {
  status: string;
  flags: string[];
}

async function judgements(output: string): Promise<Map<string, Judged>> {
  const rows = await duck(
    `SELECT location_id, strftime(local_date, '%Y-%m-%d') AS day, status, flags
     FROM read_parquet('${output}/derived/bicycle_quality/*/*.parquet', hive_partitioning = true)`,
  );
  return new Map(
    rows.map((r) => [
      `${r['location_id'] as string} ${r['day'] as string}`,
      { status: r['status'] as string, flags: r['flags'] as string[] },
    ]),
  );
}

/** The local dates from `first` to `last`, both included. */
function dates(first: string, last: string): string[] {
  const out: string[] = [];
  for (let t = Date.parse(first); t <= Date.parse(last); t += 86_400_000)
    out.push(new Date(t).toISOString().slice(0, 10));
  return out;
}

const ALL = 'GAL,UTR,RTD,ZHO,NBR,GLD,GRN,FRL';

describe('counter health (bicycle_quality)', () => {
  it('finds faults of every kind over two months with summer time starting, and leaves healthy days ok', async () => {
    // Three weeks of history first, then March and April are judged.
    const output = await land(await testDir(), '2026-02-08T00:00:00Z', '2026-05-01T00:00:00Z', ALL);
    const ids = idsWithPrefix(simulator, ...ALL.split(','));
    const truth = simulator.world.counterFaults(ids, dates('2026-03-01', '2026-04-30'));
    const judged = await judgements(output);

    const faulty = [...truth].filter(([, kinds]) => kinds.length > 0);
    const healthy = [...truth].filter(([, kinds]) => kinds.length === 0);
    const notOk = faulty.filter(([key]) => (judged.get(key)?.status ?? 'ok') !== 'ok');
    const flaggedHealthy = healthy.filter(([key]) => (judged.get(key)?.flags.length ?? 0) > 0);
    const found = Object.fromEntries(
      FAULT_KINDS.map((kind) => {
        const days = faulty.filter(([, kinds]) => kinds.includes(kind));
        const hit = days.filter(([key]) => judged.get(key)?.flags.includes(kind));
        return [kind, { days: days.length, found: hit.length, share: hit.length / days.length }];
      }),
    ) as Record<FaultKind, { days: number; found: number; share: number }>;
    const report = JSON.stringify(
      {
        faulty: faulty.length,
        notOk: notOk.length,
        healthy: healthy.length,
        flaggedHealthy: flaggedHealthy.length,
        wrongly: flaggedHealthy.slice(0, 10).map(([key]) => [key, judged.get(key)]),
        found,
      },
      null,
      1,
    );
    if (process.env['QUALITY_DEBUG']) {
      const rows = await duck(
        `SELECT * EXCLUDE (local_date), strftime(local_date, '%Y-%m-%d') AS day FROM read_parquet('${output}/derived/bicycle_quality/*/*.parquet', hive_partitioning = true)`,
      );
      const byKey = new Map(
        rows.map((r) => [`${r['location_id'] as string} ${r['day'] as string}`, r]),
      );
      for (const [key, kinds] of faulty)
        for (const kind of kinds)
          if (kind !== 'incomplete' && !judged.get(key)?.flags.includes(kind))
            console.log(
              kind,
              key,
              kinds,
              JSON.stringify(byKey.get(key), (_, v: unknown) =>
                typeof v === 'bigint' ? Number(v) : v,
              ),
            );
    }
    if (process.env['QUALITY_DEBUG']) console.log(report);
    // Every location-day the ground truth knows is judged.
    for (const key of truth.keys()) expect(judged.has(key), key).toBe(true);
    expect(faulty.length, report).toBeGreaterThan(300);
    expect(notOk.length / faulty.length, report).toBeGreaterThanOrEqual(0.9);
    for (const kind of FAULT_KINDS) {
      expect(found[kind].days, `${kind}: ${report}`).toBeGreaterThanOrEqual(10);
      expect(found[kind].share, `${kind}: ${report}`).toBeGreaterThanOrEqual(0.8);
    }
    expect(flaggedHealthy.length / healthy.length, report).toBeLessThanOrEqual(0.02);
    // The summary line counts the faulty location-days the run judged: all of them here.
    expect(lastCounts?.['faulty_location_days']).toBe(
      [...judged.values()].filter((j) => j.status === 'faulty').length,
    );
  }, 300_000);

  it('is built night by night exactly as in one run, the days a night completes judged again', async () => {
    // More history before the week than a judgement reads (37 days), so that a night
    // that read less of it would judge otherwise.
    const [start, end] = ['2026-03-12T00:00:00Z', '2026-05-01T00:00:00Z'];
    const once = await land(await testDir(), start, end, ALL);
    const nightly = await testDir();
    const iso = (ms: number): string => new Date(ms).toISOString().replace('.000Z', 'Z');
    const firstNight = Date.parse(end) - 7 * 86_400_000;
    await land(nightly, start, iso(firstNight), ALL);
    for (let night = firstNight; night < Date.parse(end); night += 86_400_000)
      await land(nightly, iso(night), iso(night + 86_400_000), ALL);
    const built = await judgements(once);
    expect(built.size).toBeGreaterThan(300);
    // The week holds level shifts, which a later night confirms for the nights before it.
    const week = [...built].filter(([key]) => key.slice(-10) >= iso(firstNight).slice(0, 10));
    expect(week.filter(([, j]) => j.flags.includes('level_shift')).length).toBeGreaterThan(3);
    for (const dataset of [
      'derived/bicycle_counter_days',
      'derived/bicycle_quality',
      'derived/bicycle_daily',
      'derived/bicycle_location_months',
      'derived/bicycle_location_summary',
    ])
      expect(await datasetDifference(once, join(nightly, 'output'), dataset), dataset).toBe(0);
  }, 300_000);

  it('sets apart values that cannot be counts, with the reason, and judges their days faulty', async () => {
    const [start, end] = ['2026-04-20T00:00:00Z', '2026-04-23T00:00:00Z'];
    // Two locations that delivered the hours spoiled below.
    const bicycle = simulator.world.bicycle;
    const hours = ['2026-04-21T10:00:00Z', '2026-04-21T11:00:00Z', '2026-04-22T08:00:00Z'];
    const [first, second] = idsWithPrefix(simulator, 'GAL').filter((id) =>
      hours.every((h) =>
        bicycle.hasMeasurement(bicycle.byId(id)!, Date.parse(h), simulator.world.now),
      ),
    );
    // The answer as the service might spoil it: a negative count, one of 10^12, half a cyclist.
    const absurd = {
      [`${first} 2026-04-21T10:00:00Z`]: ['richting', 'heen', -5],
      [`${first} 2026-04-21T11:00:00Z`]: ['voertuigcategorie', 'fiets', 1e12],
      [`${second} 2026-04-22T08:00:00Z`]: ['snelheidsklasse', '15-25 km/h', 2.5],
    } as const;
    proxy.spoil(BICYCLE_PATHS.measurements, {
      kind: 'json',
      edit: (body) =>
        (
          body as {
            locationId: string;
            measurementHour: string;
            measuredValuesFull: Record<string, Record<string, unknown>>;
          }[]
        ).map((row) => {
          const spoiled = absurd[`${row.locationId} ${row.measurementHour}` as keyof typeof absurd];
          if (spoiled) row.measuredValuesFull[spoiled[0]]![spoiled[1]] = spoiled[2];
          return row;
        }),
    });
    const output = await land(await testDir(), start, end, 'GAL', proxy.env({ ...simulator.env }));
    expect(proxy.spoiled).toBe(1);
    const read = (dataset: string, select: string, where = 'true') =>
      duck(
        `SELECT ${select} FROM read_parquet('${output}/${dataset}/**/*.parquet', hive_partitioning = true) WHERE ${where} ORDER BY ALL`,
      );
    expect(await read('bicycle/quarantine', 'location_id, reason')).toEqual([
      { location_id: first, reason: 'implausible count: richting/heen (negative: -5)' },
      {
        location_id: first,
        reason: 'implausible count: voertuigcategorie/fiets (above max_count 20000: 1000000000000)',
      },
      {
        location_id: second,
        reason: 'implausible count: snelheidsklasse/15-25 km/h (not a whole number: 2.5)',
      },
    ]);
    expect(
      await read(
        'derived/bicycle_hourly',
        "location_id, strftime(measurement_hour, '%d %H') AS hour, value, value_issue",
        'value_issue IS NOT NULL',
      ),
    ).toEqual([
      { location_id: first, hour: '21 10', value: null, value_issue: 'negative: -5' },
      {
        location_id: first,
        hour: '21 11',
        value: null,
        value_issue: 'above max_count 20000: 1000000000000',
      },
      { location_id: second, hour: '22 08', value: null, value_issue: 'not a whole number: 2.5' },
    ]);
    const days = await read(
      'derived/bicycle_quality',
      "location_id, strftime(local_date, '%d') AS day, status, implausible_hours",
      "list_contains(flags, 'implausible')",
    );
    expect(days).toEqual([
      { location_id: first, day: '21', status: 'faulty', implausible_hours: 2 },
      { location_id: second, day: '22', status: 'faulty', implausible_hours: 1 },
    ]);
    // No absurd count reaches a total.
    const [max] = await read('derived/bicycle_daily', 'max(total) AS max, min(total) AS min');
    expect(Number(max!['max'])).toBeLessThan(20_000);
    expect(Number(max!['min'])).toBeGreaterThanOrEqual(0);
  });
});
