/** What the extract writers know of a source's columns: names, DuckDB types, and how to write a time. */
import type { DuckDBValue } from '@duckdb/node-api';
import { quotedIdentifier, type Database } from '../duckdb/database.js';

export interface ExportSource {
  /** A SELECT (or a table name already quoted into one). */
  sql: string;
  params: Record<string, DuckDBValue>;
}

/** The columns of a point extract (GeoJSON, FlatGeobuf) that hold its position. */
export interface GeometryColumns {
  longitude: string;
  latitude: string;
  /** Column whose value becomes the feature id. */
  id: string | undefined;
}

export interface Column {
  name: string;
  type: string;
}

export async function describe(db: Database, source: ExportSource): Promise<Column[]> {
  const rows = await db.all(`DESCRIBE ${source.sql}`, source.params);
  return rows.map((r) => ({ name: String(r['column_name']), type: String(r['column_type']) }));
}

export function isText(type: string): boolean {
  return type === 'VARCHAR' || type.startsWith('ENUM');
}

export function isNested(type: string): boolean {
  return type.endsWith('[]') || /^(STRUCT|MAP|UNION)\(/.test(type) || /\[\d+\]$/.test(type);
}

export function isGeometry(type: string): boolean {
  return type.startsWith('GEOMETRY');
}

export function isTimestamp(type: string): boolean {
  return (
    type === 'TIMESTAMP' || type.startsWith('TIMESTAMP_') || type === 'TIMESTAMP WITH TIME ZONE'
  );
}

/**
 * A timestamp column as ISO 8601 text with its full precision: milliseconds
 * always (`2020-07-28T11:30:19.833Z`, as the feed's own offsets), microseconds
 * where the value has them. An instant (TIMESTAMPTZ) is written in UTC with
 * `Z`; a timestamp without time zone (a wall-clock time) without a zone
 * designator, since nothing says it is UTC.
 */
export function isoTimestamp(column: Column): string {
  const ref = quotedIdentifier(column.name);
  const instant = column.type === 'TIMESTAMP WITH TIME ZONE';
  const value = instant ? `timezone('UTC', ${ref})` : `${ref}::TIMESTAMP`;
  const zone = instant ? 'Z' : '';
  return `CASE WHEN microsecond(${value}) % 1000 = 0 THEN strftime(${value}, '%Y-%m-%dT%H:%M:%S.%g${zone}') ELSE strftime(${value}, '%Y-%m-%dT%H:%M:%S.%f${zone}') END`;
}

/**
 * The position columns of a point extract, checked against the source: the
 * longitude and latitude as DOUBLE expressions, whether they make a WGS 84
 * position, and the columns left for the properties (neither the position nor
 * a geometry column, which the feature's geometry already is).
 */
export async function pointColumns(
  db: Database,
  source: ExportSource,
  geometry: GeometryColumns,
): Promise<{ lon: string; lat: string; valid: string; properties: Column[] }> {
  const columns = await describe(db, source);
  for (const name of [
    geometry.longitude,
    geometry.latitude,
    ...(geometry.id ? [geometry.id] : []),
  ]) {
    if (!columns.some((c) => c.name === name)) {
      throw new Error(
        `the source has no column ${name} (it has: ${columns.map((c) => c.name).join(', ')})`,
      );
    }
  }
  const lon = `TRY_CAST(${quotedIdentifier(geometry.longitude)} AS DOUBLE)`;
  const lat = `TRY_CAST(${quotedIdentifier(geometry.latitude)} AS DOUBLE)`;
  return {
    lon,
    lat,
    valid: `(${lon} BETWEEN -180 AND 180 AND ${lat} BETWEEN -90 AND 90)`,
    properties: columns.filter(
      (c) => c.name !== geometry.longitude && c.name !== geometry.latitude && !isGeometry(c.type),
    ),
  };
}
