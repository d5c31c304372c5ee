// The report at national scale. Not part of `npm test`.
//   node bench/report.js [--signs N]
// Runs the sign events, their current state, the bicycle catalog and a month
// of hourly counts of every location (3M signs, 3,000 locations: the
// simulator's national scale) under `duckdb: { memory_limit: 1GB }` with
// `report: true` (the report written at the end of the run, within that
// budget), then `road-etl report` on the output (the default budget), and
// prints the report's time, CPU, peak RSS and size beside the pipeline's.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { ROOT, mb, runPipeline, startSimulator, markdownTable } from './lib.js';

const signsArg = process.argv.indexOf('--signs');
const scale = signsArg > 0 ? ['--signs', process.argv[signsArg + 1]] : ['--scale', 'national'];

const pipeline = `name: national_report
sql_dir: SQL_DIR
duckdb: { memory_limit: 1GB }
report: true
source:
  signs: { url: '\${env.ROAD_ETL_SIGNS_URL}' }
  bicycle:
    url: '\${env.ROAD_ETL_BICYCLE_URL}'
    auth_url: '\${env.ROAD_ETL_AUTH_URL}'
    username: '\${env.ROAD_ETL_USERNAME}'
    password: '\${env.ROAD_ETL_PASSWORD}'
steps:
  - { id: events, kind: signs.events, options: { concurrency: 4 } }
  - id: current_state
    kind: sql
    needs: [events]
    options: { file: signs_current_state.sql, params: { mode: events }, outputs: [signs_current_state] }
  - { id: locations, kind: bicycle.locations }
  - id: measurements
    kind: bicycle.measurements
    needs: [locations]
    options:
      start: '2026-10-01T00:00:00Z'
      end: '2026-11-01T00:00:00Z'
      prefixes: [GAL, UTR, RTD, ZHO, NBR, GLD, GRN, FRL]
  - id: hourly
    kind: sql
    needs: [measurements]
    options:
      file: bicycle_hourly.sql
      params: { start: '2026-10-01T00:00:00Z', end: '2026-11-01T00:00:00Z' }
      outputs: [bicycle_hourly]
`;

/** Runs a command; resolves to its wall time, CPU (user + system) and peak RSS, from GNU time. */
async function timed(args) {
  const started = performance.now();
  const child = spawn('/usr/bin/time', ['-f', '%U %S %M', process.execPath, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const [code] = await once(child, 'exit');
  if (code !== 0) throw new Error(`exit ${code}: ${stderr}`);
  const [user, system, kb] = stderr.trim().split('\n').at(-1).split(' ').map(Number);
  return { ms: performance.now() - started, cpuMs: (user + system) * 1000, rss: kb * 1024 };
}

const sim = await startSimulator([...scale, '--seed', '7']);
let run;
try {
  run = await runPipeline(pipeline, sim.env, { keep: true });
} finally {
  await sim.stop();
}
try {
  const output = join(run.dir, 'output');
  const report = await timed([
    join(ROOT, 'bin', 'road-etl.js'),
    'report',
    '--output',
    output,
    '--log-level',
    'warn',
  ]);
  const page = await stat(join(output, 'report', 'index.html'));
  const rows = run.manifest.steps.map((s) => [
    s.id,
    `${(s.duration_ms / 1000).toFixed(1)} s`,
    s.rows_out.toLocaleString('en'),
    mb(s.peak_rss_bytes),
  ]);
  rows.push(['whole run, report included', `${(run.ms / 1000).toFixed(1)} s`, '', mb(run.rss)]);
  rows.push([
    'road-etl report (default budget)',
    `${(report.ms / 1000).toFixed(1)} s (CPU ${(report.cpuMs / 1000).toFixed(1)} s)`,
    `page ${(page.size / 2 ** 20).toFixed(2)} MiB`,
    mb(report.rss),
  ]);
  console.log(markdownTable(['step', 'time', 'rows out', 'peak RSS'], rows));
} finally {
  await rm(run.dir, { recursive: true, force: true });
}
