/**
 * The catalog of measurement locations (4.4), a FeatureCollection, read one way
 * only: by DuckDB, flattening each feature into the columns of
 * bicycle/locations. The locations step keeps it as a dataset; a measurement run
 * reads its locations from that dataset, or from the same columns of a fresh
 * download when there is none.
 */
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { quotedString, type Database } from '../../duckdb/database.js';
import { GEOMETRY_COLUMN, pointSql } from '../../duckdb/geometry.js';
import { makeFolder, temporaryPath } from '../../util/fs.js';
import type { CatalogLocation } from './selection.js';
import type { FolderFiles } from '../../duckdb/folder-files.js';

export const LOCATIONS_DATASET = join('bicycle', 'locations');

const text = (path: string): string => `nullif(trim(f ->> ${quotedString(path)}), '')`;
const timestamp = (path: string): string => `TRY_CAST(${text(path)} AS TIMESTAMPTZ)`;

/** A name read as UTF-8 read as Latin-1 or Windows-1252 (the rule of sign_typing.sql). */
const MIS_ENCODED = "'[ÃÂ][\\x{80}-\\x{BF}‚ƒ„…†‡ˆ‰Š‹ŒŽ‘’“”•–—˜™š›œžŸ]|â€'";
const misEncoded = (column: string, path: string): string =>
  `CASE WHEN regexp_matches(${text(path)}, ${MIS_ENCODED}) THEN '${column}: mis-encoded UTF-8 (' || ${text(path)} || ')' END`;
const notTyped = (column: string, path: string, type: string): string =>
  `CASE WHEN TRY_CAST(${text(path)} AS ${type}) IS NULL AND ${text(path)} IS NOT NULL THEN '${column}: not typed (' || ${text(path)} || ')' END`;

/** What is wrong with a feature's values, as the signs' typing says it: `column: what (value)`. */
const ISSUES = `list_filter([${[
  misEncoded('name', '$.properties.name'),
  misEncoded('authority', '$.properties.authority'),
  misEncoded('contractor', '$.properties.contractor'),
  notTyped('bearing', '$.properties.bearing', 'DOUBLE'),
  notTyped('valid_from', '$.properties.validFrom', 'TIMESTAMPTZ'),
  notTyped('valid_until', '$.properties.validUntil', 'TIMESTAMPTZ'),
].join(',\n  ')}], x -> x IS NOT NULL)`;

/** Columns of bicycle/locations, as DuckDB expressions over one feature `f`. */
const COLUMNS: readonly (readonly [string, string, string])[] = [
  ['location_id', 'VARCHAR', text('$.properties.id')],
  ['feature_id', 'VARCHAR', text('$.id')],
  ['authority_id', 'VARCHAR', text('$.properties.authorityId')],
  ['authority', 'VARCHAR', text('$.properties.authority')],
  ['contractor', 'VARCHAR', text('$.properties.contractor')],
  ['name', 'VARCHAR', text('$.properties.name')],
  [
    'aliases',
    'VARCHAR[]',
    `CASE json_type(f -> '$.properties.aliases') WHEN 'ARRAY' THEN json_extract_string(f, '$.properties.aliases[*]') END`,
  ],
  ['license_category', 'VARCHAR', text('$.properties.licenseCategory')],
  ['bearing', 'DOUBLE', `TRY_CAST(${text('$.properties.bearing')} AS DOUBLE)`],
  ['location_type', 'VARCHAR', text('$.properties.locationType')],
  ['equipment_type', 'VARCHAR', text('$.properties.equipmentType')],
  ['valid_from', 'TIMESTAMPTZ', timestamp('$.properties.validFrom')],
  ['valid_until', 'TIMESTAMPTZ', timestamp('$.properties.validUntil')],
  ['longitude', 'DOUBLE', `TRY_CAST(f ->> '$.geometry.coordinates[0]' AS DOUBLE)`],
  ['latitude', 'DOUBLE', `TRY_CAST(f ->> '$.geometry.coordinates[1]' AS DOUBLE)`],
  ['properties', 'JSON', `f -> '$.properties'`],
  ['typing_issues', 'VARCHAR[]', ISSUES],
  [
    GEOMETRY_COLUMN,
    'GEOMETRY',
    pointSql(
      `TRY_CAST(f ->> '$.geometry.coordinates[0]' AS DOUBLE)`,
      `TRY_CAST(f ->> '$.geometry.coordinates[1]' AS DOUBLE)`,
    ),
  ],
];

export const LOCATIONS_VIEW_COLUMNS: readonly (readonly [string, string])[] = COLUMNS.map(
  ([name, type]) => [name, type] as const,
);

/** The catalog's file in an output folder. */
export function catalogFile(output: string): string {
  return join(output, LOCATIONS_DATASET, 'data.parquet');
}

/**
 * The catalog's rows, one per feature with a location id, ordered by it, from
 * a 4.4 response body saved in `file` (`bytes` long).
 */
export function catalogRows(file: string, bytes: number): string {
  const features = `(SELECT unnest(json_extract(json, '$.features[*]')) AS f
    FROM read_json_objects(${quotedString(file)}, maximum_object_size = ${Math.max(16 << 20, bytes + 1024)}))`;
  return `(SELECT ${COLUMNS.map(([name, type, expr]) => `CAST(${expr} AS ${type}) AS ${name}`).join(',\n ')}
    FROM ${features} WHERE f ->> '$.properties.id' IS NOT NULL ORDER BY location_id)`;
}

/** The locations (id and position) of catalog rows. */
async function locationsOf(db: Database, rows: string): Promise<CatalogLocation[]> {
  const found = await db.all(
    `SELECT location_id AS id, longitude, latitude FROM ${rows} WHERE location_id IS NOT NULL`,
  );
  return found as unknown as CatalogLocation[];
}

/** The locations of the catalog dataset of an output folder; undefined when there is none. */
export async function storedCatalog(
  db: Database,
  output: string,
  files: FolderFiles,
): Promise<CatalogLocation[] | undefined> {
  const file = catalogFile(output);
  if (files.size(file) === undefined) return undefined;
  await files.bring([file]);
  return locationsOf(db, `read_parquet(${quotedString(file)})`);
}

/** The locations of a 4.4 response body saved in `file`. */
function downloadedCatalog(db: Database, file: string, bytes: number): Promise<CatalogLocation[]> {
  return locationsOf(db, catalogRows(file, bytes));
}

/**
 * The catalog of a run: the dataset of the output folder when there is one,
 * else a download (4.4) read through a temporary file in `scratch`.
 */
export async function readCatalog(
  db: Database,
  { output, files, scratch }: { output: string; files: FolderFiles; scratch: string },
  download: () => Promise<Buffer>,
): Promise<CatalogLocation[]> {
  const stored = await storedCatalog(db, output, files);
  if (stored) return stored;
  const body = await download();
  await makeFolder(scratch);
  const file = temporaryPath(join(scratch, 'locations.json'), scratch);
  try {
    await writeFile(file, body);
    return await downloadedCatalog(db, file, body.length);
  } finally {
    await rm(file, { force: true });
  }
}
