import { rawFeedLoop, runPipeline, startSimulator } from './lib.js';
const sim = await startSimulator(['--signs', process.argv[2] ?? '90000', '--seed', '7']);
const c0 = process.cpuUsage();
const raw = await rawFeedLoop(sim.env.ROAD_ETL_SIGNS_URL);
const c = process.cpuUsage(c0);
const yaml = `name: b
source:
  signs: { url: '\${env.ROAD_ETL_SIGNS_URL}' }
steps:
  - { id: signs_events, kind: signs.events, options: { concurrency: 1 } }
`;
const run = await runPipeline(yaml, sim.env);
await sim.stop();
const step = run.manifest.steps[0];
const rawUs = ((c.user + c.system) / raw.events);
const etlUs = (step.cpu_ms * 1000) / step.rows_out;
console.log(JSON.stringify({ rawEvents: raw.events, rawCpuMs: Math.round((c.user + c.system) / 1000), rawUsPerEvent: rawUs.toFixed(1), rawMs: Math.round(raw.ms), events: step.rows_out, cpuMs: step.cpu_ms, usPerEvent: etlUs.toFixed(1), ratio: (etlUs / rawUs).toFixed(2), ms: step.duration_ms, rss: Math.round(step.peak_rss_bytes / 2 ** 20) }));
