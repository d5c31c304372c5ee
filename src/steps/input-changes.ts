/**
 * What has changed in a dataset since a step last built on it. The step keeps,
 * in its checkpoint, a hash of its own definition and a fingerprint of every
 * partition of the dataset it reads, as they were when it last finished. The
 * partitions that differ now (added, rewritten, removed) are the work of this
 * run; no checkpoint, another definition, missing outputs or a dataset without
 * partitions mean all of it. The checkpoint is saved only after the outputs are
 * written, so a run cut short is followed by one that does at least as much.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { discoverDatasets, type Dataset } from '../duckdb/datasets.js';
import { PartitionIndex, type PartitionScan } from '../duckdb/partitions.js';
import { readCheckpoint } from '../sources/context.js';
import type { PlanContext } from './step-kind.js';
import { folderFilesOf } from '../duckdb/folder-files.js';

const buildCheckpoint = z.object({
  version: z.literal(1),
  /** A hash of what defines the outputs (the file, its params, the options). */
  definition: z.string(),
  /** Partition value of the dataset read -> its fingerprint when the outputs were built. */
  inputs: z.record(z.string(), z.string()).optional(),
  /** Other datasets whose any change asks for everything: name -> fingerprint of all its files. */
  whole: z.record(z.string(), z.string()).optional(),
  /**
   * Output -> partition value -> fingerprint of its files when they were last
   * known whole (written by the step, or checked): a partition unchanged since
   * is not opened again to check it.
   */
  outputs: z.record(z.string(), z.record(z.string(), z.string())).optional(),
});

export type BuildCheckpoint = z.output<typeof buildCheckpoint>;

/** Output -> partition value -> fingerprint (BuildCheckpoint.outputs). */
export type OutputPrints = NonNullable<BuildCheckpoint['outputs']>;

/** The dataset read: where it is, its partition column, and its partition values now, in order. */
export interface InputPartitions {
  source: Dataset;
  column: string;
  current: readonly string[];
}

/**
 * A dataset's partitions as they are now: their fingerprints, and their
 * values when the dataset is kept in partitions (not when its files lie in
 * its folder itself, or it is not there).
 */
export function partitionsNow(
  source: Dataset | undefined,
  index: PartitionIndex,
): { scan: PartitionScan; input: InputPartitions | undefined } {
  const scan = source
    ? index.scan(source.folder)
    : { column: undefined, partitions: new Map<string, string>() };
  const input =
    source && scan.column !== undefined && !scan.partitions.has('')
      ? { source, column: scan.column, current: [...scan.partitions.keys()].sort() }
      : undefined;
  return { scan, input };
}

export type InputChanges =
  | { mode: 'unchanged'; checkpoint: BuildCheckpoint; whole: OutputPrints | undefined }
  | { mode: 'full'; reason: string; checkpoint: BuildCheckpoint; input?: InputPartitions }
  | {
      mode: 'partial';
      /** The outputs' partitions last known whole (the checkpoint's `outputs`). */
      whole: OutputPrints | undefined;
      /** The partition values that changed, in order. */
      changed: readonly string[];
      /** Every partition value known now or at the last build, in order. */
      known: readonly string[];
      /** The partition values of the last build, in order. */
      previous: readonly string[];
      input: InputPartitions;
      checkpoint: BuildCheckpoint;
    };

/** A hash of a step's definition: whatever, when it changes, asks for everything to be built again. */
export function definitionHash(parts: readonly unknown[]): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex');
}

/** One fingerprint for all the files of a dataset ('' when there is none). */
function wholeFingerprint(dataset: { folder: string } | undefined, index: PartitionIndex): string {
  if (!dataset) return '';
  const { partitions } = index.scan(dataset.folder);
  const prints = [...partitions];
  return createHash('sha1')
    .update(JSON.stringify(prints.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))))
    .digest('hex');
}

/**
 * The changes to dataset `from` since the checkpoint of the step in `context`
 * was saved. `outputsPresent` says whether what the step wrote is still there;
 * a change to any of the datasets `whole` asks for everything.
 */
export async function inputChanges(
  context: PlanContext,
  from: string,
  definition: string,
  outputsPresent: () => Promise<boolean>,
  whole: readonly string[] = [],
): Promise<InputChanges> {
  const previous = readCheckpoint<BuildCheckpoint | undefined>(
    context,
    buildCheckpoint,
    () => undefined,
  );
  const datasets = await (context.datasets?.() ??
    discoverDatasets(context.output, folderFilesOf(context)));
  const index = context.partitions ?? new PartitionIndex();
  const source = datasets.find((d) => d.name === from);
  const { scan, input } = partitionsNow(source, index);
  const others = Object.fromEntries(
    whole.map((name) => [
      name,
      wholeFingerprint(
        datasets.find((d) => d.name === name),
        index,
      ),
    ]),
  );
  const checkpoint: BuildCheckpoint = {
    version: 1,
    definition,
    inputs: Object.fromEntries(scan.partitions),
    ...(whole.length > 0 ? { whole: others } : {}),
  };
  const full = (reason: string): InputChanges => ({
    mode: 'full',
    reason,
    checkpoint,
    ...(input ? { input } : {}),
  });
  if (!previous) return full('first build');
  if (previous.definition !== definition) return full('the definition changed');
  if (!previous.inputs) return full('no record of the input');
  if (!(await outputsPresent())) return full('an output is missing');
  // What the steps before write tonight (a plan made up front) counts as changed.
  const pending = context.pending;
  const otherChanged = whole.find(
    (name) => previous.whole?.[name] !== others[name] || pending?.has(name),
  );
  if (otherChanged !== undefined) return full(`${otherChanged} changed`);
  const written = pending?.get(from);
  if (written === 'all') return full(`${from} is written whole`);
  const changed = new Set<string>(written ?? []);
  for (const [value, print] of scan.partitions)
    if (previous.inputs[value] !== print) changed.add(value);
  for (const value of Object.keys(previous.inputs))
    if (!scan.partitions.has(value)) changed.add(value);
  if (changed.size === 0) return { mode: 'unchanged', checkpoint, whole: previous.outputs };
  if (!input || changed.has('')) return full(`${from} is not partitioned`);
  const current = [...new Set([...input.current, ...(written ?? [])])].sort();
  return {
    mode: 'partial',
    changed: [...changed].sort(),
    known: [...new Set([...current, ...Object.keys(previous.inputs)])].sort(),
    previous: Object.keys(previous.inputs).sort(),
    whole: previous.outputs,
    input: { ...input, current },
    checkpoint,
  };
}
