/**
 * Hive partitions of a dataset folder (`<column>=<value>/`, one level): what
 * they are, a fingerprint of each (its files' names, sizes, times and inodes,
 * so that any rewrite shows), and the text of a partition value in a folder
 * name. Values are escaped as Hive does (a `:` becomes `%3A`), so that DuckDB,
 * Arrow, Polars and Spark read them back as they were.
 */
import { createHash } from 'node:crypto';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import pLimit from 'p-limit';

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

async function fingerprint(folder: string): Promise<string | undefined> {
  const entries = await readdir(folder, { withFileTypes: true }).catch(() => []);
  const files = entries
    .filter((e) => e.isFile() && e.name.endsWith('.parquet') && !e.name.startsWith('.'))
    .map((e) => e.name)
    .sort();
  if (files.length === 0) return undefined;
  const infos = await Promise.all(files.map((name) => stat(join(folder, name), { bigint: true })));
  const hash = createHash('sha1');
  files.forEach((name, i) => {
    const info = infos[i]!;
    hash.update(`${name}:${info.size}:${info.mtimeNs}:${info.ino}\n`);
  });
  return hash.digest('hex');
}

/**
 * The partitions of a dataset folder with their fingerprints. A dataset whose
 * files lie in the folder itself is one partition, named ''.
 */
export async function scanPartitions(folder: string): Promise<PartitionScan> {
  const entries = await readdir(folder, { withFileTypes: true }).catch(() => []);
  const partitions = new Map<string, string>();
  let column: string | undefined;
  const folders = entries.filter(
    (e) => e.isDirectory() && e.name.indexOf('=') > 0 && !e.name.startsWith('.'),
  );
  // The partitions' files are looked at many at a time: one by one, a year of daily
  // partitions took a tenth of a second.
  const limit = pLimit(32);
  const prints = await Promise.all(
    folders.map((e) => limit(() => fingerprint(join(folder, e.name)))),
  );
  folders.forEach((entry, i) => {
    const print = prints[i];
    if (print === undefined) return;
    const at = entry.name.indexOf('=');
    column ??= entry.name.slice(0, at);
    partitions.set(unescapePartitionValue(entry.name.slice(at + 1)), print);
  });
  const own = await fingerprint(folder);
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

/**
 * The DuckDB type of a partition column whose values DuckDB does not type by
 * itself: instants (`2026-11-15T06:00:00.000Z`) are TIMESTAMPTZ. Undefined
 * leaves it to DuckDB (dates, numbers, text).
 */
export function partitionType(values: Iterable<string>): string | undefined {
  let any = false;
  for (const value of values) {
    if (value === '') continue;
    if (!INSTANT.test(value)) return undefined;
    any = true;
  }
  return any ? 'TIMESTAMPTZ' : undefined;
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
