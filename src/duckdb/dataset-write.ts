/**
 * Writes a derived dataset: whole (one `data.parquet`), or partitioned by a
 * column into `<column>=<value>/data.parquet` folders, all of them or only
 * some. Every file is written beside its place and renamed into it; a
 * partition asked for that the rows no longer hold is removed, so that a
 * rebuilt partition is exactly what the query gives.
 */
import { randomBytes } from 'node:crypto';
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { RunError } from '../errors.js';
import { commitFiles, makeFolder, writeThrough } from '../util/fs.js';
import { quotedIdentifier, quotedString, type Database } from './database.js';
import { recordWritten, type FolderFiles } from './folder-files.js';
import {
  emptyPartitionValue,
  isEmptyPartition,
  partitionFolder,
  partitionKeySql,
  unescapePartitionValue,
} from './partitions.js';
import {
  EMPTY_FILE,
  copyStatement,
  portableCopySql,
  portableSource,
  type CopyOptions,
  type EmptyFile,
} from './portable.js';

const DATA_FILE = 'data.parquet';

export interface DatasetWrite {
  /** The rows: a table name (quoted) or a parenthesised query. */
  source: string;
  /** The dataset's folder, absolute. */
  folder: string;
  /** Where files are written before they are renamed into place (same file system). */
  scratch: string;
  /** Where the folder is listed and files are removed. */
  files: FolderFiles;
}

export interface WrittenDataset {
  rows: number;
  /** The files written (absolute), each with its content (recorded in the folder as written). */
  files: { path: string; sha256: string }[];
  /** Partitions removed because the rows no longer hold them. */
  removed: number;
}

/** A file just put in place, recorded in the folder's listing, with its content. */
async function recorded(
  files: FolderFiles,
  path: string,
): Promise<{ path: string; sha256: string }> {
  return { path, sha256: await recordWritten(files, path) };
}

/** The entries of a folder that are partitions (`x=...`), and its own Parquet files. */
function contents(files: FolderFiles, folder: string): { partitions: string[]; files: string[] } {
  const entries = files.list(folder);
  return {
    partitions: entries
      .filter((e) => e.folder && e.name.includes('=') && !e.name.startsWith('.'))
      .map((e) => e.name),
    files: entries
      .filter((e) => !e.folder && e.name.endsWith('.parquet') && !e.name.startsWith('.'))
      .map((e) => e.name),
  };
}

/**
 * Writes the rows of `source` to `target` as road-etl writes Parquet
 * (portable.ts). Rows in Hilbert order are sorted on one thread: a sort that
 * spills takes less CPU and memory so than on two (exports.ts, the same
 * measurement), and a derived table may hold a national state.
 */
async function copyInto(
  db: Database,
  source: string,
  target: string,
  options: CopyOptions = {},
): Promise<number> {
  const portable = await portableSource(db, source, options);
  const sql = copyStatement(portable, target);
  return portable.sorted ? db.withThreads(1, () => db.copy(sql)) : db.copy(sql);
}

/** Replaces the whole dataset with one file: the rows of `source`. */
export async function writeWholeDataset(
  db: Database,
  write: DatasetWrite,
): Promise<WrittenDataset> {
  const target = join(write.folder, DATA_FILE);
  let rows = await writeThrough(target, write.scratch, (temporary) =>
    copyInto(db, write.source, temporary),
  );
  // Without rows, written again with what DuckDB leaves out (GeoParquet metadata): a few bytes.
  if (rows === 0) rows = await writeEmpty(db, write, target, {});
  // What an earlier layout of the dataset left (partitions, other files) is not part of it now.
  const folderFiles = write.files;
  const { partitions, files } = contents(folderFiles, write.folder);
  for (const name of partitions) await folderFiles.remove(join(write.folder, name));
  for (const name of files)
    if (name !== DATA_FILE) await folderFiles.remove(join(write.folder, name));
  return { rows, files: [await recorded(folderFiles, target)], removed: partitions.length };
}

/**
 * Writes the rows of `source` partitioned by `column`: the partitions named in
 * `keys` (as partitionKeySql gives them) are replaced, and those the rows do
 * not hold are removed; with `keys` undefined, the whole dataset is replaced.
 * Rows of a partition not asked for are refused: the query was to build only those.
 */
export async function writePartitionedDataset(
  db: Database,
  write: DatasetWrite & { column: string; keys: readonly string[] | undefined },
): Promise<WrittenDataset> {
  const { folder, column, keys } = write;
  const folderFiles = write.files;
  const described = await db.all(`DESCRIBE SELECT * FROM ${write.source}`);
  const type = described.find((c) => c['column_name'] === column)?.['column_type'];
  if (typeof type !== 'string')
    throw new RunError(`the rows have no column ${column} to partition by`);
  const key = partitionKeySql(quotedIdentifier(column), type);
  await checkPartitionValues(db, write, key);

  const staging = join(
    write.scratch,
    `.partitions.tmp-${process.pid}-${randomBytes(4).toString('hex')}`,
  );
  try {
    await makeFolder(write.scratch);
    const rows = await copyInto(
      db,
      `(SELECT * EXCLUDE (${quotedIdentifier(column)}), ${key} AS __partition FROM ${write.source})`,
      staging,
      { extra: 'PARTITION_BY (__partition)' },
    );
    const written = await stagedPartitions(staging);
    const files: { path: string; sha256: string }[] = [];
    for (const [value, parts] of written) {
      const target = join(folder, partitionFolder(column, value));
      await makeFolder(target);
      const names = parts.map((_, i) => (i === 0 ? DATA_FILE : `data_${i}.parquet`));
      await commitFiles(parts.map((part, i) => [part, join(target, names[i]!)] as const));
      for (const name of contents(folderFiles, target).files)
        if (!names.includes(name)) await folderFiles.remove(join(target, name));
      for (const name of names) files.push(await recorded(folderFiles, join(target, name)));
    }
    // Partitions asked for (or, for the whole dataset, any) that the rows no longer hold.
    const keep = new Set([...written.keys()].map((value) => partitionFolder(column, value)));
    const { partitions, files: loose } = contents(folderFiles, folder);
    const empty = (name: string) =>
      isEmptyPartition(contents(folderFiles, join(folder, name)).files);
    const stale =
      keys === undefined
        ? partitions.filter((name) => !keep.has(name))
        : keys.map((k) => partitionFolder(column, k)).filter((name) => !keep.has(name));
    const removed = stale.filter((name) => partitions.includes(name) && !empty(name)).length;
    for (const name of stale) await folderFiles.remove(join(folder, name));
    // A partitioned dataset keeps no file of its own (an earlier version's empty one).
    for (const name of loose) await folderFiles.remove(join(folder, name));
    // One without any rows keeps an empty file in a partition of a value of the column's type,
    // so that it has its layout and columns (a view, GeoParquet, a reader typing the partition
    // column) before its first row: gone with that row.
    const left = contents(folderFiles, folder).partitions;
    const placeholders = left.filter(empty);
    if (left.length > placeholders.length) {
      for (const name of placeholders) await folderFiles.remove(join(folder, name));
    } else if (placeholders.length === 0) {
      const partition = partitionFolder(column, emptyPartitionValue(type));
      await makeFolder(join(folder, partition));
      const file = join(folder, partition, EMPTY_FILE);
      const source = `(SELECT * EXCLUDE (${quotedIdentifier(column)}) FROM ${write.source})`;
      await writeEmpty(db, { ...write, source }, file, { partition: { column, type } });
      files.push(await recorded(folderFiles, file));
    }
    return { rows, files, removed };
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

/** Writes `target` without rows: the columns of `write.source`, with what DuckDB leaves out of an empty file. */
async function writeEmpty(
  db: Database,
  write: DatasetWrite,
  target: string,
  empty: EmptyFile,
): Promise<number> {
  return writeThrough(target, write.scratch, (temporary) =>
    portableCopySql(db, `(SELECT * FROM ${write.source} LIMIT 0)`, temporary, { empty }).then(
      (sql) => db.copy(sql),
    ),
  );
}

/**
 * Refuses rows that belong to no partition asked for (`keys`), or, for the
 * whole dataset, rows without a value to partition by.
 */
async function checkPartitionValues(
  db: Database,
  { source, column, keys }: { source: string; column: string; keys: readonly string[] | undefined },
  key: string,
): Promise<void> {
  if (keys !== undefined) {
    const [stray] = await db.all(
      `SELECT ${key} AS key FROM ${source} WHERE ${key} IS NULL OR ${key} NOT IN (SELECT unnest(${listSql(keys)})) LIMIT 1`,
    );
    if (stray)
      throw new RunError(
        `the query gives rows of ${column} ${(stray['key'] as string | null) ?? 'NULL'}, a partition it was not asked to build (${keys.length > 0 ? keys.join(', ') : 'none'})`,
      );
    return;
  }
  const [nulls] = await db.all(
    `SELECT count(*) AS n FROM ${source} WHERE ${quotedIdentifier(column)} IS NULL`,
  );
  if (Number(nulls?.['n'] ?? 0) > 0)
    throw new RunError(`${String(nulls?.['n'])} rows have no ${column} to partition by`);
}

/** The files DuckDB wrote into `staging`, by partition value. */
async function stagedPartitions(staging: string): Promise<Map<string, string[]>> {
  const written = new Map<string, string[]>();
  for (const entry of await readdir(staging, { withFileTypes: true }).catch(() => [])) {
    if (!entry.isDirectory() || !entry.name.startsWith('__partition=')) continue;
    const value = unescapePartitionValue(entry.name.slice('__partition='.length));
    const files = (await readdir(join(staging, entry.name)))
      .filter((name) => name.endsWith('.parquet'))
      .sort()
      .map((name) => join(staging, entry.name, name));
    written.set(value, files);
  }
  return written;
}

/** A list of text values as a SQL literal. */
function listSql(values: readonly string[]): string {
  return `[${values.map(quotedString).join(', ')}]::VARCHAR[]`;
}

/**
 * Writes a query's rows to `target` as Parquet: under a temporary name in the
 * run's scratch folder, then renamed into place, and recorded for
 * the manifest. Resolves to the number of rows.
 */
export async function writeParquet(
  context: { scratch: string; recordFile(path: string): Promise<unknown> },
  db: Database,
  query: string,
  target: string,
): Promise<number> {
  const rows = await writeThrough(target, context.scratch, (temporary) =>
    portableCopySql(db, query, temporary).then((sql) => db.copy(sql)),
  );
  await context.recordFile(target);
  return rows;
}
