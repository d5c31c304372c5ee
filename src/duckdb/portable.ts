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
import type { DuckDBValue } from '@duckdb/node-api';
import { PARQUET_FORMAT, quotedIdentifier, quotedString, type Database } from './database.js';

/** The key of the file metadata that names the columns holding JSON text. */
export const JSON_COLUMNS_KEY = 'road-etl:json';

/** Top-level column types written as text. */
const AS_TEXT = new Set(['UUID', 'JSON']);

/** The key of the file metadata that names the partition column (and its type) of an empty dataset. */
export const PARTITION_KEY = 'road-etl:partition';

/** Hive's name of the partition of NULL values: an empty partitioned dataset's one folder. */
export const EMPTY_PARTITION = '__HIVE_DEFAULT_PARTITION__';

export interface PortableSource {
  /** The rows, with every UUID and JSON column as VARCHAR: a parenthesised query (or `source` as it was). */
  sql: string;
  /** The Parquet options of the COPY: road-etl's format, with the metadata naming the JSON columns. */
  format: string;
}

/**
 * The rows of `source` (a table name or a parenthesised query) as road-etl
 * writes them to Parquet, and the COPY options to write them with (`extra`
 * appended to the format, such as `PARTITION_BY (x)`).
 */
/** How a file without rows is told apart: what DuckDB leaves out of it, road-etl says. */
export interface EmptyFile {
  /** The partition column the dataset's folders are named by, with its DuckDB type. */
  partition?: { column: string; type: string };
}

export async function portableSource(
  db: Database,
  source: string,
  extra = '',
  params?: Record<string, DuckDBValue>,
  empty?: EmptyFile,
): Promise<PortableSource> {
  const columns = await db.all(`DESCRIBE SELECT * FROM ${source}`, params);
  const text: string[] = [];
  const metadata: Record<string, string> = {};
  const json: string[] = [];
  let geometry: string | undefined;
  for (const column of columns) {
    const name = String(column['column_name']);
    const type = String(column['column_type']);
    if (type.startsWith('GEOMETRY')) geometry ??= name;
    if (!AS_TEXT.has(type)) continue;
    text.push(name);
    if (type === 'JSON') json.push(name);
  }
  if (json.length > 0) metadata[JSON_COLUMNS_KEY] = JSON.stringify(json);
  if (empty) {
    // DuckDB writes GeoParquet metadata from the geometries it meets: none in an empty file.
    if (geometry !== undefined) metadata['geo'] = emptyGeoMetadata(geometry);
    if (empty.partition) metadata[PARTITION_KEY] = JSON.stringify(empty.partition);
  }
  const sql =
    text.length === 0
      ? source
      : `(SELECT * REPLACE (${text.map((c) => `CAST(${quotedIdentifier(c)} AS VARCHAR) AS ${quotedIdentifier(c)}`).join(', ')}) FROM ${source})`;
  return { sql, format: parquetFormat(metadata, extra) };
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
  extra = '',
  params?: Record<string, DuckDBValue>,
  empty?: EmptyFile,
): Promise<string> {
  const portable = await portableSource(db, source, extra, params, empty);
  return `COPY ${portable.sql} TO ${quotedString(target)} (${portable.format})`;
}

export interface FileNotes {
  /** The columns holding JSON text. */
  json: string[];
  /** The partition column and type of an empty partitioned dataset's file. */
  partition: { column: string; type: string } | undefined;
}

/** What road-etl noted in a Parquet file's metadata (nothing when it cannot be read). */
export async function fileNotes(db: Database, file: string): Promise<FileNotes> {
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

/**
 * Whether a Parquet file holds a column in a type road-etl no longer writes
 * (UUID, JSON annotated bytes): written by an earlier version. Undefined when
 * it cannot be read as Parquet.
 */
export async function holdsLegacyTypes(db: Database, file: string): Promise<boolean | undefined> {
  try {
    const [row] = await db.all(
      `SELECT count(*) AS n FROM parquet_schema(${quotedString(file)})
       WHERE logical_type LIKE 'UUIDType%' OR logical_type LIKE 'JsonType%' OR converted_type = 'JSON'`,
    );
    return Number(row?.['n']) > 0;
  } catch {
    return undefined;
  }
}
