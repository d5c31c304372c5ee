// Bicycle measurement benchmarks (issue: bicycle data). Not part of `npm test`.
//   node bench/bicycle.js
// 1000 locations x 365 days against the simulator (hidden limits: 50 locations,
// 31 days per request): requests against the fewest possible, rows/s against a
// raw fetch-and-parse loop over the same batches, peak RSS.
import { URLSearchParams } from 'node:url';
import { Agent, request } from 'undici';
import { cpuPerRow, mb, rate, runPipeline, startSimulator, withCpu, markdownTable } from './lib.js';

const START = '2025-11-01T00:00:00Z';
const END = '2026-11-01T00:00:00Z';
const HOUR = 3_600_000;
const PREFIXES = ['GAL', 'UTR', 'RTD', 'ZHO', 'NBR', 'GLD', 'GRN', 'FRL'];
const CONCURRENCY = 4;

const pipeline = `name: bench
source:
  bicycle:
    url: \${env.ROAD_ETL_BICYCLE_URL}
    auth_url: \${env.ROAD_ETL_AUTH_URL}
    username: \${env.ROAD_ETL_USERNAME}
    password: \${env.ROAD_ETL_PASSWORD}
steps:
  - { id: locations, kind: bicycle.locations }
  - id: measurements
    kind: bicycle.measurements
    needs: [locations]
    options: ${JSON.stringify({ start: START, end: END, prefixes: PREFIXES, concurrency: CONCURRENCY })}
`;

async function token(env) {
  const response = await request(env.ROAD_ETL_AUTH_URL, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'password',
      client_id: env.ROAD_ETL_CLIENT_ID,
      username: env.ROAD_ETL_USERNAME,
      password: env.ROAD_ETL_PASSWORD,
    }).toString(),
  });
  return (await response.body.json()).access_token;
}

/** The baseline: the fewest requests the hidden limits allow, fetched and JSON.parse'd, nothing else. */
async function rawLoop(env, ids, maxLocations, maxHours) {
  const agent = new Agent({ connections: CONCURRENCY });
  const bearer = await token(env);
  const from = Date.parse(START);
  const to = Date.parse(END);
  const batches = [];
  for (let t = from; t < to; t += maxHours * HOUR)
    for (let i = 0; i < ids.length; i += maxLocations)
      batches.push({
        from: t,
        to: Math.min(to, t + maxHours * HOUR),
        ids: ids.slice(i, i + maxLocations),
      });
  let rows = 0;
  const started = performance.now();
  const worker = async () => {
    for (let batch = batches.shift(); batch; batch = batches.shift()) {
      const response = await request(`${env.ROAD_ETL_BICYCLE_URL}/api/explore/bicycle-data`, {
        method: 'POST',
        dispatcher: agent,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${bearer}` },
        body: JSON.stringify({
          startTime: new Date(batch.from).toISOString().replace('.000', ''),
          endTime: new Date(batch.to).toISOString().replace('.000', ''),
          locations: batch.ids,
        }),
      });
      if (response.statusCode !== 200)
        throw new Error(`raw loop: ${response.statusCode} ${await response.body.text()}`);
      const parsed = JSON.parse(await response.body.text());
      rows += parsed.length;
    }
  };
  const requests = batches.length;
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  await agent.close();
  return { ms: performance.now() - started, rows, requests };
}

const sim = await startSimulator(['--scale', 'large', '--seed', '7']);
const catalog = await (
  await request(`${sim.env.ROAD_ETL_BICYCLE_URL}/api/gis/bicycle-data/complete`, {
    headers: { authorization: `Bearer ${await token(sim.env)}` },
  })
).body.json();
const ids = catalog.features.map((f) => f.properties.id).sort();
const { result: raw, cpuMs: rawCpuMs } = await withCpu(() => rawLoop(sim.env, ids, 50, 31 * 24));
const first = await runPipeline(pipeline, sim.env, { keep: true });
const learned = await runPipeline(pipeline, sim.env, { dir: first.dir });
await sim.stop();

const measured = (run) => run.manifest.steps.find((s) => s.id === 'measurements');
const notes = (run) => measured(run).notes;
const rawRate = rate(raw.rows, raw.ms);
const learnedRate = rate(measured(learned).rows_out, learned.ms);
const results = [
  [
    '1000 locations x 365 days: raw fetch + `JSON.parse` loop, fewest requests (baseline)',
    `${raw.rows.toLocaleString('en')} rows in ${raw.requests} requests, ${(raw.ms / 1000).toFixed(1)} s = ${rawRate.toLocaleString('en')} rows/s`,
    '1.00',
  ],
  [
    'road-etl, first run (learns the limits from the guesses 100 locations, 31 days)',
    `${notes(first).requests} requests (${notes(first).refusals} refused), ${(first.ms / 1000).toFixed(1)} s, peak RSS ${mb(first.rss)}`,
    `${(notes(first).requests / raw.requests).toFixed(2)} of the fewest requests`,
  ],
  [
    'road-etl, next run (limits learned): requests',
    `${notes(learned).requests} requests (${notes(learned).refusals} refused)`,
    `${(notes(learned).requests / raw.requests).toFixed(2)} [<= 1.1]`,
  ],
  [
    'road-etl, next run: rows/s end to end (fetch, type, commit)',
    `${measured(learned).rows_out.toLocaleString('en')} rows in ${(learned.ms / 1000).toFixed(1)} s = ${learnedRate.toLocaleString('en')} rows/s`,
    `${(learnedRate / rawRate).toFixed(2)} [>= 0.8]`,
  ],
  [
    'client CPU per row (user + system of the process): raw loop against road-etl, next run',
    `${cpuPerRow(rawCpuMs, raw.rows).toFixed(1)} µs against ${cpuPerRow(measured(learned).cpu_ms, measured(learned).rows_out).toFixed(1)} µs`,
    `${(cpuPerRow(measured(learned).cpu_ms, measured(learned).rows_out) / cpuPerRow(rawCpuMs, raw.rows)).toFixed(2)}x the raw loop's`,
  ],
  ['road-etl, next run: peak RSS', mb(learned.rss), '[< 300 MB]'],
];
console.log(markdownTable(['measurement', 'result', 'ratio'], results));
