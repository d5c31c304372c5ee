// Today's traffic-sign API (issue: today's NDW). Not part of `npm test`.
//   node bench/live.js [small] [national]
// The v5 current state downloaded and typed by a signs.live step at 100k signs
// and at national scale (3M signs): time, rows and peak RSS, which should not
// grow with the download (the FeatureCollection is cut into lines as it is
// read, DuckDB types the lines a chunk at a time).
import { mb, runPipeline, startSimulator } from './lib.js';

const pipeline = (api, format) => `name: bench_live
source:
  signs: { url: '\${env.ROAD_ETL_SIGNS_URL}', v5_url: '\${env.ROAD_ETL_SIGNS_V5_URL}' }
duckdb: { memory_limit: 1GB }
steps:
  - { id: signs_live, kind: signs.live, options: { api: ${api}, format: ${format} } }
`;

const only = new Set(process.argv.slice(2));
const rows = [];
for (const [name, label, args] of [
  ['small', '100k signs', ['--signs', '100000', '--seed', '7']],
  ['national', '3M signs (national)', ['--scale', 'national', '--seed', '7']],
]) {
  if (only.size > 0 && !only.has(name)) continue;
  const sim = await startSimulator(args);
  for (const [api, format] of [
    ['v5', 'geojson'],
    ['v4', 'csv'],
  ]) {
    const run = await runPipeline(pipeline(api, format), sim.env);
    const step = run.manifest.steps[0];
    rows.push([
      `${label}: ${api} ${format}`,
      `${step.rows_out.toLocaleString('en')} signs in ${(step.duration_ms / 1000).toFixed(1)} s, CPU ${(step.cpu_ms / 1000).toFixed(1)} s`,
      mb(step.peak_rss_bytes),
    ]);
  }
  await sim.stop();
}
console.log(
  [
    '| download | result | peak RSS |',
    '|---|---|---|',
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ].join('\n'),
);
