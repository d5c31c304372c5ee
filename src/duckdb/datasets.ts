/**
 * The output folder's datasets, found by looking: a folder that holds Parquet
 * files (directly or in hive partitions key=value/) is a dataset. Its view name
 * is its path joined with "_" (signs/events -> signs_events); tables that SQL
 * steps derive live in derived/<name>/ and are named <name>.
 */
import { existsSync } from 'node:fs';
import { basename, join } from 'node:path';
import { MissingObjectError, RunError, firstLineOf } from '../errors.js';
import { quotedIdentifier, quotedString, type Database } from './database.js';
import { DISK, namesIn, type FolderFiles } from './folder-files.js';
import { folderFiles, partitionType, partitionNames } from './partitions.js';
import { fileNotes } from './portable.js';
import { committedFiles } from './views-script.js';

export const DERIVED_FOLDER = 'derived';
const SKIPPED = new Set(['.state', 'exports']);

export interface Dataset {
  name: string;
  /** Folder of the dataset, absolute. */
  folder: string;
  /** Path relative to the output folder. */
  relative: string;
  /** Types of partition columns that DuckDB would not find by itself (instants). */
  hiveTypes: Record<string, string>;
  /** Whether its files lie in partition folders (one level: column=value/). */
  partitioned: boolean;
  /** One of its files (the first found), whose metadata names the columns holding JSON text. */
  sample: string | undefined;
}

/** How a dataset folder is laid out: partitioned or not, and the types of its partition columns. */
export function datasetLayout(
  folder: string,
  files: FolderFiles = DISK,
): Promise<Pick<Dataset, 'folder' | 'hiveTypes' | 'partitioned' | 'sample'>> {
  return Promise.resolve(layoutOf(files, folder, namesIn(files, folder)));
}

/**
 * The layout of the dataset folder `folder`, whose entries are `names`
 * (sorted): read by name, synchronously, as every step looks again over a
 * year of partitions.
 */
function layoutOf(
  files: FolderFiles,
  folder: string,
  names: readonly string[],
): Pick<Dataset, 'folder' | 'hiveTypes' | 'partitioned' | 'sample'> {
  const { column, values } = partitionNames(names);
  const type = column === undefined ? undefined : partitionType(values);
  return {
    folder,
    hiveTypes: column !== undefined && type !== undefined ? { [column]: type } : {},
    partitioned: column !== undefined,
    sample: lastParquetFile(files, folder, names, 0),
  };
}

/**
 * A Parquet file of the folder (whose entries are `names`, sorted) or of its
 * partitions, whose metadata the view is made from: the last in order, of the
 * latest partition, which a night reads anyway where it reads any (a folder
 * in a store fetches the sample to make the view).
 */
function lastParquetFile(
  files: FolderFiles,
  folder: string,
  names: readonly string[],
  depth: number,
): string | undefined {
  const latest = [...names].reverse();
  for (const name of latest)
    if (name.endsWith('.parquet') && !name.startsWith('.') && !name.includes('='))
      return join(folder, name);
  if (depth >= 4) return undefined;
  for (const name of latest) {
    if (!name.includes('=') || name.startsWith('.') || name.endsWith('.parquet')) continue;
    const inner = join(folder, name);
    const found = lastParquetFile(files, inner, namesIn(files, inner), depth + 1);
    if (found !== undefined) return found;
  }
  return undefined;
}

export async function discoverDatasets(
  output: string,
  files: FolderFiles = DISK,
): Promise<Dataset[]> {
  const found: Dataset[] = [];
  async function walk(folder: string, segments: string[]): Promise<void> {
    const entries = files.list(folder);
    const names = entries.map((entry) => entry.name);
    const layout = segments.length > 0 ? layoutOf(files, folder, names) : undefined;
    if (layout?.sample !== undefined) {
      const derived = segments[0] === DERIVED_FOLDER && segments.length === 2;
      found.push({
        name: derived ? segments[1]! : segments.join('_'),
        relative: segments.join('/'),
        ...layout,
      });
      return;
    }
    if (segments.length >= 3) return;
    for (const entry of entries) {
      if (!entry.folder || entry.name.startsWith('.') || entry.name.includes('=')) continue;
      if (segments.length === 0 && SKIPPED.has(entry.name)) continue;
      await walk(join(folder, entry.name), [...segments, entry.name]);
    }
  }
  await walk(output, []);
  return found.sort((a, b) => a.name.localeCompare(b.name));
}

/**
 * Which files of a dataset a view reads: these paths, or an SQL expression of
 * their list (views.sql's, read from the folder's commit: committedFiles).
 */
export type DatasetFiles = readonly string[] | string;

/**
 * The SQL that reads a dataset folder (all its Parquet files, hive partitions as
 * columns). Each writer of road-etl writes its dataset with one schema, so the
 * files are read as they are: unifying them by name (`union_by_name`) would
 * make DuckDB open every file when the view is made and keep them open, over
 * 100 MB for the thousands of daily files of the event feed. Quarantine
 * datasets, written by steps of several kinds, are unified.
 */
export function readDatasetSql(
  dataset: Pick<Dataset, 'folder' | 'hiveTypes' | 'partitioned'>,
  only?: DatasetFiles,
): string {
  const unify = basename(dataset.folder) === 'quarantine';
  // One level of partitions: DuckDB lists the folders without looking deeper (a glob
  // of ** stats every file of a year of partitions at every query).
  const glob = dataset.partitioned ? join('*', '*.parquet') : '*.parquet';
  // Or the files given: DuckDB lists every partition of the glob at every statement.
  const files =
    only === undefined
      ? quotedString(join(dataset.folder, glob))
      : typeof only === 'string'
        ? only
        : `[${only.map(quotedString).join(', ')}]`;
  const types = Object.entries(dataset.hiveTypes);
  const hiveTypes =
    types.length > 0
      ? `, hive_types = {${types.map(([c, t]) => `${quotedString(c)}: '${t}'`).join(', ')}}`
      : '';
  return `read_parquet(${files}, hive_partitioning = true, union_by_name = ${unify}${hiveTypes})`;
}

/**
 * The query of a dataset's view: its files (readDatasetSql; `only` these of
 * them, when given), with the columns that hold JSON text (portable.ts) given
 * back as JSON.
 */
export async function datasetQuery(
  db: Database,
  dataset: Pick<Dataset, 'folder' | 'hiveTypes' | 'partitioned' | 'sample'>,
  only?: DatasetFiles,
  /** Where the folder's files are: the sample, whose metadata is read, is brought here. */
  files: FolderFiles = DISK,
): Promise<string> {
  if (dataset.sample !== undefined) await files.bring([dataset.sample]);
  const notes =
    dataset.sample === undefined
      ? { json: [], partition: undefined }
      : await fileNotes(db, dataset.sample);
  const replace =
    notes.json.length === 0
      ? ''
      : ` REPLACE (${notes.json.map((c) => `CAST(${quotedIdentifier(c)} AS JSON) AS ${quotedIdentifier(c)}`).join(', ')})`;
  // An empty partitioned dataset: its one folder holds NULL, of the type its file names.
  const hiveTypes =
    notes.partition && dataset.partitioned && Object.keys(dataset.hiveTypes).length === 0
      ? { [notes.partition.column]: notes.partition.type }
      : dataset.hiveTypes;
  return `SELECT *${replace} FROM ${readDatasetSql({ ...dataset, hiveTypes }, only)}`;
}

/**
 * A dataset of snapshots (its name ends in `_snapshots`, each file one
 * download, its moment in the column `snapshot`) also has a view of its latest snapshot, named
 * without the suffix (signs_live_snapshots -> signs_live).
 */
export function latestSnapshotView(dataset: Pick<Dataset, 'name'>): string | undefined {
  return dataset.name.endsWith('_snapshots')
    ? dataset.name.slice(0, -'_snapshots'.length)
    : undefined;
}

/**
 * The latest date of a dataset of snapshots partitioned by their UTC date
 * (`snapshot_date=YYYY-MM-DD`), whose folder holds a file: the partition of
 * its latest snapshot. Undefined for another layout.
 */
export function latestDay(
  dataset: Pick<Dataset, 'folder' | 'partitioned'>,
  files: FolderFiles = DISK,
): string | undefined {
  if (!dataset.partitioned) return undefined;
  const days = namesIn(files, dataset.folder)
    .map((name) => /^snapshot_date=(\d{4}-\d{2}-\d{2})$/.exec(name)?.[1])
    .filter((day) => day !== undefined)
    .reverse();
  return days.find((day) =>
    namesIn(files, join(dataset.folder, `snapshot_date=${day}`)).some(
      (name) => name.endsWith('.parquet') && !name.startsWith('.'),
    ),
  );
}

/**
 * The Parquet files of a dataset as they are now, in order: those of its
 * folder, or of its partition folders (one level).
 */
export function datasetFiles(
  dataset: Pick<Dataset, 'folder' | 'partitioned'>,
  files: FolderFiles = DISK,
): string[] {
  if (!dataset.partitioned) return folderFiles(dataset.folder, files) ?? [];
  return namesIn(files, dataset.folder)
    .filter((name) => name.includes('=') && !name.startsWith('.'))
    .flatMap((name) => folderFiles(join(dataset.folder, name), files) ?? []);
}

/**
 * Creates (or replaces) one view per dataset, and the views `derived` gives for
 * a dataset of that name (from its view and its latest snapshot's view), each
 * made from one of its files (brought here first). With `listed`, a view names
 * the dataset's files as they are now rather than a pattern; those not on this
 * machine (in an object store) are left out of it, and `named` gets its query
 * as views.sql has it: reading the files the folder's commit names. Resolves to the derived tables left without a
 * view because a file of theirs cannot be read (their step builds them anew).
 */
export async function createDatasetViews(
  db: Database,
  datasets: readonly Dataset[],
  derived: Readonly<
    Record<string, (view: string, latest: string | undefined) => Record<string, string>>
  > = {},
  {
    listed = false,
    files: folderFiles = DISK,
    named,
  }: {
    listed?: boolean | undefined;
    files?: FolderFiles;
    named?: Map<string, string> | undefined;
  } = {},
): Promise<string[]> {
  const unread: string[] = [];
  for (const dataset of datasets) {
    try {
      const files = listed ? datasetFiles(dataset, folderFiles) : undefined;
      const here = files?.filter((file) => existsSync(file));
      await db.run(
        `CREATE OR REPLACE VIEW ${quotedIdentifier(dataset.name)} AS ${await datasetQuery(db, dataset, here, folderFiles)}`,
      );
      if (listed && named)
        named.set(
          dataset.name,
          await datasetQuery(db, dataset, committedFiles(dataset.relative), folderFiles),
        );
      const latest = latestSnapshotView(dataset);
      if (latest) {
        const all = quotedIdentifier(dataset.name);
        // The moment is a column of each file, its date the partition.
        const columns = new Set(
          (await db.all(`DESCRIBE ${all}`)).map((c) => String(c['column_name'])),
        );
        const excluded = ['snapshot', 'snapshot_date'].filter((c) => columns.has(c));
        // Only the latest date's files are read: a year of snapshots is a billion rows.
        const day = latestDay(dataset, folderFiles);
        const within = day === undefined ? '' : `snapshot_date = ${quotedString(day)}`;
        const moment = within
          ? `(SELECT max(snapshot) FROM ${all} WHERE ${within})`
          : `(SELECT max(snapshot) FROM (SELECT DISTINCT snapshot FROM ${all}))`;
        await db.run(
          `CREATE OR REPLACE VIEW ${quotedIdentifier(latest)} AS SELECT * EXCLUDE (${excluded.join(', ')}) FROM ${all} WHERE ${within ? `${within} AND ` : ''}snapshot = ${moment}`,
        );
      }
      const more = derived[dataset.name]?.(
        quotedIdentifier(dataset.name),
        latest ? quotedIdentifier(latest) : undefined,
      );
      for (const [name, sql] of Object.entries(more ?? {}))
        await db.run(`CREATE OR REPLACE VIEW ${quotedIdentifier(name)} AS ${sql}`);
    } catch (error) {
      if (error instanceof MissingObjectError) throw error;
      // DuckDB reads the files' footers here: a damaged or foreign file shows up now.
      if (dataset.relative.startsWith(`${DERIVED_FOLDER}/`)) {
        await db.run(`DROP VIEW IF EXISTS ${quotedIdentifier(dataset.name)}`);
        unread.push(dataset.name);
        continue;
      }
      throw new RunError(
        `Cannot read dataset ${dataset.name} (${dataset.folder}): ${firstLineOf(error)}. ` +
          'A file in it is damaged or not Parquet: run the pipeline that writes it again with --repair <that file> (it removes that file alone and builds or fetches again what it held)',
        { cause: error },
      );
    }
  }
  return unread;
}

/** The datasets a SQL text names in its statements (a comment that names one reads nothing). */
export function namedIn<T extends Pick<Dataset, 'name'>>(
  text: string,
  datasets: readonly T[],
): T[] {
  const statements = text.replace(/\/\*[\s\S]*?\*\/|--[^\n]*/g, ' ');
  return datasets.filter((dataset) => new RegExp(`\\b${dataset.name}\\b`).test(statements));
}
