/**
 * Decisions (StepDecision) of the step kinds that fetch from an upstream or
 * write extracts: what they write and read of the folder, from their plan
 * and options, before they run.
 */
import { join } from 'node:path';
import { PartitionIndex } from '../duckdb/partitions.js';
import { datesOf as utcDates } from '../sources/bicycle/date-commits.js';
import { formatIsoDate } from '../util/time.js';
import type { DecideContext, PartitionSet } from './step-kind.js';

/** The UTC dates (YYYY-MM-DD) that the period [start, end) touches. */
export function datesOf(start: string, end: string): string[] {
  return utcDates(Date.parse(start), Date.parse(end)).map(formatIsoDate);
}

/** The partition values of the dataset folder `relative` that are there now. */
export function partitionsThere(context: DecideContext, relative: string): Set<string> {
  const index = context.partitions ?? new PartitionIndex();
  return new Set(index.scan(join(context.output, relative)).partitions.keys());
}

/** Those of `values` that the dataset has now, or will have once the steps before have run. */
export function readOf(
  context: DecideContext,
  dataset: string,
  relative: string,
  values: readonly string[],
): PartitionSet {
  const there = partitionsThere(context, relative);
  const pending = context.pending?.get(dataset);
  const held = values.filter(
    (v) => there.has(v) || pending === 'all' || (pending?.includes(v) ?? false),
  );
  return { dataset, partitions: held };
}
