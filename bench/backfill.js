// A parallel backfill: four weeks of bicycle counts started together on one folder
// (--wait-for-lock, as Airflow's backfill with max_active_runs > 1 starts them),
// against the same four weeks run one after the other, and one run over the month.
//
//   node bench/backfill.js [locations] [latency-ms] [max-locations]   (default 200, 1000 ms, 10)
//
// The simulator answers each request after `latency-ms` (a slow service across
// the internet) and refuses more than `max-locations` locations or 7 days a
// request, so a week is many requests (four in flight at a time). While one run holds the folder the others fetch their week
// (stage-ahead.ts); landing, derived tables and extracts take turns. Each way runs
// on a fresh folder and ends with the same data (checked).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readFile } from 'node:fs/promises';
import { DuckDBInstance } from '@duckdb/node-api';
import { ROOT, markdownTable, runPipeline, startSimulator } from './lib.js';

const locations = Number(process.argv[2] ?? 200);
const latency = Number(process.argv[3] ?? 1000);
const maxLocations = Number(process.argv[4] ?? 10);
const yaml = (await readFile(join(ROOT, 'pipelines', 'bicycle.yaml'), 'utf8')).replace(
  /^# yaml-language-server.*\n/,
  '',
);
const definition = `${yaml.replace(/^name: bicycle$/m, 'name: bicycle\nsql_dir: SQL_DIR')}`;
const simulator = await startSimulator([
  '--seed', '3',
  '--locations', String(locations),
  '--now', '2026-11-01T00:00:00Z',
  '--max-locations', String(maxLocations),
  '--max-period-days', '7',
  '--latency-ms', String(latency),
]); // prettier-ignore
const env = { ...simulator.env };
const DAY = 86_400_000;
const start = Date.parse('2026-10-01T00:00:00Z');
const iso = (ms) => new Date(ms).toISOString().replace('.000Z', 'Z');
const weeks = [0, 7, 14, 21].map((d) => [start + d * DAY, start + (d === 21 ? 31 : d + 7) * DAY]);
const params = ([from, to]) => ({
  start: iso(from),
  end: iso(to),
  prefixes: 'GAL,UTR,RTD,ZHO,NBR,GLD,GRN,FRL',
});

/** Runs `ways` on a fresh folder; resolves to the wall time, the client CPU summed, and the folder. */
async function timed(ways) {
  const dir = await mkdtemp(join(tmpdir(), 'road-etl-bench-'));
  const started = performance.now();
  const runs = await ways(dir);
  const ms = performance.now() - started;
  return { ms, cpuMs: runs.reduce((sum, r) => sum + r.cpuMs, 0), runs, dir };
}

try {
  console.log(`${locations} locations, ${latency} ms a request; four weeks of October 2026`);
  const once = await timed((dir) =>
    Promise.all([
      runPipeline(definition, env, { dir, keep: true, params: params([start, weeks[3][1]]) }),
    ]),
  );
  const inTurn = await timed(async (dir) => {
    const runs = [];
    for (const week of weeks)
      runs.push(await runPipeline(definition, env, { dir, keep: true, params: params(week) }));
    return runs;
  });
  const together = await timed((dir) =>
    Promise.all(
      weeks.map((week) =>
        runPipeline(definition, env, {
          dir,
          keep: true,
          params: params(week),
          args: ['--wait-for-lock', '3600'],
        }),
      ),
    ),
  );
  // The same data each way: every measurement and every hourly row.
  const db = await (await DuckDBInstance.create(':memory:')).connect();
  const digest = async (way, dataset) => {
    const reader = await db.runAndReadAll(
      `SELECT count(*)::VARCHAR || ':' || sum(hash(COLUMNS(*)))::VARCHAR AS d FROM read_parquet('${join(way.dir, 'output', dataset)}/**/*.parquet')`,
    );
    return reader
      .getRowObjects()
      .map((r) => Object.values(r).join(','))
      .join();
  };
  for (const dataset of [
    'bicycle/measurements',
    'derived/bicycle_hourly',
    'derived/bicycle_daily',
  ]) {
    const expected = await digest(once, dataset);
    for (const way of [inTurn, together])
      if ((await digest(way, dataset)) !== expected) throw new Error(`${dataset} differs`);
  }
  const s = (ms) => `${(ms / 1000).toFixed(1)} s`;
  console.log(
    markdownTable(
      ['way', 'wall', 'client CPU (all runs)', 'wall / one run over the month'],
      [
        ['one run over the month', s(once.ms), s(once.cpuMs), '1.00x'],
        [
          'four weeks, one after the other',
          s(inTurn.ms),
          s(inTurn.cpuMs),
          `${(inTurn.ms / once.ms).toFixed(2)}x`,
        ],
        [
          'four weeks started together',
          s(together.ms),
          s(together.cpuMs),
          `${(together.ms / once.ms).toFixed(2)}x`,
        ],
      ],
    ),
  );
  console.log(`started together / one after the other: ${(together.ms / inTurn.ms).toFixed(2)}x`);
  for (const way of [once, inTurn, together]) await rm(way.dir, { recursive: true, force: true });
} finally {
  await simulator.stop();
}
