/**
 * The plan is what the night does. Nights of the bicycle pipeline whose
 * counters deliver late and in batches, with a night missed, over a month's
 * end: before each, `road-etl plan --format json`; after it, the manifest's
 * record of what each step did. A step whose plan is exact (it names no
 * partition or file it only may write) did exactly that; one whose work
 * depends on what lands (late hours) stayed within the bound its plan names.
 * No plan names a date past the night's data. The folder then equals one run
 * over the period.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Plan } from '../../src/pipeline/plan.js';
import type { StepDecision } from '../../src/steps/step-kind.js';
import { beyond, datesNamed, partings as partingsOf, partitions } from '../helpers/plans.js';
import { ROOT, runCli } from '../helpers/cli.js';
import { readManifest } from '../helpers/pipeline.js';
import { useSimulator } from '../helpers/simulator.js';
import { datasetDifference, testDir } from '../helpers/tmp.js';

const simulator = await useSimulator({
  seed: 64,
  now: '2026-10-20T00:00:00Z',
  bicycle: { locations: 10, batchUploadRate: 0.3, lateHourRate: 0.03 },
});

const DAY = 86_400_000;
const BICYCLE = join(ROOT, 'pipelines', 'bicycle.yaml');
const iso = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');
const period = (start: number, end: number) => [
  '--param', `start=${iso(start)}`, '--param', `end=${iso(end)}`, '--param', 'prefixes=UTR',
]; // prettier-ignore

describe('the plan is the night', () => {
  it('over nights with late hours and a missed night: each step does what its plan names, or stays within its bound', async () => {
    const env = { ...simulator.env };
    const output = join(await testDir(), 'nightly');
    const first = Date.parse('2026-10-24T00:00:00Z');
    const last = Date.parse('2026-11-06T00:00:00Z');
    const missed = Date.parse('2026-10-29T00:00:00Z');
    let start = first;
    const partings: string[] = [];
    const past: string[] = [];
    let bounded = 0;
    let beyondCertain = 0;
    for (let night = first; night < last; night += DAY) {
      // The night runs at 06:00 after its last hour; a missed night is caught up the next.
      simulator.world.setNow(iso(night + DAY + 6 * 3_600_000));
      if (night === missed) continue;
      const args = [BICYCLE, '--output', output, ...period(start, night + DAY)];
      const printed = await runCli(['plan', ...args, '--format', 'json'], { env });
      expect(printed.code, printed.stderr).toBe(0);
      const plan = JSON.parse(printed.stdout) as Plan;
      const ran = await runCli(['run', ...args], { env });
      expect(ran.code, ran.stderr).toBe(0);
      const { run } = await readManifest(output);
      const end = new Date(night + DAY).toISOString().slice(0, 10);
      partings.push(...partingsOf(plan, run.steps, iso(night)));
      for (const step of plan.steps) {
        const done = run.steps.find((s) => s.id === step.id)!.plan as StepDecision;
        if (step.decision!.may_build?.length || step.decision!.may_files?.length) bounded++;
        if (beyond(partitions(done.builds), partitions(step.decision!.builds)).length > 0)
          beyondCertain++;
        for (const date of datesNamed(step.decision!))
          if (date > end) past.push(`${iso(night)} ${step.id}: ${date}`);
      }
      start = night + DAY;
    }
    expect(partings).toEqual([]);
    expect(past).toEqual([]);
    // Late hours arrived on some nights: steps did more than their certain part, within bounds.
    expect(bounded).toBeGreaterThan(0);
    expect(beyondCertain).toBeGreaterThan(0);

    simulator.world.setNow(iso(last + 6 * 3_600_000));
    const once = join(await testDir(), 'once');
    const whole = await runCli(['run', BICYCLE, '--output', once, ...period(first, last)], {
      env,
    });
    expect(whole.code, whole.stderr).toBe(0);
    for (const dataset of [
      'bicycle/measurements',
      'derived/bicycle_hourly',
      'derived/bicycle_daily',
    ])
      expect(await datasetDifference(once, output, dataset), dataset).toBe(0);
  }, 300_000);
});
