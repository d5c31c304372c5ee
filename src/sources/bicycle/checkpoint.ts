/**
 * What a measurement step keeps between runs: the limits learned from the
 * service's refusals, and the batches an unfinished run has staged.
 */
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import type { Logger } from '../../log.js';
import { readCheckpoint, type AheadWork, type PlanContext } from '../context.js';
import { commitFile, exists, makeFolder } from '../../util/fs.js';
import type { Batch } from './batches.js';
import { emptyLimits, type LearnedLimits, type Limit } from './sizing.js';

const limit = z.object({ max_ok: z.number().nullable(), min_fail: z.number().nullable() });

export const measurementsCheckpoint = z.object({
  version: z.literal(1),
  limits: z.object({ locations: limit, period_hours: limit }),
  run: z
    .object({
      key: z.string(),
      start: z.string(),
      end: z.string(),
      batches: z.array(
        z.object({
          from: z.number(),
          to: z.number(),
          ids: z.array(z.string()),
          file: z.string(),
          rows: z.number(),
          quarantined: z.number(),
        }),
      ),
    })
    .nullable(),
});

export type MeasurementsCheckpoint = z.output<typeof measurementsCheckpoint>;

/** A staged batch as the checkpoint lists it. */
export interface StagedRecord extends Batch {
  file: string;
  rows: number;
  quarantined: number;
}

/** The checkpoint of a step that has none yet. */
export function emptyMeasurementsCheckpoint(): MeasurementsCheckpoint {
  return { version: 1, limits: emptyLimits(), run: null };
}

export function readMeasurementsCheckpoint(context: PlanContext): MeasurementsCheckpoint {
  return readCheckpoint(context, measurementsCheckpoint, emptyMeasurementsCheckpoint);
}

/**
 * The batches of the unfinished run `run` still staged, when its key is `key`;
 * a run with another key is set aside (returned, to be told). Staged files the
 * checkpoint does not list (a run killed before recording them) are removed.
 */
export async function resumeStaged(
  staging: string,
  run: MeasurementsCheckpoint['run'],
  key: string,
): Promise<{ staged: StagedRecord[]; setAside: MeasurementsCheckpoint['run'] }> {
  const resumed = run?.key === key ? run : null;
  await makeFolder(staging);
  const staged: StagedRecord[] = [];
  for (const batch of resumed?.batches ?? []) {
    if (await exists(join(staging, batch.file))) staged.push(batch);
  }
  const keep = new Set(staged.map((b) => b.file));
  for (const name of await readdir(staging)) {
    if (!keep.has(name)) await rm(join(staging, name), { recursive: true, force: true });
  }
  return { staged, setAside: resumed ? null : run };
}

/**
 * The checkpoint a run starts from: the learned limits, and the batches an
 * unfinished run with the same key (period and selection) staged; says so in
 * the log when it resumes one or sets another aside.
 */
export async function resumeRun(
  checkpoint: MeasurementsCheckpoint,
  run: { staging: string; key: string; start: string; end: string },
  log: Logger,
): Promise<{ current: MeasurementsCheckpoint; staged: StagedRecord[] }> {
  const { staged, setAside } = await resumeStaged(run.staging, checkpoint.run, run.key);
  if (setAside)
    log.log(
      'warn',
      'bicycle.abandoned',
      `An unfinished run for ${setAside.start} .. ${setAside.end} is set aside: this run's period or selection differs (the dates it had completed keep its rows; its other staged batches are dropped)`,
      { staged_batches: setAside.batches.length },
    );
  if (staged.length > 0)
    log.log(
      'info',
      'bicycle.resume',
      `Resuming: ${staged.length} batch(es) of an unfinished run are already staged`,
      { staged_batches: staged.length },
    );
  const current: MeasurementsCheckpoint = {
    version: 1,
    limits: checkpoint.limits,
    run: { key: run.key, start: run.start, end: run.end, batches: staged },
  };
  return { current, staged };
}

/** What two runs learned of one limit: the largest size that worked, the smallest that failed (the later run's pair when they disagree). */
function mergedLimit(mine: Limit, later: Limit): Limit {
  const pick = (a: number | null, b: number | null, f: (x: number, y: number) => number) =>
    a === null ? b : b === null ? a : f(a, b);
  const ok = pick(mine.max_ok, later.max_ok, Math.max);
  const fail = pick(mine.min_fail, later.min_fail, Math.min);
  return ok !== null && fail !== null && ok >= fail ? later : { max_ok: ok, min_fail: fail };
}

/**
 * The checkpoint a run starts from: the step's, with the batches a run waiting
 * for the folder fetched for it taken up (adoptStagedAhead); a run that
 * fetches ahead starts from the limits alone.
 */
export async function startingCheckpoint(
  checkpoint: MeasurementsCheckpoint,
  ahead: AheadWork | undefined,
  run: { staging: string; key: string; log: Logger },
): Promise<MeasurementsCheckpoint> {
  if (ahead?.mode === 'stage') return { ...checkpoint, run: null };
  if (ahead?.mode !== 'adopt') return checkpoint;
  const staged = measurementsCheckpoint.safeParse(ahead.checkpoint);
  if (!staged.success) return checkpoint;
  return adoptStagedAhead(checkpoint, { staging: ahead.staging, checkpoint: staged.data }, run);
}

/**
 * The checkpoint with the batches a run waiting for the folder fetched ahead
 * (`ahead`), when they are this run's work (the same key) and the folder holds
 * no unfinished run of that key: their files are moved into `staging`, and the
 * limits both learned are kept. Otherwise the checkpoint as it was.
 */
export async function adoptStagedAhead(
  checkpoint: MeasurementsCheckpoint,
  ahead: { staging: string; checkpoint: MeasurementsCheckpoint },
  { staging, key, log }: { staging: string; key: string; log: Logger },
): Promise<MeasurementsCheckpoint> {
  const staged = ahead.checkpoint.run;
  const limits: LearnedLimits = {
    locations: mergedLimit(checkpoint.limits.locations, ahead.checkpoint.limits.locations),
    period_hours: mergedLimit(checkpoint.limits.period_hours, ahead.checkpoint.limits.period_hours),
  };
  if (staged?.key !== key || checkpoint.run?.key === key || staged.batches.length === 0)
    return { ...checkpoint, limits };
  await makeFolder(staging);
  for (const name of await readdir(staging))
    await rm(join(staging, name), { recursive: true, force: true });
  for (const batch of staged.batches)
    await commitFile(join(ahead.staging, batch.file), join(staging, batch.file));
  log.log(
    'info',
    'bicycle.adopted',
    `${staged.batches.length} batch(es) fetched while waiting for the folder are taken up`,
    { staged_batches: staged.batches.length },
  );
  return { version: 1, limits, run: staged };
}
