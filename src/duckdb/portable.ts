/**
 * Parquet that every reader reads as what it is. DuckDB writes a UUID as a
 * 16-byte FIXED_LEN_BYTE_ARRAY and JSON as bytes annotated JSON: pandas and
 * geopandas read the ids as bytes, polars reads both as Binary, so an id never
 * joins with the same id in a CSV extract and JSON functions fail. road-etl
 * writes them as text (Parquet STRING): a UUID in its canonical lowercase
 * form, JSON as the document's text. The names of the JSON columns go into
 * the file's key-value metadata (`road-etl:json`), so that road-etl's views
 * (and `views.sql`) give them back to DuckDB as JSON.
 */
import { statSync } from 'node:fs';
import type { DuckDBValue } from '@duckdb/node-api';
import { PARQUET_FORMAT, quotedIdentifier, quotedString, type Database } from './database.js';
import { geoMetadata, geoParquetRows, pointColumns } from './geoparquet.js';

/** The key of the file metadata that names the columns holding JSON text. */
export const JSON_COLUMNS_KEY = 'road-etl:json';

/** Top-level column types written as text. */
const AS_TEXT = new Set(['UUID', 'JSON']);

/**
 * Top-level integer types written as BIGINT: a sum of counts is a HUGEINT to
 * DuckDB, which Parquet would hold as a DOUBLE (`352.0`), and readers in Java
 * and Spark have no unsigned 64-bit integer. A value that does not fit stops
 * the write rather than change.
 */
const AS_BIGINT = new Set(['HUGEINT', 'UHUGEINT', 'UBIGINT']);

/** The key of the file metadata that names the partition column (and its type) of an empty dataset. */
export const PARTITION_KEY = 'road-etl:partition';

/**
 * Hive's name of the partition of NULL values: an empty partitioned dataset's
 * one folder where its partition column is neither a date nor an instant.
 */
export const EMPTY_PARTITION = '__HIVE_DEFAULT_PARTITION__';

/**
 * The one file of a partitioned dataset without rows: no rows, in a partition
 * named by a value of the column's type (partitions.ts emptyPartitionValue), so
 * that every reader types the partition column as it types it with rows.
 */
export const EMPTY_FILE = 'empty.parquet';

export interface PortableSource {
  /** The rows as written: a parenthesised query (or `source` as it was). */
  sql: string;
  /** The Parquet options of the COPY: road-etl's format, with its key-value metadata. */
  format: string;
  /** Whether the rows are sorted (in Hilbert order) before they are written. */
  sorted: boolean;
}

/** How a file without rows is told apart: what DuckDB leaves out of it, road-etl says. */
export interface EmptyFile {
  /** The partition column the dataset's folders are named by, with its DuckDB type. */
  partition?: { column: string; type: string };
}

export interface CopyOptions {
  /** More COPY options, after road-etl's format (e.g. `PARTITION_BY (x)`). */
  extra?: string;
  /** Values of the `$name` parameters of the source. */
  params?: Record<string, DuckDBValue>;
  /** The file is written without rows: what DuckDB leaves out of it, road-etl says. */
  empty?: EmptyFile;
  /**
   * Rows with a point in Hilbert order (default). A snapshot of the national
   * current state is written as it came: its sort would double the step's CPU
   * and memory (bench/README.md).
   */
  spatialOrder?: boolean;
}

/**
 * The rows of `source` (a table name or a parenthesised query) as road-etl
 * writes them to Parquet (ids and JSON as text, a point as GeoParquet 1.1), and the COPY options to write them with (`extra`
 * appended to the format, such as `PARTITION_BY (x)`).
 */
export async function portableSource(
  db: Database,
  source: string,
  options: CopyOptions = {},
): Promise<PortableSource> {
  const { extra = '', params, empty } = options;
  const columns = (await db.all(`DESCRIBE SELECT * FROM ${source}`, params)).map((c) => ({
    name: String(c['column_name']),
    type: String(c['column_type']),
  }));
  const text: string[] = [];
  const integers: string[] = [];
  const metadata: Record<string, string> = {};
  const json: string[] = [];
  let geometry: string | undefined;
  for (const { name, type } of columns) {
    if (type.startsWith('GEOMETRY')) geometry ??= name;
    if (AS_BIGINT.has(type)) integers.push(name);
    if (!AS_TEXT.has(type)) continue;
    text.push(name);
    if (type === 'JSON') json.push(name);
  }
  if (json.length > 0) metadata[JSON_COLUMNS_KEY] = JSON.stringify(json);
  if (empty?.partition) metadata[PARTITION_KEY] = JSON.stringify(empty.partition);
  const casts = [
    ...text.map((c) => `CAST(${quotedIdentifier(c)} AS VARCHAR) AS ${quotedIdentifier(c)}`),
    ...integers.map((c) => `CAST(${quotedIdentifier(c)} AS BIGINT) AS ${quotedIdentifier(c)}`),
  ];
  let sql = casts.length === 0 ? source : `(SELECT * REPLACE (${casts.join(', ')}) FROM ${source})`;
  // A point geometry: GeoParquet 1.1, its covering box beside it, the rows in Hilbert order.
  const points = pointColumns(columns);
  const sorted = points !== undefined && !empty && options.spatialOrder !== false;
  if (points) {
    sql = geoParquetRows(sql, points, sorted);
    metadata['geo'] = geoMetadata(points.geometry);
  } else if (empty && geometry !== undefined) {
    // DuckDB writes GeoParquet metadata from the geometries it meets: none in an empty file.
    metadata['geo'] = emptyGeoMetadata(geometry);
  }
  return { sql, format: parquetFormat(metadata, extra), sorted };
}

/**
 * The GeoParquet metadata of a file without rows, as DuckDB writes it for one
 * with rows: WKB, no `crs` (OGC:CRS84), geometry types unknown (an empty list).
 */
function emptyGeoMetadata(column: string): string {
  return JSON.stringify({
    version: '1.0.0',
    primary_column: column,
    columns: { [column]: { encoding: 'WKB', geometry_types: [] } },
  });
}

/** road-etl's Parquet options, with the given key-value metadata. */
function parquetFormat(metadata: Record<string, string>, extra = ''): string {
  const entries = Object.entries(metadata);
  const kv =
    entries.length > 0
      ? `, KV_METADATA {${entries.map(([k, v]) => `${quotedString(k)}: ${quotedString(v)}`).join(', ')}}`
      : '';
  return `${PARQUET_FORMAT}${kv}${extra === '' ? '' : `, ${extra}`}`;
}

/** The COPY statement that writes the rows of `source` to `target` as road-etl writes Parquet. */
export async function portableCopySql(
  db: Database,
  source: string,
  target: string,
  options: CopyOptions = {},
): Promise<string> {
  return copyStatement(await portableSource(db, source, options), target);
}

/** The COPY statement that writes rows as portableSource gives them to `target`. */
export function copyStatement(portable: PortableSource, target: string): string {
  return `COPY ${portable.sql} TO ${quotedString(target)} (${portable.format})`;
}

export interface FileNotes {
  /** The columns holding JSON text. */
  json: string[];
  /** The partition column and type of an empty partitioned dataset's file. */
  partition: { column: string; type: string } | undefined;
}

/**
 * The notes of the files read so far, by path, with the size and time they
 * were read at: a dataset's view is made again after each step that writes
 * it, from the same sample file as a rule.
 */
const notesRead = new Map<string, { version: string; notes: FileNotes }>();

/** What road-etl noted in a Parquet file's metadata (nothing when it cannot be read). */
export async function fileNotes(db: Database, file: string): Promise<FileNotes> {
  const stat = statSync(file, { throwIfNoEntry: false });
  const version = stat ? `${stat.size}:${stat.mtimeMs}:${stat.ino}` : undefined;
  const known = notesRead.get(file);
  if (version !== undefined && known?.version === version) return known.notes;
  const notes = await readNotes(db, file);
  if (version !== undefined) {
    if (notesRead.size >= 4096) notesRead.clear();
    notesRead.set(file, { version, notes });
  }
  return notes;
}

async function readNotes(db: Database, file: string): Promise<FileNotes> {
  const notes: FileNotes = { json: [], partition: undefined };
  try {
    const rows = await db.all(
      `SELECT decode(key) AS key, decode(value) AS value FROM parquet_kv_metadata(${quotedString(file)})
       WHERE decode(key) IN ($json, $partition)`,
      { json: JSON_COLUMNS_KEY, partition: PARTITION_KEY },
    );
    for (const row of rows) {
      const parsed: unknown = JSON.parse(String(row['value']));
      if (row['key'] === JSON_COLUMNS_KEY && Array.isArray(parsed))
        notes.json = parsed.filter((c): c is string => typeof c === 'string');
      const partition = parsed as { column?: unknown; type?: unknown } | null;
      if (
        row['key'] === PARTITION_KEY &&
        typeof partition?.column === 'string' &&
        typeof partition.type === 'string'
      )
        notes.partition = { column: partition.column, type: partition.type };
    }
  } catch {
    // Unreadable: the view over it names the file.
  }
  return notes;
}
