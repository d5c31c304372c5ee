/**
 * What a partial build reads of the dataset it is built from
 * (`incremental.reads`): the partitions the partitions to build read, and the
 * step's view of the dataset narrowed to their files, so that a night over a
 * year of partitions lists the files of its window only (DuckDB lists every
 * partition of a view's glob at each statement).
 */
import { join } from 'node:path';
import { quotedIdentifier, type Database } from '../duckdb/database.js';
import { datasetQuery, discoverDatasets, type Dataset } from '../duckdb/datasets.js';
import {
  PartitionIndex,
  partitionFolder,
  partitionKeySql,
  partitionListSql,
} from '../duckdb/partitions.js';
import { RunError } from '../errors.js';
import { partitionsNow, type InputChanges } from './input-changes.js';
import type { PlanContext } from './step-kind.js';
import { folderFilesOf } from '../duckdb/folder-files.js';

export interface IncrementalOptions {
  from: string;
  touches?: string | undefined;
  reads?: string | Readonly<Record<string, string>> | undefined;
  fold?: string | undefined;
  rebuild_on?: readonly string[] | undefined;
}

/** The changes of an input that an incremental build builds partially from. */
export type PartialChanges = Extract<InputChanges, { mode: 'partial' }>;

/** The DuckDB variable that holds the output partitions to build (a list; unset: all of them). */
export const PARTITIONS_VARIABLE = 'partitions';

/** Partitions of the dataset a partial build reads: `values` of `column` in `source`. */
export interface InputRead {
  source: Dataset;
  column: string;
  values: readonly string[];
  /** Every partition the dataset has, and the type of its column (as its view types it). */
  all?: { values: readonly string[]; type: string };
}

/** What `incremental.reads` says a partial build reads: SQL per dataset name. */
export function readsOf(incremental: IncrementalOptions): [string, string][] {
  const { reads } = incremental;
  if (reads === undefined) return [];
  return typeof reads === 'string' ? [[incremental.from, reads]] : Object.entries(reads);
}

/**
 * The partitions of a dataset that `sql` (from `incremental.reads`) says the
 * partitions to build read (those there are), as their folder values.
 */
async function readPartitions(
  db: Database,
  sql: string,
  column: string,
  outputType: string,
  input: PartialChanges['input'],
  inputType: string,
): Promise<InputRead> {
  let rows;
  try {
    rows = await db.all(
      `SELECT DISTINCT ${partitionKeySql(`CAST(r AS ${inputType})`, inputType)} AS key
       FROM (SELECT unnest(reads) AS r FROM (
         SELECT (${sql}) AS reads
         FROM (SELECT CAST(unnest(getvariable('${PARTITIONS_VARIABLE}')) AS ${outputType}) AS ${quotedIdentifier(column)})))
       WHERE r IS NOT NULL`,
    );
  } catch (error) {
    throw new RunError(
      `incremental.reads of ${input.source.name} (${sql}) over the partitions to build (${column}): ${(error as Error).message.split('\n')[0]!}`,
      { cause: error },
    );
  }
  const there = new Set(input.current);
  const values = rows.map((r) => String(r['key'])).filter((v) => there.has(v));
  return {
    source: input.source,
    column: input.column,
    values: values.sort(),
    all: { values: input.current, type: inputType },
  };
}

/** The type of a dataset's partition column, as its view types it. */
export async function partitionColumnType(
  db: Database,
  source: { name: string; hiveTypes: Record<string, string> },
  column: string,
): Promise<string> {
  const type = source.hiveTypes[column];
  if (type !== undefined) return type;
  const [described] = await db.all(
    `SELECT column_type FROM (DESCRIBE ${quotedIdentifier(source.name)}) WHERE column_name = $column`,
    { column },
  );
  return (described?.['column_type'] as string | undefined) ?? 'VARCHAR';
}

/** The partitions of each dataset `incremental.reads` names that the partitions to build read. */
export async function partialReads(
  db: Database,
  changes: PartialChanges,
  incremental: IncrementalOptions,
  column: string,
  outputType: string,
  context: PlanContext,
): Promise<InputRead[]> {
  const reads: InputRead[] = [];
  for (const [name, sql] of readsOf(incremental)) {
    const input = name === incremental.from ? changes.input : await partitionsOf(name, context);
    // A dataset not there yet: nothing of it to read.
    if (input === undefined) continue;
    const type = await partitionColumnType(db, input.source, input.column);
    reads.push(await readPartitions(db, sql, column, outputType, input, type));
  }
  return reads;
}

/**
 * The partitions of dataset `name` as they are now, with those the steps
 * before write tonight (a plan made up front); undefined when it is not there.
 */
async function partitionsOf(
  name: string,
  context: PlanContext,
): Promise<PartialChanges['input'] | undefined> {
  const datasets = await (context.datasets?.() ??
    discoverDatasets(context.output, folderFilesOf(context)));
  const source = datasets.find((d) => d.name === name);
  if (source === undefined) return undefined;
  const { input } = partitionsNow(source, context.partitions ?? new PartitionIndex());
  if (input === undefined)
    throw new RunError(
      `incremental.reads names ${name}, which is not kept in partitions: it can only be read whole`,
    );
  const pending = context.pending?.get(name);
  if (pending === undefined || pending === 'all') return input;
  return { ...input, current: [...new Set([...input.current, ...pending])].sort() };
}

/**
 * The view of the dataset a partial build reads, for this step's connection:
 * the files of the partitions `incremental.reads` names only (a temporary view
 * of the same name, before the folder's).
 */
export async function readOnly(
  db: Database,
  read: InputRead,
  index: PartitionIndex = new PartitionIndex(),
): Promise<void> {
  const files = read.values.flatMap((value) =>
    index.filesIn(join(read.source.folder, partitionFolder(read.column, value))),
  );
  // What it reads brought here, if the step's plan did not.
  await index.folderFiles.bring(files);
  // None of them there: the columns without rows.
  const query =
    files.length > 0
      ? await datasetQuery(db, read.source, files, index.folderFiles)
      : `${await datasetQuery(db, read.source, read.source.sample === undefined ? undefined : [read.source.sample], index.folderFiles)} WHERE false`;
  await db.run(`CREATE OR REPLACE TEMP VIEW ${quotedIdentifier(read.source.name)} AS ${query}`);
  // What partitions there are (before, after or between those read), known without reading them.
  if (read.all)
    await db.run(
      `SET VARIABLE ${quotedIdentifier(`partitions_of_${read.source.name}`)} = ${partitionListSql(read.all.values, read.all.type)}`,
    );
}
