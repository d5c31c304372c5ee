/**
 * What a sql step's outputs are now: whether they are there, whether a
 * partition is gone (which asks for a whole build), and their partitions'
 * fingerprints for the checkpoint.
 */
import { join } from 'node:path';
import { DERIVED_FOLDER } from '../duckdb/datasets.js';
import { PartitionIndex } from '../duckdb/partitions.js';
import type { OutputPrints } from './input-changes.js';
import type { PlanContext } from './step-kind.js';
import { namesIn, type FolderFiles } from '../duckdb/folder-files.js';

/** Whether every output has been written (its folder holds a file or a partition). */
export function outputsPresent(
  files: FolderFiles,
  output: string,
  outputs: readonly string[],
): Promise<boolean> {
  for (const name of outputs) {
    const entries = namesIn(files, join(output, DERIVED_FOLDER, name));
    if (!entries.some((e) => e.endsWith('.parquet') || e.includes('=')))
      return Promise.resolve(false);
  }
  return Promise.resolve(true);
}

/**
 * A partition of the outputs that was there when last known whole and is
 * gone now (removed by --repair, or by hand), as `output/column=value`.
 */
export function goneOutput(
  context: PlanContext,
  outputs: readonly string[],
  whole: OutputPrints | undefined,
): string | undefined {
  const index = context.partitions ?? new PartitionIndex();
  for (const name of outputs) {
    const scan = index.scan(join(context.output, DERIVED_FOLDER, name));
    const gone = Object.keys(whole?.[name] ?? {}).find((value) => !scan.partitions.has(value));
    if (gone !== undefined) return `${name}/${scan.column ?? ''}=${gone}`;
  }
  return undefined;
}

/**
 * The fingerprints of the outputs' partitions as they are now, for the
 * checkpoint (BuildCheckpoint.outputs): taken once they are known whole
 * (checked by planBuild, or written by the step).
 */
export function outputPrints(context: PlanContext, outputs: readonly string[]): OutputPrints {
  const index = context.partitions ?? new PartitionIndex();
  return Object.fromEntries(
    outputs.map((name) => [
      name,
      Object.fromEntries(index.scan(join(context.output, DERIVED_FOLDER, name)).partitions),
    ]),
  );
}
