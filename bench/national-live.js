// Three national nights of today's API. Not part of `npm test`.
//   node bench/national-live.js [nights] [threads]     (default 3 nights, DuckDB's threads as the budget gives)
// pipelines/traffic-signs-live.yaml as shipped (the v5 current state, the
// changes between snapshots, the CSV, GeoJSON and FlatGeobuf extracts) with
// `report: true`, under `duckdb: { memory_limit: 1GB }`, on one output folder,
// night after night, the simulator's national world (3M signs, --seed 7)
// moved on a day each night. Each step's time, client CPU and peak RSS from
// the manifest, and the last night's total against the floor of its download
// and typing, measured in the same run: the v5 file fetched by curl into a
// file (`--compressed`, the transfer road-etl asks for; curl's CPU), and
// DuckDB alone typing its features into one zstd Parquet file
// (bench/live-floor.js).
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, mb, runFloor, runPipeline, startSimulator, markdownTable } from './lib.js';

const { liveUrl } = await import('../dist/sources/signs/client.js');
const { arrayMemberToLines } = await import('../dist/util/json-lines.js');

const nights = Number(process.argv[2] ?? 3);
// DuckDB's threads as asked in the definition (the budget caps what it can feed; see the log's duckdb.memory).
const threads = process.argv[3] === undefined ? undefined : Number(process.argv[3]);
const shipped = await readFile(join(ROOT, 'pipelines', 'traffic-signs-live.yaml'), 'utf8');
const definition = shipped
  .replace(/^# yaml-language-server.*\n/, '')
  .replace(
    /^name: traffic_signs_live$/m,
    `name: traffic_signs_live\nsql_dir: SQL_DIR\nduckdb: { memory_limit: 1GB${threads ? `, threads: ${threads}` : ''} }\nreport: true`,
  );

const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;
const day = (n) => new Date(Date.UTC(2026, 10, 20 + n, 6)).toISOString();

/**
 * curl fetching `url` into `file` (`--compressed`: gzip asked for and inflated,
 * the transfer road-etl asks for), with curl's CPU (user + system, from bash's
 * `times`) and its wall time.
 */
async function curled(url, file, compressed) {
  const script =
    'curl -sS --fail -H "accept: application/geo+json, application/json" "$@"; rc=$?; times; exit $rc';
  const args = ['-o', file, ...(compressed ? ['--compressed'] : []), url];
  const started = performance.now();
  const child = spawn('bash', ['-c', script, 'curl', ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (chunk) => (out += chunk));
  const [code] = await once(child, 'exit');
  if (code !== 0) throw new Error(`curl ${url}: exit ${code}`);
  // `times`: the shell's user and system time, then its children's.
  const children = out.trim().split('\n').at(-1);
  const cpuMs = [...children.matchAll(/(\d+)m([\d.]+)s/g)]
    .map(([, m, s]) => (Number(m) * 60 + Number(s)) * 1000)
    .reduce((a, b) => a + b, 0);
  return { ms: performance.now() - started, cpuMs, bytes: (await stat(file)).size };
}

/**
 * The floor of a night: the v5 current state fetched by curl (as road-etl
 * asks for it, gzip; and plainly, as a bare `curl -o` does), and DuckDB alone
 * typing it.
 */
async function floorOf(env) {
  const dir = await mkdtemp(join(tmpdir(), 'road-etl-bench-national-live-'));
  try {
    const file = join(dir, 'current-state-v5.geojson');
    const url = liveUrl({ api: 'v5', base: env.ROAD_ETL_SIGNS_V5_URL });
    const plain = await curled(url, file, false);
    const download = await curled(url, file, true);
    // The floor's input, made apart and not counted: the same features, one per line.
    const lines = join(dir, 'features.jsonl');
    await arrayMemberToLines(file, lines, 'features');
    await rm(file);
    const typing = await runFloor('live-floor.js', lines, join(dir, 'floor.parquet'));
    return { download, plain, typing };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const rows = [];
let folder;
let last;
let floor;
for (let night = 0; night < nights; night++) {
  const sim = await startSimulator(['--scale', 'national', '--seed', '7', '--now', day(night)]);
  try {
    const run = await runPipeline(definition, sim.env, { keep: true, dir: folder, failing: true });
    folder = run.dir;
    last = run;
    for (const step of run.manifest.steps)
      rows.push([
        `night ${night + 1}`,
        step.status === 'succeeded' ? step.id : `${step.id} (${step.status})`,
        seconds(step.duration_ms),
        seconds(step.cpu_ms),
        (step.rows_out ?? 0).toLocaleString('en'),
        mb(step.peak_rss_bytes),
      ]);
    rows.push([
      `night ${night + 1}`,
      '**whole run** (report included)',
      seconds(run.ms),
      seconds(run.cpuMs),
      '',
      mb(run.rss),
    ]);
    if (night === nights - 1) floor = await floorOf(sim.env);
  } finally {
    await sim.stop();
  }
}
if (folder) await rm(folder, { recursive: true, force: true });

console.log(markdownTable(['night', 'step', 'time', 'client CPU', 'rows out', 'peak RSS'], rows));
const floorCpu = floor.download.cpuMs + floor.typing.cpu_ms;
const floorMs = floor.download.ms + floor.typing.ms;
console.log(
  [
    '',
    '| last night | time | client CPU |',
    '|---|---|---|',
    `| the v5 file fetched by curl, plainly (not counted) | ${seconds(floor.plain.ms)} | ${seconds(floor.plain.cpuMs)} |`,
    `| floor: the v5 file fetched by curl --compressed (${mb(floor.download.bytes)}) | ${seconds(floor.download.ms)} | ${seconds(floor.download.cpuMs)} |`,
    `| floor: DuckDB alone typing its ${floor.typing.rows.toLocaleString('en')} features | ${seconds(floor.typing.ms)} | ${seconds(floor.typing.cpu_ms)} |`,
    `| floor: the two | ${seconds(floorMs)} | ${seconds(floorCpu)} |`,
    `| the whole night, report included | ${seconds(last.ms)} (${(last.ms / floorMs).toFixed(1)}x) | ${seconds(last.cpuMs)} (${(last.cpuMs / floorCpu).toFixed(1)}x) |`,
  ].join('\n'),
);
