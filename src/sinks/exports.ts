/**
 * Extracts from a DuckDB query to a file: CSV (RFC 4180, formula cells
 * neutralised), GeoJSON (RFC 7946 FeatureCollection of points) or Parquet
 * (zstd). Each is written under a temporary name, fsynced and renamed, and
 * streamed by DuckDB, so memory does not grow with the number of rows.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import {
  PARQUET_FORMAT,
  quotedIdentifier,
  quotedString,
  type Database,
} from '../duckdb/database.js';
import { writeThrough } from '../util/fs.js';
import {
  describe,
  isGeometry,
  isNested,
  isText,
  isTimestamp,
  isoTimestamp,
  pointColumns,
  type Column,
  type ExportSource,
  type GeometryColumns,
} from './columns.js';

export type { ExportSource, GeometryColumns } from './columns.js';

export type ExportFormat = 'csv' | 'geojson' | 'flatgeobuf' | 'parquet';

export interface ExportResult {
  rows: number;
  /** GeoJSON, FlatGeobuf: features without a valid position (geometry null). */
  withoutGeometry?: number;
}

/** The first characters that make a spreadsheet read a cell as a formula (OWASP CSV injection). */
export const FORMULA_PREFIXES = ['=', '+', '-', '@', '\t', '\r'] as const;

/** A cell that starts like a formula gets a leading apostrophe, which spreadsheets show as text. */
function neutralised(expression: string): string {
  const prefixes = FORMULA_PREFIXES.map((p) => quotedString(p)).join(', ');
  return `CASE WHEN left(${expression}, 1) IN (${prefixes}) THEN '''' || ${expression} ELSE ${expression} END`;
}

export async function exportCsv(
  db: Database,
  source: ExportSource,
  path: string,
  scratch: string,
): Promise<ExportResult> {
  const columns = await describe(db, source);
  const projection = columns.map(({ name, type }) => {
    const column = quotedIdentifier(name);
    if (isText(type)) return `${neutralised(column)} AS ${column}`;
    // A geometry as WKT, which QGIS reads from a CSV ("delimited text", geometry definition WKT).
    if (isGeometry(type)) return `ST_AsText(${column}) AS ${column}`;
    if (isTimestamp(type)) return `${isoTimestamp({ name, type })} AS ${column}`;
    if (isNested(type) || type === 'JSON')
      return `${neutralised(`to_json(${column})::VARCHAR`)} AS ${column}`;
    return column;
  });
  return writeThrough(path, scratch, async (temporary) => {
    const rows = await db.copy(
      `COPY (SELECT ${projection.join(', ')} FROM ${source.sql}) TO ${quotedString(temporary)} ` +
        `(FORMAT csv, HEADER true, DELIMITER ',', QUOTE '"', ESCAPE '"', NEW_LINE '\r\n')`,
      source.params,
    );
    return { rows };
  });
}

export async function exportParquet(
  db: Database,
  source: ExportSource,
  path: string,
  scratch: string,
): Promise<ExportResult> {
  return writeThrough(path, scratch, async (temporary) => ({
    rows: await db.copy(
      `COPY (SELECT * FROM ${source.sql}) TO ${quotedString(temporary)} (${PARQUET_FORMAT})`,
      source.params,
    ),
  }));
}

/** A JSON value expression for a column: timestamps as ISO 8601 UTC text, the rest as DuckDB's JSON does it. */
function jsonValue(column: Column): string {
  return isTimestamp(column.type) ? isoTimestamp(column) : quotedIdentifier(column.name);
}

/**
 * A GeoJSON FeatureCollection of points. DuckDB's JSON writer makes the
 * features, on every thread, as a JSON array (a row a Feature: its type, id,
 * geometry and properties, in the order of the source); the collection is
 * that array between its opening and its closing, put together as the array
 * is copied into the file.
 */
export async function exportGeoJson(
  db: Database,
  source: ExportSource,
  path: string,
  scratch: string,
  geometry: GeometryColumns,
): Promise<ExportResult> {
  const { lon, lat, valid, properties: kept } = await pointColumns(db, source, geometry);
  const properties =
    kept.length > 0
      ? `struct_pack(${kept.map((c) => `${quotedIdentifier(c.name)} := ${jsonValue(c)}`).join(', ')})`
      : `'{}'::JSON`;
  // Seven decimals, about a centimetre: what RFC 7946 (11.2) advises, no false precision.
  const point = `{'type': 'Point', 'coordinates': [round(${lon}, 7), round(${lat}, 7)]}`;
  const features =
    `SELECT 'Feature' AS "type", ` +
    (geometry.id ? `${quotedIdentifier(geometry.id)} AS id, ` : '') +
    `CASE WHEN ${valid} THEN ${point} END AS geometry, ${properties} AS properties FROM ${source.sql}`;
  const [counted] = await db.all(
    `SELECT count(*) FILTER (WHERE NOT coalesce(${valid}, false)) AS unlocated FROM ${source.sql}`,
    source.params,
  );
  return writeThrough(path, scratch, async (temporary) => {
    const array = `${temporary}.features`;
    try {
      const rows = await db.copy(
        `COPY (${features}) TO ${quotedString(array)} (FORMAT json, ARRAY true)`,
        source.params,
      );
      await pipeline(
        async function* () {
          yield Buffer.from('{"type":"FeatureCollection","features":');
          yield* createReadStream(array, { highWaterMark: 1 << 20 });
          yield Buffer.from('}\n');
        },
        createWriteStream(temporary, { flags: 'wx' }),
      );
      return { rows, withoutGeometry: Number(counted?.['unlocated'] ?? 0) };
    } finally {
      await rm(array, { force: true });
    }
  });
}
