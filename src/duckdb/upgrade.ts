/**
 * Datasets written by an earlier version, brought to today's columns. A dataset
 * that grows by appending files (the event feed's days, the daily snapshots)
 * keeps its old files: where today's files carry a column the old ones lack,
 * each old file is rewritten with it (atomically, one at a time), so that every
 * file of the dataset has the same columns and its view shows them all.
 *
 * The files are rewritten last to first: the first file having the column
 * means all have it, which a run checks with one footer read.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { commitFile, temporaryPath, writeThrough } from '../util/fs.js';
import { quotedString, type Database } from './database.js';
import { writtenByEarlierVersion, portableCopySql, type CopyOptions } from './portable.js';

/**
 * The Parquet files of a dataset folder (and of its partitions), sorted:
 * listed synchronously, as a year of partitions is listed at every run.
 */
function datasetFiles(folder: string): string[] {
  const list = (path: string) => {
    try {
      return readdirSync(path, { withFileTypes: true });
    } catch {
      return [];
    }
  };
  const files: string[] = [];
  for (const entry of list(folder)) {
    if (entry.name.startsWith('.')) continue;
    if (entry.isFile() && entry.name.endsWith('.parquet')) files.push(join(folder, entry.name));
    else if (entry.isDirectory() && entry.name.includes('=')) {
      for (const file of list(join(folder, entry.name)))
        if (file.isFile() && file.name.endsWith('.parquet') && !file.name.startsWith('.'))
          files.push(join(folder, entry.name, file.name));
    }
  }
  return files.sort();
}

/**
 * Whether a file has the column; undefined when it cannot be read as Parquet
 * (left as it is: reading the dataset names the damaged file and what to do).
 */
async function hasColumn(db: Database, file: string, column: string): Promise<boolean | undefined> {
  try {
    const [row] = await db.all(
      `SELECT count(*) AS n FROM parquet_schema(${quotedString(file)}) WHERE name = $column`,
      { column },
    );
    return Number(row?.['n']) > 0;
  } catch {
    return undefined;
  }
}

/**
 * Rewrites every file of the dataset in `folder` that `stale` finds stale as
 * `select` (over the file, read as it is) gives it, last to first, so that a
 * first file up to date means all are. Resolves to the number of files rewritten.
 */
async function rewriteStaleFiles(
  db: Database,
  folder: string,
  scratch: string,
  stale: (file: string) => Promise<boolean | undefined>,
  select: (read: string) => string,
): Promise<number> {
  const files = datasetFiles(folder);
  if (files.length === 0 || (await stale(files[0]!)) !== true) return 0;
  let rewritten = 0;
  for (const file of files.reverse()) {
    if ((await stale(file)) !== true) continue;
    const temporary = temporaryPath(file, scratch);
    // Read as the file it is: no partition column from its folder's name.
    const read = `read_parquet(${quotedString(file)}, hive_partitioning = false)`;
    await db.run(await portableCopySql(db, `(${select(read)})`, temporary));
    await commitFile(temporary, file);
    rewritten++;
  }
  return rewritten;
}

/**
 * Adds `column` (the SQL `expression` over the file's own columns) to every
 * file of the dataset in `folder` that lacks it. Resolves to the number of
 * files rewritten (0 when the dataset is up to date or absent).
 */
export async function addMissingColumn(
  db: Database,
  folder: string,
  column: string,
  expression: string,
  scratch: string,
): Promise<number> {
  return rewriteStaleFiles(
    db,
    folder,
    scratch,
    async (file) => {
      const has = await hasColumn(db, file, column);
      return has === undefined ? undefined : !has;
    },
    (read) => `SELECT *, ${expression} AS ${column} FROM ${read}`,
  );
}

/**
 * Rewrites the files of the dataset in `folder` that an earlier version wrote
 * (ids as UUID, JSON as annotated bytes, a point without its covering box) as
 * this one writes them (portable.ts). Resolves to the number of files rewritten.
 */
export async function portableTypes(
  db: Database,
  folder: string,
  scratch: string,
): Promise<number> {
  return rewriteStaleFiles(
    db,
    folder,
    scratch,
    (file) => writtenByEarlierVersion(db, file),
    (read) => `SELECT * FROM ${read}`,
  );
}

/**
 * Writes the Parquet file `source`, read as it is (no partition column from its
 * folder's name), to `target` with one more column, `column`, the SQL `value`:
 * whole and atomically, as road-etl writes Parquet. For a dataset whose
 * partition value becomes a column when its layout changes.
 */
export async function copyWithColumn(
  db: Database,
  file: { source: string; target: string; scratch: string },
  column: string,
  value: string,
  options: CopyOptions = {},
): Promise<number> {
  const read = `read_parquet(${quotedString(file.source)}, hive_partitioning = false)`;
  return writeThrough(file.target, file.scratch, async (temporary) =>
    db.copy(
      await portableCopySql(
        db,
        `(SELECT *, ${value} AS ${column} FROM ${read})`,
        temporary,
        options,
      ),
    ),
  );
}
