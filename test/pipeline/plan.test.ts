/**
 * `road-etl plan`: what the next night builds and reads of a folder with a
 * year of data, decided before anything runs; then that night, whose
 * manifest records the decision each step carried out: the same, and the
 * files each step wrote lie in what its decision says it builds.
 */
import { readdir, stat } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { describe, expect, it } from 'vitest';
import { idsWithPrefix, lookbackGaps, nightDates } from '../helpers/bicycle.js';
import type { Plan } from '../../src/pipeline/plan.js';
import type { StepDecision } from '../../src/steps/step-kind.js';
import { ROOT, runCli } from '../helpers/cli.js';
import { readManifest } from '../helpers/pipeline.js';
import { useSimulator } from '../helpers/simulator.js';
import { testDir } from '../helpers/tmp.js';

const simulator = await useSimulator({
  seed: 3,
  now: '2026-11-15T00:00:00Z',
  bicycle: { locations: 12 },
});

const BICYCLE = join(ROOT, 'pipelines', 'bicycle.yaml');
const period = (start: string, end: string) => [
  '--param', `start=${start}`, '--param', `end=${end}`, '--param', 'prefixes=UTR',
]; // prettier-ignore

/** Every file of the folder (its state aside) with its size and time. */
async function listing(output: string): Promise<string[]> {
  const entries = await readdir(output, { recursive: true, withFileTypes: true });
  const files = entries.filter((e) => e.isFile());
  return Promise.all(
    files.map(async (e) => {
      const path = join(e.parentPath, e.name);
      const info = await stat(path);
      return `${relative(output, path)} ${info.size} ${info.mtimeMs}`;
    }),
  );
}

/** The dataset (view name) and partition value of a data file of the folder. */
function datasetOf(path: string): { dataset: string; partition: string | undefined } {
  const parts = path.split(sep).slice(0, -1);
  const partition = parts.find((p) => p.includes('='))?.split('=')[1];
  const folders = parts.filter((p) => !p.includes('='));
  return {
    dataset: folders[0] === 'derived' ? folders[1]! : folders.join('_'),
    partition,
  };
}

/** Whether a file a step wrote lies in what its decision builds (an extract, with its metadata). */
function within(decision: StepDecision, path: string): boolean {
  if (path.startsWith('exports/'))
    return decision.files?.includes(path.replace(/\.csv-metadata\.json$|\.csvt$/, '.csv')) ?? false;
  const { dataset, partition } = datasetOf(path);
  return [...decision.builds, ...(decision.may_build ?? [])].some(
    (b) =>
      b.dataset === dataset && (b.partitions === 'all' || b.partitions.includes(partition ?? '')),
  );
}

describe('road-etl plan', () => {
  it('prints what the next night builds and reads of a year of data, and the night does what it printed', async () => {
    const output = join(await testDir(), 'output');
    const env = { ...simulator.env };
    const year = await runCli(
      [
        'run',
        BICYCLE,
        '--output',
        output,
        ...period('2025-10-01T00:00:00Z', '2026-10-01T00:00:00Z'),
      ],
      { env },
    );
    expect(year.code, year.stderr).toBe(0);

    const night = period('2026-10-01T00:00:00Z', '2026-10-02T00:00:00Z');
    const before = await listing(output);
    const printed = await runCli(
      ['plan', BICYCLE, '--output', output, ...night, '--format', 'json'],
      {
        env,
      },
    );
    expect(printed.code, printed.stderr).toBe(0);
    // The plan changes nothing, the folder's state included.
    expect(await listing(output)).toEqual(before);
    const plan = JSON.parse(printed.stdout) as Plan;
    const decisions = new Map(plan.steps.map((s) => [s.id, s.decision!]));

    // What a hand would say of this night: the measurements of its UTC date, and, where late
    // hours arrive, of the dates from the first hour missing in the week before it, which
    // the lookback asks for again (none arrive here: the simulator's lost hours stay lost);
    // the hourly table of the local dates the night's hours fall on (and the next, for its
    // last hours); the summary, which is not incremental, whole.
    const dates = nightDates(
      simulator,
      idsWithPrefix(simulator, 'UTR'),
      Date.parse('2026-10-01T00:00:00Z'),
    );
    expect(dates.length).toBeGreaterThan(1);
    // The gaps it asks for again: the location-hours the simulator does not serve, of the
    // hours each location could count (a counter whose validity ended is not asked for).
    const gaps = lookbackGaps(
      simulator,
      idsWithPrefix(simulator, 'UTR'),
      Date.parse('2026-10-01T00:00:00Z'),
    );
    expect(gaps.hours).toBeGreaterThan(0);
    const planned = plan.steps.find((s) => s.id === 'bicycle_measurements')!.plan as {
      lookback: { locations: string[]; hours: number };
    };
    expect(planned.lookback).toMatchObject(gaps);
    const today = ['2026-10-01'];
    const next = '2026-10-02';
    expect(decisions.get('bicycle_measurements')).toMatchObject({
      decision: 'partial',
      builds: [
        { dataset: 'bicycle_measurements', partitions: today },
        { dataset: 'bicycle_quarantine', partitions: 'all' },
      ],
      may_build: [{ dataset: 'bicycle_measurements', partitions: dates.slice(0, -1) }],
      reads: [
        { dataset: 'bicycle_measurements', partitions: dates.slice(0, -1) },
        { dataset: 'bicycle_locations', partitions: 'all' },
      ],
    });
    expect(decisions.get('bicycle_hourly')).toMatchObject({
      decision: 'partial',
      builds: [{ dataset: 'bicycle_hourly', partitions: [...today, next] }],
    });
    expect(decisions.get('bicycle_summary')).toMatchObject({ decision: 'whole' });
    // No step names a date past the night's data (its last local date) or a month after it:
    // the quality rules touch the 37 days after a changed date, which hold nothing yet.
    const past: string[] = [];
    for (const [id, decision] of decisions)
      for (const set of [...decision.builds, ...(decision.may_build ?? []), ...decision.reads])
        if (set.partitions !== 'all')
          for (const value of set.partitions)
            if (/^\d{4}-\d\d-\d\d$/.test(value) && value > next)
              past.push(`${id}: ${set.dataset} ${value}`);
    for (const [id, decision] of decisions)
      for (const file of decision.files ?? [])
        if ((/\/(\d{4}-\d\d)\.csv$/.exec(file)?.[1] ?? '') > next.slice(0, 7))
          past.push(`${id}: ${file}`);
    expect(past).toEqual([]);
    expect(decisions.get('bicycle_quality')).toMatchObject({
      decision: 'partial',
      builds: [
        { dataset: 'bicycle_quality', partitions: expect.arrayContaining(today) as unknown },
      ],
    });
    expect(decisions.get('export_bicycle_hourly')).toMatchObject({
      decision: 'partial',
      files: [
        ...new Set([...today, next].map((d) => `exports/bicycle_hourly/${d.slice(0, 7)}.csv`)),
      ],
    });

    const ran = await runCli(['run', BICYCLE, '--output', output, ...night], { env });
    expect(ran.code, ran.stderr).toBe(0);
    const { run } = await readManifest(output);
    const outside: string[] = [];
    for (const step of run.steps) {
      // The decision the step carried out is the one printed before the night (no late hour
      // arrived: each did the certain part of it, none of its bound).
      const { decision, why, builds, reads, files } = decisions.get(step.id)!;
      expect(step.plan, step.id).toMatchObject({ decision, why, builds, reads });
      expect((step.plan as StepDecision).files, step.id).toEqual(files);
      // What it wrote lies in what it said it builds.
      for (const file of step.files)
        if (!within(step.plan as StepDecision, file.path)) outside.push(`${step.id}: ${file.path}`);
    }
    expect(outside).toEqual([]);
    // No late hour arrived: the dates before the night were left as they were.
    const measured = run.steps.find((s) => s.id === 'bicycle_measurements')!;
    const notes = measured.notes as {
      dates_rewritten: string[];
      lookback: { dates_rewritten: string[] };
    };
    expect(notes.dates_rewritten).toEqual(today);
    expect(notes.lookback.dates_rewritten).toEqual([]);
  }, 240_000);

  it('on a folder of another layout, or with a param missing, exits 2 and changes nothing', async () => {
    const output = join(await testDir(), 'output');
    const missing = await runCli(['plan', BICYCLE, '--output', output, '--param', 'prefixes=UTR'], {
      env: { ...simulator.env },
    });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/start/);
    await expect(stat(output)).rejects.toThrow();
  });
});
