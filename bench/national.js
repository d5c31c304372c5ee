// The whole traffic-sign pipeline at national scale (issue: national scale). Not part of `npm test`.
//   node bench/national.js [--signs N]
// Runs every step kind of the sign pipeline on the simulator's national feed
// (3M signs, about 3.9M events), once with `duckdb: { threads: 2 }` and once
// with `duckdb: { threads: 16, memory_limit: 1GB }`, and prints per step its
// time, rows, CPU time and the peak RSS of the road-etl process (from the
// manifest, which records both for every step).
import { mb, runPipeline, startSimulator, markdownTable } from './lib.js';

const signsArg = process.argv.indexOf('--signs');
const scale = signsArg > 0 ? ['--signs', process.argv[signsArg + 1]] : ['--scale', 'national'];

const pipeline = (duckdb) => `name: national
sql_dir: SQL_DIR
duckdb: ${duckdb}
source:
  signs: { url: '\${env.ROAD_ETL_SIGNS_URL}' }
steps:
  - { id: events, kind: signs.events, options: { concurrency: 4 } }
  - { id: snapshot_csv, kind: signs.snapshot, options: { format: csv, refresh: always } }
  - id: current_state_from_csv_snapshot
    kind: sql
    needs: [events, snapshot_csv]
    options: { file: signs_current_state.sql, params: { mode: snapshot }, outputs: [signs_current_state] }
  - { id: snapshot_json, kind: signs.snapshot, options: { format: json, refresh: always } }
  - id: current_state_from_snapshot
    kind: sql
    needs: [events, snapshot_json]
    options: { file: signs_current_state.sql, params: { mode: snapshot }, outputs: [signs_current_state] }
  - id: reconcile
    kind: sql
    needs: [events, snapshot_json]
    options: { file: signs_reconcile.sql, outputs: [signs_reconcile] }
  - id: current_state_from_events
    kind: sql
    needs: [events]
    options: { file: signs_current_state.sql, params: { mode: events }, outputs: [signs_current_state] }
  - id: export_csv
    kind: export
    needs: [current_state_from_events]
    options:
      query: SELECT * EXCLUDE (raw_event, event_hash) FROM signs_current_state ORDER BY id
      path: exports/signs_current_state.csv
  - id: export_geojson
    kind: export
    needs: [current_state_from_events]
    options:
      query: SELECT * EXCLUDE (raw_event, event_hash) FROM signs_current_state ORDER BY id
      path: exports/signs_current_state.geojson
      geometry: { longitude: location_wgs84_longitude, latitude: location_wgs84_latitude, id: id }
`;

const SETTINGS = [
  ['threads: 2 (default budget)', '{ threads: 2 }'],
  ['threads: 16, memory_limit: 1GB', '{ threads: 16, memory_limit: 1GB }'],
];

const sim = await startSimulator([...scale, '--seed', '7']);
const rows = [];
try {
  for (const [label, duckdb] of SETTINGS) {
    const run = await runPipeline(pipeline(duckdb), sim.env, { failing: true });
    for (const step of run.manifest.steps) {
      rows.push([
        label,
        step.id,
        step.status,
        `${(step.duration_ms / 1000).toFixed(1)} s`,
        step.rows_out.toLocaleString('en'),
        `${(step.cpu_ms / 1000).toFixed(1)} s`,
        mb(step.peak_rss_bytes),
      ]);
    }
    rows.push([
      label,
      'whole run',
      run.manifest.status,
      `${(run.ms / 1000).toFixed(1)} s`,
      '',
      '',
      mb(run.rss),
    ]);
  }
} finally {
  await sim.stop();
}

console.log(
  markdownTable(['settings', 'step', 'status', 'time', 'rows out', 'CPU', 'peak RSS'], rows),
);
