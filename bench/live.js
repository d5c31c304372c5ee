// Today's traffic-sign API. Not part of `npm test`.
//   node bench/live.js [300k] [national] [api]
// 300k, national: the v5 current state (300,000 signs; 3M nationally) served as
// a file, so that the upstream costs nothing: a signs.live step's client CPU
// per sign beside its floor, measured in the same run: DuckDB alone typing the
// same features, one per line, into one zstd Parquet file (bench/live-floor.js);
// the medians of ROUNDS runs of each (3 unless set), in turn.
// api: the step downloading the v5 GeoJSON and the v4 CSV from the simulator
// at 100k signs and nationally: time, CPU and peak RSS, which should not grow
// with the download.
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline as streamed } from 'node:stream/promises';
import { cpuPerRow, mb, runFloor, runPipeline, startSimulator, markdownTable } from './lib.js';

const { liveUrl } = await import('../dist/sources/signs/client.js');
const { arrayMemberToLines } = await import('../dist/util/json-lines.js');

const only = new Set(process.argv.slice(2));
/** How many times the step and its floor run, in turn (`ROUNDS=1` for a quick look). */
const ROUNDS = Number(process.env.ROUNDS ?? 3);

/** The item whose `key` is the median of `list` (the lower middle of an even list). */
const median = (list, key) =>
  [...list].sort((a, b) => key(a) - key(b))[Math.floor((list.length - 1) / 2)];
const wanted = (name) => only.size === 0 || only.has(name);

const apiPipeline = (api, format) => `name: bench_live
source:
  signs: { url: '\${env.ROAD_ETL_SIGNS_URL}', v5_url: '\${env.ROAD_ETL_SIGNS_V5_URL}' }
duckdb: { memory_limit: 1GB }
steps:
  - { id: signs_live, kind: signs.live, options: { api: ${api}, format: ${format} } }
`;

// A bulk file asks no upstream: the definition names none.
const filePipeline = (file) => `name: bench_live_file
duckdb: { memory_limit: 1GB }
steps:
  - { id: signs_live, kind: signs.live, options: { file: '${file}' } }
`;

/** The simulator's v5 current state, downloaded once into `file`. */
async function downloadV5(env, file) {
  const response = await globalThis.fetch(liveUrl({ api: 'v5', base: env.ROAD_ETL_SIGNS_V5_URL }), {
    headers: { accept: 'application/geo+json, application/json' },
  });
  if (!response.ok) throw new Error(`v5 current state: ${response.status}`);
  await streamed(Readable.fromWeb(response.body), createWriteStream(file));
}

const fileRows = [];
for (const [name, label, args] of [
  ['300k', '300k signs', ['--signs', '300000', '--seed', '7']],
  ['national', '3M signs (national)', ['--scale', 'national', '--seed', '7']],
]) {
  if (!wanted(name)) continue;
  const dir = await mkdtemp(join(tmpdir(), 'road-etl-bench-live-'));
  const file = join(dir, 'current-state-v5.geojson');
  const sim = await startSimulator(args);
  await downloadV5(sim.env, file);
  await sim.stop();
  const bytes = (await stat(file)).size;
  // The floor's input, made apart and not timed: the same features, one per line.
  const lines = join(dir, 'features.jsonl');
  await arrayMemberToLines(file, lines, 'features');
  // One run of each moves by about 15% on a busy 2-core machine: the step and
  // its floor alternate ROUNDS times, and their medians are compared.
  const steps = [];
  const floors = [];
  for (let round = 0; round < ROUNDS; round++) {
    floors.push(await runFloor('live-floor.js', lines, join(dir, 'floor.parquet')));
    const run = await runPipeline(filePipeline(file), {});
    steps.push(run.manifest.steps[0]);
  }
  const step = median(steps, (s) => s.cpu_ms);
  const base = median(floors, (f) => f.cpu_ms);
  const stepUs = cpuPerRow(step.cpu_ms, step.rows_out);
  const floorUs = cpuPerRow(base.cpu_ms, base.rows);
  const cpus = (list, key) => list.map((x) => (key(x) / 1000).toFixed(1)).join(', ');
  fileRows.push([
    `${label}, ${mb(bytes)}`,
    `${step.rows_out.toLocaleString('en')} in ${(step.duration_ms / 1000).toFixed(1)} s, CPU ${(step.cpu_ms / 1000).toFixed(1)} s (${stepUs.toFixed(1)} µs/sign; ${cpus(steps, (s) => s.cpu_ms)})`,
    `${base.rows.toLocaleString('en')} in ${(base.ms / 1000).toFixed(1)} s, CPU ${(base.cpu_ms / 1000).toFixed(1)} s (${floorUs.toFixed(1)} µs/sign; ${cpus(floors, (f) => f.cpu_ms)})`,
    `${(stepUs / floorUs).toFixed(1)}x`,
    mb(Math.max(...steps.map((s) => s.peak_rss_bytes))),
  ]);
  await rm(dir, { recursive: true, force: true });
}
if (fileRows.length > 0)
  console.log(
    markdownTable(
      [
        'v5 current state as a file',
        'signs.live step',
        'DuckDB alone (floor)',
        'step / floor',
        'step peak RSS',
      ],
      fileRows,
    ),
  );

const apiRows = [];
for (const [name, label, args] of [
  ['api', '100k signs', ['--signs', '100000', '--seed', '7']],
  ['api-national', '3M signs (national)', ['--scale', 'national', '--seed', '7']],
]) {
  if (!only.has(name) && !(only.size === 0 && name === 'api')) continue;
  const sim = await startSimulator(args);
  for (const [api, format] of [
    ['v5', 'geojson'],
    ['v4', 'csv'],
  ]) {
    const run = await runPipeline(apiPipeline(api, format), sim.env);
    const step = run.manifest.steps[0];
    apiRows.push([
      `${label}: ${api} ${format}`,
      `${step.rows_out.toLocaleString('en')} signs in ${(step.duration_ms / 1000).toFixed(1)} s, CPU ${(step.cpu_ms / 1000).toFixed(1)} s`,
      mb(step.peak_rss_bytes),
    ]);
  }
  await sim.stop();
}
if (apiRows.length > 0) console.log(markdownTable(['download', 'result', 'peak RSS'], apiRows));
