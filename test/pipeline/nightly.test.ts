import { execFileSync } from 'node:child_process';
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, collect, startCli } from '../helpers/cli.js';
import { readManifest, runDefinition } from '../helpers/pipeline.js';
import { shippedBicycle } from '../helpers/bicycle.js';
import { useSimulator } from '../helpers/simulator.js';
import { datasetDifference, duck, fileDir, testDir } from '../helpers/tmp.js';

const simulator = await useSimulator({
  seed: 22,
  now: '2026-11-15T00:00:00Z',
  bicycle: { locations: 40, maxLocations: 10, maxPeriodDays: 7 },
});

const DAY = 86_400_000;

/** The bicycle datasets a run over a period and its nights must hold alike. */
const BICYCLE_DATASETS = [
  'bicycle/measurements',
  'derived/bicycle_hourly',
  'derived/bicycle_daily',
  'derived/bicycle_profile_months',
  'derived/bicycle_location_months',
  'derived/bicycle_hour_profile',
];
const iso = (ms: number): string => new Date(ms).toISOString().replace('.000Z', 'Z');

/** Runs pipelines/bicycle.yaml on `dir` for [start, end). */
async function runBicycle(dir: string, start: number, end: number, prefixes: string) {
  const { yaml, sql } = await shippedBicycle();
  const result = await runDefinition(dir, yaml, sql, {
    env: { ...simulator.env },
    params: { start: iso(start), end: iso(end), prefixes },
  });
  expect(result.summary.status, result.failure?.message).toBe('succeeded');
  return result.output;
}

async function files(folder: string): Promise<string[]> {
  return (await readdir(folder, { recursive: true })).map(String).sort();
}

/** Two weeks over October's end, summer time ending on 2026-10-25 within them. */
const PERIOD = [Date.parse('2026-10-20T00:00:00Z'), Date.parse('2026-11-03T00:00:00Z')] as const;
const periodDir = fileDir();
let once: Promise<string> | undefined;
/** One run over the period, made once for the tests that compare with it (they only read it). */
const onceOverPeriod = async (): Promise<string> =>
  (once ??= (async () => runBicycle(await periodDir(), ...PERIOD, 'UTR'))());

describe('nightly runs', () => {
  it('of one UTC day each over two weeks across a month’s end give the same datasets and extracts as one run over them, every local day whole', async () => {
    const [start, end] = PERIOD;
    const once = await onceOverPeriod();
    const nightlyDir = await testDir();
    let nightly = '';
    for (let night = start; night < end; night += DAY)
      nightly = await runBicycle(nightlyDir, night, night + DAY, 'UTR');

    for (const dataset of BICYCLE_DATASETS)
      expect(await datasetDifference(once, nightly, dataset), dataset).toBe(0);
    // The summary's totals are JSON objects: compared as values, not as text.
    const summary = (folder: string) =>
      duck(
        // totals is JSON text in the file (portable.ts): parsed, then compared as a map.
        `SELECT * EXCLUDE (totals), CAST(CAST(totals AS JSON) AS MAP(VARCHAR, MAP(VARCHAR, BIGINT))) AS totals
         FROM '${folder}/derived/bicycle_location_summary/*.parquet' ORDER BY location_id`,
      );
    expect(await summary(nightly)).toEqual(await summary(once));
    expect((await summary(once)).some((r) => Number(r['hours_present']) > 0)).toBe(true);

    // The extracts: the same files, byte for byte (the rows are written in a total order).
    const exported = await files(join(once, 'exports'));
    expect(exported).toEqual(await files(join(nightly, 'exports')));
    expect(exported).toContain('bicycle_hourly/2026-10.csv');
    expect(exported).toContain('bicycle_daily/2026-11.csv');
    for (const name of exported.filter((f) => f.endsWith('.csv')))
      expect(await readFile(join(nightly, 'exports', name), 'utf8'), name).toBe(
        await readFile(join(once, 'exports', name), 'utf8'),
      );

    // Every local day inside the period is whole: all its hours are there (25 when summer time ends).
    const days = await duck(
      `SELECT local_date::VARCHAR AS day, count(DISTINCT measurement_hour) AS hours
       FROM read_parquet('${nightly}/derived/bicycle_hourly/**/*.parquet', hive_partitioning = true)
       GROUP BY ALL ORDER BY 1`,
    );
    // (the first and last local days begin and end with the period's UTC midnights)
    const inside = days.filter((d) => d['day'] !== '2026-10-20' && d['day'] !== '2026-11-03');
    expect(inside).toHaveLength(13);
    for (const day of inside)
      expect(Number(day['hours']), String(day['day'])).toBe(day['day'] === '2026-10-25' ? 25 : 24);
    const [daily] = await duck(
      `SELECT count(*) FILTER (WHERE hours_in_day = 25) AS long_days, min(hours_in_day) AS shortest
       FROM read_parquet('${nightly}/derived/bicycle_daily/**/*.parquet', hive_partitioning = true)
       WHERE local_date = DATE '2026-10-25'`,
    );
    expect(Number(daily?.['long_days'])).toBeGreaterThan(0);
    expect(Number(daily?.['shortest'])).toBe(25);
  }, 600_000);

  it('started together over four disjoint spans on one folder (a parallel backfill) fetch their spans at once, land in turn, and give what one run over the period gives', async () => {
    const [start, end] = PERIOD;
    const once = await onceOverPeriod();
    const output = join(await testDir(), 'output');
    // Days [0, 4), [4, 8), [8, 11) and [11, 14) of the period.
    const cuts = [0, 4, 8, 11, 14];
    const spans = cuts.slice(0, -1).map((d, i) => [start + d * DAY, start + cuts[i + 1]! * DAY]);
    expect(spans.at(-1)![1]).toBe(end);
    const runs = await Promise.all(
      spans.map(([from, to]) =>
        collect(
          startCli(
            [
              'run',
              join(ROOT, 'pipelines', 'bicycle.yaml'),
              '--output',
              output,
              '--param',
              `start=${iso(from!)}`,
              '--param',
              `end=${iso(to!)}`,
              '--param',
              'prefixes=UTR',
              '--wait-for-lock',
              '600',
              '--log-format',
              'json',
            ],
            { env: { ...simulator.env } },
          ),
          600_000,
        ),
      ),
    );
    for (const run of runs) expect(run.code, run.stderr).toBe(0);
    // They met: all but the first waited for the folder, and fetched their span meanwhile.
    const logs = runs.map((r) =>
      r.stderr
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as { time: string; event: string; ahead?: boolean }),
    );
    const at = (line: { time: string } | undefined): number => Date.parse(line?.time ?? '');
    const waited = logs.filter((log) => log.some((l) => l.event === 'lock.wait'));
    expect(waited.length).toBeGreaterThan(0);
    for (const log of waited) {
      expect(log.some((l) => l.event === 'ahead.staged')).toBe(true);
      expect(log.some((l) => l.event === 'bicycle.adopted')).toBe(true);
    }
    // A span fetched ahead was fetched while another run held the folder: the extraction ran at once.
    const overlapped = waited.filter((log) => {
      const staged = at(log.find((l) => l.event === 'ahead.staged'));
      return logs.some(
        (other) =>
          other !== log &&
          at(other.find((l) => l.event === 'step.start' && !l.ahead)) < staged &&
          at(other.at(-1)) > staged,
      );
    });
    expect(overlapped.length).toBeGreaterThan(0);

    for (const dataset of BICYCLE_DATASETS)
      expect(await datasetDifference(once, output, dataset), dataset).toBe(0);
    const exported = await files(join(once, 'exports'));
    expect(await files(join(output, 'exports'))).toEqual(exported);
    for (const name of exported.filter((f) => f.endsWith('.csv')))
      expect(await readFile(join(output, 'exports', name), 'utf8'), name).toBe(
        await readFile(join(once, 'exports', name), 'utf8'),
      );
    // The manifest names the pipeline's last run and every extract there is.
    const { manifest } = await readManifest(output);
    expect(manifest.exports.map((e) => e.path).sort()).toEqual(
      exported
        .filter((f) => /\.[a-z]+$/.test(f))
        .map((f) => `exports/${f}`)
        .sort(),
    );
  }, 900_000);

  it("go on where they were in a folder copied with its files' times (cp -a, rsync -a, a restored volume)", async () => {
    const start = Date.parse('2026-10-01T00:00:00Z');
    const original = await testDir();
    await runBicycle(original, start, start + 7 * DAY, 'UTR');
    const copy = await testDir();
    execFileSync('cp', ['-a', join(original, 'output'), join(copy, 'output')]);

    // The same next night on both: the copy rebuilds only what the night touched, as the original does.
    const night = { start: start + 7 * DAY, end: start + 8 * DAY };
    const builds = async (dir: string) => {
      await runBicycle(dir, night.start, night.end, 'UTR');
      const { run } = await readManifest(join(dir, 'output'));
      return Object.fromEntries(run.steps.map((s) => [s.id, s.notes ?? {}]));
    };
    const onCopy = await builds(copy);
    expect(onCopy).toEqual(await builds(original));
    // The night asked again for the hours missing before it (lookback), none of which the
    // simulator delivers late: the night's date alone was rewritten, and the hourly table
    // built again for its local dates.
    const measured = onCopy['bicycle_measurements'] as {
      dates_rewritten: string[];
      lookback?: { dates_rewritten: string[] };
    };
    expect(measured.lookback?.dates_rewritten).toEqual([]);
    const dates = measured.dates_rewritten;
    expect(dates).toEqual([new Date(night.start).toISOString().slice(0, 10)]);
    expect(onCopy['bicycle_hourly']).toEqual({ build: 'partial', partitions: dates.length + 1 });
    // The months of the quality partitions the night built: from 2 days before the first date
    // rewritten to the night's last, not the 37 days after it the quality rules touch, which
    // hold no rows yet.
    const months = new Set<string>();
    for (let d = Date.parse(`${dates[0]!}T00:00:00Z`) - 2 * DAY; d < night.end; d += DAY)
      months.add(new Date(d).toISOString().slice(0, 7));
    expect(onCopy['bicycle_monthly']).toEqual({ build: 'partial', partitions: months.size });
    expect(onCopy['export_bicycle_hourly']).toMatchObject({ months_written: ['2026-10.csv'] });
    for (const dataset of ['derived/bicycle_hourly', 'derived/bicycle_daily'])
      expect(await datasetDifference(join(original, 'output'), join(copy, 'output'), dataset)).toBe(
        0,
      );
  }, 300_000);
});
