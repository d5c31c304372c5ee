/**
 * What a measurement run will request, computed from its inputs and state
 * alone (no network, no DuckDB): `validate` prints it, and a run counts its
 * progress with the same functions as its limits are learned.
 */
import { createHash } from 'node:crypto';
import { HOUR_MS } from '../../util/time.js';
import { WorkPlan, type Batch } from './batches.js';
import type { SelectionSpec } from './selection.js';
import { plannedSizes, type LearnedLimits, type SizeGuesses } from './sizing.js';

export interface MeasurementsPlanInput {
  /** The run's locations; undefined when they are known only at run time (no catalog yet). */
  ids: readonly string[] | undefined;
  /** The period [from, to) in ms, whole hours. */
  from: number;
  to: number;
  limits: LearnedLimits;
  /** Batches an unfinished run of the same key has staged. */
  staged: readonly Batch[];
  guesses: SizeGuesses;
  /** The selection is sent to the service as given (one request per window). */
  serverSide: boolean;
}

export interface MeasurementsPlan {
  hours: number;
  /** Sizes of the requests: what is known to work, else the first guesses. */
  sizes: { locations: number; hours: number };
  /** The sizes come from earlier runs' answers. */
  learned: boolean;
  /** Period windows of the whole period. */
  windows: number;
  /** Requests per window (undefined without the locations). */
  perWindow: number | undefined;
  /** Requests still to make, the staged batches left out (undefined without the locations). */
  requests: number | undefined;
}

/** Requests left of `work` at the sizes the limits give now. */
export function requestsLeft(
  work: WorkPlan,
  limits: LearnedLimits,
  guesses: SizeGuesses,
  serverSide: boolean,
  locations: number,
): number {
  const sizes = plannedSizes(limits, guesses);
  return work.requestsLeft(serverSide ? locations : sizes.locations, sizes.hours);
}

export function planMeasurements(input: MeasurementsPlanInput): MeasurementsPlan {
  const { ids, from, to, limits, guesses, serverSide } = input;
  const sizes = plannedSizes(limits, guesses);
  const hours = (to - from) / HOUR_MS;
  const windows = Math.ceil(hours / sizes.hours);
  const learned = limits.locations.max_ok !== null || limits.period_hours.max_ok !== null;
  if (ids === undefined)
    return { hours, sizes, learned, windows, perWindow: undefined, requests: undefined };
  const work = new WorkPlan([...ids], [from, to], input.staged);
  return {
    hours,
    sizes,
    learned,
    windows,
    perWindow: serverSide ? 1 : Math.ceil(ids.length / sizes.locations),
    requests: requestsLeft(work, limits, guesses, serverSide, ids.length),
  };
}

/**
 * The key of a run: its period, locations and how they are asked for. An
 * unfinished run resumes only under the same key.
 */
export function runKey(
  spec: SelectionSpec,
  serverSide: boolean,
  ids: readonly string[],
  from: number,
  to: number,
): string {
  return createHash('sha256')
    .update(JSON.stringify({ from, to, ids, mode: spec.mode, serverSide }))
    .digest('hex')
    .slice(0, 16);
}

/** Every batch of the work left, in the order a run takes them, at fixed sizes. */
export function plannedBatches(
  ids: readonly string[],
  period: [number, number],
  staged: readonly Batch[],
  sizes: { locations: number; hours: number },
): Batch[] {
  const work = new WorkPlan(ids, period, staged);
  const batches: Batch[] = [];
  for (;;) {
    const batch = work.next(sizes.locations, sizes.hours);
    if (!batch) return batches;
    batches.push(batch);
  }
}
