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
export async function portableSource(
  db: Database,
  source: string,
  extra = '',
  params?: Record<string, DuckDBValue>,
): Promise<PortableSource> {
  const columns = await db.all(`DESCRIBE SELECT * FROM ${source}`, params);
  const text: string[] = [];
  const json: string[] = [];
  for (const column of columns) {
    const name = String(column['column_name']);
    const type = String(column['column_type']);
    if (!AS_TEXT.has(type)) continue;
    text.push(name);
    if (type === 'JSON') json.push(name);
  }
  const sql =
    text.length === 0
      ? source
      : `(SELECT * REPLACE (${text.map((c) => `CAST(${quotedIdentifier(c)} AS VARCHAR) AS ${quotedIdentifier(c)}`).join(', ')}) FROM ${source})`;
  return { sql, format: parquetFormat(json, extra) };
}

/** road-etl's Parquet options, naming the JSON columns (if any) in the file metadata. */
export function parquetFormat(json: readonly string[], extra = ''): string {
  const metadata =
    json.length > 0
      ? `, KV_METADATA {${quotedString(JSON_COLUMNS_KEY)}: ${quotedString(JSON.stringify(json))}}`
      : '';
  return `${PARQUET_FORMAT}${metadata}${extra === '' ? '' : `, ${extra}`}`;
}

/** The COPY statement that writes the rows of `source` to `target` as road-etl writes Parquet. */
export async function portableCopySql(
  db: Database,
  source: string,
  target: string,
  extra = '',
  params?: Record<string, DuckDBValue>,
): Promise<string> {
  const portable = await portableSource(db, source, extra, params);
  return `COPY ${portable.sql} TO ${quotedString(target)} (${portable.format})`;
}

/** The columns a Parquet file names as holding JSON text (none when it cannot be read). */
export async function jsonColumnsOf(db: Database, file: string): Promise<string[]> {
  try {
    const rows = await db.all(
      `SELECT decode(value) AS value FROM parquet_kv_metadata(${quotedString(file)}) WHERE decode(key) = $key`,
      { key: JSON_COLUMNS_KEY },
    );
    const value = rows[0]?.['value'];
    if (typeof value !== 'string') return [];
    const parsed: unknown = JSON.parse(value);
    return Array.isArray(parsed) ? parsed.filter((c): c is string => typeof c === 'string') : [];
  } catch {
    return [];
  }
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
