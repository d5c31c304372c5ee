/**
 * Extracts from a DuckDB query to a file: CSV (RFC 4180, formula cells
 * neutralised), GeoJSON (RFC 7946 FeatureCollection of points) or Parquet
 * (zstd). Each is written under a temporary name and renamed, and
 * streamed by DuckDB, so memory does not grow with the number of rows.
 */
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
  type ExportSource,
} from './columns.js';
import { portableCopySql } from '../duckdb/portable.js';
import { writing } from './writing.js';

export type { ExportSource, GeometryColumns } from './columns.js';

export type ExportFormat = 'csv' | 'geojson' | 'flatgeobuf' | 'parquet';

export interface ExportResult {
  rows: number;
  /** GeoJSON, FlatGeobuf: features without a valid position (geometry null). */
  withoutGeometry?: number;
  /** The file's SHA-256 where the writer saw its bytes go by. */
  sha256?: string;
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
  /** The title and description of the CSVW metadata. */
  title: string;
  description: string;
}

/** How a CSV extract is written: DuckDB's COPY, RFC 4180 with CRLF. */
const CSV_FORMAT = `FORMAT csv, DELIMITER ',', QUOTE '"', ESCAPE '"', NEW_LINE '\r\n'`;

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
  const copyCsv = (from: string, target: string) =>
    db.copy(
      `COPY (SELECT ${projection.join(', ')} FROM ${from}) TO ${quotedString(target)} (${CSV_FORMAT}, HEADER true)`,
      source.params,
    );
  return writeThrough(path, scratch, async (temporary) => ({
    rows: await writing(db, source, () => copyCsv(source.sql, temporary)),
  }));
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
