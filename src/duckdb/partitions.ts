/**
 * Hive partitions of a dataset folder (`<column>=<value>/`, one level): what
 * they are, a fingerprint of each (its files' names, sizes and modification
 * times to the millisecond, so that any rewrite shows, while a copy that keeps
 * times, as `cp -a`, `rsync -a` and a folder fetched from an object store do,
 * is known as the same), and the text of
 * a partition value in a folder name. Values are escaped as Hive does (a `:`
 * becomes `%3A`), so that DuckDB, Arrow, Polars and Spark read them back as
 * they were.
 */
import { createHash } from 'node:crypto';
import { readdirSync, statSync, type Dirent } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { EMPTY_PARTITION } from './portable.js';

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

/** A modification time in whole milliseconds (nearest): what a copy can set exactly again. */
export function mtimeMillis(mtimeNs: bigint): bigint {
  return (mtimeNs + 500_000n) / 1_000_000n;
}

function fingerprint(folder: string): string | undefined {
  let entries: Dirent[];
  try {
    entries = readdirSync(folder, { withFileTypes: true });
  } catch {
    return undefined;
  }
  const files = entries
    .filter((e) => e.isFile() && e.name.endsWith('.parquet') && !e.name.startsWith('.'))
    .map((e) => e.name)
    .sort();
  if (files.length === 0) return undefined;
  const hash = createHash('sha1');
  for (const name of files) {
    const info = statSync(join(folder, name), { bigint: true, throwIfNoEntry: false });
    if (info) hash.update(`${name}:${info.size}:${mtimeMillis(info.mtimeNs)}\n`);
  }
  return hash.digest('hex');
}

/**
 * The partitions of a dataset folder with their fingerprints. A dataset whose
 * files lie in the folder itself is one partition, named ''. The folders are
 * read synchronously: a year of daily partitions takes a few milliseconds so,
 * and several times as long through the thread pool, one call per file.
 */
export function scanPartitions(folder: string): PartitionScan {
  let entries: Dirent[];
  try {
    entries = readdirSync(folder, { withFileTypes: true });
  } catch {
    entries = [];
  }
  const partitions = new Map<string, string>();
  let column: string | undefined;
  for (const entry of entries) {
    const at = entry.name.indexOf('=');
    if (!entry.isDirectory() || at <= 0 || entry.name.startsWith('.')) continue;
    column ??= entry.name.slice(0, at);
    // An empty dataset's folder of NULL values holds no rows: no partition to build from.
    if (entry.name.slice(at + 1) === EMPTY_PARTITION) continue;
    const print = fingerprint(join(folder, entry.name));
    if (print === undefined) continue;
    partitions.set(unescapePartitionValue(entry.name.slice(at + 1)), print);
  }
  const own = fingerprint(folder);
  if (own !== undefined) partitions.set('', own);
  return { column, partitions };
}

/** The partition column of a dataset folder and its values, by the folder names alone. */
export async function partitionValues(
  folder: string,
): Promise<{ column: string | undefined; values: string[] }> {
  const entries = await readdir(folder, { withFileTypes: true }).catch(() => []);
  let column: string | undefined;
  const values: string[] = [];
  for (const entry of entries) {
    const at = entry.name.indexOf('=');
    if (!entry.isDirectory() || at <= 0 || entry.name.startsWith('.')) continue;
    column ??= entry.name.slice(0, at);
    values.push(unescapePartitionValue(entry.name.slice(at + 1)));
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
