// Traffic-sign feed benchmarks (issue: traffic signs). Not part of `npm test`.
//   node bench/signs.js [throughput] [latency] [memory] [current-state] [cpu] [pipeline]
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  cpuPerRow,
  feedToLines,
  mb,
  rate,
  rawFeedLoop,
  ROOT,
  runFloor,
  runPipeline,
  startSimulator,
  withCpu,
  markdownTable,
} from './lib.js';

const only = new Set(process.argv.slice(2));
const want = (name) => only.size === 0 || only.has(name);
const results = [];
// The real feed publishes thousands of events a day; the simulator's default
// history spreads its events thinner over five years. The benchmarks use a
// shorter history, so that a day holds a realistic number of events (and a
// daily partition a file of a useful size).
const DENSE = ['--feed-start', '2025-11-15T00:00:00.000Z'];

const eventsPipeline = (options) => `name: bench
source:
  signs: { url: '\${env.ROAD_ETL_SIGNS_URL}' }
steps:
  - { id: signs_events, kind: signs.events, options: ${JSON.stringify(options)} }
`;

function landed(manifest) {
  return manifest.steps.find((s) => s.id === 'signs_events').rows_out;
}

if (want('throughput') || want('memory')) {
  // ~1M events, no latency: the pipeline against the raw fetch-and-parse loop, same simulator, same run.
  const sim = await startSimulator(['--scale', 'large', '--seed', '7', ...DENSE]);
  const raw = await rawFeedLoop(sim.env.ROAD_ETL_SIGNS_URL);
  const one = await runPipeline(eventsPipeline({ concurrency: 1 }), sim.env);
  const four = await runPipeline(eventsPipeline({ concurrency: 4 }), sim.env);
  await sim.stop();
  const rawRate = rate(raw.events, raw.ms);
  const oneRate = rate(landed(one.manifest), one.ms);
  const fourRate = rate(landed(four.manifest), four.ms);
  results.push(
    [
      '1M events, no latency: raw fetch + JSON.parse loop (baseline)',
      `${raw.events.toLocaleString('en')} events (with repeats) in ${(raw.ms / 1000).toFixed(1)} s = ${rawRate.toLocaleString('en')}/s`,
      '1.00',
    ],
    [
      '1M events, no latency: road-etl, 1 reader, end to end',
      `${landed(one.manifest).toLocaleString('en')} events in ${(one.ms / 1000).toFixed(1)} s = ${oneRate.toLocaleString('en')}/s, peak RSS ${mb(one.rss)}`,
      (oneRate / rawRate).toFixed(2),
    ],
    [
      '1M events, no latency: road-etl, 4 readers, end to end',
      `${(four.ms / 1000).toFixed(1)} s = ${fourRate.toLocaleString('en')}/s, peak RSS ${mb(four.rss)}`,
      (fourRate / rawRate).toFixed(2),
    ],
  );
  if (want('memory')) {
    const big = await startSimulator(['--signs', '1000000', '--seed', '7', ...DENSE]);
    const three = await runPipeline(eventsPipeline({ concurrency: 1 }), big.env);
    await big.stop();
    results.push([
      '3M events: road-etl, 1 reader (peak RSS against the 1M run)',
      `${landed(three.manifest).toLocaleString('en')} events in ${(three.ms / 1000).toFixed(1)} s, peak RSS ${mb(three.rss)}`,
      (three.rss / one.rss).toFixed(2),
    ]);
  }
}

if (want('latency')) {
  // 50 ms per request: the parallel backfill against one reader.
  const sim = await startSimulator([
    '--signs',
    '30000',
    '--seed',
    '7',
    '--latency-ms',
    '50',
    '--feed-start',
    '2026-08-15T00:00:00.000Z',
  ]);
  const one = await runPipeline(eventsPipeline({ concurrency: 1 }), sim.env);
  const sharded = await runPipeline(eventsPipeline({ concurrency: 16 }), sim.env);
  await sim.stop();
  results.push(
    [
      '50 ms latency: one reader (baseline)',
      `${landed(one.manifest).toLocaleString('en')} events in ${(one.ms / 1000).toFixed(1)} s`,
      '1.00',
    ],
    [
      '50 ms latency: backfill with 16 readers',
      `${landed(sharded.manifest).toLocaleString('en')} events in ${(sharded.ms / 1000).toFixed(1)} s`,
      `${(one.ms / sharded.ms).toFixed(1)}x faster`,
    ],
  );
}

if (want('current-state')) {
  // The current state of 3 million signs, built by the SQL step from the landed events.
  const sim = await startSimulator(['--scale', 'national', '--seed', '7', ...DENSE]);
  const run = await runPipeline(
    `${eventsPipeline({ concurrency: 4 })}  - id: signs_current_state
    kind: sql
    needs: [signs_events]
    options: { file: signs_current_state.sql, params: { mode: events }, outputs: [signs_current_state] }
sql_dir: SQL_DIR
`,
    sim.env,
  );
  await sim.stop();
  const extract = run.manifest.steps.find((s) => s.id === 'signs_events');
  const state = run.manifest.steps.find((s) => s.id === 'signs_current_state');
  results.push(
    [
      '3M signs: extract the feed (4 readers)',
      `${extract.rows_out.toLocaleString('en')} events in ${(extract.duration_ms / 1000).toFixed(1)} s`,
      '-',
    ],
    [
      '3M signs: build the current state (sql step)',
      `${state.rows_out.toLocaleString('en')} signs from ${state.rows_in.toLocaleString('en')} events in ${(state.duration_ms / 1000).toFixed(1)} s, run peak RSS ${mb(run.rss)}`,
      '-',
    ],
  );
}

if (want('cpu')) {
  // Client CPU per event of one reader: the road-etl process against its floor, measured
  // in the same run: the raw fetch-and-parse loop (this process) plus DuckDB alone landing
  // the same events into one zstd Parquet file (bench/signs-floor.js); on a sparse feed of
  // about 250,000 events over five years.
  const sim = await startSimulator(['--signs', '90000', '--seed', '7']);
  const { result: raw, cpuMs } = await withCpu(() => rawFeedLoop(sim.env.ROAD_ETL_SIGNS_URL));
  const dir = await mkdtemp(join(tmpdir(), 'road-etl-bench-floor-'));
  await feedToLines(sim.env.ROAD_ETL_SIGNS_URL, join(dir, 'events.jsonl'));
  const landing = await runFloor(
    'signs-floor.js',
    join(dir, 'events.jsonl'),
    join(dir, 'events.parquet'),
  );
  // Not the floor, but what the layout alone adds to it: the same COPY writing a file a month.
  const byMonth = await runFloor(
    'signs-floor.js',
    join(dir, 'events.jsonl'),
    join(dir, 'by-month'),
    '--by-month',
  );
  await rm(dir, { recursive: true, force: true });
  const run = await runPipeline(eventsPipeline({ concurrency: 1 }), sim.env);
  await sim.stop();
  const step = run.manifest.steps.find((s) => s.id === 'signs_events');
  const rawUs = cpuPerRow(cpuMs, raw.events);
  const landingUs = cpuPerRow(landing.cpu_ms, landing.rows);
  const floorUs = rawUs + landingUs;
  const oneUs = cpuPerRow(step.cpu_ms, step.rows_out);
  results.push(
    [
      'client CPU per event: raw fetch + `JSON.parse` loop',
      `${raw.events.toLocaleString('en')} events: ${rawUs.toFixed(1)} µs each (${(cpuMs / 1000).toFixed(1)} s)`,
      '-',
    ],
    [
      'client CPU per event: DuckDB alone landing them (typed, one zstd file)',
      `${landing.rows.toLocaleString('en')} events: ${landingUs.toFixed(1)} µs each (${(landing.cpu_ms / 1000).toFixed(1)} s)`,
      '-',
    ],
    ['client CPU per event: the floor (the two above)', `${floorUs.toFixed(1)} µs each`, '1.00'],
    [
      'the layout alone: DuckDB landing them a file a month (not the floor: what the month files add to it)',
      `${byMonth.files.toLocaleString('en')} files: ${cpuPerRow(byMonth.cpu_ms, byMonth.rows).toFixed(1)} µs each (${(byMonth.cpu_ms / 1000).toFixed(1)} s)`,
      `${((rawUs + cpuPerRow(byMonth.cpu_ms, byMonth.rows)) / floorUs).toFixed(2)} with the raw loop`,
    ],
    [
      'client CPU per event: road-etl, 1 reader (user + system of the process)',
      `${step.rows_out.toLocaleString('en')} events: ${oneUs.toFixed(1)} µs each (${(step.cpu_ms / 1000).toFixed(1)} s), wall ${(step.duration_ms / 1000).toFixed(1)} s`,
      `${(oneUs / floorUs).toFixed(2)} [<= 1.5]`,
    ],
  );
}

if (want('pipeline')) {
  // The whole shipped traffic-signs pipeline: peak RSS at 100k signs, and with 20 ms
  // of latency per request against one sequential raw reader.
  const shipped = (await readFile(join(ROOT, 'pipelines', 'traffic-signs.yaml'), 'utf8')).replace(
    /^source:/m,
    'sql_dir: SQL_DIR\nsource:',
  );
  const sim = await startSimulator(['--signs', '100000', '--seed', '7']);
  const whole = await runPipeline(shipped, sim.env);
  await sim.stop();
  const slow = await startSimulator(['--signs', '100000', '--seed', '7', '--latency-ms', '20']);
  const raw = await rawFeedLoop(slow.env.ROAD_ETL_SIGNS_URL);
  const latent = await runPipeline(shipped, slow.env);
  await slow.stop();
  results.push(
    [
      'whole traffic-signs pipeline, 100k signs: peak RSS',
      `${whole.manifest.steps.map((s) => `${s.id} ${mb(s.peak_rss_bytes)}`).join(', ')}; run ${(whole.ms / 1000).toFixed(1)} s`,
      `${mb(whole.rss)} [<= 400 MB]`,
    ],
    [
      '20 ms latency: one sequential raw reader (baseline)',
      `${raw.events.toLocaleString('en')} events in ${(raw.ms / 1000).toFixed(1)} s`,
      '1.00',
    ],
    [
      '20 ms latency: the whole traffic-signs pipeline',
      `${(latent.ms / 1000).toFixed(1)} s`,
      `${(raw.ms / latent.ms).toFixed(1)}x faster [>= 3x]`,
    ],
  );
}

const table = markdownTable(['measurement', 'result', 'ratio'], results);
console.log(table);
