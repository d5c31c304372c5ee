/**
 * Extracts from a DuckDB query to a file: CSV (RFC 4180, formula cells
 * neutralised), GeoJSON (RFC 7946 FeatureCollection of points) or Parquet
 * (zstd). Each is written under a temporary name, fsynced and renamed, and
 * streamed by DuckDB (or, for GeoJSON, chunk by chunk), so memory does not grow
 * with the number of rows.
 */
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
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

export async function exportGeoJson(
  db: Database,
  source: ExportSource,
  path: string,
  scratch: string,
  geometry: GeometryColumns,
): Promise<ExportResult> {
  const { lon, lat, valid, properties: kept } = await pointColumns(db, source, geometry);
  const properties = kept.map((c) => `${quotedString(c.name)}, ${jsonValue(c)}`);
  // Seven decimals, about a centimetre: what RFC 7946 (11.2) advises, no false precision.
  const coordinates = `json_array(round(${lon}, 7), round(${lat}, 7))`;
  const feature =
    `json_object('type', 'Feature', ` +
    (geometry.id ? `'id', ${quotedIdentifier(geometry.id)}, ` : '') +
    `'geometry', CASE WHEN ${valid} THEN json_object('type', 'Point', 'coordinates', ${coordinates}) END, ` +
    `'properties', ${properties.length > 0 ? `json_object(${properties.join(', ')})` : `'{}'::JSON`})::VARCHAR`;
  const sql = `SELECT ${feature} AS feature, coalesce(${valid}, false) AS located FROM ${source.sql}`;

  return writeThrough(path, scratch, async (temporary) => {
    const out = createWriteStream(temporary, { flags: 'wx' });
    const failed = once(out, 'error').then(([error]) => {
      throw error as Error;
    });
    failed.catch(() => undefined); // raced below; never left unhandled
    const write = async (text: string): Promise<void> => {
      if (!out.write(text)) await Promise.race([once(out, 'drain'), failed]);
    };
    let rows = 0;
    let withoutGeometry = 0;
    try {
      await write('{"type":"FeatureCollection","features":[');
      const result = await db.connection.stream(sql, source.params);
      for await (const chunk of result.yieldRows()) {
        let text = '';
        for (const [featureText, located] of chunk) {
          text += (rows === 0 ? '\n' : ',\n') + String(featureText);
          rows++;
          if (located !== true) withoutGeometry++;
        }
        await write(text);
      }
      await write('\n]}\n');
      out.end();
      await Promise.race([once(out, 'finish'), failed]);
    } finally {
      out.destroy();
    }
    return { rows, withoutGeometry };
  });
}
