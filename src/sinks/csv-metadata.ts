/**
 * What a CSV extract's readers are told beside it: the W3C CSVW metadata
 * (`<name>.csv-metadata.json`, "Metadata Vocabulary for Tabular Data", found
 * by CSVW processors as `{+url}-metadata.json`) with each column's datatype
 * and the dialect, and GDAL's `<name>.csvt` (one line of field types, which
 * GDAL and so QGIS read), so that "1.0" stays text and a date a date.
 */
import { basename } from 'node:path';
import { isGeometry, isNested, isText, type Column } from './columns.js';

/** The sidecar files of a CSV extract (absolute paths), beside it. */
export function csvSidecars(path: string): { csvw: string; csvt: string } {
  return { csvw: `${path}-metadata.json`, csvt: `${path.replace(/\.csv$/i, '')}.csvt` };
}

/** How a cell of a text column is written when the formula guard is on (exports.ts). */
export const FORMULA_GUARD_NOTE =
  "A text cell that begins with =, +, -, @, a tab, a carriage return or ' is written with one ' before it, " +
  "so that spreadsheets show it as text and never run it as a formula: drop the first character of a text cell that begins with ' to read the value.";

const INTEGERS = new Set(['TINYINT', 'SMALLINT', 'INTEGER', 'UTINYINT', 'USMALLINT']);
const BIG_INTEGERS = new Set(['BIGINT', 'HUGEINT', 'UINTEGER', 'UBIGINT', 'UHUGEINT']);

/** The CSVW datatype of a column of this DuckDB type, as the extract writes it. */
function csvwDatatype(type: string): string | Record<string, string> {
  if (isText(type) || type === 'UUID') return 'string';
  if (INTEGERS.has(type) || BIG_INTEGERS.has(type)) return 'integer';
  if (type === 'DOUBLE' || type === 'FLOAT') return 'double';
  if (type.startsWith('DECIMAL')) return 'decimal';
  if (type === 'BOOLEAN') return 'boolean';
  if (type === 'DATE') return 'date';
  // Instants in UTC with Z; a wall-clock time without a zone.
  if (type === 'TIMESTAMP WITH TIME ZONE') return 'dateTimeStamp';
  if (type === 'TIMESTAMP' || type.startsWith('TIMESTAMP_')) return 'dateTime';
  if (isNested(type) || type === 'JSON') return 'json';
  if (isGeometry(type))
    return { base: 'string', '@id': 'http://www.opengis.net/ont/geosparql#wktLiteral' };
  return 'string';
}

/** The GDAL CSVT type of a column of this DuckDB type. */
function csvtType(type: string): string {
  if (INTEGERS.has(type)) return 'Integer';
  if (BIG_INTEGERS.has(type)) return 'Integer64';
  if (type === 'DOUBLE' || type === 'FLOAT' || type.startsWith('DECIMAL')) return 'Real';
  if (type === 'BOOLEAN') return 'Integer(Boolean)';
  if (type === 'DATE') return 'Date';
  if (type === 'TIMESTAMP WITH TIME ZONE' || type === 'TIMESTAMP' || type.startsWith('TIMESTAMP_'))
    return 'DateTime';
  if (isGeometry(type)) return 'WKT';
  return 'String';
}

/** The CSVW metadata of a CSV extract at `path` with these columns. */
export function csvwMetadata(
  path: string,
  columns: readonly Column[],
  options: { formulaGuard: boolean; title: string; description: string },
): string {
  const metadata = {
    '@context': ['http://www.w3.org/ns/csvw', { '@language': 'en' }],
    url: basename(path),
    'dc:title': options.title,
    'dc:description': [
      options.description,
      ...(options.formulaGuard ? [FORMULA_GUARD_NOTE] : []),
    ].join(' '),
    dialect: {
      encoding: 'utf-8',
      header: true,
      delimiter: ',',
      quoteChar: '"',
      doubleQuote: true,
      lineTerminators: ['\r\n'],
      skipInitialSpace: false,
    },
    tableSchema: {
      columns: columns.map((c) => ({
        name: c.name,
        titles: c.name,
        datatype: csvwDatatype(c.type),
        // An empty cell is NULL; an empty text is written "" (quoted).
        null: '',
      })),
    },
  };
  return `${JSON.stringify(metadata, null, 2)}\n`;
}

/** The GDAL CSVT line of a CSV extract with these columns. */
export function csvtLine(columns: readonly Column[]): string {
  return `${columns.map((c) => `"${csvtType(c.type)}"`).join(',')}\n`;
}
