// One more night on a folder with a year of history, against the same night on a folder
// with one month: the cost of a nightly run follows that night's data, not the history.
//
//   node bench/nightly.js [locations]     (default 200 bicycle locations)
//
// Two folders are filled with pipelines/bicycle.yaml: one run over twelve months
// (2025-10-01 .. 2026-10-01) and one over the last of them (2026-09-01 .. 2026-10-01).
// Then the same five nights (2026-10-01 .. 2026-10-06) run on each, in turn, and
// again (ROUNDS, default 2) on copies of the filled folders as they were; the
// medians of their wall time and client CPU (user + system of the road-etl
// process, from its summary line) are compared, and the CPU of the steps alone
// (the manifest's cpu_ms, without the process's start-up). A night's CPU moves
// by tens of ms from run to run: ten nights of each settle a median that five
// did not.
import { execFileSync } from 'node:child_process';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { ROOT, mb, runPipeline, startSimulator } from './lib.js';

const locations = Number(process.argv[2] ?? 200);
const rounds = Number(process.env.ROUNDS ?? 2);
const yaml = (await readFile(join(ROOT, 'pipelines', 'bicycle.yaml'), 'utf8')).replace(
  /^# yaml-language-server.*\n/,
  '',
);
// The definition runs from a folder of its own: its SQL files are the repository's.
const definition = `${yaml.replace(/^name: bicycle$/m, 'name: bicycle\nsql_dir: SQL_DIR')}`;

const simulator = await startSimulator([
  '--seed',
  '3',
  '--locations',
  String(locations),
  '--now',
  '2026-11-01T00:00:00Z',
  '--max-locations',
  '100',
  '--max-period-days',
  '62',
]);
const env = { ...simulator.env };
// Every location of the simulated catalog.
const params = (start, end) => ({ start, end, prefixes: 'GAL,UTR,RTD,ZHO,NBR,GLD,GRN,FRL' });

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const stepsCpu = (manifest) => manifest.steps.reduce((sum, s) => sum + s.cpu_ms, 0);

try {
  console.log(`Filling the folders (${locations} locations)...`);
  const year = await runPipeline(definition, env, {
    keep: true,
    params: params('2025-10-01T00:00:00Z', '2026-10-01T00:00:00Z'),
  });
  const month = await runPipeline(definition, env, {
    keep: true,
    params: params('2026-09-01T00:00:00Z', '2026-10-01T00:00:00Z'),
  });
  const rows = (m) => m.steps.find((s) => s.id === 'bicycle_measurements').rows_out;
  console.log(
    `  a year: ${rows(year.manifest).toLocaleString('en')} measurement rows in ${(year.ms / 1000).toFixed(1)} s; ` +
      `a month: ${rows(month.manifest).toLocaleString('en')} in ${(month.ms / 1000).toFixed(1)} s`,
  );

  const nights = { year: [], month: [] };
  // The filled folders as they were, for the rounds after the first (cp -a keeps the files' times).
  const copy = (from, to) => execFileSync('cp', ['-a', from, to]);
  for (const dir of [year.dir, month.dir]) copy(dir, `${dir}.filled`);
  for (let round = 0; round < rounds; round++) {
    if (round > 0)
      for (const dir of [year.dir, month.dir]) {
        await rm(dir, { recursive: true, force: true });
        copy(`${dir}.filled`, dir);
      }
    for (const day of ['01', '02', '03', '04', '05']) {
      const start = `2026-10-${day}T00:00:00Z`;
      const end = `2026-10-${String(Number(day) + 1).padStart(2, '0')}T00:00:00Z`;
      for (const [name, folder] of [
        ['year', year.dir],
        ['month', month.dir],
      ]) {
        const night = await runPipeline(definition, env, {
          keep: true,
          dir: folder,
          params: params(start, end),
        });
        nights[name].push({
          ms: night.ms,
          cpu: night.cpuMs,
          steps: stepsCpu(night.manifest),
          rss: night.rss,
          perStep: night.manifest.steps,
        });
      }
    }
  }
  const summary = Object.fromEntries(
    Object.entries(nights).map(([name, runs]) => [
      name,
      {
        ms: median(runs.map((r) => r.ms)),
        cpu: median(runs.map((r) => r.cpu)),
        steps: median(runs.map((r) => r.steps)),
        rss: Math.max(...runs.map((r) => r.rss)),
      },
    ]),
  );
  console.log('\n| history | night: wall | night: client CPU | of which steps | peak RSS |');
  console.log('| --- | --- | --- | --- | --- |');
  for (const [name, s] of Object.entries(summary))
    console.log(
      `| ${name === 'year' ? '12 months' : '1 month'} | ${(s.ms / 1000).toFixed(2)} s | ${(s.cpu / 1000).toFixed(2)} s | ${(s.steps / 1000).toFixed(2)} s | ${mb(s.rss)} |`,
    );
  console.log('\n| step | 12 months: CPU | 1 month: CPU |');
  console.log('| --- | --- | --- |');
  const last = (name) => nights[name].at(-1).perStep;
  for (const step of last('year')) {
    const other = last('month').find((s) => s.id === step.id);
    console.log(`| ${step.id} | ${step.cpu_ms} ms | ${other?.cpu_ms ?? '?'} ms |`);
  }
  // The counter-health step alone (sql/bicycle_quality.sql): the median of its CPU and wall time over the nights.
  const stepMedian = (name, id, key) =>
    median(nights[name].map((r) => r.perStep.find((s) => s.id === id)?.[key] ?? 0));
  const quality = Object.fromEntries(
    ['year', 'month'].map((name) => [
      name,
      {
        cpu: stepMedian(name, 'bicycle_quality', 'cpu_ms'),
        ms: stepMedian(name, 'bicycle_quality', 'duration_ms'),
      },
    ]),
  );
  for (const name of ['year', 'month'])
    console.log(
      `  bicycle_quality CPU, night by night (${name}): ${nights[name].map((r) => r.perStep.find((s) => s.id === 'bicycle_quality')?.cpu_ms).join(', ')} ms`,
    );
  console.log(
    `\nbicycle_quality, median of the nights: 12 months ${quality.year.ms} ms (CPU ${quality.year.cpu} ms), ` +
      `1 month ${quality.month.ms} ms (CPU ${quality.month.cpu} ms): ` +
      `wall ${(quality.year.ms / quality.month.ms).toFixed(2)}x, CPU ${(quality.year.cpu / quality.month.cpu).toFixed(2)}x (target: at most 1.3x)`,
  );
  const wall = summary.year.ms / summary.month.ms;
  const client = summary.year.cpu / summary.month.cpu;
  const steps = summary.year.steps / summary.month.steps;
  console.log(
    `\nA year of history against a month: wall ${wall.toFixed(2)}x, client CPU ${client.toFixed(2)}x ` +
      `(target: at most 1.3x); the steps' CPU alone ${steps.toFixed(2)}x`,
  );
  for (const dir of [year.dir, month.dir, `${year.dir}.filled`, `${month.dir}.filled`])
    await rm(dir, { recursive: true, force: true });
} finally {
  await simulator.stop();
}
