/**
 * What a partial build reads of the dataset it is built from
 * (`incremental.reads`): the partitions the partitions to build read, and the
 * step's view of the dataset narrowed to their files, so that a night over a
 * year of partitions lists the files of its window only (DuckDB lists every
 * partition of a view's glob at each statement).
 */
import { join } from 'node:path';
import { quotedIdentifier, type Database } from '../duckdb/database.js';
import { datasetQuery, type Dataset } from '../duckdb/datasets.js';
import { PartitionIndex, partitionFolder, partitionKeySql } from '../duckdb/partitions.js';
import { remoteFilesOf } from '../store/remote-files.js';
import { RunError } from '../errors.js';
import type { IncrementalOptions, PartialChanges } from './sql-build.js';

/** The DuckDB variable that holds the output partitions to build (a list; unset: all of them). */
export const PARTITIONS_VARIABLE = 'partitions';

/** Partitions of the dataset a partial build reads: `values` of `column` in `source`. */
export interface InputRead {
  source: Dataset;
  column: string;
  values: readonly string[];
}

/**
 * The partitions of `from` that `incremental.reads` says the partitions to
 * build read (those there are), as their folder values.
 */
export async function readPartitions(
  db: Database,
  incremental: IncrementalOptions,
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
         SELECT (${incremental.reads!}) AS reads
         FROM (SELECT CAST(unnest(getvariable('${PARTITIONS_VARIABLE}')) AS ${outputType}) AS ${quotedIdentifier(column)})))
       WHERE r IS NOT NULL`,
    );
  } catch (error) {
    throw new RunError(
      `incremental.reads (${incremental.reads}) over the partitions to build (${column}): ${(error as Error).message.split('\n')[0]!}`,
      { cause: error },
    );
  }
  const there = new Set(input.current);
  const values = rows.map((r) => String(r['key'])).filter((v) => there.has(v));
  return { source: input.source, column: input.column, values: values.sort() };
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
  // A folder in an object store: these files are fetched now, and only these.
  await remoteFilesOf(read.source.folder)?.fetch(files);
  // None of them there: the columns without rows.
  const query =
    files.length > 0
      ? await datasetQuery(db, read.source, files)
      : `${await datasetQuery(db, read.source, read.source.sample === undefined ? undefined : [read.source.sample])} WHERE false`;
  await db.run(`CREATE OR REPLACE TEMP VIEW ${quotedIdentifier(read.source.name)} AS ${query}`);
}
