// Three national nights of today's API. Not part of `npm test`.
//   node bench/national-live.js [nights] [threads]     (default 3 nights, DuckDB's threads as the budget gives)
// pipelines/traffic-signs-live.yaml as shipped (the v5 current state, the
// changes between snapshots, the CSV, GeoJSON and FlatGeobuf extracts) with
// `report: true`, under `duckdb: { memory_limit: 1GB }`, on one output folder,
// night after night, the simulator's national world (3M signs, --seed 7)
// moved on a day each night. Each step's time, client CPU and peak RSS from
// the manifest, and the last night's total against the floor of its download
// and typing, measured in the same run: the v5 file fetched by a plain HTTP
// client into a file (the benchmark process's CPU), and DuckDB alone typing
// its features into one zstd Parquet file (bench/live-floor.js).
import { createWriteStream } from 'node:fs';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline as streamed } from 'node:stream/promises';
import { ROOT, mb, runFloor, runPipeline, startSimulator, withCpu, markdownTable } from './lib.js';

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

/** The floor of a night: the v5 current state downloaded plainly, and DuckDB alone typing it. */
async function floorOf(env) {
  const dir = await mkdtemp(join(tmpdir(), 'road-etl-bench-national-live-'));
  try {
    const file = join(dir, 'current-state-v5.geojson');
    const started = performance.now();
    const { cpuMs } = await withCpu(async () => {
      const response = await globalThis.fetch(
        liveUrl({ api: 'v5', base: env.ROAD_ETL_SIGNS_V5_URL }),
        { headers: { accept: 'application/geo+json, application/json' } },
      );
      if (!response.ok) throw new Error(`v5 current state: ${response.status}`);
      await streamed(Readable.fromWeb(response.body), createWriteStream(file));
    });
    const download = { ms: performance.now() - started, cpuMs, bytes: (await stat(file)).size };
    // The floor's input, made apart and not counted: the same features, one per line.
    const lines = join(dir, 'features.jsonl');
    await arrayMemberToLines(file, lines, 'features');
    await rm(file);
    const typing = await runFloor('live-floor.js', lines, join(dir, 'floor.parquet'));
    return { download, typing };
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
    `| floor: the v5 file downloaded (${mb(floor.download.bytes)}) | ${seconds(floor.download.ms)} | ${seconds(floor.download.cpuMs)} |`,
    `| floor: DuckDB alone typing its ${floor.typing.rows.toLocaleString('en')} features | ${seconds(floor.typing.ms)} | ${seconds(floor.typing.cpu_ms)} |`,
    `| floor: the two | ${seconds(floorMs)} | ${seconds(floorCpu)} |`,
    `| the whole night, report included | ${seconds(last.ms)} (${(last.ms / floorMs).toFixed(1)}x) | ${seconds(last.cpuMs)} (${(last.cpuMs / floorCpu).toFixed(1)}x) |`,
  ].join('\n'),
);
