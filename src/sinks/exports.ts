/**
 * Extracts from a DuckDB query to a file: CSV (RFC 4180, formula cells
 * neutralised), GeoJSON (RFC 7946 FeatureCollection of points) or Parquet
 * (zstd). Each is written under a temporary name, fsynced and renamed, and
 * streamed by DuckDB, so memory does not grow with the number of rows.
 */
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { quotedIdentifier, quotedString, type Database } from '../duckdb/database.js';
import { writeFileAtomic, writeThrough } from '../util/fs.js';
import { csvSidecars, csvtLine, csvwMetadata } from './csv-metadata.js';
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
import { portableCopySql } from '../duckdb/portable.js';

export type { ExportSource, GeometryColumns } from './columns.js';

export type ExportFormat = 'csv' | 'geojson' | 'flatgeobuf' | 'parquet';

export interface ExportResult {
  rows: number;
  /** GeoJSON, FlatGeobuf: features without a valid position (geometry null). */
  withoutGeometry?: number;
  /** The file's SHA-256 where the writer saw its bytes go by (GeoJSON). */
  sha256?: string;
}

/**
 * Whether DuckDB's plan of a query holds a full sort (an ORDER BY without a
 * LIMIT, which is a top-n and small).
 */
async function sorts(db: Database, source: ExportSource): Promise<boolean> {
  const rows = await db.all(`EXPLAIN SELECT * FROM ${source.sql}`, source.params);
  return rows.some(
    (r) => typeof r['explain_value'] === 'string' && /\bORDER_BY\b/.test(r['explain_value']),
  );
}

/**
 * Runs `write` (the COPY of an extract) with DuckDB on one thread when the
 * source sorts its rows. A sort of millions of wide rows does not fit a small
 * budget and goes to disk, and there one thread does the same work in less
 * time and memory than two: the national CSV extract of today's signs
 * (2.9M rows, `ORDER BY sign_id`, 600 MB for DuckDB) took 72.6 s of CPU,
 * 38.7 s and 1,239 MB on two threads; 28.9 s of CPU, 30.3 s and 825 MB on
 * one. Unsorted, two threads take the same CPU as one in half the time.
 */
async function writing<T>(db: Database, source: ExportSource, write: () => Promise<T>): Promise<T> {
  return (await sorts(db, source)) ? db.withThreads(1, write) : write();
}

/** The first characters that make a spreadsheet read a cell as a formula (OWASP CSV injection). */
export const FORMULA_PREFIXES = ['=', '+', '-', '@', '\t', '\r'] as const;

/**
 * A cell that starts like a formula gets a leading apostrophe, which
 * spreadsheets show as text; so does a cell that starts with an apostrophe
 * itself ('s-Gravenhage), so that the guard can be undone without doubt: a
 * text cell that begins with ' has one ' more than its value.
 */
function neutralised(expression: string): string {
  const prefixes = [...FORMULA_PREFIXES, "'"].map((p) => quotedString(p)).join(', ');
  return `CASE WHEN left(${expression}, 1) IN (${prefixes}) THEN '''' || ${expression} ELSE ${expression} END`;
}

export interface CsvOptions {
  /** Whether text cells are guarded against spreadsheet formulas (default in the export step: yes). */
  formulaGuard: boolean;
  /** The title of the CSVW metadata. */
  title: string;
}

/**
 * A CSV extract (RFC 4180) with its CSVW metadata and GDAL CSVT beside it
 * (csv-metadata.ts), each written whole and renamed into place.
 */
export async function exportCsv(
  db: Database,
  source: ExportSource,
  path: string,
  scratch: string,
  options: CsvOptions,
): Promise<ExportResult> {
  const columns = await describe(db, source);
  const guard = (expression: string): string =>
    options.formulaGuard ? neutralised(expression) : expression;
  const sidecars = csvSidecars(path);
  await writeFileAtomic(sidecars.csvw, csvwMetadata(path, columns, options), scratch);
  await writeFileAtomic(sidecars.csvt, csvtLine(columns), scratch);
  const projection = columns.map(({ name, type }) => {
    const column = quotedIdentifier(name);
    if (isText(type)) return `${guard(column)} AS ${column}`;
    // A geometry as WKT, which QGIS reads from a CSV ("delimited text", geometry definition WKT).
    if (isGeometry(type)) return `ST_AsText(${column}) AS ${column}`;
    if (isTimestamp(type)) return `${isoTimestamp({ name, type })} AS ${column}`;
    if (isNested(type) || type === 'JSON')
      return `${guard(`to_json(${column})::VARCHAR`)} AS ${column}`;
    return column;
  });
  return writeThrough(path, scratch, async (temporary) => {
    const rows = await writing(db, source, () =>
      db.copy(
        `COPY (SELECT ${projection.join(', ')} FROM ${source.sql}) TO ${quotedString(temporary)} ` +
          `(FORMAT csv, HEADER true, DELIMITER ',', QUOTE '"', ESCAPE '"', NEW_LINE '\r\n')`,
        source.params,
      ),
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
    rows: await writing(db, source, () =>
      portableCopySql(db, `(SELECT * FROM ${source.sql})`, temporary, {
        params: source.params,
      }).then((sql) => db.copy(sql, source.params)),
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
      const rows = await writing(db, source, () =>
        db.copy(
          `COPY (${features}) TO ${quotedString(array)} (FORMAT json, ARRAY true)`,
          source.params,
        ),
      );
      // Hashed as it is put together, which spares the manifest reading it again.
      const hash = createHash('sha256');
      await pipeline(
        async function* () {
          const pieces = [
            [Buffer.from('{"type":"FeatureCollection","features":')],
            createReadStream(array, { highWaterMark: 1 << 20 }),
            [Buffer.from('}\n')],
          ];
          for (const piece of pieces)
            for await (const bytes of piece) {
              hash.update(bytes as Buffer);
              yield bytes as Buffer;
            }
        },
        createWriteStream(temporary, { flags: 'wx' }),
      );
      return {
        rows,
        withoutGeometry: Number(counted?.['unlocated'] ?? 0),
        sha256: hash.digest('hex'),
      };
    } finally {
      await rm(array, { force: true });
    }
  });
}
