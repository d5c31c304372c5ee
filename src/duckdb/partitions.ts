/**
 * Hive partitions of a dataset folder (`<column>=<value>/`, one level): what
 * they are, a fingerprint of each (fingerprints.ts), and the text of a
 * partition value in a folder name. Values are escaped as Hive does (a `:`
 * becomes `%3A`), so that DuckDB, Arrow, Polars and Spark read them back as
 * they were.
 */
import { basename, dirname, sep } from 'node:path';
import { fingerprint } from './fingerprints.js';
import { DISK, namesIn, type FolderFiles } from './folder-files.js';
import { EMPTY_PARTITION } from './portable.js';
import { quotedString } from '@duckdb/node-api';

export interface PartitionScan {
  /** The partition column; undefined when the dataset's files are not partitioned. */
  column: string | undefined;
  /** Partition value (as text, unescaped) -> fingerprint of its files. */
  partitions: Map<string, string>;
}

/** Characters Hive escapes in a partition value (FileUtils.escapePathName), and `%` itself. */
// eslint-disable-next-line no-control-regex -- control characters are among those escaped
const ESCAPED = /["#%'*/:=?\\\u0000-\u001f\u007f{}[\]^]/g;

/** A partition value as it is written in a folder name. */
function escapePartitionValue(value: string): string {
  return value.replace(
    ESCAPED,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`,
  );
}

/** A partition value from its folder name. */
export function unescapePartitionValue(text: string): string {
  return text.replace(/%([0-9A-Fa-f]{2})/g, (_, hex: string) =>
    String.fromCharCode(parseInt(hex, 16)),
  );
}

/** The folder of a partition: `<column>=<escaped value>`. */
export function partitionFolder(column: string, value: string): string {
  return `${column}=${escapePartitionValue(value)}`;
}

/**
 * The Parquet files of a folder (in order): undefined when it holds none. By
 * name: a partition folder holds the files road-etl wrote (and perhaps a
 * temporary one, whose name begins with a dot).
 */
export function folderFiles(folder: string, files: FolderFiles = DISK): string[] | undefined {
  const found: string[] = [];
  for (const entry of files.list(folder))
    if (!entry.folder && entry.name.endsWith('.parquet') && !entry.name.startsWith('.'))
      found.push(`${folder}${sep}${entry.name}`);
  return found.length === 0 ? undefined : found;
}

/**
 * What a run knows of its datasets' partitions: each partition's files and
 * fingerprint, read once and kept until a step writes into it (`forget`), so
 * that a chain of steps over a year of partitions reads each of them once a
 * run, not once a step. The partitions of a folder are listed at each scan
 * (one call): a partition gone or added shows at once. A run holds the
 * folder's lock: nothing else writes into it meanwhile.
 */
export class PartitionIndex {
  /** Where the folders are listed and the files' content known. */
  readonly folderFiles: FolderFiles;
  /** Partition folder (or dataset folder, for its own files) -> its files; null: none. */
  readonly #folders = new Map<string, { files: string[]; print?: string | undefined } | null>();
  /** File -> its content (SHA-256), once asked. */
  readonly #files = new Map<string, { content: string | undefined }>();

  constructor(files: FolderFiles = DISK) {
    this.folderFiles = files;
  }

  #folder(folder: string): { files: string[]; print?: string | undefined } | undefined {
    let known = this.#folders.get(folder);
    if (known === undefined) {
      const files = folderFiles(folder, this.folderFiles);
      known = files ? { files } : null;
      this.#folders.set(folder, known);
    }
    return known ?? undefined;
  }

  #content(file: string): string | undefined {
    let known = this.#files.get(file);
    if (known === undefined) {
      known = { content: this.folderFiles.content(file) };
      this.#files.set(file, known);
    }
    return known.content;
  }

  #print(folder: { files: string[]; print?: string | undefined }): string | undefined {
    if (!('print' in folder)) folder.print = fingerprint(folder.files, (f) => this.#content(f));
    return folder.print;
  }

  /**
   * The partitions of a dataset folder with their fingerprints. A dataset whose
   * files lie in the folder itself is one partition, named ''. The folders are
   * read synchronously: a year of daily partitions takes a few milliseconds so,
   * and several times as long through the thread pool, one call per file.
   */
  scan(folder: string): PartitionScan {
    const partitions = new Map<string, string>();
    let column: string | undefined;
    for (const [name, found] of this.#partitionFolders(folder)) {
      column ??= name.slice(0, name.indexOf('='));
      // An empty dataset's one file holds no rows: no partition to build from.
      const value = name.slice(name.indexOf('=') + 1);
      if (value === EMPTY_PARTITION || !found || isEmptyPartition(found.files)) continue;
      const print = this.#print(found);
      if (print !== undefined) partitions.set(unescapePartitionValue(value), print);
    }
    const own = this.#folder(folder);
    const print = own && this.#print(own);
    if (print !== undefined) partitions.set('', print);
    return { column, partitions };
  }

  /** The Parquet files of one folder (a partition's), in order. */
  filesIn(folder: string): string[] {
    return this.#folder(folder)?.files ?? [];
  }

  /** Every Parquet file of a dataset folder: its own, then its partitions' (one level). */
  files(folder: string): string[] {
    return [
      ...(this.#folder(folder)?.files ?? []),
      ...[...this.#partitionFolders(folder)].flatMap(([, found]) => found?.files ?? []),
    ];
  }

  /** The partition folders of a dataset folder (`column=value`), listed now, with their files. */
  *#partitionFolders(
    folder: string,
  ): Generator<[string, { files: string[]; print?: string | undefined } | undefined]> {
    for (const entry of this.folderFiles.list(folder)) {
      if (!entry.folder || entry.name.indexOf('=') <= 0 || entry.name.startsWith('.')) continue;
      yield [entry.name, this.#folder(`${folder}${sep}${entry.name}`)];
    }
  }

  /** A file was written or removed: what is known of its folder is read again. */
  forget(file: string): void {
    const folder = dirname(file);
    for (const path of this.#folders.get(folder)?.files ?? []) this.#files.delete(path);
    this.#files.delete(file);
    this.#folders.delete(folder);
  }

  /** Everything is read again (a step that may write without saying what). */
  clear(): void {
    this.#folders.clear();
    this.#files.clear();
  }
}

/** The partitions of a dataset folder with their fingerprints, as they are now (PartitionIndex.scan). */
export function scanPartitions(folder: string, files: FolderFiles = DISK): PartitionScan {
  return new PartitionIndex(files).scan(folder);
}

/**
 * The partition column of a dataset folder and its values, by the folder names
 * alone. Read synchronously, names only (a partition is a folder `column=value`):
 * a year of partitions at every step otherwise costs milliseconds.
 */
export function partitionValues(
  folder: string,
  files: FolderFiles = DISK,
): Promise<{ column: string | undefined; values: string[] }> {
  return Promise.resolve(partitionNames(namesIn(files, folder)));
}

/** The partition column and values that the names of a dataset folder's entries give. */
export function partitionNames(names: readonly string[]): {
  column: string | undefined;
  values: string[];
} {
  let column: string | undefined;
  const values: string[] = [];
  for (const name of names) {
    const at = name.indexOf('=');
    if (at <= 0 || name.startsWith('.') || name.endsWith('.parquet')) continue;
    column ??= name.slice(0, at);
    values.push(unescapePartitionValue(name.slice(at + 1)));
  }
  return { column, values };
}

/** A partition value that is an instant: an ISO 8601 UTC timestamp (how road-etl writes them). */
const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

/** A partition value that is a calendar date. */
const DATE = /^\d{4}-\d{2}-\d{2}$/;

/**
 * The DuckDB type of a partition column, from its values, for the partitions
 * road-etl writes: instants (`2026-11-15T06:00:00.000Z`, which DuckDB does not
 * type by itself) are TIMESTAMPTZ, dates DATE (as DuckDB would find). Given
 * explicitly, DuckDB need not guess, and road-etl knows the type without
 * asking DuckDB. Undefined leaves it to DuckDB (numbers, text, a mixture).
 */
export function partitionType(values: Iterable<string>): string | undefined {
  let type: string | undefined;
  for (const value of values) {
    // (Hive's folder of NULL values: an empty dataset's, of any type)
    if (value === '' || value === EMPTY_PARTITION) continue;
    const own = INSTANT.test(value) ? 'TIMESTAMPTZ' : DATE.test(value) ? 'DATE' : undefined;
    if (own === undefined || (type !== undefined && own !== type)) return undefined;
    type = own;
  }
  return type;
}

/**
 * SQL for the list of partition values `values`, typed as `type`: a year of
 * them is one string DuckDB splits, which it parses in half the time of as
 * many literals (each night sets several such lists).
 */
export function partitionListSql(values: readonly string[], type: string): string {
  const separator = '\u001f';
  return values.length < 16 || values.some((v) => v.includes(separator))
    ? `CAST([${values.map(quotedString).join(', ')}] AS ${type}[])`
    : `CAST(string_split(${quotedString(values.join(separator))}, ${quotedString(separator)}) AS ${type}[])`;
}

/**
 * The partition an empty dataset's file lies in: the first day of the current
 * UTC month (as a date or an instant, by the column's type), which the next
 * rows of a monthly partition take and a daily one is near; Hive's folder of
 * NULL values for another type.
 */
export function emptyPartitionValue(type: string, now = Date.now()): string {
  const month = new Date(now).toISOString().slice(0, 7);
  if (type === 'DATE') return `${month}-01`;
  if (type === 'TIMESTAMP WITH TIME ZONE') return `${month}-01T00:00:00.000Z`;
  if (type.startsWith('TIMESTAMP')) return `${month}-01T00:00:00.000`;
  return EMPTY_PARTITION;
}

/** Whether a partition folder's files are an empty dataset's one file (EMPTY_FILE, or a version of it). */
export function isEmptyPartition(files: readonly string[]): boolean {
  return files.length === 1 && /^empty(\.v[\w-]+)?\.parquet$/.test(basename(files[0]!));
}

/**
 * The SQL text of a partition value of the given DuckDB type, as road-etl
 * writes it in folder names: dates as YYYY-MM-DD, instants as ISO 8601 UTC with
 * milliseconds (fixed width, so that names sort as the instants do).
 */
export function partitionKeySql(expression: string, type: string): string {
  if (type === 'DATE') return `strftime(${expression}, '%Y-%m-%d')`;
  if (type === 'TIMESTAMP WITH TIME ZONE')
    return `strftime(timezone('UTC', ${expression}), '%Y-%m-%dT%H:%M:%S.%gZ')`;
  if (type.startsWith('TIMESTAMP'))
    return `strftime(CAST(${expression} AS TIMESTAMP), '%Y-%m-%dT%H:%M:%S.%g')`;
  return `CAST(${expression} AS VARCHAR)`;
}
