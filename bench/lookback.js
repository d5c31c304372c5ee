// The cost of the lookback: a night at 1,000 locations that also asks for the hours
// missing in the week before it, against the same night without (lookback_days: 0).
//
//   node bench/lookback.js [locations]     (default 1000 bicycle locations)
//
// A folder is filled with pipelines/bicycle.yaml over September 2026; the simulator's
// counters fail as real ones do (a share of location-days with faults, among them hours
// not delivered, and days lost whole), so that the week before a night holds the gaps of
// a few counters that are down. Hours lost one at a time at random (LOST_HOUR_RATE,
// default 0 here; the simulator's default is 0.004, which leaves a gap in the week of
// every other counter) show what the lookback costs where gaps are everywhere.
// Then the night of 2026-10-01 runs ROUNDS times (default 3) on copies
// of the filled folder, with the lookback (its default, 7 days) and without; the
// medians of the requests (the measurements step's, the lookback's included), wall
// time and client CPU (user + system of the road-etl process) are compared.
// Target: at most 1.2x the requests and client CPU of the night without.
import { execFileSync } from 'node:child_process';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { ROOT, mb, runPipeline, startSimulator } from './lib.js';

const locations = Number(process.argv[2] ?? 1000);
const rounds = Number(process.env.ROUNDS ?? 3);
const yaml = (await readFile(join(ROOT, 'pipelines', 'bicycle.yaml'), 'utf8')).replace(
  /^# yaml-language-server.*\n/,
  '',
);
const withLookback = (days) =>
  yaml
    .replace(/^name: bicycle$/m, 'name: bicycle\nsql_dir: SQL_DIR')
    .replace(
      '      polygon: ${params.polygon}\n',
      `      polygon: \${params.polygon}\n      lookback_days: ${days}\n`,
    );

const simulator = await startSimulator([
  '--seed', '5',
  '--locations', String(locations),
  '--now', '2026-11-01T00:00:00Z',
  '--max-locations', '100',
  '--max-period-days', '31',
  '--counter-fault-rate', '0.01',
  '--lost-hour-rate', process.env.LOST_HOUR_RATE ?? '0',
]); // prettier-ignore
const env = { ...simulator.env };
const params = (start, end) => ({ start, end, prefixes: 'GAL,UTR,RTD,ZHO,NBR,GLD,GRN,FRL' });
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const requests = (manifest) => {
  const notes = manifest.steps.find((s) => s.id === 'bicycle_measurements').notes ?? {};
  return (notes.requests ?? 0) + (notes.lookback?.requests ?? 0);
};

try {
  console.log(`Filling the folder (${locations} locations, September 2026)...`);
  const filled = await runPipeline(withLookback(7), env, {
    keep: true,
    params: params('2026-09-01T00:00:00Z', '2026-10-01T00:00:00Z'),
  });
  execFileSync('cp', ['-a', filled.dir, `${filled.dir}.filled`]);
  const nights = { with: [], without: [] };
  let lookback;
  for (let round = 0; round < rounds; round++)
    for (const [name, days] of [
      ['with', 7],
      ['without', 0],
    ]) {
      await rm(filled.dir, { recursive: true, force: true });
      execFileSync('cp', ['-a', `${filled.dir}.filled`, filled.dir]);
      const night = await runPipeline(withLookback(days), env, {
        keep: true,
        dir: filled.dir,
        params: params('2026-10-01T00:00:00Z', '2026-10-02T00:00:00Z'),
      });
      const notes = night.manifest.steps.find((s) => s.id === 'bicycle_measurements').notes;
      if (name === 'with') lookback = notes?.lookback;
      nights[name].push({
        ms: night.ms,
        cpu: night.cpuMs,
        rss: night.rss,
        requests: requests(night.manifest),
        steps: night.manifest.steps,
      });
    }
  const summary = Object.fromEntries(
    Object.entries(nights).map(([name, runs]) => [
      name,
      {
        ms: median(runs.map((r) => r.ms)),
        cpu: median(runs.map((r) => r.cpu)),
        requests: median(runs.map((r) => r.requests)),
        rss: Math.max(...runs.map((r) => r.rss)),
      },
    ]),
  );
  console.log(
    `\nthe lookback asked for ${lookback?.locations ?? 0} location(s) with gaps in ${lookback?.requests ?? 0} request(s)`,
  );
  console.log('\n| night | requests | wall | client CPU | peak RSS |');
  console.log('| --- | --- | --- | --- | --- |');
  for (const [name, s] of Object.entries(summary))
    console.log(
      `| ${name} the lookback | ${s.requests} | ${(s.ms / 1000).toFixed(2)} s | ${(s.cpu / 1000).toFixed(2)} s | ${mb(s.rss)} |`,
    );
  console.log('\n| step | with: CPU | without: CPU |');
  console.log('| --- | --- | --- |');
  for (const step of nights.with.at(-1).steps) {
    const other = nights.without.at(-1).steps.find((s) => s.id === step.id);
    console.log(`| ${step.id} | ${step.cpu_ms} ms | ${other?.cpu_ms ?? '?'} ms |`);
  }
  const ratio = (key) => (summary.with[key] / summary.without[key]).toFixed(2);
  console.log(
    `\nwith / without: requests ${ratio('requests')}x, wall ${ratio('ms')}x, client CPU ${ratio('cpu')}x (target: at most 1.2x)`,
  );
  await rm(filled.dir, { recursive: true, force: true });
  await rm(`${filled.dir}.filled`, { recursive: true, force: true });
} finally {
  await simulator.stop();
}
